"""Where a literal occurs in a big text, found by the C library's ``memmem``; how many
newlines a stretch of bytes holds, counted at ``memchr`` speed.

``str.find`` compares the needle's last character first and, on a log or source file whose
common letters fill the needle, steps one character at a time; glibc's ``memmem`` hashes
pairs of bytes and skips, about ten times faster (figures: benchmarks/README.md). Bytes are
searched where they are (no copy); an ASCII text (``str.isascii`` is known to the string, no
scan) is encoded in one copy, and a byte offset is then a character offset. Other texts,
small ones, and systems whose C library has no ``memmem`` use ``find``: the answers are the
same either way (a property test holds them so).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import AnyStr

LONG_LINE = 48
"""Bytes a line from which deleting a block's newlines counts them faster than ``bytes.count``:
deletion finds each with ``memchr`` (vectorised), ``count`` compares byte by byte; on short
lines the deletions cost more than the count saves (figures: benchmarks/README.md)."""
MEMMEM_CHARS = 64 * 1024
"""Texts from this length are searched with ``memmem``; below it the encoding copy costs more than it saves."""
COUNT_BLOCK = 64 * 1024
"""Bytes whose newlines are counted at a time (a block's copy stays in the CPU's cache)."""


def _load_memmem() -> Callable[[int, int, bytes, int], int | None] | None:
    try:
        memmem = ctypes.CDLL(None).memmem  # the process's own C library (POSIX)
    except (OSError, AttributeError, TypeError):
        return None
    memmem.restype = ctypes.c_void_p
    memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return memmem  # type: ignore[no-any-return]


_MEMMEM = _load_memmem()


def find_all(text: str, old: str, limit: int | None = None) -> list[int]:
    """Start indexes of the non-overlapping places of ``old`` (not empty) in ``text``, in
    order, at most ``limit`` of them (all when None)."""
    if _MEMMEM is not None and len(text) >= MEMMEM_CHARS and text.isascii() and old.isascii():
        return find_all_bytes(text.encode("ascii"), old.encode("ascii"), limit)
    return _stepped(text, old, limit)


def find_all_bytes(data: bytes, old: bytes, limit: int | None = None) -> list[int]:
    """``find_all`` for bytes: byte offsets, searched in place by ``memmem`` when the data is big."""
    if _MEMMEM is None or len(data) < MEMMEM_CHARS:
        return _stepped(data, old, limit)
    found: list[int] = []
    base = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
    assert base is not None
    at, size = 0, len(data)
    while limit is None or len(found) < limit:
        hit = _MEMMEM(base + at, size - at, old, len(old))
        if hit is None:
            break
        found.append(hit - base)
        at = hit - base + len(old)
    return found


def _stepped(text: AnyStr, old: AnyStr, limit: int | None) -> list[int]:
    found: list[int] = []
    at = text.find(old)
    while at >= 0 and (limit is None or len(found) < limit):
        found.append(at)
        at = text.find(old, at + len(old))
    return found


def newlines(data: bytes, start: int, end: int) -> int:
    """The ``\\n`` bytes in ``data[start:end]``: a block at a time, each counted the way the
    lines seen so far make faster (``LONG_LINE``)."""
    count, long_lines = 0, True
    for at in range(start, end, COUNT_BLOCK):
        stop = min(end, at + COUNT_BLOCK)
        found = newlines_in(data[at:stop], long_lines) if long_lines else data.count(b"\n", at, stop)
        long_lines = found * LONG_LINE <= stop - at
        count += found
    return count


def newlines_in(block: bytes, long_lines: bool) -> int:
    """The newlines in ``block``; ``long_lines``: the lines met so far average ``LONG_LINE`` bytes or more."""
    return len(block) - len(block.replace(b"\n", b"")) if long_lines else block.count(b"\n")
