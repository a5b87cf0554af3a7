"""The ``fs`` dialect's reads, listings, searches and metadata, with its arguments and defaults
(docs/profile-fs.md).

Relative paths start at the server root (the working directory, at first the first
mount's root) and results name paths under it relative to it, as the original shows them;
a path given absolute (a host path, ``~``, a URL) is named in full. Writes are in
``fs_writes``, the result JSON in ``fs_results``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from vfs_mcp.errors import (
    BinaryContent,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotFound,
    TooLarge,
)
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.globs import caller_globs
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.dialects.fs_results import (
    FileEntry,
    ListFilesResult,
    PathInfoResult,
    RangeType,
    ReadFileResult,
    ReadRange,
    SearchHit,
    SearchMode,
    SearchTextResult,
    StatResult,
)
from vfs_mcp.ops.files import lines as line_ops
from vfs_mcp.ops.files.read import DEFAULT_MAX_READ_BYTES, byte_window
from vfs_mcp.ops.search import grep
from vfs_mcp.ops.search.query import GrepQuery
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import select

DEFAULT_LIST_RESULTS = 500
DEFAULT_MAX_BYTES = 64 * 1024
DEFAULT_MAX_LINES = 200
DEFAULT_SEARCH_RESULTS = 200
DEFAULT_CONTEXT_LINES = 2

_ABSOLUTE = re.compile(r"^(?:/|~(?:/|$)|[a-zA-Z][a-zA-Z0-9+.-]*://)")


# -- naming -------------------------------------------------------------------------------


def is_absolute(path: str) -> bool:
    """Whether a user path is absolute (host path, ``~``, or URL) rather than relative to the server root."""
    return bool(_ABSOLUTE.match(path))


def relative_name(base: Target, shown: str) -> str:
    """``shown`` (a display path) relative to ``base`` when inside it ("." for base itself), else unchanged."""
    if shown == base.display:
        return "."
    prefix = base.display.rstrip("/") + "/"
    return shown[len(prefix) :] if shown.startswith(prefix) else shown


def name_as_given(vfs: JailedFS, raw: str, target: Target) -> str:
    """A relative input is answered relative to the server root, an absolute one in full."""
    return target.display if is_absolute(raw) else relative_name(vfs.cwd, target.display)


def _seconds(entry: Entry) -> int | None:
    # Memory files carry only a creation time, renewed by every write: their modification time.
    when = entry.modified if entry.modified is not None else entry.created
    return int(when) if when is not None else None


# -- git repositories ---------------------------------------------------------------------------


def repo_root(vfs: JailedFS, target: Target) -> Target | None:
    """The nearest folder from ``target`` up to its mount root that holds ``.git`` (dir or file)."""
    here = target
    while True:
        marker = here.child(".git")
        if not vfs.is_hidden(marker):
            try:
                vfs.info(marker, follow=False)
                return here
            except (NotFound, NotADirectory):
                pass
        if here.is_root:
            return None
        here = here.parent()


# -- reading ----------------------------------------------------------------------------------


@contextmanager
def _utf8_only(shown: str) -> Iterator[None]:
    try:
        yield
    except BinaryContent:
        raise BinaryContent(f"{shown} is binary or not UTF-8 text; this tool reads UTF-8 text only") from None


def text_file(vfs: JailedFS, target: Target) -> Entry:
    entry = vfs.info(target)
    if entry.type == "directory":
        raise IsADirectory(f"{target.display} is a directory; list it with list_files")
    if entry.type != "file":
        raise InvalidArgument(f"{target.display} is not a regular file")
    return entry


def read_file(
    vfs: JailedFS,
    path: str,
    range_type: RangeType | None = None,
    offset_bytes: int | None = None,
    max_bytes: int | None = None,
    start_line: int | None = None,
    max_lines: int | None = None,
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
) -> ReadFileResult:
    """Read a byte range or a line range of a UTF-8 file.

    Raises INVALID_ARGUMENT when byte fields and line fields are mixed, TOO_LARGE when the
    range is over ``max_read_bytes``, BINARY_CONTENT for a file that is not UTF-8 text.
    """
    bytes_set = offset_bytes is not None or max_bytes is not None
    lines_set = start_line is not None or max_lines is not None
    kind = range_type or ("lines" if lines_set else "bytes")
    if kind not in ("bytes", "lines"):
        raise InvalidArgument(f"range_type must be 'bytes' or 'lines', not {range_type!r}")
    if kind == "bytes" and lines_set:
        raise InvalidArgument(
            "start_line/max_lines go with range_type='lines' only; drop them or offset_bytes/max_bytes"
        )
    if kind == "lines" and bytes_set:
        raise InvalidArgument(
            "offset_bytes/max_bytes go with range_type='bytes' only; drop them or start_line/max_lines"
        )
    target = vfs.resolve(path)
    entry = text_file(vfs, target)
    shown = name_as_given(vfs, path, target)
    if kind == "lines":
        first = 1 if start_line is None else start_line
        count = DEFAULT_MAX_LINES if max_lines is None else max_lines
        if first < 1 or count < 1:
            raise InvalidArgument("start_line and max_lines must be 1 or more (start_line is 1-based)")
        with _utf8_only(shown):
            content, meta = line_ops.read_file_lines(vfs, path, first - 1, count, "utf-8", max_read_bytes)
        rng = ReadRange(range_type="lines", offset_bytes=None, max_bytes=None, start_line=first, max_lines=count)
        return ReadFileResult(path=shown, content=content, is_truncated=meta.has_more or meta.truncated, range=rng)
    offset = 0 if offset_bytes is None else offset_bytes
    length = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if offset < 0 or length < 1:
        raise InvalidArgument("offset_bytes must be 0 or more and max_bytes 1 or more")
    with _utf8_only(shown):
        content, more = _byte_window(vfs, target, entry.size, offset, length, max_read_bytes)
    rng = ReadRange(range_type="bytes", offset_bytes=offset, max_bytes=length, start_line=None, max_lines=None)
    return ReadFileResult(path=shown, content=content, is_truncated=more, range=rng)


def _byte_window(vfs: JailedFS, target: Target, size: int, offset: int, length: int, limit: int) -> tuple[str, bool]:
    """The text of the characters whose first byte lies in ``[offset, offset+length)``
    (``read.byte_window``), and whether more follow."""
    if (span := min(offset + length, size) - offset) > limit:
        raise TooLarge(f"{span} bytes is over the {limit}-byte read limit; ask for a smaller max_bytes")
    text, _, stop = byte_window(vfs, target, size, offset, length, "utf-8", by_first_byte=True)
    return text, stop < size


# -- listing and searching ------------------------------------------------------------------


def _check_page(max_results: int, skip: int) -> None:
    if max_results < 1 or skip < 0:
        raise InvalidArgument("max_results must be 1 or more and skip 0 or more")


def list_files(
    vfs: JailedFS,
    root: str = ".",
    recursive: bool = True,
    include_globs: list[str] | None = None,
    exclude_globs: list[str] | None = None,
    max_results: int = DEFAULT_LIST_RESULTS,
    include_dirs: bool = False,
    include_metadata: bool = False,
    skip: int = 0,
) -> ListFilesResult:
    """Files (and directories with ``include_dirs``) under ``root``, ignore files respected, paged by skip."""
    _check_page(max_results, skip)
    target = vfs.resolve(root or ".")
    selection = select(
        vfs,
        target,
        max_depth=None if recursive else 1,
        include=include_globs,
        exclude=exclude_globs,
        respect_gitignore=True,
    )
    include = caller_globs(include_globs, "include")
    chosen = [
        e
        for e in selection.entries
        if e.type != "directory" or (include_dirs and (include is None or include.match_file(selection.relative(e))))
    ]
    base = vfs.cwd
    page = chosen[skip : skip + max_results]
    return ListFilesResult(
        entries=[
            FileEntry(
                path=relative_name(base, e.path),
                is_dir=e.type == "directory",
                size=e.size if include_metadata else None,
                modified=_seconds(e) if include_metadata else None,
            )
            for e in page
        ],
        has_more=len(chosen) > skip + max_results,
    )


def search_text(
    vfs: JailedFS,
    query: str,
    mode: SearchMode = "literal",
    case_sensitive: bool = False,
    root: str = ".",
    include_globs: list[str] | None = None,
    exclude_globs: list[str] | None = None,
    max_results: int = DEFAULT_SEARCH_RESULTS,
    context_lines: int = DEFAULT_CONTEXT_LINES,
    skip: int = 0,
    progress: Progress | None = None,
) -> SearchTextResult:
    """Matching lines under ``root`` in path then line order, ignore files respected, paged by skip."""
    _check_page(max_results, skip)
    if mode not in ("literal", "regex"):
        raise InvalidArgument(f"mode must be 'literal' or 'regex', not {mode!r}")
    if context_lines < 0:
        raise InvalidArgument("context_lines must be 0 or more")
    found = grep.grep_files(
        vfs,
        root or ".",
        GrepQuery(
            pattern=query,
            is_regex=mode == "regex",
            case_sensitive=case_sensitive,
            include=include_globs,
            exclude=exclude_globs,
            before=context_lines,
            after=context_lines,
            offset=skip,
            limit=max_results,
            max_results=skip + max_results,
            respect_gitignore=True,
        ),
        progress=progress,
    )
    base = vfs.cwd
    hits = [
        SearchHit(
            path=relative_name(base, m.path),
            line=m.line_number,
            column=m.column,
            line_text=m.line,
            context_before=m.context_before,
            context_after=m.context_after,
        )
        for m in found.matches
    ]
    return SearchTextResult(hits=hits, has_more=found.has_more)


# -- metadata -------------------------------------------------------------------------------------


def stat(vfs: JailedFS, path: str) -> StatResult:
    """Whether a path exists, its kind, size and modification time."""
    try:
        target = vfs.resolve(path)
        shown = name_as_given(vfs, path, target)
        entry = vfs.info(target)
    except (NotFound, NotADirectory):  # hidden names do not exist either
        return StatResult(path=path, exists=False, is_file=False, is_dir=False)
    return StatResult(
        path=shown,
        exists=True,
        is_file=entry.type == "file",
        is_dir=entry.type == "directory",
        size=entry.size,
        modified=_seconds(entry),
    )


def path_info(vfs: JailedFS, path: str = ".") -> PathInfoResult:
    """How a path resolves: its full form, real path, kind, and the git repository holding it."""
    raw = path or "."
    target = vfs.resolve(raw)
    try:
        entry: Entry | None = vfs.info(target)
    except (NotFound, NotADirectory):
        entry = None
    repo = repo_root(vfs, target)
    return PathInfoResult(
        input_path=raw,
        resolved_path=target.display,
        exists=entry is not None,
        is_file=entry is not None and entry.type == "file",
        is_dir=entry is not None and entry.type == "directory",
        is_absolute=is_absolute(raw),
        canonical_path=vfs.canonical(target).display if entry is not None else None,
        repo_root=repo.display if repo is not None else None,
    )
