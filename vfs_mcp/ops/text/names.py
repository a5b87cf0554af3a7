"""File names, their URIs (``uri_of``) and counts of things, as output writes them.

A name may hold a newline (``'x.txt\\n[FILE] passwords.txt'``), another control character, a
Unicode line separator or a byte that is not UTF-8 (a lone surrogate in Python). Written
as is, it would make a listing show entries that do not exist. Such a name is written as a
JSON string instead (quoted, escaped, ASCII), and the listing ends with ``NAMES_NOTE``.
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import quote, quote_from_bytes

from vfs_mcp.jail.resolve import Target

_CONTROL = r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]"
_UNSAFE = re.compile(_CONTROL + '|^"')
_ANY_CONTROL = re.compile(_CONTROL)
NAMES_NOTE = "(names in double quotes hold control characters, shown as JSON strings)"


def shown(name: str) -> str:
    """``name`` as is, or as a JSON string when it holds a control character, a line separator
    or an undecodable byte (or starts with a quote, which would make it look like one)."""
    return json.dumps(name) if _UNSAFE.search(name) else name


def escaped(*names: str) -> bool:
    """Whether ``shown`` quotes any of ``names`` (the text then ends with ``NAMES_NOTE``): one
    search of them all, not one per name (a tree has 20,000). A name that starts with a quote
    is one that follows a newline once they are joined by newlines (a name holding a newline
    is quoted anyway)."""
    return bool(_ANY_CONTROL.search("".join(names))) or '\n"' in "\n" + "\n".join(names)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 entry``, ``2 entries``: ``many`` defaults to ``noun + 's'``."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def uri_of(target: Target, *, escape_remote: bool = False) -> str:
    """A path's URI: ``file://`` and the percent-encoded host path on local mounts, the mount's
    URL elsewhere (its path percent-encoded too with ``escape_remote``, as the reference's
    resource links are; the ide dialect's buffers keep it as written)."""
    if target.mount.is_local:
        return "file://" + quote_from_bytes(os.fsencode(target.display), safe="/")
    if not escape_remote:
        return target.display
    scheme, rest = target.display.split("://", 1)
    return f"{scheme}://{quote(rest, safe='/')}"
