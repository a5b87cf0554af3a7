"""Default profile: content search, name search, trees and analytics (all read-only)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.filesystem import JailedFS
from vfs_mcp.ops import analytics, grep, tree
from vfs_mcp.ops.walk import skipped_note
from vfs_mcp.profiles.args import DirArg, FormatArg, Globs
from vfs_mcp.settings import Settings
from vfs_mcp.tooling import catching, human_size, ok, read_hints, reporter


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Search and analytics tools."""

    @server.tool(
        title="Search file contents",
        annotations=read_hints("Search file contents"),
        description=(
            "Search text in files under a directory (or one file), like grep/ripgrep: literal by default, is_regex "
            "for regular expressions. Matches come in path then line order with line number, column and context; "
            "page with results_offset/results_limit (has_more, next_offset). count_only gives per-file counts. "
            "Use search_files to find files by name."
        ),
    )
    @catching
    def grep_files(
        path: DirArg,
        pattern: Annotated[str, Field(description="Text (or regex with is_regex) to find on one line")],
        ctx: Context,
        is_regex: bool = False,
        case_sensitive: bool = True,
        whole_word: bool = False,
        include_patterns: Globs = None,
        exclude_patterns: Globs = None,
        context_lines: Annotated[int, Field(ge=0, le=100, description="Lines before and after each match")] = 0,
        context_before: Annotated[int, Field(ge=0, le=100)] = 0,
        context_after: Annotated[int, Field(ge=0, le=100)] = 0,
        results_offset: Annotated[int, Field(ge=0, description="Skip this many matches (paging)")] = 0,
        results_limit: Annotated[
            int | None, Field(ge=1, description="Matches to return (default: up to max_results)")
        ] = None,
        max_results: Annotated[int, Field(ge=1, le=100000, description="Cap on matches overall")] = 1000,
        max_file_size_mb: Annotated[float, Field(gt=0, description="Skip larger files")] = 10,
        recursive: bool = True,
        max_depth: Annotated[int | None, Field(ge=1, description="1 = only files directly in path")] = None,
        count_only: Annotated[bool, Field(description="Return matching-line counts per file")] = False,
        respect_gitignore: Annotated[bool, Field(description="Skip what .gitignore/.ignore files ignore")] = False,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, grep.GrepResult]:
        query = grep.GrepQuery(
            pattern=pattern,
            is_regex=is_regex,
            case_sensitive=case_sensitive,
            whole_word=whole_word,
            include=include_patterns,
            exclude=exclude_patterns,
            before=max(context_lines, context_before),
            after=max(context_lines, context_after),
            offset=results_offset,
            limit=results_limit,
            max_results=max_results,
            max_file_size=int(max_file_size_mb * 1024 * 1024),
            max_depth=max_depth,
            count_only=count_only,
            respect_gitignore=respect_gitignore,
        )
        result = grep.grep_files(vfs, path, query, recursive=recursive, progress=reporter(ctx))
        return ok(result, render_grep(result), format)

    @server.tool(
        title="Find files by name",
        annotations=read_hints("Find files by name"),
        description=(
            "Find files and directories whose name matches a glob (case-insensitive; a plain word matches as a "
            "substring), optionally only files containing content_match. Use grep_files to search contents."
        ),
    )
    @catching
    def search_files(
        path: DirArg,
        pattern: Annotated[str, Field(description="Glob on names, e.g. '*.py' or 'config'")],
        recursive: bool = True,
        exclude_patterns: Globs = None,
        content_match: Annotated[str | None, Field(description="Keep only files containing this text")] = None,
        max_results: Annotated[int, Field(ge=1, le=10000)] = 100,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, tree.SearchFilesResult]:
        result = tree.search_files(vfs, path, pattern, recursive, exclude_patterns, content_match, max_results)
        lines = [f.path for f in result.results] or ["No matches"]
        if result.has_more:
            lines.append(f"(more than {max_results}; raise max_results or narrow the pattern)")
        return ok(result, "\n".join(lines), format)

    @server.tool(
        title="Directory tree",
        annotations=read_hints("Directory tree"),
        description=(
            "A recursive tree of a directory to max_depth levels (default 3), from one listing. Capped at "
            "max_entries with a note of how many were left out. Use list_directory for one level."
        ),
    )
    @catching
    def directory_tree(
        path: DirArg = ".",
        max_depth: Annotated[int, Field(ge=1, le=100)] = 3,
        include_files: bool = True,
        pattern: Annotated[str | None, Field(description="Glob on file names to keep")] = None,
        exclude_patterns: Globs = None,
        max_entries: Annotated[int, Field(ge=1, le=100000)] = tree.DEFAULT_TREE_ENTRIES,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, tree.TreeResult]:
        result = tree.directory_tree(vfs, path, max_depth, include_files, pattern, exclude_patterns, max_entries)
        return ok(result, tree.render_tree(result), format)

    @server.tool(
        title="Directory size",
        annotations=read_hints("Directory size"),
        description="Total size of everything under a directory, with file and directory counts (one listing).",
    )
    @catching
    def calculate_directory_size(
        path: DirArg = ".",
        format: Annotated[Literal["human", "bytes", "json"], Field(description="How the text reply reads")] = "human",
    ) -> Annotated[CallToolResult, analytics.SizeResult]:
        result = analytics.calculate_directory_size(vfs, path)
        size = human_size(result.total_bytes) if format == "human" else f"{result.total_bytes} bytes"
        text = f"{result.path}: {size} in {result.files} files, {result.directories} directories"
        text += skipped_note(result.skipped)
        return ok(result, text, "json" if format == "json" else "text")

    @server.tool(
        title="Find large files",
        annotations=read_hints("Find large files"),
        description="Files of at least min_size_mb MiB under a directory, largest first.",
    )
    @catching
    def find_large_files(
        path: DirArg = ".",
        min_size_mb: Annotated[float, Field(ge=0)] = 100,
        recursive: bool = True,
        max_results: Annotated[int, Field(ge=1, le=10000)] = 100,
        exclude_patterns: Globs = None,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, analytics.LargeFilesResult]:
        result = analytics.find_large_files(vfs, path, min_size_mb, recursive, max_results, exclude_patterns)
        lines = [f"{human_size(f.size):>10}  {f.path}" for f in result.files] or ["No files that large"]
        if result.has_more:
            lines.append(f"(more than {max_results})")
        return ok(result, "\n".join(lines), format)

    @server.tool(
        title="Find empty directories",
        annotations=read_hints("Find empty directories"),
        description="Directories with nothing in them (on object stores: directory markers with nothing under them).",
    )
    @catching
    def find_empty_directories(
        path: DirArg = ".",
        recursive: bool = True,
        exclude_patterns: Globs = None,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, analytics.EmptyDirsResult]:
        result = analytics.find_empty_directories(vfs, path, recursive, exclude_patterns)
        return ok(result, "\n".join(result.directories) or "No empty directories", format)

    @server.tool(
        title="Find duplicate files",
        annotations=read_hints("Find duplicate files"),
        description=(
            "Groups of files with identical content under a directory: compared by size, then a hash of a "
            "512-byte sample from the middle, then a full hash (files of unique size are never read)."
        ),
    )
    @catching
    def find_duplicate_files(
        ctx: Context,
        path: DirArg = ".",
        recursive: bool = True,
        min_size: Annotated[int, Field(ge=0, description="Ignore files smaller than this (bytes)")] = 1,
        exclude_patterns: Globs = None,
        max_files: Annotated[int, Field(ge=1, le=1000000, description="Scan at most this many files")] = 1000,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, analytics.DuplicatesResult]:
        result = analytics.find_duplicate_files(
            vfs, path, recursive, min_size, exclude_patterns, max_files, progress=reporter(ctx)
        )
        lines = [f"{human_size(g.size)} x{len(g.paths)}:\n  " + "\n  ".join(g.paths) for g in result.groups]
        lines.append(f"{len(result.groups)} groups; {human_size(result.wasted_bytes)} reclaimable")
        if result.truncated:
            lines.append(f"(stopped at max_files={max_files})")
        return ok(result, "\n".join(lines), format)


def render_grep(result: grep.GrepResult) -> str:
    """grep-like text: `path:line:column: text` for matches, `path-line- text` for context, each line once."""
    if result.counts is not None:
        lines = [f"{c.path}: {c.count}" for c in result.counts] or ["No matches"]
    else:
        lines, shown = [], set()
        for m in result.matches:
            first = m.line_number - len(m.context_before)
            numbered = [*enumerate(m.context_before, first), (m.line_number, None)]
            numbered += list(enumerate(m.context_after, m.line_number + 1))
            for number, text in numbered:
                if (m.path, number) in shown:
                    continue
                shown.add((m.path, number))
                lines.append(
                    f"{m.path}:{number}:{m.column}: {m.line}" if text is None else f"{m.path}-{number}- {text}"
                )
        lines = lines or ["No matches"]
    if result.next_offset is not None:
        lines.append(f"(more: results_offset={result.next_offset})")
    elif result.has_more:
        lines.append("(more matches beyond max_results; narrow the search)")
    return "\n".join(lines)
