"""Placing a patch's hunks in a file and applying them, in time linear in the file plus the
patch, keeping every byte the hunks do not change.

A file is held as its lines' texts and their own endings (``\\n``, ``\\r\\n``, or none for a
last line without one), so a mixed-ending file keeps each line's ending. A hunk is found by
its old lines (context and removed), exactly, else with each line's surrounding whitespace
ignored; only at or after the end of the hunk before it, and in one place only (two are a
CONFLICT naming both). Candidates come from an index of the file's lines, starting from the
hunk's rarest line, and every comparison counts against a budget: a patch too costly to
place is refused, never left to run.

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
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from vfs_mcp.errors import Conflict, InvalidArgument
from vfs_mcp.ops.patchparse import Hunk
from vfs_mcp.ops.textfile import line_range

PLACING_BUDGET = 50_000_000
"""Line comparisons one patch may spend placing its hunks (a few seconds at most)."""


@dataclass
class Lines:
    """A text as lines: each one's text and its own ending."""

    texts: list[str]
    ends: list[str]
    bom: str = ""
    """A byte-order mark the text starts with: not part of its first line's text."""

    @classmethod
    def of(cls, raw: str) -> Lines:
        bom = "\ufeff" if raw.startswith("\ufeff") else ""
        parts = raw[len(bom) :].split("\n")
        last = parts.pop()
        texts, ends = [], []
        for part in parts:
            if part.endswith("\r"):
                texts.append(part[:-1])
                ends.append("\r\n")
            else:
                texts.append(part)
                ends.append("\n")
        if last:
            texts.append(last)
            ends.append("")
        return cls(texts, ends, bom)

    def join(self) -> str:
        return self.bom + "".join(itertools.chain.from_iterable(zip(self.texts, self.ends, strict=True)))

    @property
    def usual_end(self) -> str:
        """The ending most of the lines have ("\\n" for a file without any)."""
        counts = Counter(end for end in self.ends if end)
        return "\r\n" if counts["\r\n"] > counts["\n"] else "\n"


@dataclass
class Budget:
    """Line comparisons left for placing one patch's hunks."""

    left: int = PLACING_BUDGET

    def spend(self, count: int, where: str) -> None:
        self.left -= count
        if self.left < 0:
            raise InvalidArgument(
                f"{where} is too costly to place (its lines repeat all over the file); give each hunk a few "
                "distinctive context lines, or split the patch into smaller ones"
            )


@dataclass
class Placed:
    """A hunk and where its old lines start in the file; ``trimmed``: found with whitespace ignored."""

    hunk: Hunk
    at: int
    trimmed: bool


@dataclass
class _Index:
    """Where each line text (or its trimmed form) is, built on first use."""

    texts: list[str]
    exact: dict[str, list[int]] = field(default_factory=dict)
    trimmed: dict[str, list[int]] = field(default_factory=dict)

    def of(self, trimmed: bool) -> dict[str, list[int]]:
        table = self.trimmed if trimmed else self.exact
        if not table and self.texts:
            for number, text in enumerate(self.texts):
                table.setdefault(text.strip() if trimmed else text, []).append(number)
        return table


def place(lines: Lines, hunks: list[Hunk], shown: str, budget: Budget) -> list[Placed]:
    """Where each hunk applies, in order, each after the one before; CONFLICT for a hunk not
    in the file or in two places."""
    index = _Index(lines.texts)
    placed: list[Placed] = []
    cursor = 0
    for number, hunk in enumerate(hunks, 1):
        where = f"{shown}: hunk {number}"
        old = hunk.old
        if not old:  # an insertion with no context: the diff's line number, or the end
            at = min(len(lines.texts), hunk.old_start if hunk.old_start is not None else len(lines.texts))
            placed.append(Placed(hunk, max(at, cursor), False))
            continue
        start = _after_anchor(index, hunk.anchor, cursor) if hunk.anchor else cursor
        for trimmed in (False, True):
            found = _matches(lines.texts, index, old, start, trimmed, budget, where)
            if len(found) > 1:
                raise Conflict(
                    f"{where} matches at lines {found[0] + 1} and {found[1] + 1}; add context lines to make it unique"
                )
            if found:
                placed.append(Placed(hunk, found[0], trimmed))
                cursor = found[0] + len(old)
                break
        else:
            raise Conflict(
                f"{where} does not match the file (its context and removed lines are not there); read it again"
            )
    return placed


def _after_anchor(index: _Index, anchor: str, cursor: int) -> int:
    """The line after the first one at or after ``cursor`` that the anchor names, else ``cursor``."""
    positions = index.of(True).get(anchor.strip(), [])
    found = bisect.bisect_left(positions, cursor)
    return positions[found] + 1 if found < len(positions) else cursor


