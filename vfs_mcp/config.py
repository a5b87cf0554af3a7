"""The bounds' defaults (what a server holds, reads and keeps when not told), and how a size is written.

They live here, below every layer, for the operations and the journal that apply them and
for the settings, the options and the ``--config`` file that set them: a server starts
without importing the write path, the operations or the config file's schema only to read a
number.
"""

from __future__ import annotations

import re
from typing import Any

DEFAULT_MAX_READ_BYTES = 10 * 1024 * 1024
"""Bytes a read returns (``max_read_bytes``)."""
DEFAULT_MAX_EDIT_BYTES = 64 * 1024 * 1024
"""Bytes of a file an edit or a patch loads."""
DEFAULT_UNDO_BYTES = 64 * 1024 * 1024
"""Bytes of before-images one session's undo journal keeps."""
DEFAULT_SERVER_UNDO_BYTES = 256 * 1024 * 1024
"""Bytes of before-images every session's journal keeps together (``undo_bytes``)."""
MAX_SESSIONS = 1000
"""HTTP sessions held at once (``--max-sessions``)."""
MAX_SESSIONS_PER_PEER = 100
"""HTTP sessions one client address (and token) holds at once."""

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: Any) -> Any:
    """A byte count as a number, or as a size string ("10MB" and "10 MiB" are both 10 * 2**20)."""
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match is None:
            raise ValueError(f'{value!r} is not a size; give bytes (10485760) or a size such as "10 MiB"')
        return int(match.group(1)) * _UNITS[match.group(2).lower()]
    return value


def size(value: str | int) -> int:
    """A size, as bytes or as text (``10485760``, ``"64 MiB"``); ValueError saying how to write one."""
    number = parse_size(value)
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError(f'{value!r} is not a size; give bytes (10485760) or a size such as "10 MiB"')
    return number
