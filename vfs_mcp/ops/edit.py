"""Text edits: find-and-replace with three matching strategies, and line-numbered edits.

``edit_file`` tries each oldText exactly, then with whitespace normalised (keeping the
file's indentation), then fuzzily with a confidence score. A text found in more than one
place is a CONFLICT unless the edit says ``replace_all``; all edits apply or none do.
``edit_file_at_line`` edits by 1-based line number, bottom-up, verifying expected content.
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from vfs_mcp.errors import Conflict, InvalidArgument
from vfs_mcp.filesystem import JailedFS
from vfs_mcp.ops.textfile import DEFAULT_MAX_EDIT_BYTES, TextFile, unified_diff

FUZZY_THRESHOLD = 0.8
Strategy = Literal["exact", "whitespace", "fuzzy"]


class TextEdit(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    old_text: str = Field(alias="oldText", description="Text to find (exactly, or by the fallbacks in options)")
    new_text: str = Field(alias="newText", description="Replacement text (literal: no regex, $ or \\ escapes)")
    replace_all: bool = Field(False, description="Replace every occurrence instead of requiring one")


class EditOptions(BaseModel):
    preserve_indentation: bool = Field(True, description="Re-indent newText to the matched lines' indentation")
    normalize_whitespace: bool = Field(True, description="Fall back to matching with whitespace normalised")
    partial_match: bool = Field(True, description="Fall back to fuzzy matching with a confidence score")


class MatchReport(BaseModel):
    edit: int = Field(description="0-based index of the edit")
    strategy: Strategy
    occurrences: int
    line_start: int = Field(description="1-based first line matched (first occurrence)")
    line_end: int
    confidence: float


class EditResult(BaseModel):
    path: str
    dry_run: bool
    changed: bool
    matches: list[MatchReport]
    diff: str
    sha256: str | None = Field(None, description="Hash of the new content (when written)")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _squash(line: str) -> str:
    return " ".join(line.split())


def _reindent(new_text: str, old_lines: list[str], file_lines: list[str]) -> str:
    """Give newText the file's indentation where oldText was indented differently.

    Each indentation used in oldText maps to the one the file has on the matched line;
    new lines with an unmapped indentation are shifted by the first line's difference.
    """
    mapping: dict[str, str] = {}
    for old, actual in zip(old_lines, file_lines, strict=False):
        if old.strip():
            mapping.setdefault(_indent(old), _indent(actual))
    base_old, base_file = _indent(old_lines[0]), _indent(file_lines[0])
    out = []
    for line in new_text.split("\n"):
        indent, body = _indent(line), line.lstrip(" \t")
        if not body:
            out.append(line)
        elif indent in mapping:
            out.append(mapping[indent] + body)
        elif indent.startswith(base_old):
            out.append(base_file + indent[len(base_old) :] + body)
        else:
            out.append(base_file + body)
    return "\n".join(out)


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each line, without its newline."""
    spans, start = [], 0
    for match in re.finditer("\n", text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def _apply_one(text: str, number: int, edit: TextEdit, options: EditOptions) -> tuple[str, MatchReport]:
    old, new = edit.old_text, edit.new_text
    if not old:
        raise InvalidArgument(f"edit {number}: oldText is empty; use write_file or edit_file_at_line to insert")
    count = text.count(old)
    if count == 1 or (count > 1 and edit.replace_all):
        first = text.index(old)
        report = MatchReport(
            edit=number,
            strategy="exact",
            occurrences=count,
            line_start=_line_of(text, first),
            line_end=_line_of(text, first + len(old)),
            confidence=1.0,
        )
        return text.replace(old, new), report
    if count > 1:
        lines = [_line_of(text, m.start()) for m in re.finditer(re.escape(old), text)][:5]
        raise Conflict(
            f"edit {number}: oldText occurs {count} times (lines {', '.join(map(str, lines))}); "
            "add surrounding lines to make it unique, or set replace_all"
        )
    old_lines = old.strip("\n").split("\n")
    spans = _line_spans(text)
    file_lines = [text[a:b] for a, b in spans]
    width = len(old_lines)
    if options.normalize_whitespace:
        wanted = [_squash(line) for line in old_lines]
        hits = [
            i for i in range(len(file_lines) - width + 1) if [_squash(x) for x in file_lines[i : i + width]] == wanted
        ]
        if len(hits) == 1 or (hits and edit.replace_all):
            return _replace_windows(text, spans, hits, width, number, edit, options, "whitespace", 1.0, old_lines)
        if len(hits) > 1:
            raise Conflict(
                f"edit {number}: oldText matches {len(hits)} places once whitespace is normalised "
                f"(lines {', '.join(str(h + 1) for h in hits[:5])}); make it unique or set replace_all"
            )
    best, score, runner_up = _closest(file_lines, old_lines)
    if options.partial_match and score >= FUZZY_THRESHOLD and runner_up < score:
        return _replace_windows(text, spans, [best], width, number, edit, options, "fuzzy", score, old_lines)
    if options.partial_match and score >= FUZZY_THRESHOLD:
        raise Conflict(f"edit {number}: oldText is equally close to several places; add surrounding lines")
    snippet = "\\n".join(file_lines[best : best + width])[:200]
    raise Conflict(
        f"edit {number}: oldText not found. Closest: lines {best + 1}-{best + width} "
        f"(confidence {score:.2f}): {snippet!r}. Re-read those lines and retry with their exact text"
    )


def _closest(file_lines: list[str], old_lines: list[str]) -> tuple[int, float, float]:
    """Best window start, its similarity, and the runner-up's (for ambiguity)."""
    width = len(old_lines)
    wanted = "\n".join(_squash(line) for line in old_lines)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    best, score, runner_up = 0, 0.0, 0.0
    squashed = [_squash(line) for line in file_lines]
    for i in range(max(1, len(file_lines) - width + 1)):
        matcher.set_seq1("\n".join(squashed[i : i + width]))
        if matcher.real_quick_ratio() <= runner_up or matcher.quick_ratio() <= runner_up:
            continue
        ratio = matcher.ratio()
        if ratio > score:
            best, score, runner_up = i, ratio, score
        elif ratio > runner_up:
            runner_up = ratio
    return best, score, runner_up


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
    out, cursor = [], 0
    for start in starts:
        a, b = spans[start][0], spans[start + width - 1][1]
        new = edit.new_text.strip("\n") if edit.old_text.strip("\n") != edit.old_text else edit.new_text
        if options.preserve_indentation:
            matched = [text[x:y] for x, y in spans[start : start + width]]
            new = _reindent(new, old_lines, matched)
        out.append(text[cursor:a])
        out.append(new)
        cursor = b
    out.append(text[cursor:])
    report = MatchReport(
        edit=number,
        strategy=strategy,
        occurrences=len(starts),
        line_start=starts[0] + 1,
        line_end=starts[0] + width,
        confidence=round(confidence, 3),
    )
    return "".join(out), report


def edit_file(
    vfs: JailedFS,
    path: str,
    edits: list[TextEdit],
    encoding: str = "utf-8",
    dry_run: bool = False,
    options: EditOptions | None = None,
    expected_hash: str | None = None,
    max_bytes: int = DEFAULT_MAX_EDIT_BYTES,
) -> EditResult:
    """Apply every edit in order to the file's text, or none; returns the diff."""
    if not edits:
        raise InvalidArgument("edits is empty; give at least one {oldText, newText}")
    options = options or EditOptions()
    target = vfs.resolve(path, write=not dry_run)
    doc = TextFile.load(vfs, target, encoding, max_bytes)
    if expected_hash is not None and expected_hash.lower() != doc.sha256:
        raise Conflict(f"{target.display} changed since it was read (sha256 differs); read it again")
    text, reports = doc.text, []
    for number, edit in enumerate(edits):
        normalised = edit.model_copy(
            update={"old_text": doc.normalise(edit.old_text), "new_text": doc.normalise(edit.new_text)}
        )
        text, report = _apply_one(text, number, normalised, options)
        reports.append(report)
    diff = unified_diff(doc.text, text, target.display)
    written = None
    if not dry_run and text != doc.text:
        written = doc.save(vfs, text)
    return EditResult(
        path=target.display, dry_run=dry_run, changed=text != doc.text, matches=reports, diff=diff, sha256=written
    )


# -- line-numbered edits --------------------------------------------------------------


class LineEdit(BaseModel):
    line_number: int = Field(description="1-based line (0-based from offset when relative_line_numbers)")
    action: Literal["replace", "insert_before", "insert_after", "delete"]
    content: str | None = Field(None, description="New line(s) for replace/insert; may hold several lines")
    expected_content: str | None = Field(None, description="What the line must hold now (verified before editing)")


class LineEditOutcome(BaseModel):
    index: int
    line_number: int = Field(description="Absolute 1-based line the edit targets")
    action: str
    verified: bool | None = Field(description="None when no expected_content was given")
    applied: bool
    actual_content: str | None = Field(None, description="The line's real content, when verification failed")
    message: str | None = None


class LineEditResult(BaseModel):
    path: str
    dry_run: bool
    changed: bool
    edits: list[LineEditOutcome]
    applied: int
    failed: int
    diff: str
    sha256: str | None = None


def edit_file_at_line(
    vfs: JailedFS,
    path: str,
    line_edits: list[LineEdit],
    offset: int = 0,
    limit: int | None = None,
    relative_line_numbers: bool = False,
    abort_on_verification_failure: bool = False,
    encoding: str = "utf-8",
    dry_run: bool = False,
    expected_hash: str | None = None,
    max_bytes: int = DEFAULT_MAX_EDIT_BYTES,
) -> LineEditResult:
    """Replace, insert or delete lines by number; edits refer to the original numbering."""
    if not line_edits:
        raise InvalidArgument("line_edits is empty")
    if offset < 0 or (limit is not None and limit < 1):
        raise InvalidArgument("offset must be 0 or more and limit 1 or more")
    target = vfs.resolve(path, write=not dry_run)
    doc = TextFile.load(vfs, target, encoding, max_bytes)
    if expected_hash is not None and expected_hash.lower() != doc.sha256:
        raise Conflict(f"{target.display} changed since it was read (sha256 differs); read it again")
    # An empty file has no lines; a file that had lines keeps its final newline (or lack of one).
    final_newline = doc.text.endswith("\n") or not doc.text
    lines = doc.text.split("\n") if doc.text else []
    if doc.text.endswith("\n"):
        lines.pop()
    window_end = len(lines) if limit is None else min(len(lines), offset + limit)
    outcomes: list[LineEditOutcome] = []
    plan: list[tuple[int, int, LineEdit]] = []
    for i, edit in enumerate(line_edits):
        index = offset + edit.line_number if relative_line_numbers else edit.line_number - 1
        outcome = LineEditOutcome(index=i, line_number=index + 1, action=edit.action, verified=None, applied=False)
        outcomes.append(outcome)
        if edit.action != "delete" and edit.content is None:
            raise InvalidArgument(f"line edit {i}: {edit.action} needs content")
        # insert_before the line after the last one appends; every other edit needs an existing line.
        high = window_end + 1 if edit.action == "insert_before" and window_end == len(lines) else window_end
        if not offset <= index < high:
            raise InvalidArgument(
                f"line edit {i}: line {index + 1} is outside lines {offset + 1}-{window_end} of {target.display}"
            )
        if edit.expected_content is not None:
            actual = lines[index] if index < len(lines) else ""
            expected = doc.normalise(edit.expected_content).rstrip("\n")
            span = lines[index : index + expected.count("\n") + 1]
            outcome.verified = "\n".join(span) == expected
            if not outcome.verified:
                outcome.actual_content = "\n".join(span) if span else actual
                outcome.message = "expected_content does not match the line"
                continue
        plan.append((index, i, edit))
    failed = [o for o in outcomes if o.verified is False]
    if failed and abort_on_verification_failure:
        first = failed[0]
        raise Conflict(
            f"line {first.line_number} does not hold the expected content (it holds {first.actual_content!r}); "
            "nothing was changed. Re-read the lines and retry"
        )
    targeted = [(index, edit.action) for index, _, edit in plan if edit.action in ("replace", "delete")]
    if len(set(targeted)) != len(targeted) or len({i for i, _ in targeted}) != len(targeted):
        raise InvalidArgument("two edits replace or delete the same line; combine them into one")
    # Bottom-up, so every line number refers to the original file.
    order = {"insert_after": 0, "replace": 1, "delete": 1, "insert_before": 2}
    for index, i, edit in sorted(plan, key=lambda p: (p[0], -order[p[2].action], p[1]), reverse=True):
        new = doc.normalise(edit.content or "").split("\n")
        if edit.content is not None and edit.content.endswith("\n"):
            new.pop()
        if edit.action == "replace":
            lines[index : index + 1] = new
        elif edit.action == "delete":
            del lines[index]
        elif edit.action == "insert_before":
            lines[index:index] = new
        else:
            lines[index + 1 : index + 1] = new
        outcomes[i].applied = True
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    diff = unified_diff(doc.text, text, target.display)
    written = doc.save(vfs, text) if not dry_run and text != doc.text else None
    applied = sum(1 for o in outcomes if o.applied)
    return LineEditResult(
        path=target.display,
        dry_run=dry_run,
        changed=text != doc.text,
        edits=outcomes,
        applied=applied,
        failed=len(outcomes) - applied,
        diff=diff,
        sha256=written,
    )
