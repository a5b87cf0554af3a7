"""The default profile (SPEC §4): seed 000's tool set, widened by the other seeds.

Registration only: each tool resolves nothing itself, it calls one operation and
renders its result. Descriptions are written for a model and kept short.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.filesystem import JailedFS
from vfs_mcp.ops import analytics, compare, edit, grep, listing, read, tree, write
from vfs_mcp.ops import lines as line_ops
from vfs_mcp.settings import Settings
from vfs_mcp.tooling import Format, catching, hints, human_size, ok, read_hints, reporter

PathArg = Annotated[
    str, Field(description="File path: absolute inside a mount, a mount URL, or relative to the working directory")
]
DirArg = Annotated[str, Field(description="Directory path (absolute, URL, or relative to the working directory)")]
EncodingArg = Annotated[str, Field(description="Any Python codec name, or 'base64' for binary data")]
Globs = Annotated[list[str] | None, Field(description="Gitignore-style globs: '*.py' any depth, 'src/*.py' anchored")]
FormatArg = Annotated[Format, Field(description="How the text reply reads; structured content is always JSON")]


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Add the default tools to ``server``; write tools only when some mount is writable."""
    max_read = settings.max_read_bytes

    @server.tool(
        title="Read file",
        annotations=read_hints("Read file"),
        description=(
            "Read a file's content. Whole file by default; pass offset_bytes/max_bytes for a byte range of a large "
            "file (the reply says has_more and next_offset_bytes). encoding='base64' for binary files. "
            "For lines use read_file_lines, head_file or tail_file."
        ),
    )
    @catching
    def read_file(
        path: PathArg,
        encoding: EncodingArg = "utf-8",
        offset_bytes: Annotated[int | None, Field(ge=0, description="Byte offset to start at")] = None,
        max_bytes: Annotated[int | None, Field(ge=1, description="Bytes to read from offset_bytes")] = None,
    ) -> Annotated[CallToolResult, read.ReadResult]:
        text, meta = read.read_file(vfs, path, encoding, offset_bytes, max_bytes, max_read_bytes=max_read)
        return ok(meta, text)

    @server.tool(
        title="Read several files",
        annotations=read_hints("Read several files"),
        description=(
            "Read several files at once, concurrently. Each file comes back as its own text block headed by its "
            "path, or with its own error; one failure never fails the call."
        ),
    )
    @catching
    def read_multiple_files(
        paths: Annotated[list[str], Field(min_length=1, description="Paths to read")],
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, read.MultiReadResult]:
        texts, meta = read.read_multiple_files(vfs, paths, encoding, max_read_bytes=max_read)
        blocks = [
            f"{f.path}:\n{text}"
            if f.ok
            else f"{f.path}: {f.error['code'] if f.error else ''}: {f.error['message'] if f.error else ''}"
            for f, text in zip(meta.files, texts, strict=True)
        ]
        return ok(meta, blocks)

    @server.tool(
        title="List directory",
        annotations=read_hints("List directory"),
        description=(
            "List one directory: name, type and size of each entry, in name order. Use directory_tree for nested "
            "levels and search_files to find names. Paged with offset/limit (has_more says when to go on)."
        ),
    )
    @catching
    def list_directory(
        path: DirArg = ".",
        include_hidden: Annotated[bool, Field(description="Include names starting with '.'")] = False,
        pattern: Annotated[str | None, Field(description="Glob on names, case-insensitive, e.g. '*.py'")] = None,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=10000)] = listing.DEFAULT_LIST_LIMIT,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, listing.ListResult]:
        result = listing.list_directory(vfs, path, include_hidden, pattern, offset, limit)
        lines = [
            f"[DIR] {e.name}"
            if e.type == "directory"
            else f"[{e.type.upper()}] {e.name}" + (f" ({human_size(e.size)})" if e.size is not None else "")
            for e in result.entries
        ]
        lines.append(
            f"({result.total} entries; more from offset={result.next_offset})"
            if result.has_more
            else f"({result.total} entries)"
        )
        return ok(result, "\n".join(lines), format)

    @server.tool(
        title="File info",
        annotations=read_hints("File info"),
        description=(
            "Metadata of a file or directory: type, size, created/modified/accessed times where the backend has "
            "them, permissions, symlink flag, mime type; etag and storage class on S3."
        ),
    )
    @catching
    def get_file_info(path: PathArg, format: FormatArg = "text") -> Annotated[CallToolResult, listing.FileInfo]:
        info = listing.get_file_info(vfs, path)
        text = "\n".join(f"{k}: {v}" for k, v in info.model_dump().items() if v is not None)
        return ok(info, text, format)

    @server.tool(
        title="List allowed directories",
        annotations=read_hints("List allowed directories"),
        description="The mounts this server may touch, with backend and read-only flag. Paths must lie inside one.",
    )
    @catching
    def list_allowed_directories() -> Annotated[CallToolResult, listing.MountsResult]:
        result = listing.list_allowed_directories(vfs)
        lines = [f"{m.root} ({m.backend}{', read-only' if m.read_only else ''})" for m in result.directories]
        return ok(result, "Allowed directories:\n" + "\n".join(lines))

    @server.tool(
        title="Change directory",
        annotations=hints("Change directory", read_only=True),
        description="Set the working directory that relative paths start from. Returns the previous and new one.",
    )
    @catching
    def change_directory(path: DirArg) -> Annotated[CallToolResult, listing.ChangeDirectoryResult]:
        result = listing.change_directory(vfs, path)
        return ok(result, f"{result.previous_dir} -> {result.current_dir}")

    @server.tool(
        title="Working directory",
        annotations=read_hints("Working directory"),
        description="The working directory relative paths start from (current_dir), and where the server lives.",
    )
    @catching
    def get_working_directory() -> Annotated[CallToolResult, listing.WorkingDirectoryResult]:
        result = listing.get_working_directory(vfs)
        return ok(result, f"current_dir: {result.current_dir}\nscript_dir: {result.script_dir}")

    @server.tool(
        title="Read lines",
        annotations=read_hints("Read lines"),
        description=(
            "Read lines [offset, offset+limit) of a text file (0-based offset). Fast deep into huge files: paging "
            "reuses an index. Returns start_line, lines_returned, total_lines when known, has_more and next_offset."
        ),
    )
    @catching
    def read_file_lines(
        path: PathArg,
        offset: Annotated[int, Field(ge=0, description="0-based line to start at")] = 0,
        limit: Annotated[int | None, Field(ge=1, description="Lines to return (default: to the end)")] = None,
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, line_ops.LinesResult]:
        text, meta = line_ops.read_file_lines(vfs, path, offset, limit, encoding, max_read)
        return ok(meta, text)

    @server.tool(
        title="Head of file",
        annotations=read_hints("Head of file"),
        description="The first N lines of a text file (default 10). For a later range use read_file_lines.",
    )
    @catching
    def head_file(
        path: PathArg,
        lines: Annotated[int, Field(ge=1, description="How many lines")] = 10,
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, line_ops.LinesResult]:
        text, meta = line_ops.head_file(vfs, path, lines, encoding, max_read)
        return ok(meta, text)

    @server.tool(
        title="Tail of file",
        annotations=read_hints("Tail of file"),
        description="The last N lines of a text file (default 10), read from the end: as fast on a 1 GB log as on 1 KB.",
    )
    @catching
    def tail_file(
        path: PathArg,
        lines: Annotated[int, Field(ge=1, description="How many lines")] = 10,
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, line_ops.LinesResult]:
        text, meta = line_ops.tail_file(vfs, path, lines, encoding, max_read)
        return ok(meta, text)

    @server.tool(
        title="Compare files",
        annotations=read_hints("Compare files"),
        description=(
            "Unified diff of two text files (on any mounts). format='json' gives hunks and added/removed counts."
        ),
    )
    @catching
    def compare_files(
        file1: PathArg,
        file2: PathArg,
        encoding: EncodingArg = "utf-8",
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, compare.CompareResult]:
        result = compare.compare_files(vfs, file1, file2, encoding)
        return ok(result, result.diff or f"{result.file1} and {result.file2} are identical", format)

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
            "Groups of files with identical content under a directory: compared by size, then a hash of the "
            "first 64 KiB, then a full hash (files of unique size are never read)."
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

    if all(m.read_only for m in vfs.mounts):
        return  # A read-only server does not list write tools at all (SPEC §6).

    @server.tool(
        title="Write file",
        annotations=hints("Write file", read_only=False, destructive=True, idempotent=True),
        description=(
            "Create or replace a file with content (atomic on local disks), or append=true to add to its end. "
            "create_dirs=true makes missing parents. expected_hash (sha256 from read_file) refuses to overwrite "
            "a file changed since. To change part of a file use edit_file."
        ),
    )
    @catching
    def write_file(
        path: PathArg,
        content: Annotated[str, Field(description="Text to write (base64 text with encoding='base64')")],
        encoding: EncodingArg = "utf-8",
        create_dirs: Annotated[bool, Field(description="Create missing parent directories")] = False,
        append: Annotated[bool, Field(description="Add to the end instead of replacing")] = False,
        expected_hash: Annotated[str | None, Field(description="sha256 the current content must have")] = None,
    ) -> Annotated[CallToolResult, write.WriteResult]:
        result = write.write_file(vfs, path, content, encoding, create_dirs, append, expected_hash)
        verb = "Appended" if result.appended else ("Created" if result.created else "Wrote")
        return ok(result, f"{verb} {result.path} ({result.bytes_written} bytes)")

    @server.tool(
        title="Create directory",
        annotations=hints("Create directory", read_only=False, idempotent=True),
        description="Create a directory (and its parents by default). Succeeds if it already exists unless exist_ok=false.",
    )
    @catching
    def create_directory(
        path: DirArg,
        parents: Annotated[bool, Field(description="Create missing parents")] = True,
        exist_ok: Annotated[bool, Field(description="Succeed when it already exists")] = True,
    ) -> Annotated[CallToolResult, write.DirectoryResult]:
        result = write.create_directory(vfs, path, parents, exist_ok)
        return ok(result, f"{'Created' if result.created else 'Already exists'}: {result.path}")

    @server.tool(
        title="Move file",
        annotations=hints("Move file", read_only=False, destructive=True),
        description=(
            "Move or rename a file or directory (across mounts too). Fails with ALREADY_EXISTS if the destination "
            "exists, unless overwrite=true."
        ),
    )
    @catching
    def move_file(
        source: PathArg,
        destination: PathArg,
        overwrite: Annotated[bool, Field(description="Replace an existing destination")] = False,
    ) -> Annotated[CallToolResult, write.MoveResult]:
        result = write.move_file(vfs, source, destination, overwrite)
        return ok(result, f"Moved {result.source} -> {result.destination}")

    @server.tool(
        title="Copy file",
        annotations=hints("Copy file", read_only=False, destructive=True),
        description=(
            "Copy a file, or a directory with recursive=true (across mounts too; links inside are skipped). "
            "Fails with ALREADY_EXISTS if the destination exists, unless overwrite=true."
        ),
    )
    @catching
    def copy_file(
        source: PathArg,
        destination: PathArg,
        overwrite: Annotated[bool, Field(description="Replace an existing destination")] = False,
        recursive: Annotated[bool, Field(description="Copy a directory and everything in it")] = False,
        create_dirs: Annotated[bool, Field(description="Create missing parents of the destination")] = True,
    ) -> Annotated[CallToolResult, write.CopyResult]:
        result = write.copy_file(vfs, source, destination, overwrite, recursive, create_dirs)
        return ok(result, f"Copied {result.source} -> {result.destination} ({result.bytes_copied} bytes)")

    @server.tool(
        title="Delete path",
        annotations=hints("Delete path", read_only=False, destructive=True, idempotent=True),
        description=(
            "Delete a file, a symlink (never its target) or, with recursive=true, a directory tree. "
            "force=true treats a missing path as success. A mount root is never deleted."
        ),
    )
    @catching
    def delete_path(
        path: PathArg,
        recursive: Annotated[bool, Field(description="Delete a non-empty directory and its contents")] = False,
        force: Annotated[bool, Field(description="Succeed when the path does not exist")] = False,
    ) -> Annotated[CallToolResult, write.DeleteResult]:
        result = write.delete_path(vfs, path, recursive, force)
        return ok(result, f"Deleted {result.path}" if result.removed else f"Nothing to delete at {result.path}")

    @server.tool(
        title="Edit file",
        annotations=hints("Edit file", read_only=False, destructive=True),
        description=(
            "Replace text in a file: each edit's oldText must match one place (exactly, else with whitespace "
            "normalised, else fuzzily above 0.8 confidence); several places is CONFLICT unless replace_all. All "
            "edits apply or none. Keeps CRLF, encoding and final newline. Returns a unified diff; dry_run previews. "
            "To edit by line number use edit_file_at_line."
        ),
    )
    @catching
    def edit_file(
        path: PathArg,
        edits: Annotated[list[edit.TextEdit], Field(min_length=1, description="Applied in order")],
        encoding: EncodingArg = "utf-8",
        dry_run: Annotated[bool, Field(description="Return the diff without writing")] = False,
        options: Annotated[edit.EditOptions | None, Field(description="Matching fallbacks")] = None,
        expected_hash: Annotated[str | None, Field(description="sha256 the current content must have")] = None,
    ) -> Annotated[CallToolResult, edit.EditResult]:
        result = edit.edit_file(vfs, path, edits, encoding, dry_run, options, expected_hash)
        return ok(result, result.diff or "No changes")

    @server.tool(
        title="Edit lines",
        annotations=hints("Edit lines", read_only=False, destructive=True),
        description=(
            "Edit by 1-based line number: replace, insert_before, insert_after or delete. expected_content "
            "verifies a line before changing it (abort_on_verification_failure makes any mismatch change "
            "nothing). Numbers refer to the file before the call. Returns each edit's outcome and the diff."
        ),
    )
    @catching
    def edit_file_at_line(
        path: PathArg,
        line_edits: Annotated[list[edit.LineEdit], Field(min_length=1)],
        offset: Annotated[int, Field(ge=0, description="First line (0-based) edits may touch")] = 0,
        limit: Annotated[int | None, Field(ge=1, description="How many lines from offset edits may touch")] = None,
        relative_line_numbers: Annotated[bool, Field(description="line_number is 0-based from offset")] = False,
        abort_on_verification_failure: Annotated[bool, Field(description="Any mismatch: change nothing")] = False,
        encoding: EncodingArg = "utf-8",
        dry_run: Annotated[bool, Field(description="Return the outcome and diff without writing")] = False,
    ) -> Annotated[CallToolResult, edit.LineEditResult]:
        result = edit.edit_file_at_line(
            vfs,
            path,
            line_edits,
            offset,
            limit,
            relative_line_numbers,
            abort_on_verification_failure,
            encoding,
            dry_run,
        )
        summary = f"{result.applied} applied, {result.failed} not applied"
        failures = [
            f"line {o.line_number}: {o.message} (actual: {o.actual_content!r})" for o in result.edits if not o.applied
        ]
        return ok(result, "\n".join([summary, *failures, result.diff]))


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
