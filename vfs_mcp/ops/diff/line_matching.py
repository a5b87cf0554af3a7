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
import dataclasses
import heapq
import itertools
import math
import operator
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from vfs_mcp.jail.tally import count_steps

BASE_WORK = 1_000_000
"""Steps any diff may take, whatever its size (a step: one diagonal of Myers' search, or
``LINES_PER_STEP`` lines compared along a run of equal ones; about a microsecond)."""
WORK_PER_LINE = 4
"""Steps more for each line of the two texts."""
LINES_PER_STEP = 32

Opcode = tuple[str, int, int, int, int]


@dataclass(frozen=True)
class Matching:
    """The lines two texts of ``n`` and ``m`` lines share, held as they were found: blocks of
    the lines kept (those both texts have), and where the lines set aside lay among them."""

    n: int
    m: int
    found: list[tuple[int, int, int]]
    """``(i, j, size)``: the ``i``-th line kept of ``a`` on and the ``j``-th of ``b`` on, ``size`` lines alike."""
    kept: tuple[array[int], array[int]]
    """For each text, the lines kept (``kept[0][i]``: the line of ``a`` kept ``i``-th)."""
    breaks: tuple[array[int], array[int]]
    """For each text, where lines set aside lie among those kept (``_breaks``)."""
    tail: int = 0
    """Lines both texts end with, matched apart after a cut."""
    cut: tuple[int, int] | None = None
    """Where matching stopped, its budget spent: ``a`` from ``i`` on and ``b`` from ``j`` on
    (but for the ``tail`` lines) are one replacement, not the fewest lines changed."""

    @property
    def same(self) -> int:
        """How many lines match."""
        return sum(size for _, _, size in self.found) + self.tail

    def blocks(self) -> Iterator[tuple[int, int, int]]:
        """difflib's matching blocks, each made when asked for: ``(i, j, size)``,
        ``a[i : i + size] == b[j : j + size]``, in order, ending with ``(n, m, 0)``."""
        (kept_a, kept_b), (breaks_a, breaks_b) = self.kept, self.breaks
        for i, j, size in self.found:  # split where lines set aside lay between two of a block's
            start = 0
            for cut in heapq.merge(_inside(breaks_a, i, size), _inside(breaks_b, j, size)):
                if cut > start:
                    yield kept_a[i + start], kept_b[j + start], cut - start
                    start = cut
            yield kept_a[i + start], kept_b[j + start], size - start
        if self.tail:
            yield self.n - self.tail, self.m - self.tail, self.tail
        yield self.n, self.m, 0

    def opcodes(self) -> Iterator[Opcode]:
        """difflib's opcodes (``SequenceMatcher.get_opcodes``): how to turn ``a`` into ``b``."""
        i = j = 0
        for ai, bj, size in self.blocks():
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
    ``WORK_PER_LINE`` for each of their lines): as many as can be, unless the budget ran out.
    ``b`` is only read in turn (three times) and sliced; nothing kept is a line of theirs."""
    n, m = len(a), len(b)
    budget = BASE_WORK + WORK_PER_LINE * (n + m) if work is None else work
    of_a = set(a)
    in_a = bytes(map(of_a.__contains__, b))  # for each line of b: whether a has it too
    both = set(filter(of_a.__contains__, b))  # no line of b but those: b may make its lines as asked
    del of_a
    in_b = bytes(map(both.__contains__, a))
    del both
    kept = array("i", itertools.compress(range(n), in_b)), array("i", itertools.compress(range(m), in_a))
    found, cut = _myers(list(itertools.compress(a, in_b)), list(itertools.compress(b, in_a)), budget)
    matching = Matching(n, m, found, kept, (_breaks(in_b), _breaks(in_a)))
    if cut is None:
        return matching
    # One replacement from the end of the last block matched, but for the lines both end with.
    x, y = (
        (kept[0][found[-1][0] + found[-1][2] - 1] + 1, kept[1][found[-1][1] + found[-1][2] - 1] + 1)
        if found
        else (0, 0)
    )
    tail = _run_back(a, b, n, m, min(n - x, m - y))
    return dataclasses.replace(matching, tail=tail, cut=(x, y))


def _inside(breaks: array[int], at: int, size: int) -> Iterator[int]:
    """The breaks strictly inside the ``size`` lines kept from ``at``, counted from ``at``."""
    inner = breaks[bisect.bisect_right(breaks, at) : bisect.bisect_left(breaks, at + size)]
    return map(operator.sub, inner, itertools.repeat(at))


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
    furthest and where it stopped. The steps it takes are counted (``count_steps``)."""
    n, m = len(a), len(b)
    if not n or not m:
        return [], None
    given = work
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
                count_steps(given - work + d + 1)
                return _path(reached, n, m), None
        reached.append(array("i", v[offset - d : offset + d + 1 : 2]))
        work -= d + 1
        if work < 0:
            break
    count_steps(given - work)
    d = len(reached) - 1
    # The furthest point reached on a diagonal inside both texts.
    inside = [(x, k) for k, x in zip(range(-d, d + 1, 2), reached[d], strict=True) if x <= n and x - k <= m]
    if not inside:
        return [], (0, 0)
    x, k = max(inside, key=lambda point: 2 * point[0] - point[1])
    return _path(reached, x, x - k), (x, x - k)


def _run(a: Sequence[str], b: Sequence[str], x: int, y: int) -> int:
    """How many lines from ``a[x]`` and ``b[y]`` on are equal."""
    return _alike(min(len(a) - x, len(b) - y), lambda i, k: a[x + i : x + i + k] == b[y + i : y + i + k])


def _run_back(a: Sequence[str], b: Sequence[str], n: int, m: int, room: int) -> int:
    """How many lines ``a[:n]`` and ``b[:m]`` end with alike, at most ``room``."""
    return _alike(room, lambda i, k: a[n - i - k : n - i] == b[m - i - k : m - i])


def _alike(room: int, same: Callable[[int, int], bool]) -> int:
    """The largest ``i <= room`` with ``same(0, i)``, where ``same(i, k)`` compares ``k`` lines
    ``i`` on: slices compared, doubling while they match, halving where they do not."""
    equal, step = 0, 1
    while equal < room:
        size = min(step, room - equal)
        if same(equal, size):
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
