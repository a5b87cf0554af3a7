"""Placing a patch's hunks in a file and applying them, in time linear in the file plus the
patch, keeping every byte the hunks do not change.

A file is held as its lines' texts and their own endings (``\\n``, ``\\r\\n``, or none for a
last line without one), so a mixed-ending file keeps each line's ending. A hunk is found by
its old lines (context and removed), exactly, else with each line's surrounding whitespace
ignored; only at or after the end of the hunk before it, and in one place only (two are a
CONFLICT naming both). Candidates come from an index of the file's lines (of every few lines
only, where every hunk has as many: a pass over a part of the file finds every place), from
the hunk's rarest lines, and every comparison counts against a budget: a patch too costly to
place is refused, never left to run. The usual hunk, whose first lines are among the index's
once in all, is compared at that one place and no search is made (``_only_place``).

Context lines keep the file's bytes whatever found them. Added lines take the ending of the
line they replace (else of the line before them, else the file's usual one); in a hunk found
only with whitespace ignored they take the file's indentation too: each added line is
indented as the old line above it is in the file, plus its own extra depth; a line that
steps back out finds its depth among the hunk's other lines, and where those disagree the
hunk is refused as ambiguous.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from vfs_mcp.errors import Conflict, InvalidArgument
from vfs_mcp.jail.entries import Pieces
from vfs_mcp.jail.tally import count_steps
from vfs_mcp.ops.diff.hunk import Hunk, line_range
from vfs_mcp.ops.edits.indentation import indent_of, indent_unit, retabbed

PLACING_BUDGET = 50_000_000
"""Line comparisons one patch may spend placing its hunks (a few seconds at most)."""


@dataclass
class Lines:
    """A text as lines: each one's text and its own ending."""

    texts: list[str]
    ends: list[str]
    bom: str = ""
    """A byte-order mark the text starts with: not part of its first line's text."""
    usual_end: str = "\n"
    """The ending most of the lines have ("\\n" for a file without any)."""

    @classmethod
    def of(cls, raw: str) -> Lines:
        bom = "\ufeff" if raw.startswith("\ufeff") else ""
        body = raw[len(bom) :]
        texts = body.split("\n")
        last = texts.pop()
        crlf = body.count("\r\n") if "\r" in body else 0
        if not crlf:  # the usual case, without a loop over the lines
            ends = ["\n"] * len(texts)
        else:
            ends = ["\r\n" if text.endswith("\r") else "\n" for text in texts]
            texts = [text[:-1] if end == "\r\n" else text for text, end in zip(texts, ends, strict=True)]
        if last:
            texts.append(last)
            ends.append("")
        usual = "\r\n" if 2 * crlf > len(texts) else "\n"
        return cls(texts, ends, bom, usual)

    def join(self) -> str:
        for end in ("\n", "\r\n"):  # every line ends the same way (the last maybe without): one join
            same = self.ends.count(end)
            if same == len(self.ends):
                return self.bom + end.join(self.texts) + (end if self.texts else "")
            if same == len(self.ends) - 1 and self.ends[-1] == "":
                return self.bom + end.join(self.texts)
        return self.bom + "".join(itertools.chain.from_iterable(zip(self.texts, self.ends, strict=True)))


@dataclass
class Comparisons:
    """Line comparisons left for placing one patch's hunks."""

    left: int = PLACING_BUDGET

    def spend(self, count: int, where: str) -> None:
        self.left -= count
        if self.left < 0:
            raise InvalidArgument(
                f"{where} is too costly to place (its lines repeat all over the file); give each hunk a few "
                "distinctive context lines, or split the patch into smaller ones"
            )


@dataclass(slots=True)
class Placed:
    """A hunk and where its old lines start in the file; ``trimmed``: found with whitespace
    ignored; ``old`` and ``new``: its old and new lines (``hunk.old``, ``hunk.new``, made once)."""

    hunk: Hunk
    at: int
    trimmed: bool
    old: list[str]
    new: list[str]


