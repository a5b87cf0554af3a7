"""Default profile: comparisons of text files (a module of its own: a first edit imports no
comparison)."""

from __future__ import annotations

from mcp_types import CallToolResult

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.diff import compare
from vfs_mcp.profiles.args import FormatArg, PathArg, TextCoding
from vfs_mcp.profiles.results import report
from vfs_mcp.settings import Settings


def compare_files(
    vfs: JailedFS,
    settings: Settings,
    file1: PathArg,
    file2: PathArg,
    encoding: TextCoding = "utf-8",
    format: FormatArg = "text",
) -> CallToolResult:
    result = compare.compare_files(vfs, file1, file2, encoding, settings.max_edit_bytes, settings.diff_chars)
    return report(result, result.diff or f"{result.file1} and {result.file2} are identical", format)
