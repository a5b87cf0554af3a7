"""What both grep engines search a file as: the bytes as ripgrep reads them as UTF-8.

A file with a NUL in its first 8 KiB is binary and not searched (``text.looks_binary``).
Invalid UTF-8 becomes U+FFFD, and the byte-order marks at the start are not content (nor
characters an anchor or a column counts): ripgrep 14 drops two, one where its reader sniffs
for a mark and one more in its decoder. Where it reads the raw bytes instead (``ops.ripgrep.needs_transcoding``), what it
reports has its marks dropped the same way.
"""

from __future__ import annotations

from codecs import BOM_UTF8
from typing import AnyStr

BOM = "\ufeff"
"""The byte-order mark as a character (as it is met in a pattern, or in a line ripgrep read raw)."""
MARKS_DROPPED = 2


def strip_marks(data: AnyStr, mark: AnyStr) -> AnyStr:
    """``data`` without the byte-order marks at its start that ripgrep drops."""
    for _ in range(MARKS_DROPPED):
        data = data.removeprefix(mark)
    return data


def as_searched(data: bytes) -> bytes:
    """A text file's bytes as both engines search them: valid UTF-8, its marks dropped."""
    data = strip_marks(data, BOM_UTF8)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8")
    return data