STEP = 8
"""The sparsest index the placer keeps: of every ``STEP``-th line of the file at most (a patch's
hunks have 6-7 old lines where ``git diff`` gives 3 of context: the index then holds every 6th or
7th line, each hunk looks up as many of its first lines)."""
FEW = 4
"""Candidates of a hunk from a sparse table above which its rarest line is looked up instead."""


@dataclass
class _Index:
    """Where each line the hunks look for is in the file (exactly, or trimmed), each table built
    on first use in one pass that keeps only those lines.

    A table may hold only the file's lines at multiples of a ``step``, for a ``step``-th of the
    pass: wherever a hunk of at least ``step`` old lines is, the file's lines at multiples of
    ``step`` hold exactly one of its lines in each class of its offsets alike modulo ``step``,
    so the places of any line of each class, in such a table, are every place of the hunk."""

    texts: list[str]
    wanted: list[list[str]]
    tables: dict[tuple[bool, int], Mapping[str, Sequence[int]]] = field(default_factory=dict)

    def of(self, trimmed: bool, step: int = 1) -> Mapping[str, Sequence[int]]:
        """Each line wanted that the file holds on a multiple of ``step``, and the numbers of
        those lines (trimmed: each line as ``line.strip()``)."""
        table = self.tables.get((trimmed, step))
        if table is None:
            keys = set(itertools.chain.from_iterable(self.wanted))
            texts = self.texts[::step] if step > 1 else self.texts
            if trimmed:
                keys, texts = set(map(str.strip, keys)), list(map(str.strip, texts))
            # The lines wanted, found without a Python step for each line, and their numbers.
            where = list(itertools.compress(itertools.count(), map(keys.__contains__, texts)))
            found = list(map(texts.__getitem__, where))
            numbers = list(map(step.__mul__, where)) if step > 1 else where
            table = dict(zip(found, zip(numbers), strict=True))
            if len(table) < len(numbers):  # some line found twice: a list of places for each
                places: dict[str, list[int]] = {}
                for line, number in zip(found, numbers, strict=True):
                    places.setdefault(line, []).append(number)
                table = places
            self.tables[trimmed, step] = table
        return table


def place(lines: Lines, hunks: list[Hunk], shown: str, budget: Comparisons) -> list[Placed]:
    """Where each hunk applies, in order, each after the one before; CONFLICT for a hunk not
    in the file or in two places."""
    olds = [hunk.old for hunk in hunks]
    index = _Index(lines.texts, olds + [[hunk.anchor] for hunk in hunks if hunk.anchor])
    step = min(STEP, min((len(old) for old in olds if old), default=1))
    placed: list[Placed] = []
    cursor = 0
    sparse: Mapping[str, Sequence[int]] | None = None  # the index's table for ``_only_place``, once used
    for number, (hunk, old) in enumerate(zip(hunks, olds, strict=True), 1):
        if not old:  # an insertion with no context: the diff's line number, or the end
            at = min(len(lines.texts), hunk.old_start - 1 if hunk.old_start else len(lines.texts))
            cursor = max(at, cursor)  # the hunks after it apply after it
            placed.append(Placed(hunk, cursor, False, old, hunk.new))
            continue
        if not hunk.anchor and budget.left >= len(old):
            sparse = index.of(False, step) if sparse is None else sparse
            at = _only_place(sparse, lines.texts, old, cursor, step)
            if at >= 0:  # the usual hunk, found as the search below finds it, with fewer steps
                budget.left -= len(old)
                count_steps(len(old))
                placed.append(Placed(hunk, at, False, old, hunk.new))
                cursor = at + len(old)
                continue
        start = _after_anchor(index, hunk.anchor, cursor) if hunk.anchor else cursor
        for trimmed in (False, True):
            found = _matches(lines.texts, index, old, start, 1 if trimmed else step, trimmed, budget)
            if found is None:
                budget.spend(0, f"{shown}: hunk {number}")  # over budget: says so, naming the hunk
            elif len(found) > 1:
                raise Conflict(
                    f"{shown}: hunk {number} matches at lines {found[0] + 1} and {found[1] + 1}; add context "
                    "lines to make it unique"
                )
            elif found:
                placed.append(Placed(hunk, found[0], trimmed, old, hunk.new))
                cursor = found[0] + len(old)
                break
        else:
            raise Conflict(
                f"{shown}: hunk {number} does not match the file (its context and removed lines are not there); "
                "read it again"
            )
    return placed


