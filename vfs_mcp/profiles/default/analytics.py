"""Default profile: sizes, large, empty and duplicate files (``TOOLS``, all read-only)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.text.names import NAMES_NOTE, escaped, plural, shown
from vfs_mcp.ops.trees import analytics
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import skipped_note
from vfs_mcp.profiles.args import DirArg, FormatArg, Globs, Hidden, Recursive
from vfs_mcp.profiles.results import human_size, report
from vfs_mcp.settings import Settings


def calculate_directory_size(
    vfs: JailedFS,
    settings: Settings,
    progress: Progress,
    path: DirArg = ".",
    format: Annotated[Literal["human", "bytes", "json"], Hidden] = "human",
) -> CallToolResult:
    result = analytics.calculate_directory_size(vfs, path, progress)
    size = human_size(result.total_bytes) if format == "human" else f"{result.total_bytes} bytes"
    dirs = plural(result.directories, "directory", "directories")
    text = f"{result.path}: {size} in {plural(result.files, 'file')}, {dirs}" + skipped_note(result.skipped)
    return report(result, text, format)


def find_large_files(
    vfs: JailedFS,
    settings: Settings,
    path: DirArg = ".",
    min_size_mb: Annotated[float, Field(ge=0)] = 100,
    max_results: Annotated[int, Field(ge=1, le=10000)] = 100,
    exclude_patterns: Globs = None,
    respect_gitignore: bool = False,
    format: FormatArg = "text",
    recursive: Recursive = True,
) -> CallToolResult:
    result = analytics.find_large_files(
        vfs, path, min_size_mb, recursive, max_results, exclude_patterns, respect_gitignore
    )
    lines = [f"{human_size(f.size):>10}  {shown(f.path)}" for f in result.files] or ["No files that large"]
    if result.has_more:
        lines.append(f"(more than {max_results})")
    if escaped(*(f.path for f in result.files)):
        lines.append(NAMES_NOTE)
    return report(result, "\n".join(lines), format)


def find_empty_directories(
    vfs: JailedFS,
    settings: Settings,
    path: DirArg = ".",
    exclude_patterns: Globs = None,
    respect_gitignore: bool = True,
    format: FormatArg = "text",
    recursive: Recursive = True,
) -> CallToolResult:
    result = analytics.find_empty_directories(vfs, path, recursive, exclude_patterns, respect_gitignore)
    lines = [shown(d) for d in result.directories] or ["No empty directories"]
    if escaped(*result.directories):
        lines.append(NAMES_NOTE)
    return report(result, "\n".join(lines), format)


def find_duplicate_files(
    vfs: JailedFS,
    settings: Settings,
    progress: Progress,
    path: DirArg = ".",
    min_size: Annotated[int, Field(ge=0, description="bytes")] = 1,
    exclude_patterns: Globs = None,
    max_files: Annotated[int, Field(ge=1, le=1000000, description="files to scan")] = 1000,
    respect_gitignore: bool = False,
    format: FormatArg = "text",
    recursive: Recursive = True,
) -> CallToolResult:
    result = analytics.find_duplicate_files(
        vfs, path, recursive, min_size, exclude_patterns, max_files, progress, respect_gitignore
    )
    lines = [
        f"{human_size(g.size)} x{len(g.paths)}:\n  " + "\n  ".join(shown(p) for p in g.paths) for g in result.groups
    ]
    lines.append(f"{plural(len(result.groups), 'group')}; {human_size(result.wasted_bytes)} reclaimable")
    if result.truncated:
        lines.append(f"(stopped at max_files={max_files})")
    if escaped(*(p for g in result.groups for p in g.paths)):
        lines.append(NAMES_NOTE)
    return report(result, "\n".join(lines), format)
