"""Line-numbered edits: replace, insert or delete lines by their 1-based numbers, bottom-up
so every number refers to the file as it was read, each optionally verified against the
content the caller expects there; all apply or (with abort_on_verification_failure) none.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from vfs_mcp import changes
from vfs_mcp.changes import Plan
from vfs_mcp.errors import Conflict, InvalidArgument
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.diff.unified import DEFAULT_MAX_DIFF_CHARS, unified_diff
from vfs_mcp.ops.files.write import writable
from vfs_mcp.ops.text.document import DEFAULT_MAX_EDIT_BYTES, TextFile, hashed_into
from vfs_mcp.ops.text.encoding import printable

MAX_LINE_EDITS = 20_000
"""Line edits one call may make (each is two objects while it is planned, some 2 KB: 20,000 of
them are about 40 MB)."""


class LineEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line_number: int
    action: Literal["replace", "insert_before", "insert_after", "delete"]
    content: str | None = Field(None, description="new line(s)")
    expected_content: str | None = None


class LineEditOutcome(BaseModel):
    index: int
    line_number: int = Field(description="Absolute 1-based line the edit targets")
    action: str
    verified: bool | None = Field(description="None when no expected_content was given")
    applied: bool
    actual_content: str | None = Field(None, description="The line's real content, when verification failed")
    message: str | None = None


_OUTCOME_FIELDS = set(LineEditOutcome.model_fields)
"""Every outcome sets every field: one set shared by them all (adding a name it holds changes
nothing), not one each (a set of seven
names is 728 bytes, more than the rest of an outcome; a call of 100,000 edits held 73 MB of them)."""


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
    max_diff: int = DEFAULT_MAX_DIFF_CHARS,
) -> LineEditResult:
    """Replace, insert or delete lines by number; edits refer to the original numbering. The
    diff's hunks are at most ``max_diff`` characters."""
    if not line_edits:
        raise InvalidArgument("line_edits is empty")
    if len(line_edits) > MAX_LINE_EDITS:
        raise InvalidArgument(f"more than {MAX_LINE_EDITS:,} line edits in one call; split them over several calls")
    if offset < 0 or (limit is not None and limit < 1):
        raise InvalidArgument("offset must be 0 or more and limit 1 or more")
    target = vfs.resolve(path) if dry_run else writable(vfs, path)

    def plan() -> Plan[LineEditResult]:
        doc = TextFile.load(vfs, target, encoding, max_bytes)
        doc.check_hash(expected_hash)
        return _edit_lines(
            doc, line_edits, offset, limit, relative_line_numbers, abort_on_verification_failure, dry_run, max_diff
        )

    return changes.make(vfs, plan, touches=[target], dry_run=dry_run)


def _edit_lines(
    doc: TextFile,
    line_edits: list[LineEdit],
    offset: int,
    limit: int | None,
    relative_line_numbers: bool,
    abort_on_verification_failure: bool,
    dry_run: bool,
    max_diff: int,
) -> Plan[LineEditResult]:
    target = doc.target
    # An empty file has no lines; a file that had lines keeps its final newline (or lack of one).
    final_newline = doc.text.endswith("\n") or not doc.text
    lines = doc.text.split("\n") if doc.text else []
    if doc.text.endswith("\n"):
        lines.pop()
    window_end = len(lines) if limit is None else min(len(lines), offset + limit)
    outcomes: list[_Outcome] = []
    plan: list[tuple[int, int, LineEdit]] = []
    for i, edit in enumerate(line_edits):
        index = offset + edit.line_number if relative_line_numbers else edit.line_number - 1
        outcome = _Outcome(i, index + 1, edit.action)
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
                outcome.actual_content = printable("\n".join(span) if span else actual)
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
    edited = _applied(lines, plan, doc)
    del lines  # the old lines and the new ones are not held beside the diff's own
    for _, i, _ in plan:
        outcomes[i].applied = True
    text = "\n".join(edited) + ("\n" if final_newline and edited else "")
    del edited
    diff = unified_diff(doc.text, text, target.display, max_chars=max_diff)
    ops = doc.saved(text) if not dry_run and text != doc.text else []
    applied = sum(1 for o in outcomes if o.applied)
    result = LineEditResult(
        path=target.display,
        dry_run=dry_run,
        changed=text != doc.text,
        edits=[LineEditOutcome.model_construct(_OUTCOME_FIELDS, **dataclasses.asdict(o)) for o in outcomes],
        applied=applied,
        failed=len(outcomes) - applied,
        diff=diff,
        sha256=None,
    )
    return Plan(result, ops, after=hashed_into(result, ops))


@dataclasses.dataclass(slots=True)
class _Outcome:
    """What became of one edit while the edits are made: a fifth of a ``LineEditOutcome``'s
    memory (a call of 20,000 edits holds 20,000 of them beside the diff); the outcomes are made
    from them once the diff is done."""

    index: int
    line_number: int
    action: str
    verified: bool | None = None
    applied: bool = False
    actual_content: str | None = None
    message: str | None = None


_ORDER = {"insert_before": 0, "replace": 1, "delete": 1, "insert_after": 2}
"""How edits of one line apply: what goes before it, the line itself, what goes after it."""


def _applied(lines: list[str], plan: list[tuple[int, int, LineEdit]], doc: TextFile) -> list[str]:
    """``lines`` with every planned ``(index, number, edit)`` made, in one pass: at one line,
    what is inserted before it, then the line or what replaces it, then what is inserted after
    it, each in the edits' order."""
    out: list[str] = []
    kept = 0  # the lines before this one are in ``out`` (or were replaced or deleted)
    for index, _, edit in sorted(plan, key=lambda p: (p[0], _ORDER[p[2].action], p[1])):
        stop = index + 1 if edit.action == "insert_after" else index
        out += lines[kept:stop]
        kept = max(kept, stop, index + 1 if edit.action in ("replace", "delete") else 0)
        if edit.action != "delete":
            new = doc.normalise(edit.content or "").split("\n")
            if edit.content is not None and edit.content.endswith("\n"):
                new.pop()
            out += new
    out += lines[kept:]
    return out
