"""Which lines of two texts match, for a diff: in work bounded by the lines compared.

A line found in only one of the texts cannot match: those are set aside first (one pass over
a set of each text's lines), which keeps the fewest changes the fewest and leaves little to
compare where most lines changed (two files that differ on every line, every other line
edited). The rest is matched by Myers' algorithm (1986): the fewest lines inserted and
deleted, in time the lines times the differences, each run of equal lines compared a slice at
a time. Every step counts against a budget linear in the lines (``work``): where the texts
differ in so many places, or repeat their lines so, that it runs out, matching stops at the
furthest place reached, and the rest (but for the lines both end with) is one replacement,
said to be (``Matching.cut``), never the fewest lines changed. difflib's matcher is not used
(1,000 lines of two alternating values kept it busy for seconds), only the shape of its
opcodes and hunks.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

BASE_WORK = 1_000_000
"""Steps any diff may take, whatever its size (a step: one diagonal of Myers' search, or
``LINES_PER_STEP`` lines compared along a run of equal ones; about a microsecond)."""
WORK_PER_LINE = 4
"""Steps more for each line of the two texts."""
LINES_PER_STEP = 32

Opcode = tuple[str, int, int, int, int]


@dataclass(frozen=True)
class Matching:
    """The lines two texts share, as difflib's matching blocks."""

    blocks: list[tuple[int, int, int]]
    """``(i, j, size)``: ``a[i : i + size] == b[j : j + size]``, in order, ending with ``(len(a), len(b), 0)``."""
    cut: tuple[int, int] | None = None
    """Where matching stopped, its budget spent: ``a`` from ``i`` on and ``b`` from ``j`` on
    (but for the lines both end with) are one replacement, not the fewest lines changed."""

    def opcodes(self) -> Iterator[Opcode]:
        """difflib's opcodes (``SequenceMatcher.get_opcodes``): how to turn ``a`` into ``b``."""
        i = j = 0
        for ai, bj, size in self.blocks:
            if i < ai or j < bj:
                yield ("replace" if i < ai and j < bj else "delete" if i < ai else "insert", i, ai, j, bj)
            i, j = ai + size, bj + size
            if size:
                yield ("equal", ai, i, bj, j)

    def hunks(self, context: int) -> Iterator[Opcode | None]:
        """The opcodes of a unified diff's hunks with ``context`` lines, None after each hunk's
        last: difflib's grouped opcodes (``get_grouped_opcodes``), each made when it is asked
        for, none held (a diff cut short makes no more, a hunk of every line is not a list)."""
        codes = self.opcodes()
        tag, i1, i2, j1, j2 = next(codes, ("equal", 0, 1, 0, 1))
        if tag == "equal":  # context only before the first change
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        changed = False  # the hunk under way holds a change
        for following in itertools.chain(codes, [None]):
            if following is None and tag == "equal":  # and only after the last
                i2, j2 = min(i2, i1 + context), min(j2, j1 + context)
            if tag == "equal" and i2 - i1 > 2 * context:  # a long run of equal lines ends a hunk
                if changed:
                    yield (tag, i1, i1 + context, j1, j1 + context)
                    yield None
                i1, j1, changed = i2 - context, j2 - context, False
            if tag != "equal" or changed or following is not None:
                yield (tag, i1, i2, j1, j2)
                changed = changed or tag != "equal"
            if following is not None:
                tag, i1, i2, j1, j2 = following
        if changed:
            yield None


def match(a: Sequence[str], b: Sequence[str], work: int | None = None) -> Matching:
    """The lines ``a`` and ``b`` share, in at most ``work`` steps (by default ``BASE_WORK`` and
    ``WORK_PER_LINE`` for each of their lines): as many as can be, unless the budget ran out."""
    n, m = len(a), len(b)
    budget = BASE_WORK + WORK_PER_LINE * (n + m) if work is None else work
    in_b = bytes(map(set(b).__contains__, a))  # for each line of a: whether b has it too
    in_a = bytes(map(set(a).__contains__, b))
    kept_a, kept_b = array("i", itertools.compress(range(n), in_b)), array("i", itertools.compress(range(m), in_a))
    found, cut = _myers(list(itertools.compress(a, in_b)), list(itertools.compress(b, in_a)), budget)
    blocks = _unfolded(found, kept_a, _breaks(in_b), kept_b, _breaks(in_a))
    if cut is not None:
        # One replacement from the end of the last block matched, but for the lines both end with.
        x, y = (blocks[-1][0] + blocks[-1][2], blocks[-1][1] + blocks[-1][2]) if blocks else (0, 0)
        tail = _run_back(a, b, n, m, min(n - x, m - y))
        if tail:
            blocks.append((n - tail, m - tail, tail))
        cut = (x, y)
    return Matching([*blocks, (n, m, 0)], cut)


