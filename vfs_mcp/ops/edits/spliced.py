"""Exact edits made on a UTF-8 file's bytes: found by ``memmem`` where they lie, spliced in
one copy, their lines counted in the bytes; no decoding or encoding of the file.

UTF-8 finds a character's bytes only where the character is, so each place, line and
splice is the one the text would give (``edit.py``'s text path; a property test holds them
to it). Offsets are bytes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from vfs_mcp.ops.text.find import find_all_bytes, newlines


@dataclass(frozen=True)
class Found:
    """Where one edit found its text: the places, and what the diff and the report need of them."""

    start: int
    """Where the first place starts (the bytes before it are unchanged),"""
    kept: int
    """and the bytes after the last one (unchanged too)."""
    occurrences: int
    line_start: int
    """1-based line of the first place's start,"""
    line_end: int
    """and of its end."""


def splice_exact(data: bytes, edits: Iterable[tuple[str, str, bool]]) -> tuple[bytes, list[Found]] | None:
    """``data`` with each (old, new, replace_all) edit made in turn, where each old text is
    found exactly, once or (replace_all) anywhere; None as soon as one is not (nor when a
    text cannot be UTF-8: a lone surrogate), for the text path to decide."""
    found = []
    for old_text, new_text, everything in edits:
        try:
            old, new = old_text.encode(), new_text.encode()
        except UnicodeEncodeError:
            return None
        starts = find_all_bytes(data, old, None if everything else 2) if old else []
        if not starts or (len(starts) > 1 and not everything):
            return None
        first = newlines(data, 0, starts[0]) + 1
        end = max(starts[0], starts[0] + len(old) - 1)  # a place ending in a newline ends on its line
        found.append(
            Found(
                starts[0],
                len(data) - starts[-1] - len(old),
                len(starts),
                first,
                first + data.count(b"\n", starts[0], end),
            )
        )
        view = memoryview(data)  # slices of it are not copies: the join is the one copy
        parts: list[bytes | memoryview] = [view[: starts[0]]]
        for at, after in itertools.pairwise([*starts, len(data)]):
            parts += [new, view[at + len(old) : after]]
        data = b"".join(parts)
    return data, found