_NOWHERE: Sequence[int] = ()


def _only_place(sparse: Mapping[str, Sequence[int]], texts: list[str], old: list[str], start: int, step: int) -> int:
    """Where ``old`` is exactly, at or after ``start``, when its first ``step`` lines are on the
    lines of the ``sparse`` table (``_Index.of``) once among them (the usual hunk:
    ``_candidates``' first case, its one candidate compared as ``_matches`` compares it); else
    -1 (the search then)."""
    at = None
    for j, line in enumerate(old[:step]):
        here = sparse.get(line)
        if here:
            if at is not None or len(here) > 1:
                return -1
            at = here[0] - j
    size = len(old)
    if at is None or at < start or at + size > len(texts) or texts[at : at + size] != old:
        return -1
    return at


def _after_anchor(index: _Index, anchor: str, cursor: int) -> int:
    """The line after the first one at or after ``cursor`` that the anchor names, else ``cursor``."""
    positions = index.of(True).get(anchor.strip(), _NOWHERE)
    found = bisect.bisect_left(positions, cursor)
    return positions[found] + 1 if found < len(positions) else cursor


def _matches(
    texts: list[str], index: _Index, old: list[str], start: int, step: int, trimmed: bool, budget: Comparisons
) -> list[int] | None:
    """Up to two places at or after ``start`` where ``old`` is (None when the budget ran out)."""
    wanted = list(map(str.strip, old)) if trimmed else old
    offset, positions = _candidates(index, wanted, step, trimmed)
    size = len(old)
    found: list[int] = []
    for position in itertools.islice(positions, bisect.bisect_left(positions, start + offset), None):
        at = position - offset
        if at + size > len(texts):
            break
        budget.left -= size
        count_steps(size)
        if budget.left < 0:
            return None
        window = texts[at : at + size]
        if (window == old) if not trimmed else (list(map(str.strip, window)) == wanted):
            found.append(at)
            if len(found) > 1:
                break
    return found


def _candidates(index: _Index, wanted: list[str], step: int, trimmed: bool) -> tuple[int, Sequence[int]]:
    """Where ``wanted`` may start in the file, in order, as (an offset, numbers of lines that
    start there less the offset). From the table of every ``step``-th line: wherever the hunk
    is, one of its lines in each class of offsets alike modulo ``step`` is on a line of that
    table, so the places there of one line of each class (the one with the fewest) are every
    candidate, each once; else, where those are more than ``FEW``, the places of its rarest line."""
    if step > 1:
        sparse = index.of(trimmed, step)
        hits = list(map(sparse.get, wanted[:step], itertools.repeat(_NOWHERE)))
        counts = list(map(len, hits))
        if sum(counts) == 1:  # the usual hunk: its lines are each once in the file
            j = counts.index(1)
            return j, hits[j]
        rest = list(map(sparse.get, wanted[step:], itertools.repeat(_NOWHERE)))
        hits += rest
        counts += map(len, rest)
        picked = [min(range(r, len(wanted), step), key=counts.__getitem__) for r in range(step)]
        if sum(map(counts.__getitem__, picked)) <= FEW:
            return 0, sorted(at - j for j in picked for at in hits[j])
    table = index.of(trimmed)
    offset, positions, fewest = 0, _NOWHERE, -1
    for j, line in enumerate(wanted):
        here = table.get(line, _NOWHERE)
        if fewest < 0 or len(here) < fewest:
            offset, positions, fewest = j, here, len(here)
            if fewest <= 1:
                break
    return offset, positions


_RUNS = re.compile(r" +|-+|\++")
"""A hunk's runs of context, removed and added lines, in its signs."""