def _matches(
    texts: list[str], index: _Index, old: list[str], start: int, trimmed: bool, budget: Budget, where: str
) -> list[int]:
    """Up to two places at or after ``start`` where ``old`` is, starting from its rarest line."""
    table = index.of(trimmed)
    wanted = [line.strip() for line in old] if trimmed else old
    # The rarest line of the hunk: each of its places is one candidate.
    offset, positions = min(((j, table.get(line, [])) for j, line in enumerate(wanted)), key=lambda item: len(item[1]))
    same: Callable[[int], bool]
    if trimmed:
        same = lambda at: [line.strip() for line in texts[at : at + len(old)]] == wanted  # noqa: E731
    else:
        same = lambda at: texts[at : at + len(old)] == old  # noqa: E731
    found: list[int] = []
    for position in positions[bisect.bisect_left(positions, start + offset) :]:
        at = position - offset
        if at + len(old) > len(texts):
            break
        budget.spend(len(old), where)
        if same(at):
            found.append(at)
            if len(found) > 1:
                break
    return found


def apply(lines: Lines, placed: list[Placed], shown: str) -> Lines:
    """The file with every placed hunk applied; untouched lines and context keep their bytes."""
    texts: list[str] = []
    ends: list[str] = []
    usual = lines.usual_end
    done = 0

    def add(text: str, end: str) -> None:
        if ends and ends[-1] == "":
            ends[-1] = usual  # a line that was last gets an ending once something follows it
        texts.append(text)
        ends.append(end)

    for number, item in enumerate(placed, 1):
        for i in range(done, item.at):
            add(lines.texts[i], lines.ends[i])
        at = item.at
        added = _reindented(item, lines, f"{shown}: hunk {number}") if item.trimmed else None
        plus = iter(added) if added is not None else None
        last_removed = ""
        for sign, text in item.hunk.lines:
            if sign == " ":
                add(lines.texts[at], lines.ends[at])
                at += 1
            elif sign == "-":
                last_removed = lines.ends[at]
                at += 1
            else:
                end = last_removed or (ends[-1] if ends and ends[-1] else usual)
                add(next(plus) if plus is not None else text, end)
        done = at
        if at == len(lines.texts) and texts:
            if item.hunk.new_ends_without_newline:
                ends[-1] = ""
            elif item.hunk.old_ends_without_newline:
                ends[-1] = ends[-1] or usual
            elif lines.ends and lines.ends[-1] == "":
                ends[-1] = ""  # the patch does not say: the file keeps ending without a newline
    for i in range(done, len(lines.texts)):
        add(lines.texts[i], lines.ends[i])
    return Lines(texts, ends, lines.bom)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _reindented(item: Placed, lines: Lines, where: str) -> list[str]:
    """The hunk's added lines in the file's indentation (see the module's docstring)."""
    pairs: list[tuple[str, str]] = []  # (indent in the patch, indent in the file) of each old line
    above: list[int] = []  # for each added line, the old line above it (-1: none yet)
    at = item.at
    for sign, text in item.hunk.lines:
        if sign == "+":
            above.append(len(pairs) - 1)
        else:
            file_line = lines.texts[at]
            at += 1
            if text.strip():
                pairs.append((_indent(text), _indent(file_line)))
            elif pairs:
                pairs.append(pairs[-1])
            else:
                pairs.append(("", ""))
    tabs = any("\t" in file for _, file in pairs)
    unit = _unit([patch for patch, _ in pairs])
    out: list[str] = []
    for line, row in zip(item.hunk.new_added(), above, strict=True):
        indent, body = _indent(line), line.lstrip(" \t")
        if not body:
            out.append(line)
            continue
        patch_indent, file_indent = pairs[max(row, 0)] if pairs else ("", "")
        if indent.startswith(patch_indent):
            extra = indent[len(patch_indent) :]
            if tabs and "\t" in file_indent and extra and not extra.strip(" "):
                extra = "\t" * (len(extra) // unit) + " " * (len(extra) % unit)
            out.append(file_indent + extra + body)
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


def _unit(indents: list[str]) -> int:
    """The smallest step between the widths of ``indents`` (4 when there is none)."""
    widths = sorted({len(indent) for indent in indents})
    steps = [b - a for a, b in itertools.pairwise(widths) if b > a]
    return min(steps) if steps else 4


def diff_lines(old: Lines, placed: list[Placed], new_lines: Lines) -> Iterator[str]:
    """The unified diff of the placed hunks (headers excluded), from where they are: linear in
    what they touch, no line-matching search. Each hunk keeps the context the patch gave it."""
    shift = 0
    for item in placed:
        body = item.hunk.lines
        old_count = sum(1 for sign, _ in body if sign != "+")
        new_count = sum(1 for sign, _ in body if sign != "-")
        new_at = item.at + shift
        yield f"@@ -{line_range(item.at + 1, old_count)} +{line_range(new_at + 1, new_count)} @@\n"
        at, to = item.at, new_at
        for sign, _ in body:
            if sign == " ":
                yield " " + old.texts[at] + "\n"
                at += 1
                to += 1
            elif sign == "-":
                yield "-" + old.texts[at] + "\n" + _no_newline(old, at)
                at += 1
            else:
                yield "+" + new_lines.texts[to] + "\n" + _no_newline(new_lines, to)
                to += 1
        shift += new_count - old_count


def _no_newline(lines: Lines, at: int) -> str:
    return "\\ No newline at end of file\n" if lines.ends[at] == "" else ""
