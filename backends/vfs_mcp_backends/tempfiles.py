"""Names of the temp files an atomic write stages its content in.

A name is ``.vfs-mcp-tmp-<16 hex random>-<8 hex check>``, where the check is derived from the
random part. Only a name of exactly that form with a matching check is ours: it is hidden
from every tool and swept after a crash. A user's own ``.vfs-mcp-tmp-notes.txt`` is neither.
"""

from __future__ import annotations

import hashlib
import re
import secrets

TEMP_PREFIX = ".vfs-mcp-tmp-"
TEMP_GLOB = TEMP_PREFIX + "[0-9a-f]" * 16 + "-" + "[0-9a-f]" * 8
"""A glob for names of our form (the check itself cannot be expressed in a glob)."""

_FORM = re.compile(re.escape(TEMP_PREFIX) + r"([0-9a-f]{16})-([0-9a-f]{8})\Z")


def _check(token: str) -> str:
    return hashlib.sha256(f"vfs-mcp temp file {token}".encode()).hexdigest()[:8]


def new_temp_name() -> str:
    token = secrets.token_hex(8)
    return f"{TEMP_PREFIX}{token}-{_check(token)}"


def is_temp_name(name: str) -> bool:
    """Whether a file name is one ``new_temp_name`` made."""
    if not name.startswith(TEMP_PREFIX):  # most names: one comparison, no regex
        return False
    match = _FORM.match(name)
    return match is not None and match.group(2) == _check(match.group(1))
