"""The reference server's ``edit_file``: its argument, and its reply, a fenced diff with
jsdiff's two-file headers as the reference prints it (the matching is ``ops.dialects.official``'s).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.dialects.official import edit_trimmed
from vfs_mcp.ops.diff.unified import DEFAULT_MAX_DIFF_CHARS, diff


class Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    oldText: str = Field(description="Text to find: exactly, or whole lines equal once trimmed")
    newText: str = Field(description="Text to put in its place")


def edit_text(
    vfs: JailedFS,
    path: str,
    edits: Sequence[Edit],
    dry_run: bool,
    max_bytes: int,
    max_diff: int = DEFAULT_MAX_DIFF_CHARS,
) -> str:
    """Apply every edit in order, or none (``ops.dialects.official``); returns the change as a fenced git-style diff."""
    before, after, name = edit_trimmed(vfs, path, [(edit.oldText, edit.newText) for edit in edits], dry_run, max_bytes)
    return fenced_diff(patch(before, after, name, max_diff))


def patch(old: str, new: str, name: str, max_diff: int = DEFAULT_MAX_DIFF_CHARS) -> str:
    """A unified diff as the reference prints it (jsdiff's two-file patch: an ``Index:`` line,
    ``original``/``modified`` headers, 4 lines of context, counts always written); its hunks at
    most ``max_diff`` characters, then what it leaves out.
    """
    out = [f"Index: {name}", "=" * 67, f"--- {name}\toriginal", f"+++ {name}\tmodified"]
    found = diff(old, new, context=4, max_chars=max_diff)
    for hunk in found.hunks:
        # An empty range names the line before it (unified-diff convention).
        old_start = hunk.old_start - 1 if hunk.old_lines == 0 else hunk.old_start
        new_start = hunk.new_start - 1 if hunk.new_lines == 0 else hunk.new_start
        out.append(f"@@ -{old_start},{hunk.old_lines} +{new_start},{hunk.new_lines} @@")
        for sign, line in hunk.lines():
            if line.endswith("\n"):
                out.append(sign + line[:-1])
            else:
                out += [sign + line, "\\ No newline at end of file"]
    return "\n".join([*out, *found.notes()]) + "\n"


def fenced_diff(diff: str) -> str:
    """The diff in a ```diff fence longer than any backtick run inside it."""
    fence = "```"
    while fence in diff:
        fence += "`"
    return f"{fence}diff\n{diff}{fence}\n\n"
