"""Unified diffs of two texts, in time, memory and size bounded by the texts and a limit.

Only the lines around the span where the texts differ are split and compared, so one edit in
a large file costs about as much as the edit (``Known``: an edit tells where it changed the
text). Their lines are matched by ``line_matching``, in work linear in them. A span of more lines
than are matched one by one (``MATCHED_LINES``, or more where lines are long: ``LINE_CHARS``)
is not split at all: it is one replacement, said to be one. A diff longer than its limit
(``max_chars``, of the hunks' lines) shows the hunks that fit, the last cut between two lines,
and ends with what it leaves out; the counts of lines added and removed are always the whole
diff's.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import AnyStr, overload

from vfs_mcp.changes.frozen import frozen
from vfs_mcp.ops.diff import line_matching
from vfs_mcp.ops.diff.hunk import Hunk
from vfs_mcp.ops.text.encoding import printable, split_lines
from vfs_mcp.ops.text.find import newlines

DEFAULT_MAX_DIFF_CHARS = 10 * 1024 * 1024
"""Characters of a diff's hunks a reply holds (the tools are given the server's read limit,
or half its reply cap); past them it ends with what the rest adds and removes."""
MATCHED_LINES = 500_000
"""Lines of the two texts' differing span matched one by one, whatever their length,"""
LINE_CHARS = 32
"""or more, up to one for each this many characters of the span (a line held costs some 60
bytes beside its text: short lines past the first are never split)."""
CHUNK = 1 << 16
HEADER_CHARS = 64
"""What a hunk's header counts against the limit (its longest, for numbers below 10**14)."""


@frozen
class Known:
    """What the caller of ``diff`` knows already of the two texts (an edit knows where it
    changed them), so it is not found again by comparing and counting a whole file."""

    head: int
    """The texts start with at least this many equal characters,"""
    tail: int
    """and end with at least this many."""
    at: int
    """An index of the old text,"""
    lines: int
    """and the newlines before it."""


@dataclass
class Diff:
    """The hunks of a line diff, as many as fit its limit, and what it leaves out."""

    hunks: list[Hunk]
    added: int
    """Lines added, over the whole diff (shown or not),"""
    removed: int
    """and removed."""
    limit: int
    left_out: tuple[int, int] | None = None
    """Lines added and removed the hunks do not show, when the limit cut them."""
    unmatched: tuple[int, int] | None = None
    """The first old and new lines (1-based) of a replacement found without matching its
    lines one by one (too many lines, or differences, for the work allowed): not the fewest
    lines changed."""

    def notes(self) -> list[str]:
        """One line for each thing the diff leaves out, to end it with."""
        out = []
        if self.unmatched is not None:
            old, new = self.unmatched
            out.append(
                f"[the lines from line {old:,} of the old text and {new:,} of the new on were not matched one by one "
                "(too many lines or differences for the diff's work bound): they are one replacement, "
                "not the fewest lines changed]"
            )
        if self.left_out is not None:
            added, removed = self.left_out
            rest = f"{added:,} more {'line' if added == 1 else 'lines'} added and {removed:,} removed"
            rest = rest if added or removed else "context lines"
            out.append(f"[diff cut at {self.limit:,} characters: {rest} not shown]")
        return out


def same_head(a: AnyStr, b: AnyStr, known: int = 0) -> int:
    """Length of the common prefix (at least ``known``): compared a chunk at a time, then
    halving the chunk that differs (every comparison a ``memcmp`` of a slice, none a
    character at a time)."""
    n = min(len(a), len(b))
    return _common(n, lambda i, k: a[i : i + k] == b[i : i + k], known)


def same_tail(a: AnyStr, b: AnyStr, head: int, known: int = 0) -> int:
    """Length of the common suffix (at least ``known``) that does not overlap the common prefix."""
    n, la, lb = min(len(a), len(b)) - head, len(a), len(b)
    return _common(n, lambda i, k: a[la - i - k : la - i] == b[lb - i - k : lb - i], known)


def _common(n: int, same: Callable[[int, int], bool], known: int = 0) -> int:
    """The largest ``i <= n`` with ``same(0, i)``, where ``same(i, k)`` compares the ``k``
    characters from ``i`` on (counted from the end for a suffix); ``same(0, known)`` holds."""
    i = min(known, n)
    while i + CHUNK <= n and same(i, CHUNK):
        i += CHUNK
    size = min(CHUNK, n - i)  # the first difference lies in [i, i + size), or there is none
    while size > 0:
        half = (size + 1) // 2
        if same(i, half):
            i, size = i + half, size - half
        elif half == 1:
            break
        else:
            size = half
    return i


@dataclass
class _Span:
    """Where two texts differ, in whole lines (``*_core``), and with context lines about it."""

    start: int
    """Where the first context line starts (the same place in both texts),"""
    core: int
    """and the first line that differs."""
    old_core_end: int
    """Where the line holding the old text's last difference ends,"""
    new_core_end: int
    old_end: int
    """and the last context line."""
    new_end: int


