"""Comparing two text files (on any mounts) as a unified diff."""

from __future__ import annotations

from pydantic import BaseModel, Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.textfile import DEFAULT_MAX_EDIT_BYTES, TextFile, hunks, printable, rendered


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
    changed = hunks(first.raw, second.raw)
    found = [
        Hunk(
            old_start=h.old_start,
            old_lines=h.old_lines,
            new_start=h.new_start,
            new_lines=h.new_lines,
            lines=[sign + printable(line.rstrip("\r\n")) for sign, line in h.lines],
        )
        for h in changed
    ]
    added = sum(1 for h in found for line in h.lines if line.startswith("+"))
    removed = sum(1 for h in found for line in h.lines if line.startswith("-"))
    diff = rendered(changed, first.target.display, second.target.display)
    return CompareResult(
        file1=first.target.display,
        file2=second.target.display,
        identical=first.raw == second.raw,
        added=added,
        removed=removed,
        hunks=found,
        diff=diff,
    )
