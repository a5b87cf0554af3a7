"""Comparing two text files (on any mounts) as a unified diff."""

from __future__ import annotations

import difflib

from pydantic import BaseModel, Field

from vfs_mcp.filesystem import JailedFS
from vfs_mcp.ops.textfile import DEFAULT_MAX_EDIT_BYTES, TextFile, unified_diff


class Hunk(BaseModel):
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: list[str] = Field(description="Hunk body: ' ' context, '-' removed, '+' added")


class CompareResult(BaseModel):
    file1: str
    file2: str
    identical: bool
    added: int
    removed: int
    hunks: list[Hunk]
    diff: str


def compare_files(
    vfs: JailedFS, file1: str, file2: str, encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_EDIT_BYTES
) -> CompareResult:
    first = TextFile.load(vfs, vfs.resolve(file1), encoding, max_bytes)
    second = TextFile.load(vfs, vfs.resolve(file2), encoding, max_bytes)
    old, new = first.text.splitlines(), second.text.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(3):
        body = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                body += [f" {line}" for line in old[i1:i2]]
                continue
            body += [f"-{line}" for line in old[i1:i2]]
            body += [f"+{line}" for line in new[j1:j2]]
        hunks.append(
            Hunk(
                old_start=group[0][1] + 1,
                old_lines=group[-1][2] - group[0][1],
                new_start=group[0][3] + 1,
                new_lines=group[-1][4] - group[0][3],
                lines=body,
            )
        )
    added = sum(1 for h in hunks for line in h.lines if line.startswith("+"))
    removed = sum(1 for h in hunks for line in h.lines if line.startswith("-"))
    diff = unified_diff(first.text, second.text, first.target.display, second.target.display)
    return CompareResult(
        file1=first.target.display,
        file2=second.target.display,
        identical=first.text == second.text,
        added=added,
        removed=removed,
        hunks=hunks,
        diff=diff,
    )
