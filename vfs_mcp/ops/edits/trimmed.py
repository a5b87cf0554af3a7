"""Edits matched as the reference server matches them (the official profile's ``edit_file``):
the exact text, else whole lines equal once trimmed, then ``new`` takes the file's indentation.

Made safe: an ``old`` found in two places is a CONFLICT instead of "the first one"; CRLF files
stay CRLF; all edits apply in order, or none.
"""

from __future__ import annotations

from collections.abc import Sequence

from vfs_mcp import changes
from vfs_mcp.changes import Plan
from vfs_mcp.errors import BinaryContent, Conflict, InvalidArgument
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.files.write import writable
from vfs_mcp.ops.text.document import TextFile


def edit_trimmed(
    vfs: JailedFS, path: str, edits: Sequence[tuple[str, str]], dry_run: bool, max_bytes: int
) -> tuple[str, str, str]:
    """Apply every (old, new) edit in order, or none; returns the text before, after, and the
    file's name as results write it."""
    if not edits:
        raise InvalidArgument("edits is empty; give at least one {oldText, newText}")
    target = vfs.resolve(path) if dry_run else writable(vfs, path)

    def plan() -> Plan[tuple[str, str, str]]:
        try:
            doc = TextFile.load(vfs, target, "utf-8", max_bytes)
        except BinaryContent:
            raise BinaryContent(f"{path} is not UTF-8 text; edit_file edits text files only") from None
        text = doc.text
        for number, (old, new) in enumerate(edits):
            text = apply_edit(text, number, _lf(old), _lf(new))
        ops = doc.saved(text) if not dry_run and text != doc.text else []
        return Plan((doc.text, text, target.display), ops)

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