def apply(lines: Lines, placed: list[Placed], shown: str) -> Lines:
    """The file with every placed hunk applied; untouched lines and context keep their bytes."""
    old_texts, old_ends, usual = lines.texts, lines.ends, lines.usual_end
    texts: list[str] = []
    ends: list[str] = []

    def keep(start: int, stop: int) -> None:
        """The file's own lines ``[start, stop)``, as they are (in one slice)."""
        if start < stop:
            if ends and not ends[-1]:
                ends[-1] = usual  # a line that was last gets an ending once something follows it
            texts.extend(old_texts[start:stop])
            ends.extend(old_ends[start:stop])

    kept = 0  # the file's lines from here to ``at`` are kept: copied in one slice before a change
    for number, item in enumerate(placed, 1):
        hunk = item.hunk
        added = _reindented(item, lines, f"{shown}: hunk {number}") if item.trimmed else hunk.new_added()
        at = item.at
        plus = 0
        last_removed = ""
        for run in _RUNS.finditer(hunk.signs):
            count = run.end() - run.start()
            sign = hunk.signs[run.start()]
            if sign == " ":
                at += count
                continue
            keep(kept, at)
            if sign == "-":
                last_removed = old_ends[at + count - 1]
                at += count
            else:
                end = last_removed or (ends[-1] if ends else "") or usual
                if ends and not ends[-1]:
                    ends[-1] = usual
                texts.extend(added[plus : plus + count])
                ends.extend([end] * count)
                plus += count
            kept = at
        if at == len(old_texts):
            keep(kept, at)
            kept = at
            if not texts:
                continue
            if hunk.new_ends_without_newline:
                ends[-1] = ""
            elif hunk.old_ends_without_newline:
                ends[-1] = ends[-1] or usual
            elif old_ends and old_ends[-1] == "":
                ends[-1] = ""  # the patch does not say: the file keeps ending without a newline
    keep(kept, len(old_texts))
    return Lines(texts, ends, lines.bom, usual)


def spliced(raw: str, lines: Lines, placed: list[Placed]) -> str | None:
    """What ``apply`` gives, as text: ``raw`` (the text ``lines`` holds) cut between the hunks,
    each hunk's new lines in between, with no list of the new lines nor a step for each line;
    None where that does not hold (see ``_plain``): ``apply`` then."""
    if not _plain(lines, placed):
        return None
    pieces: list[str] = []
    kept = 0  # where the text not yet copied starts
    for start, stop, new in _cuts(raw, lines, placed):
        pieces += (raw[kept:start], new)
        kept = stop
    pieces.append(raw[kept:])
    return "".join(pieces)


def spliced_bytes(data: bytes, raw: str, lines: Lines, placed: list[Placed]) -> Pieces | None:
    """``spliced`` in UTF-8, where ``raw`` is ``data`` read as ASCII (each character a byte):
    ``data`` itself cut between the hunks, as pieces (views of it, each hunk's new lines between)
    never joined: a local file writes them as they are (``Pieces``)."""
    if not _plain(lines, placed):
        return None
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    kept = 0  # where the bytes not yet copied start
    for start, stop, new in _cuts(raw, lines, placed):
        pieces += (view[kept:start], new.encode())
        kept = stop
    pieces.append(view[kept:])
    return Pieces(pieces)


def _cuts(raw: str, lines: Lines, placed: list[Placed]) -> Iterator[tuple[int, int, str]]:
    """Where each placed hunk's old lines are in ``raw`` (start, stop), and its new lines' text,
    for a file that is ``_plain``."""
    texts, end = lines.texts, lines.usual_end
    offset, line = len(lines.bom), 0  # where ``line`` starts in ``raw``
    for item in placed:
        old = item.old
        block = end.join(old) + end if old else ""
        # Found exactly and only once from ``line`` on (no anchor moved its start past it): its
        # first place in the text from ``offset`` that starts a line is where it is.
        at = _line_aligned(raw, block, end, offset) if old and not item.hunk.anchor else -1
        if at < 0:
            at = offset + sum(map(len, texts[line : item.at])) + (item.at - line) * len(end)
        line = item.at + len(old)
        offset = at + len(block)
        yield at, offset, end.join(item.new) + end if item.new else ""