def _span(old: AnyStr, new: AnyStr, head: int, tail: int, context: int) -> _Span:
    nl = old[:0] + (b"\n" if isinstance(old, bytes) else "\n")  # type: ignore[operator]
    start = core = old.rfind(nl, 0, head) + 1
    for _ in range(context):
        if start == 0:
            break
        start = old.rfind(nl, 0, start - 1) + 1
    last = len(old) - tail  # where the old text's last difference ends
    old_core_end = last if last == core or old[last - 1 : last] == nl else _line_end(old, nl, last)
    old_end = old_core_end
    for _ in range(context):
        old_end = _line_end(old, nl, old_end)
    shift = len(new) - len(old)
    return _Span(start, core, old_core_end, old_core_end + shift, old_end, old_end + shift)


def _line_end(text: AnyStr, nl: AnyStr, at: int) -> int:
    """Where the line holding ``text[at]`` ends, its newline included."""
    found = text.find(nl, at)
    return len(text) if found < 0 else found + 1


def diff(
    old: str, new: str, context: int = 3, known: Known | None = None, max_chars: int = DEFAULT_MAX_DIFF_CHARS
) -> Diff:
    """The line diff of two texts: its hunks with ``context`` lines, as many as fit in
    ``max_chars`` characters. With ``known`` the texts are compared and counted from what the
    caller knows, not from their ends."""
    head = same_head(old, new, known.head if known else 0)
    if head == len(old) == len(new):
        return Diff([], 0, 0, max_chars)
    tail = same_tail(old, new, head, known.tail if known else 0)
    span = _span(old, new, head, tail, context)
    if known is None:
        lo = old.count("\n", 0, span.start)
    elif span.start <= known.at:
        lo = known.lines - old.count("\n", span.start, known.at)
    else:
        lo = known.lines + old.count("\n", known.at, span.start)
    lines = old.count("\n", span.start, span.old_end) + new.count("\n", span.start, span.new_end)
    chars = span.old_end + span.new_end - 2 * span.start
    if lines <= max(MATCHED_LINES, chars // LINE_CHARS):
        return _matched(old[span.start : span.old_end], new[span.start : span.new_end], lo, context, max_chars)
    return _replaced(old, new, span, lo, max_chars)


def _matched(old: str, new: str, lo: int, context: int, max_chars: int) -> Diff:
    """The diff of two texts of whole lines (the first is line ``lo + 1``), their lines matched;
    what it shows is cut from the texts, not joined from their lines, which are let go once
    matched."""
    a, b = split_lines(old), _LazyLines(new)
    starts = _starts(a), b.starts
    matching = line_matching.match(a, b)
    del a, b
    out = _Cutter(max_chars)
    hunk: Hunk | None = None
    end = lo + 1, lo + 1  # the lines after the hunk's last, so far
    for code in matching.hunks(context):
        if code is None:  # the hunk ends: its header's counts
            if hunk is not None:
                hunk.old_lines, hunk.new_lines = end[0] - hunk.old_start, end[1] - hunk.new_start
            hunk = None
            continue
        tag, i1, i2, j1, j2 = code
        end = lo + i2 + 1, lo + j2 + 1
        if hunk is None:
            if out.full:
                break
            hunk = Hunk(lo + i1 + 1, 0, lo + j1 + 1, 0)
            out.start(hunk)
        runs = [(" ", old, starts[0][i1], starts[0][i2])]
        if tag != "equal":
            runs = [("-", old, starts[0][i1], starts[0][i2]), ("+", new, starts[1][j1], starts[1][j2])]
        for sign, text, start, stop in runs:
            if out.full:
                break
            if start < stop:
                out.add(sign, text, start, stop)
    same = matching.same
    unmatched = None if matching.cut is None else (lo + matching.cut[0] + 1, lo + matching.cut[1] + 1)
    return out.diff(matching.m - same, matching.n - same, unmatched)


def _starts(lines: Iterable[str]) -> array[int]:
    """Where each of ``lines`` starts in their text, and where the last ends."""
    return array("q", itertools.accumulate(map(len, lines), initial=0))


class _LazyLines(Sequence[str]):
    """The lines of a text, each made when it is asked for (read in turn, or sliced): the
    lines of a diff's new text are never all held at once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = _starts(self)

    def __iter__(self) -> Iterator[str]:
        at = 0
        while at < len(self.text):  # some 64 KiB of whole lines at a time
            end = self.text.find("\n", at + CHUNK) + 1 or len(self.text)
            yield from split_lines(self.text[at:end])
            at = end

    def __len__(self) -> int:
        return len(self.starts) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, _ = index.indices(len(self))
            return split_lines(self.text[self.starts[start] : self.starts[stop]]) if start < stop else []
        at = range(len(self))[index]
        return self.text[self.starts[at] : self.starts[at + 1]]


def _replaced(old: str, new: str, span: _Span, lo: int, max_chars: int) -> Diff:
    """The diff of a span too long to match line by line: one hunk, its changed lines one
    replacement; nothing is split but what is shown."""
    above = old.count("\n", span.start, span.core)
    removed = _count_lines(old, span.core, span.old_core_end)
    added = _count_lines(new, span.core, span.new_core_end)
    below = _count_lines(old, span.old_core_end, span.old_end)
    out = _Cutter(max_chars)
    out.start(Hunk(lo + 1, above + removed + below, lo + 1, above + added + below))
    runs = [
        (" ", old, span.start, span.core),
        ("-", old, span.core, span.old_core_end),
        ("+", new, span.core, span.new_core_end),
        (" ", old, span.old_core_end, span.old_end),
    ]
    for sign, text, start, stop in runs:
        if out.full:
            break
        if start < stop:
            out.add(sign, text, start, stop)
    return out.diff(added, removed, (lo + above + 1, lo + above + 1))


def _count_lines(text: str, start: int, stop: int) -> int:
    return text.count("\n", start, stop) + (stop > start and text[stop - 1] != "\n")


class _Cutter:
    """Hunks gathered while they fit in ``limit`` characters (each line counts its characters
    and its sign, each header ``HEADER_CHARS``), and the lines added and removed they show."""

    def __init__(self, limit: int) -> None:
        self.limit, self.size, self.full = limit, 0, False
        self.hunks: list[Hunk] = []
        self.shown = {"+": 0, "-": 0, " ": 0}

    def start(self, hunk: Hunk) -> None:
        """``hunk`` shown, if its header fits, as the one lines are added to (its counts may
        come later: a header is counted as ``HEADER_CHARS``)."""
        if self.full or self.size + HEADER_CHARS > self.limit:
            self.full = True
            return
        self.size += HEADER_CHARS
        self.hunks.append(hunk)

    def add(self, sign: str, text: str, start: int, stop: int) -> None:
        """The lines of ``text[start:stop]`` (whole lines) that fit, as a run of the current hunk
        (``full`` when some did not); only those shown are copied, none is split apart."""
        room = self.limit - self.size
        piece = text[start : min(stop, start + room)]
        count = _count_lines(piece, 0, len(piece))
        if start + len(piece) == stop and len(piece) + count <= room:
            self._row(sign, piece, count, len(piece) + count)
            return
        # Whole lines only, with room for their signs: at most ``room`` characters in all.
        cut = piece.rfind("\n", 0, max(0, room - piece.count("\n"))) + 1
        if cut:
            count = piece.count("\n", 0, cut)
            self._row(sign, piece[:cut], count, cut + count)
        self.full = True

    def _row(self, sign: str, block: str, count: int, cost: int) -> None:
        self.hunks[-1].rows.append((sign, block))
        self.shown[sign] += count
        self.size += cost

    def diff(self, added: int, removed: int, unmatched: tuple[int, int] | None) -> Diff:
        left_out = (added - self.shown["+"], removed - self.shown["-"]) if self.full else None
        return Diff(self.hunks, added, removed, self.limit, left_out, unmatched)


def unified_diff(
    old: str,
    new: str,
    name: str,
    new_name: str | None = None,
    context: int = 3,
    known: Known | None = None,
    max_chars: int = DEFAULT_MAX_DIFF_CHARS,
) -> str:
    """A unified diff of two texts, git style (empty when they are equal); ``known`` and
    ``max_chars`` as for ``diff``."""
    return rendered(diff(old, new, context, known, max_chars), name, new_name)


def rendered(found: Diff, name: str, new_name: str | None = None) -> str:
    """``found`` as a unified diff, git style, ending with what it leaves out (empty when
    the texts are equal)."""
    notes = found.notes()
    if not found.hunks and not notes:
        return ""
    out = [f"--- {name}\n", f"+++ {new_name or name}\n"]
    for hunk in found.hunks:
        out.append(hunk.header())
        out += [_signed(sign, block) for sign, block in hunk.rows]
    out += [note + "\n" for note in notes]
    return printable("".join(out))


def _signed(sign: str, block: str) -> str:
    """The lines of ``block``, each after ``sign`` (a last line without a newline says so)."""
    body = sign + block.replace("\n", "\n" + sign)
    return body[:-1] if block.endswith("\n") else body + "\n\\ No newline at end of file\n"


def unified_diff_bytes(
    old: bytes, new: bytes, name: str, known: Known, context: int = 3, max_chars: int = DEFAULT_MAX_DIFF_CHARS
) -> str:
    """``unified_diff`` of two UTF-8 texts given as their bytes, ``known`` counted in bytes:
    only the lines the diff shows are decoded and compared (the same diff as of the texts)."""
    head = same_head(old, new, known.head)
    tail = same_tail(old, new, head, known.tail)
    # The lines ``diff`` would show of the texts: from `context` lines above the first
    # difference to `context` lines below the last (it finds the same ones inside them).
    span = _span(old, new, head, tail, context)
    if span.start <= known.at:
        above = known.lines - newlines(old, span.start, known.at)
    else:
        above = known.lines + newlines(old, known.at, span.start)
    shown = old[span.start : span.old_end].decode(), new[span.start : span.new_end].decode()
    return unified_diff(*shown, name, context=context, known=Known(0, 0, 0, above), max_chars=max_chars)
