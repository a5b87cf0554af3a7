"""Which lines of two texts match, for a diff: bounded by how much they differ.

difflib's matcher looks for the longest matching block first, and where many lines are the
same (blank lines, ``}``, a generated file's filler) it compares every copy with every copy:
two edits 30,000 lines apart in such a file took minutes. Myers' algorithm costs the lines
times the lines that differ, so where a change is a few lines of a big text (what an edit
makes) it is found in one pass; the equal runs are compared a slice at a time. Small texts,
and texts that differ in too many places for it, keep difflib's matcher (its junk heuristic
on for big ones, which bounds its cost).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

SMALL = 1_000_000
"""Below this many line pairs (``len(a) * len(b)``) difflib alone is quick enough."""
MAX_DIFFERENCES = 500
"""Lines inserted or deleted past which Myers' search stops: its memory grows with their square
(some 10 MB here)."""


def matcher(a: Sequence[str], b: Sequence[str]) -> difflib.SequenceMatcher[str]:
    """A matcher of ``a`` and ``b`` whose ``get_grouped_opcodes`` gives the diff's hunks."""
    if len(a) * len(b) <= SMALL:
        return difflib.SequenceMatcher(None, a, b, autojunk=False)
    blocks = _myers(a, b, MAX_DIFFERENCES)
    if blocks is None:
        return difflib.SequenceMatcher(None, a, b, autojunk=True)
    found = _Matched(None, a, b, autojunk=False)
    found.matching_blocks = [difflib.Match(i, j, n) for i, j, n in blocks]
    return found


class _Matched(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """A matcher told its matching blocks (``matching_blocks``): difflib's opcodes and groups from them."""

    matching_blocks: list[difflib.Match]

    def get_matching_blocks(self) -> list[difflib.Match]:
        return self.matching_blocks


def _myers(a: Sequence[str], b: Sequence[str], max_d: int) -> list[tuple[int, int, int]] | None:
    """The matching blocks of a shortest edit script (Myers 1986), as difflib gives them (in
    order, adjacent ones merged, ending with ``(len(a), len(b), 0)``); None past ``max_d``
    lines inserted or deleted."""
    n, m = len(a), len(b)
    reached: list[dict[int, int]] = []  # for each number of differences d, the x reached on each diagonal k = x - y
    last = {1: 0}
    for d in range(max_d + 1):
        here: dict[int, int] = {}
        for k in range(-d, d + 1, 2):
            x = last[k + 1] if k == -d or (k != d and last[k - 1] < last[k + 1]) else last[k - 1] + 1
            x += _run(a, b, x, x - k)
            here[k] = x
            if x >= n and x - k >= m:
                reached.append(here)
                return _blocks(reached, n, m)
        reached.append(here)
        last = here
    return None


def _run(a: Sequence[str], b: Sequence[str], x: int, y: int) -> int:
    """How many lines from ``a[x]`` and ``b[y]`` on are equal: slices compared, doubling while
    they match, halving where they do not."""
    room = min(len(a) - x, len(b) - y)
    equal, step = 0, 1
    while equal < room:
        size = min(step, room - equal)
        if a[x + equal : x + equal + size] == b[y + equal : y + equal + size]:
            equal += size
            step *= 2
        elif size == 1:
            break
        else:
            step = size // 2
    return equal


def _blocks(reached: list[dict[int, int]], n: int, m: int) -> list[tuple[int, int, int]]:
    """The matching blocks of the path ``_myers`` found, walked back from its end."""
    found: list[tuple[int, int, int]] = []
    x, y = n, m
    for d in range(len(reached) - 1, 0, -1):
        k, last = x - y, reached[d - 1]
        down = k == -d or (k != d and last[k - 1] < last[k + 1])
        prev_k = k + 1 if down else k - 1
        prev_x = last[prev_k]
        start = prev_x if down else prev_x + 1  # where the step of this difference ended
        if x > start:
            found.append((start, start - k, x - start))
        x, y = prev_x, prev_x - prev_k
    if x > 0:
        found.append((0, 0, x))
    merged: list[tuple[int, int, int]] = []
    for i, j, size in reversed(found):
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    return [*merged, (n, m, 0)]
