"""Default profile: content search, name search, trees and analytics (``TOOLS``, all read-only)."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.search import grep
from vfs_mcp.ops.search.query import DEFAULT_MAX_CHARS, GrepQuery, GrepResult, mib
from vfs_mcp.ops.text.names import NAMES_NOTE, escaped, shown
from vfs_mcp.ops.trees import directory_tree as tree
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import IGNORED_HINT
from vfs_mcp.profiles.args import DirArg, FormatArg, Globs, Hidden, Recursive
from vfs_mcp.profiles.results import report
from vfs_mcp.settings import Settings

MAX_CONTEXT_LINES = 100


def grep_files(
    vfs: JailedFS,
    settings: Settings,
    path: DirArg,
    pattern: str,
    progress: Progress,
    is_regex: bool = False,
    case_sensitive: bool = True,
    whole_word: bool = False,
    include_patterns: Globs = None,
    exclude_patterns: Globs = None,
    context_lines: Annotated[int, Field(ge=0)] = 0,
    results_offset: Annotated[int, Field(ge=0)] = 0,
    results_limit: Annotated[int | None, Field(ge=1, description="default: up to 1000")] = None,
    max_depth: Annotated[int | None, Field(ge=1, description="1: path's own files")] = None,
    count_only: bool = False,
    respect_gitignore: bool = True,
    format: FormatArg = "text",
    # Older spellings (docs/clients.md), merged into the arguments above.
    context_before: Annotated[int, Field(ge=0, le=100), Hidden] = 0,
    context_after: Annotated[int, Field(ge=0, le=100), Hidden] = 0,
    max_results: Annotated[int, Field(ge=1, le=100000), Hidden] = 1000,
    max_file_size_mb: Annotated[float, Field(gt=0), Hidden] = 10,
    recursive: Recursive = True,
) -> CallToolResult:
    notes: list[str] = []
    context_lines = tree.bounded(context_lines, MAX_CONTEXT_LINES, "context_lines", notes)
    query = GrepQuery(
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
        max_file_size=mib(max_file_size_mb),
        max_depth=max_depth,
        count_only=count_only,
        respect_gitignore=respect_gitignore,
        max_chars=settings.max_response_chars or DEFAULT_MAX_CHARS,
    )
    result = grep.grep_files(vfs, path, query, recursive=recursive, progress=progress)
    result.notes[:0] = notes
    return report(result, render_grep(result, respect_gitignore), format)


def search_files(
    vfs: JailedFS,
    settings: Settings,
    progress: Progress,
    path: DirArg,
    pattern: str,
    exclude_patterns: Globs = None,
    content_match: str | None = None,
    max_results: Annotated[int, Field(ge=1)] = 100,
    respect_gitignore: bool = True,
    format: FormatArg = "text",
    recursive: Recursive = True,
) -> CallToolResult:
    result = tree.search_files(
        vfs, path, pattern, recursive, exclude_patterns, content_match, max_results, respect_gitignore, progress
    )
    lines = [shown(f.path) for f in result.results] or ["No matches"]
    if result.has_more:
        lines.append(f"(more than {len(result.results)}; raise max_results or narrow the pattern)")
    lines += [f"({note})" for note in result.notes]
    if escaped(*(f.path for f in result.results)):
        lines.append(NAMES_NOTE)
    return report(result, "\n".join(lines), format)


def directory_tree(
    vfs: JailedFS,
    settings: Settings,
    progress: Progress,
    path: DirArg = ".",
    max_depth: Annotated[int, Field(ge=1)] = 3,
    include_files: bool = True,
    pattern: str | None = None,
    exclude_patterns: Globs = None,
    max_entries: Annotated[int, Field(ge=1)] = tree.DEFAULT_TREE_ENTRIES,
    respect_gitignore: bool = True,
    format: FormatArg = "text",
) -> CallToolResult:
    # Files are measured where the answer shows the fields (the text does not show sizes).
    result = tree.directory_tree(
        vfs,
        path,
        max_depth,
        include_files,
        pattern,
        exclude_patterns,
        max_entries,
        progress,
        respect_gitignore,
        sizes=format == "json",
    )
    return report(tree.tree_fields(result), render_tree(result), format)


def render_grep(result: GrepResult, respect_gitignore: bool = False) -> str:
    """grep-like text: `path:line:column: text` for matches, `path-line- text` for context, each line once;
    with no match where ignore files were honoured, a word on how to search ignored paths too."""
    if result.counts is not None:
        lines = [f"{shown(c.path)}: {c.count}" for c in result.counts] or ["No matches"]
    else:
        lines, seen = [], set()
        for m in result.matches:
            first = m.line_number - len(m.context_before)
            numbered = [*enumerate(m.context_before, first), (m.line_number, None)]
            numbered += list(enumerate(m.context_after, m.line_number + 1))
            path = shown(m.path)
            for number, text in numbered:
                if (m.path, number) in seen:
                    continue
                seen.add((m.path, number))
                lines.append(f"{path}:{number}:{m.column}: {m.line}" if text is None else f"{path}-{number}- {text}")
        lines = lines or ["No matches"]
    if respect_gitignore and not result.returned and not result.has_more:
        lines.append(f"(ignored paths and .git were not searched: {IGNORED_HINT})")
    lines += [f"({note})" for note in result.notes]
    if result.next_offset is not None:
        lines.append(f"(more: results_offset={result.next_offset})")
    elif result.has_more:
        lines.append("(more matches beyond max_results; narrow the search or raise max_results)")
    paths = [c.path for c in result.counts or []] + [m.path for m in result.matches]
    if escaped(*paths):
        lines.append(NAMES_NOTE)
    return "\n".join(lines)


def render_tree(result: tree.TreeResult) -> str:
    """The tree as indented text with box-drawing branches; names as ``shown`` writes them
    (each name looked at only when one of them needs it)."""
    if not escaped(result.path, *tree.names_in(result.tree)):
        return tree.render_tree(result)
    return f"{tree.render_tree(result, shown)}\n{NAMES_NOTE}"
