"""Text edits: find-and-replace with three matching strategies (line edits: ``numbered``).

``edit_file`` tries each oldText exactly, then with whitespace normalised (keeping the
file's indentation), then fuzzily with a confidence score. A text found in more than one
place is a CONFLICT unless the edit says ``replace_all``; all edits apply or none do.

Every step is bounded: exact search is ``str.find``, the whitespace-normalised token match
runs on RE2 (linear time), fuzzy scoring is rapidfuzz's bit-parallel Indel similarity with a
time budget (then CONFLICT "no match within budget" with the best place found so far), and
one call takes at most ``MAX_EDITS`` edits and ``EDIT_WORK_CHARS`` of text scanned.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr

from vfs_mcp import changes
from vfs_mcp.changes import Plan
from vfs_mcp.errors import Conflict, InvalidArgument
from vfs_mcp.jail.entries import Pieces
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.globs import re2_options
from vfs_mcp.jail.resolve import Target
from vfs_mcp.jail.tally import count_matched
from vfs_mcp.ops.diff.unified import (
    DEFAULT_MAX_DIFF_CHARS,
    Known,
    same_head,
    same_tail,
    unified_diff,
    unified_diff_bytes,
)
from vfs_mcp.ops.edits.indentation import reindent
from vfs_mcp.ops.files.write import writable
from vfs_mcp.ops.text.document import DEFAULT_MAX_EDIT_BYTES, TextFile, hashed_into
from vfs_mcp.ops.text.find import find_all, find_all_bytes, newlines

FUZZY_THRESHOLD = 0.8
FUZZY_BUDGET_SECONDS = 2.0
"""Seconds one edit may spend scoring fuzzy candidates before it answers with the best so far."""
MAX_EDITS = 1000
EDIT_WORK_CHARS = 2_000_000_000
"""Edits times file size one call may scan (each edit scans the text as the edits before left it)."""
SHOWN_PLACES = 5
Strategy = Literal["exact", "whitespace", "fuzzy"]


class TextEdit(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    # Descriptions are paid for in every tools/list: only what the names do not say.
    old_text: str = Field(alias="oldText")
    new_text: str = Field(alias="newText", description="literal")
    replace_all: bool = False


class EditOptions(BaseModel):
    """Matching fallbacks (the camelCase spellings docs/xml-interface.md names are accepted too)."""

    model_config = ConfigDict(extra="forbid")

    preserve_indentation: bool = Field(
        True,
        validation_alias=AliasChoices("preserve_indentation", "preserveIndentation"),
    )
    normalize_whitespace: bool = Field(
        True,
        validation_alias=AliasChoices("normalize_whitespace", "normalizeWhitespace"),
    )
    partial_match: bool = Field(
        True,
        validation_alias=AliasChoices("partial_match", "partialMatch"),
    )


class MatchReport(BaseModel):
    edit: int = Field(description="0-based index of the edit")
    strategy: Strategy
    occurrences: int
    line_start: int = Field(description="1-based first line matched (first occurrence)")
    line_end: int
    confidence: float
    _start: int = PrivateAttr(0)
    """Where the first match starts in the text it was found in (the text before it is unchanged),"""
    _kept: int = PrivateAttr(0)
    """and the characters after the last one (unchanged too): what the diff need not compare again."""


class EditResult(BaseModel):
    path: str
    dry_run: bool
    changed: bool
    matches: list[MatchReport]
    diff: str
    sha256: str | None = Field(None, description="Hash of the new content (when written)")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _squash(line: str) -> str:
    return " ".join(line.split())


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each line, without its newline."""
    spans, start = [], 0
    for match in re.finditer("\n", text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def _conflict_many(number: int, text: str, starts: list[int], how: str, count: int | None = None) -> Conflict:
    count = len(starts) if count is None else count
    lines = ", ".join(str(_line_of(text, start)) for start in starts[:SHOWN_PLACES])
    more = f", … {count - SHOWN_PLACES} more" if count > SHOWN_PLACES else ""
    return Conflict(
        f"edit {number}: oldText {how} {count} times (lines {lines}{more}); "
        "add surrounding lines to make it unique, or set replace_all"
    )


def _exact(text: str, old: str, everything: bool) -> list[tuple[int, int]]:
    """Non-overlapping places of ``old``: all of them, or (enough to tell one from many) the first six."""
    return [(at, at + len(old)) for at in find_all(text, old, None if everything else SHOWN_PLACES + 1)]


def _tokens(text: str, old: str, everything: bool) -> tuple[list[tuple[int, int]], int]:
    """Places of oldText's words separated by any whitespace (RE2: linear, whatever the words):
    all of them or the first six, and how many there are.
    """
    import re2  # here: only this fallback needs it, and a first exact edit need not import it

    from vfs_mcp.ops.search.regex import SPACE

    tokens = old.split()
    gap = f"[{SPACE}]+" if "\n" in old.strip("\n") else r"[ \t]+"
    try:
        regex = re2.compile(gap.join(map(re.escape, tokens)), re2_options())
    except re2.error:
        return [], 0  # too many words to compile: no whitespace-normalised match
    spans: list[tuple[int, int]] = []
    count = 0
    for match in regex.finditer(text):
        count += 1
        if everything or len(spans) <= SHOWN_PLACES:
            spans.append(match.span())
    return spans, count


def _report(number: int, text: str, strategy: Strategy, spans: list[tuple[int, int]], confidence: float) -> MatchReport:
    start, end = spans[0]
    first = _line_of(text, start)
    report = MatchReport(
        edit=number,
        strategy=strategy,
        occurrences=len(spans),
        line_start=first,
        line_end=first + text.count("\n", start, max(start, end - 1)),  # counted from the first line, not the top
        confidence=round(confidence, 3),
    )
    report._start, report._kept = start, len(text) - spans[-1][1]
    return report


def _replace_spans(text: str, replacements: list[tuple[int, int, str]]) -> str:
    """Text with each (start, end) span replaced; spans are in order and do not overlap."""
    out, cursor = [], 0
    for start, end, new in replacements:
        out += [text[cursor:start], new]
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def _apply_one(text: str, number: int, edit: TextEdit, options: EditOptions) -> tuple[str, MatchReport]:
    old, new = edit.old_text, edit.new_text
    if not old:
        raise InvalidArgument(f"edit {number}: oldText is empty; use write_file or edit_file_at_line to insert")
    exact = _exact(text, old, edit.replace_all)
    if len(exact) == 1 or (exact and edit.replace_all):
        return _replace_spans(text, [(a, b, new) for a, b in exact]), _report(number, text, "exact", exact, 1.0)
    if exact:
        raise _conflict_many(number, text, [a for a, _ in exact], "occurs", text.count(old))
    old_lines = old.strip("\n").split("\n")
    spans = _line_spans(text)
    file_lines = [text[a:b] for a, b in spans]
    squashed = [_squash(line) for line in file_lines]
    wanted = [_squash(line) for line in old_lines]
    width = len(old_lines)
    if options.normalize_whitespace:
        # Whole lines equal once whitespace is squashed: keep the file's indentation.
        hits = [
            i
            for i in range(len(squashed) - width + 1)
            if squashed[i] == wanted[0] and squashed[i : i + width] == wanted
        ]
        if len(hits) == 1 or (hits and edit.replace_all):
            return _replace_windows(text, spans, hits, width, number, edit, options, "whitespace", 1.0, old_lines)
        if hits:
            raise _conflict_many(number, text, [spans[h][0] for h in hits], "occurs, whitespace normalised,")
        # Part of a line (or lines) with different spacing: match token by token.
        if old.split():
            found, count = _tokens(text, old, edit.replace_all)
            if len(found) == 1 or (found and edit.replace_all):
                return _replace_spans(text, [(a, b, new) for a, b in found]), _report(
                    number, text, "whitespace", found, 1.0
                )
            if found:
                raise _conflict_many(number, text, [a for a, _ in found], "occurs, whitespace normalised,", count)
    best, score, runner_up, complete = _closest(squashed, wanted)
    window = "\n".join(squashed[best : best + width])
    snippet = "\\n".join(file_lines[best : best + width])[:200]
    if not complete:
        raise Conflict(
            f"edit {number}: oldText not found exactly or with whitespace normalised, and no match within the "
            f"{FUZZY_BUDGET_SECONDS:g} s fuzzy budget. Best so far: lines {best + 1}-{best + width} "
            f"(confidence {score:.2f}): {snippet!r}. Re-read the lines you mean and copy oldText from them"
        )
    covers = len(window) <= 1.1 * len("\n".join(wanted)) + 2  # never take text oldText did not name
    if options.partial_match and score >= FUZZY_THRESHOLD and covers:
        if runner_up >= score:
            raise Conflict(f"edit {number}: oldText is equally close to several places; add surrounding lines")
        return _replace_windows(text, spans, [best], width, number, edit, options, "fuzzy", score, old_lines)
    raise Conflict(
        f"edit {number}: oldText not found. Closest: lines {best + 1}-{best + width} "
        f"(confidence {score:.2f}): {snippet!r}. Re-read those lines and retry with their exact text"
    )


def _closest(squashed: list[str], wanted: list[str]) -> tuple[int, float, float, bool]:
    """Best window start, its similarity, the runner-up's (for ambiguity), and whether every
    window was scored within FUZZY_BUDGET_SECONDS.
    """
    width = len(wanted)
    if width > len(squashed):
        return 0, 0.0, 0.0, True  # oldText has more lines than the file
    from rapidfuzz.distance import Indel  # here: only a fuzzy search needs it, and it is slow to import

    target = "\n".join(wanted)
    deadline = time.monotonic() + FUZZY_BUDGET_SECONDS
    best, score, runner_up = 0, 0.0, 0.0
    for i in range(len(squashed) - width + 1):
        if i % 64 == 0 and time.monotonic() > deadline:
            return best, score, runner_up, False
        # score_cutoff lets rapidfuzz give up early on windows that cannot beat the runner-up.
        window = "\n".join(squashed[i : i + width])
        count_matched(len(window) + len(target))
        ratio = Indel.normalized_similarity(window, target, score_cutoff=runner_up)
        if ratio > score:
            best, score, runner_up = i, ratio, score
        elif ratio > runner_up:
            runner_up = ratio
    return best, score, runner_up, True


def _replace_windows(
    text: str,
    spans: list[tuple[int, int]],
    starts: list[int],
    width: int,
    number: int,
    edit: TextEdit,
    options: EditOptions,
    strategy: Strategy,
    confidence: float,
    old_lines: list[str],
) -> tuple[str, MatchReport]:
    """Replace whole-line windows, each with newText in that window's indentation."""
    chosen = []
    for start in starts:
        window = spans[start : start + width]
        new = edit.new_text.strip("\n") if edit.old_text.strip("\n") != edit.old_text else edit.new_text
        if options.preserve_indentation:
            new = "\n".join(reindent(new.split("\n"), old_lines, [text[a:b] for a, b in window]))
        chosen.append((window[0][0], window[-1][1], new))
    found = [(a, b) for a, b, _ in chosen]
    return _replace_spans(text, chosen), _report(number, text, strategy, found, confidence)


def _diff(old: str, new: str, reports: list[MatchReport], shown: str, max_diff: int = DEFAULT_MAX_DIFF_CHARS) -> str:
    """The diff of ``old`` edited into ``new`` by the edits ``reports`` tell of, in order."""
    return unified_diff(old, new, shown, known=_known(reports), max_chars=max_diff)


def _known(reports: list[MatchReport]) -> Known:
    """What the edits ``reports`` tell of, in order, know of the texts: each changed its text
    only between its first and last match, and the first one counted the lines above its
    match in the old text (in characters, or in bytes on the byte path)."""
    first = reports[0]
    return Known(min(r._start for r in reports), min(r._kept for r in reports), first._start, first.line_start - 1)


def edit_file(
    vfs: JailedFS,
    path: str,
    edits: list[TextEdit],
    encoding: str = "utf-8",
    dry_run: bool = False,
    options: EditOptions | None = None,
    expected_hash: str | None = None,
    max_bytes: int = DEFAULT_MAX_EDIT_BYTES,
    max_diff: int = DEFAULT_MAX_DIFF_CHARS,
) -> EditResult:
    """Apply every edit in order to the file's text, or none; returns the diff (its hunks at
    most ``max_diff`` characters)."""
    if not edits:
        raise InvalidArgument("edits is empty; give at least one {oldText, newText}")
    if len(edits) > MAX_EDITS:
        raise InvalidArgument(f"{len(edits)} edits in one call; give at most {MAX_EDITS} (split them over calls)")
    chosen = options or EditOptions()
    target = vfs.resolve(path) if dry_run else writable(vfs, path)
    return changes.make(
        vfs,
        lambda: _edit(vfs, target, edits, encoding, dry_run, chosen, expected_hash, max_bytes, max_diff),
        touches=[target],
        dry_run=dry_run,
    )


def _edit(
    vfs: JailedFS,
    target: Target,
    edits: list[TextEdit],
    encoding: str,
    dry_run: bool,
    options: EditOptions,
    expected_hash: str | None,
    max_bytes: int,
    max_diff: int,
) -> Plan[EditResult]:
    doc = TextFile.load(vfs, target, encoding, max_bytes)
    if len(edits) * doc.chars > EDIT_WORK_CHARS:
        fits = max(1, EDIT_WORK_CHARS // max(1, doc.chars))
        raise InvalidArgument(
            f"{len(edits)} edits on {doc.chars:,} characters is more than one call may scan; "
            f"give at most {fits} edits per call, or rewrite the file with write_file"
        )
    doc.check_hash(expected_hash)
    spliced = _exact_bytes(doc.data, edits) if doc.plain else None
    if spliced is not None:
        data, reports = spliced
        old, new, known = _around(doc.data, data, _known(reports))
        diff = unified_diff_bytes(old, new, target.display, known, max_chars=max_diff)
        changed = _changed(old, new, known)
        ops = doc.saved_bytes(data) if not dry_run and changed else []
    else:
        text, reports = doc.text, []
        for number, edit in enumerate(edits):
            normalised = edit.model_copy(
                update={"old_text": doc.normalise(edit.old_text), "new_text": doc.normalise(edit.new_text)}
            )
            text, report = _apply_one(text, number, normalised, options)
            reports.append(report)
        diff = _diff(doc.text, text, reports, target.display, max_diff)
        changed = text != doc.text
        ops = doc.saved(text) if not dry_run and changed else []
    result = EditResult(path=target.display, dry_run=dry_run, changed=changed, matches=reports, diff=diff, sha256=None)
    return Plan(result, ops, after=hashed_into(result, ops))


def _changed(old: bytes, new: bytes, known: Known) -> bool:
    """Whether ``new`` (``old`` edited as ``known`` tells) differs from ``old``: only the bytes
    between the edits' first and last places are compared (the rest is the same by making),
    by ``memcmp`` in place (a slice of a memoryview is no copy; ``startswith`` compares it whole)."""
    end = len(new) - known.tail
    return len(new) != len(old) or not old.startswith(memoryview(new)[known.head : end], known.head)


MAX_PIECES = 15
"""Pieces an edit's new bytes are left in (its text in 7 places); past them, joined: each is a write."""
AROUND_LINES = 5
"""Lines kept above and below where ``_around``'s texts differ: more than the diff's context (3)."""
SAME_CHUNK = 64 * 1024
"""Bytes compared at a time by ``_around`` while the texts go on being the same past the edits' places."""


def _around(old: bytes, new: Pieces, known: Known) -> tuple[bytes, bytes, Known]:
    """The lines of ``old`` and ``new`` (``old`` edited as ``known`` tells) from
    ``AROUND_LINES`` lines above where they first differ to as many below where they last do,
    and what is known of them: all the diff and ``_changed`` look at, had without joining
    ``new``. The texts may go on being the same past the edits' places (a line put before a
    run of the same lines): compared on, a chunk at a time, to where they differ."""
    size = min(len(old), len(new))
    head = known.head
    while head < size:
        chunk = min(SAME_CHUNK, size - head)
        a, b = old[head : head + chunk], _cut(new.parts, head, head + chunk)
        if a != b:
            head += same_head(a, b)
            break
        head += chunk
    tail, end_new = min(known.tail, size - head), len(new)  # never into the same head
    while tail < size - head:
        chunk = min(SAME_CHUNK, size - head - tail)
        a = old[len(old) - tail - chunk : len(old) - tail]
        b = _cut(new.parts, end_new - tail - chunk, end_new - tail)
        if a != b:
            tail += same_tail(a, b, 0)
            break
        tail += chunk
    start = head
    for _ in range(AROUND_LINES + 1):
        start = old.rfind(b"\n", 0, start)
        if start < 0:
            break
    start += 1
    end = len(old) - tail
    for _ in range(AROUND_LINES + 1):
        end = old.find(b"\n", end) + 1
        if not end:
            end = len(old)
            break
    cut = len(old) - end  # the same bytes end both
    at, lines = known.at, known.lines  # a place whose lines above are counted, moved into the lines kept
    if at < start:
        at, lines = start, lines + old.count(b"\n", at, start)
    elif at > end:
        at, lines = end, lines - old.count(b"\n", end, at)
    around = Known(head - start, tail - cut, at - start, lines)
    return old[start:end], _cut(new.parts, start, len(new) - cut), around


def _cut(parts: tuple[bytes | memoryview, ...], start: int, end: int) -> bytes:
    """The bytes from ``start`` to ``end`` of ``parts`` one after the other."""
    out: list[bytes | memoryview] = []
    at = 0
    for part in parts:
        size = len(part)
        if at < end and at + size > start:
            out.append(part[max(0, start - at) : min(size, end - at)])
        at += size
    return b"".join(out)


def _exact_bytes(data: bytes, edits: list[TextEdit]) -> tuple[Pieces, list[MatchReport]] | None:
    """The edits made on a plain file's bytes (``TextFile.plain``) when each is found exactly,
    once or (``replace_all``) anywhere, and their reports (places in bytes); else None (nor when
    a text cannot be UTF-8: a lone surrogate), for the text path to decide.

    The places are found by ``memmem`` where they lie, their lines counted in the bytes, the
    file never decoded; the last edit's bytes are left as pieces (views of the bytes before it
    and its new text: written, never joined), each edit before it spliced in one copy for the
    next to search. UTF-8 finds a character's bytes only where the character is, so each place,
    line and splice is the one the text path would give (a property test holds them to it).
    """
    reports = []
    base = data
    pieces = Pieces([data])
    same = len(data)  # the bytes the result begins with alike (its hash and the file's share them)
    for number, edit in enumerate(edits):
        try:
            old, new = edit.old_text.encode(), edit.new_text.encode()
        except UnicodeEncodeError:
            return None
        if number:
            data = pieces.joined()  # the edit before: joined for this one to search
        starts = find_all_bytes(data, old, None if edit.replace_all else 2) if old else []
        if not starts or (len(starts) > 1 and not edit.replace_all):
            return None
        first = newlines(data, 0, starts[0]) + 1
        end = max(starts[0], starts[0] + len(old) - 1)  # a place ending in a newline ends on its line
        report = MatchReport(
            edit=number,
            strategy="exact",
            occurrences=len(starts),
            line_start=first,
            line_end=first + data.count(b"\n", starts[0], end),
            confidence=1.0,
        )
        report._start, report._kept = starts[0], len(data) - starts[-1] - len(old)
        reports.append(report)
        view = memoryview(data)  # slices of it are not copies
        parts: list[bytes | memoryview] = [view[: starts[0]]]
        for at, after in itertools.pairwise([*starts, len(data)]):
            parts += [new, view[at + len(old) : after]]
        same = min(same, starts[0])
        pieces = Pieces(parts if len(parts) <= MAX_PIECES else [b"".join(parts)], base, same)
    return pieces, reports
