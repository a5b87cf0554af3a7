"""Where a literal occurs in a big text, found by the C library's ``memmem``.

``str.find`` compares the needle's last character first and, on a log or source file whose
common letters fill the needle, steps one character at a time (0.65 ms a MB here for
``retries = 3``); glibc's ``memmem`` hashes pairs of bytes and skips (0.06 ms). An ASCII
text (``str.isascii`` is known to the string, no scan) is encoded in one copy, and a byte
offset is then a character offset. Other texts, small ones, and systems whose C library has
no ``memmem`` use ``str.find``: the answers are the same either way (a property test holds them so).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

MEMMEM_CHARS = 64 * 1024
"""Texts from this length are searched with ``memmem``; below it the encoding copy costs more than it saves."""


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
    found: list[int] = []
    if _MEMMEM is not None and len(text) >= MEMMEM_CHARS and text.isascii() and old.isascii():
        data, needle = text.encode("ascii"), old.encode("ascii")
        base = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
        assert base is not None
        at, size = 0, len(data)
        while limit is None or len(found) < limit:
            hit = _MEMMEM(base + at, size - at, needle, len(needle))
            if hit is None:
                break
            found.append(hit - base)
            at = hit - base + len(needle)
        return found
    at = text.find(old)
    while at >= 0 and (limit is None or len(found) < limit):
        found.append(at)
        at = text.find(old, at + len(old))
    return found
