"""The reference server's ``edit_file``: exact text, else lines equal once trimmed, made safe.

An oldText found in two places is a CONFLICT instead of "the first one"; CRLF files stay
CRLF. The reply is a fenced diff with jsdiff's two-file headers, as the reference prints it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from vfs_mcp import changes
from vfs_mcp.changes import Plan
from vfs_mcp.errors import BinaryContent, Conflict, InvalidArgument
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.textfile import TextFile, hunks
from vfs_mcp.ops.write import writable


class Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    oldText: str = Field(description="Text to find: exactly, or whole lines equal once trimmed")
    newText: str = Field(description="Text to put in its place")


def edit_text(vfs: JailedFS, path: str, edits: Sequence[Edit], dry_run: bool, max_bytes: int) -> str:
    """Apply every edit in order, or none; returns the change as a fenced git-style diff."""
    if not edits:
        raise InvalidArgument("edits is empty; give at least one {oldText, newText}")
    target = vfs.resolve(path) if dry_run else writable(vfs, path)

    def plan() -> Plan[str]:
        try:
            doc = TextFile.load(vfs, target, "utf-8", max_bytes)
        except BinaryContent:
            raise BinaryContent(f"{path} is not UTF-8 text; edit_file edits text files only") from None
        text = doc.text
        for number, edit in enumerate(edits):
            text = apply_edit(text, number, _lf(edit.oldText), _lf(edit.newText))
        ops = doc.saved(text) if not dry_run and text != doc.text else []
        return Plan(fenced_diff(patch(doc.text, text, target.display)), ops)

    return changes.run(vfs, plan, touches=[target], dry_run=dry_run)


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def apply_edit(text: str, number: int, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new``: exactly, else as whole lines equal once trimmed
    (``new`` then takes the file's indentation). CONFLICT when ``old`` is in no place or in several.
    """
    if not old:
        raise InvalidArgument(f"edit {number}: oldText is empty; give the text to replace")
    first = text.find(old)
    if first >= 0:
        second = text.find(old, first + 1)
        if second >= 0:
            raise Conflict(
                f"edit {number}: oldText occurs more than once (lines {_line_of(text, first)} and "
                f"{_line_of(text, second)}); add surrounding lines to make it unique"
            )
        return text[:first] + new + text[first + len(old) :]
    wanted = [line.strip() for line in old.split("\n")]
    lines = text.split("\n")
    hits = [
        i
        for i in range(len(lines) - len(wanted) + 1)
        if lines[i].strip() == wanted[0] and all(lines[i + j].strip() == w for j, w in enumerate(wanted))
    ]
    if len(hits) > 1:
        raise Conflict(
            f"edit {number}: oldText matches lines {hits[0] + 1} and {hits[1] + 1} once trimmed; "
            "add surrounding lines to make it unique"
        )
    if not hits:
        raise Conflict(
            f"edit {number}: Could not find exact match for edit, not even with the lines trimmed; "
            "re-read the file and copy oldText from it"
        )
    start = hits[0]
    window = lines[start : start + len(wanted)]
    lines[start : start + len(wanted)] = _reindent(new.split("\n"), old.split("\n"), window)
    return "\n".join(lines)


def _reindent(new_lines: list[str], old_lines: list[str], matched: list[str]) -> list[str]:
    """newText's lines in the file's indentation: each indentation oldText used stands for the
    one the file has on the matched line; deeper lines keep their extra depth.
    """
    mapping: dict[str, str] = {}
    for old, actual in zip(old_lines, matched, strict=True):
        if old.strip():
            mapping.setdefault(_indent(old), _indent(actual))
    out = []
    for line in new_lines:
        indent = _indent(line)
        anchor = max((k for k in mapping if indent.startswith(k)), key=len, default=None)
        if not line.strip() or anchor is None:
            out.append(line)
        else:
            out.append(mapping[anchor] + indent[len(anchor) :] + line[len(indent) :])
    return out


def patch(old: str, new: str, name: str) -> str:
    """A unified diff as the reference prints it (jsdiff's two-file patch: an ``Index:`` line,
    ``original``/``modified`` headers, 4 lines of context, counts always written).
    """
    out = [f"Index: {name}", "=" * 67, f"--- {name}\toriginal", f"+++ {name}\tmodified"]
    for hunk in hunks(old, new, context=4):
        # An empty range names the line before it (unified-diff convention).
        old_start = hunk.old_start - 1 if hunk.old_lines == 0 else hunk.old_start
        new_start = hunk.new_start - 1 if hunk.new_lines == 0 else hunk.new_start
        out.append(f"@@ -{old_start},{hunk.old_lines} +{new_start},{hunk.new_lines} @@")
        for sign, line in hunk.lines:
            if line.endswith("\n"):
                out.append(sign + line[:-1])
            else:
                out += [sign + line, "\\ No newline at end of file"]
    return "\n".join(out) + "\n"


def fenced_diff(diff: str) -> str:
    """The diff in a ```diff fence longer than any backtick run inside it."""
    fence = "```"
    while fence in diff:
        fence += "`"
    return f"{fence}diff\n{diff}{fence}\n\n"