def _unfolded(
    blocks: list[tuple[int, int, int]],
    kept_a: array[int],
    breaks_a: array[int],
    kept_b: array[int],
    breaks_b: array[int],
) -> list[tuple[int, int, int]]:
    """Blocks of the lines kept (``kept_a[t]``: the line of ``a`` kept ``t``-th), as blocks of
    the whole texts: split where lines set aside lay between two of a block's (``_breaks``)."""
    out: list[tuple[int, int, int]] = []
    for i, j, size in blocks:
        inside = sorted(
            {
                *(t - i for t in breaks_a[bisect.bisect_right(breaks_a, i) : bisect.bisect_left(breaks_a, i + size)]),
                *(t - j for t in breaks_b[bisect.bisect_right(breaks_b, j) : bisect.bisect_left(breaks_b, j + size)]),
            }
        )
        for start, stop in itertools.pairwise([0, *inside, size]):
            out.append((kept_a[i + start], kept_b[j + start], stop - start))
    return out


def _breaks(kept: bytes) -> array[int]:
    """Where lines set aside lie among those kept (``kept``: 1 for a line kept, 0 for one set
    aside): each ``t`` such that some lie just before the ``t``-th line kept."""
    if kept.find(0) < 0:
        return array("i")
    gone = itertools.compress(itertools.count(), map(operator.not_, kept))
    # The r-th line set aside, line g, has g - r lines kept before it (in order, some repeated).
    return array("i", itertools.starmap(operator.sub, zip(gone, itertools.count(), strict=False)))


def _myers(a: Sequence[str], b: Sequence[str], work: int) -> tuple[list[tuple[int, int, int]], tuple[int, int] | None]:
    """The matching blocks of a shortest edit script of ``a`` into ``b`` (without the final
    ``(len(a), len(b), 0)``), or, when ``work`` runs out first, those of the path that got
    furthest and where it stopped."""
    n, m = len(a), len(b)
    if not n or not m:
        return [], None
    top = min(n + m, math.isqrt(2 * max(work, 0)) + 1)  # a round d costs d + 1 steps at least
    offset = top + 1
    v = [0] * (2 * top + 3)  # the x reached on each diagonal k = x - y, at v[offset + k]
    reached: list[array[int]] = []  # for each round d, v of the diagonals -d, -d + 2, ..., d
    for d in range(top + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            if x < n and y < m and a[x] == b[y]:
                run = 1 + _run(a, b, x + 1, y + 1)
                x += run
                work -= run // LINES_PER_STEP
            v[offset + k] = x
            if x >= n and x - k >= m:
                reached.append(array("i", v[offset - d : offset + d + 1 : 2]))
                return _path(reached, n, m), None
        reached.append(array("i", v[offset - d : offset + d + 1 : 2]))
        work -= d + 1
        if work < 0:
            break
    d = len(reached) - 1
    # The furthest point reached on a diagonal inside both texts.
    inside = [(x, k) for k, x in zip(range(-d, d + 1, 2), reached[d], strict=True) if x <= n and x - k <= m]
    if not inside:
        return [], (0, 0)
    x, k = max(inside, key=lambda point: 2 * point[0] - point[1])
    return _path(reached, x, x - k), (x, x - k)


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


def _run_back(a: Sequence[str], b: Sequence[str], n: int, m: int, room: int) -> int:
    """How many lines ``a[:n]`` and ``b[:m]`` end with alike, at most ``room``."""
    equal, step = 0, 1
    while equal < room:
        size = min(step, room - equal)
        if a[n - equal - size : n - equal] == b[m - equal - size : m - equal]:
            equal += size
            step *= 2
        elif size == 1:
            break
        else:
            step = size // 2
    return equal


def _path(reached: list[array[int]], x: int, y: int) -> list[tuple[int, int, int]]:
    """The matching blocks of the path ``_myers`` found to ``(x, y)``, walked back from there."""
    found: list[tuple[int, int, int]] = []
    for d in range(len(reached) - 1, 0, -1):
        k, last = x - y, reached[d - 1]
        down = k == -d or (k != d and last[(k - 1 + d - 1) // 2] < last[(k + 1 + d - 1) // 2])
        prev_k = k + 1 if down else k - 1
        prev_x = last[(prev_k + d - 1) // 2]
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
    return merged