def _line_aligned(raw: str, block: str, end: str, offset: int) -> int:
    """Where ``block`` (whole lines) is first in ``raw`` at a line start from ``offset`` on
    (a line start itself), -1 where it is not."""
    if raw.startswith(block, offset):
        return offset
    found = raw.find(end + block, offset)
    return found + len(end) if found >= 0 else -1


def _plain(lines: Lines, placed: list[Placed]) -> bool:
    """Every line ends as most do (the last one maybe without an ending), and every hunk was
    found exactly, before the file's last line: each hunk's new lines are its own, ending as
    most lines do."""
    ends, usual = lines.ends, lines.usual_end
    return (
        bool(ends)
        and not any(item.trimmed for item in placed)
        and (not placed or placed[-1].at + len(placed[-1].old) < len(ends))
        and ends.count(usual) == len(ends) - (ends[-1] == "")
    )


def _reindented(item: Placed, lines: Lines, where: str) -> list[str]:
    """The hunk's added lines in the file's indentation (see the module's docstring)."""
    pairs: list[tuple[str, str]] = []  # (indent in the patch, indent in the file) of each old line
    above: list[int] = []  # for each added line, the old line above it (-1: none yet)
    at = item.at
    for sign, text in zip(item.hunk.signs, item.hunk.texts, strict=True):
        if sign == "+":
            above.append(len(pairs) - 1)
        else:
            file_line = lines.texts[at]
            at += 1
            if text.strip():
                pairs.append((indent_of(text), indent_of(file_line)))
            elif pairs:
                pairs.append(pairs[-1])
            else:
                pairs.append(("", ""))
    unit = indent_unit(patch for patch, _ in pairs)
    out: list[str] = []
    for line, row in zip(item.hunk.new_added(), above, strict=True):
        indent, body = indent_of(line), line.lstrip(" \t")
        if not body:
            out.append(line)
            continue
        patch_indent, file_indent = pairs[max(row, 0)] if pairs else ("", "")
        if indent.startswith(patch_indent):
            out.append(file_indent + retabbed(indent[len(patch_indent) :], file_indent, unit) + body)
            continue
        # A line stepping back out: its depth is the file's for the old lines at that depth.
        known = {file for patch, file in pairs if patch == indent}
        if len(known) != 1:
            raise Conflict(
                f"{where} matched only with whitespace ignored, and the indentation of its added line "
                f"{body[:40]!r} cannot be told from the file's (its context is indented inconsistently); "
                "give the hunk with the file's own indentation"
            )
        out.append(known.pop() + body)
    return out


def diff_lines(old: Lines, placed: list[Placed], new_lines: Lines | None) -> Iterator[str]:
    """The unified diff of the placed hunks (headers excluded), one string a hunk, from where
    they are: linear in what they touch, no line-matching search. Each hunk keeps the context
    the patch gave it. ``new_lines``: the new file's lines, None when it was ``spliced``."""
    old_size = len(old.texts)
    new_size = old_size + sum(len(item.new) - len(item.old) for item in placed)
    shift = 0
    for item in placed:
        old_count, new_count = len(item.old), len(item.new)
        new_at = item.at + shift
        shift += new_count - old_count
        head = f"@@ -{line_range(item.at + 1, old_count)} +{line_range(new_at + 1, new_count)} @@\n"
        if not item.trimmed and item.at + old_count < old_size and new_at + new_count < new_size:
            # Found exactly, and short of either file's last line: the hunk's own lines are the
            # file's, and none of them lacks a newline (an empty hunk is its header alone).
            body = item.hunk.body
            yield head + body + "\n" if body else head
            continue
        signs = item.hunk.signs
        if not signs:
            yield head
            continue
        assert new_lines is not None  # a spliced file's hunks are all as above
        out = [head]
        at, to = item.at, new_at
        for sign in signs:
            if sign == "+":
                out.append(f"+{new_lines.texts[to]}\n{_no_newline(new_lines, to)}")
                to += 1
                continue
            out.append(f"{sign}{old.texts[at]}\n{_no_newline(old, at)}")
            at += 1
            to += sign == " "
        yield "".join(out)


def _no_newline(lines: Lines, at: int) -> str:
    return "\\ No newline at end of file\n" if lines.ends[at] == "" else ""
