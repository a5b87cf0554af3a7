"""grep_files: two engines, one result, each bounded in time and in the size of its reply.

On local mounts ripgrep walks and searches (``rg --json --sort path``), its output read as
a stream and the process stopped once enough matches are in (``ripgrep``). Elsewhere a
Python engine lists once, fetches files concurrently and scans each whole buffer with RE2.
Both give the same matches in the same order (depth-first name order, then line), the same
context lines and the same counts, and skip a file as binary when its first 8 KiB hold a
NUL byte. Both engines match in linear time (``regex``).

Bounds, the same in both engines:

- a line longer than ``MAX_LINE_CHARS`` is cut around the match, with ``…[cut N characters]…``
  where text was left out (context lines keep their start);
- matches, context included, stop at ``max_chars`` characters: ``has_more`` with the
  ``next_offset`` to continue from, and a note on how to narrow;
- matching may take ``budget`` seconds (ripgrep's whole run; the Python engine's time inside
  RE2): then the results so far come back with a note;
- files that could not be read are counted in a note, never silently missing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Literal

import re2

from vfs_mcp.errors import InvalidArgument, VfsError
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.jail.tally import count_matched
from vfs_mcp.ops.search.query import Collector, GrepQuery, GrepResult
from vfs_mcp.ops.search.utf8_view import as_searched
from vfs_mcp.ops.text.encoding import looks_binary
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import select

FETCH_CONCURRENCY = 16
REMOTE_FETCH_CONCURRENCY = 48  # object stores: each fetch is mostly waiting on the network
FETCH_BYTES = 64 << 20
"""Bytes of files fetched ahead at most (files are listed with their sizes): memory stays
bounded however many files a grep reads."""
SCAN_WINDOW = 64 * 1024
"""Bytes searched per RE2 call (extended to the end of a line): the budget is checked between calls."""


class OutOfTime(Exception):
    """The search used its matching budget."""


class Stopwatch:
    """Time spent matching, against the query's budget."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.used = 0.0

    def search(self, regex: re2._Regexp, buf: bytes, pos: int, end: int) -> re2._Match | None:
        count_matched(end - pos)
        started = time.perf_counter()
        try:
            return regex.search(buf, pos, end)
        finally:
            self.used += time.perf_counter() - started
            if self.used > self.budget:
                raise OutOfTime


def _strip_eol(line: bytes) -> str:
    return line.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", "replace")


def scan(buf: bytes, query: GrepQuery, clock: Stopwatch) -> Iterator[tuple[int, int, str, list[str], list[str]]]:
    """Matching lines of a whole UTF-8 buffer: (line number, column, line, context before, after).

    RE2 runs over windows of whole lines, so the budget is checked at least every SCAN_WINDOW bytes.
    """
    regex, before, after = query.regex, query.before, query.after
    group = 1 if query.whole_word else 0  # whole_word consumes a neighbour on each side: group 1 is the word
    n = len(buf)
    pos, line_no, counted_to = 0, 1, 0
    # Past the final newline there is no line left (grep reports no empty line there).
    while pos < n:
        window = buf.find(b"\n", min(pos + SCAN_WINDOW, n))
        window = n if window < 0 else window
        match = clock.search(regex, buf, pos, window)
        if match is None:
            pos = window + 1
            continue
        first = match.start(group)
        if first == n and buf.endswith(b"\n"):
            return
        start = buf.rfind(b"\n", 0, first) + 1
        end = buf.find(b"\n", first)
        end = n if end < 0 else end
        if match.end(group) > end:  # the match ran across a newline: grep is line by line
            inner = clock.search(regex, buf, start, end)
            if inner is None:
                pos = end + 1
                continue
            first = inner.start(group)
        line_no += buf.count(b"\n", counted_to, start)
        counted_to = start
        ctx_before: list[str] = []
        cursor = start
        for _ in range(before):
            if cursor == 0:
                break
            prev = buf.rfind(b"\n", 0, cursor - 1) + 1
            ctx_before.insert(0, _strip_eol(buf[prev : cursor - 1]))
            cursor = prev
        ctx_after: list[str] = []
        cursor = end
        for _ in range(after):
            if cursor >= n - 1:
                break
            nxt = buf.find(b"\n", cursor + 1)
            nxt = n if nxt < 0 else nxt
            ctx_after.append(_strip_eol(buf[cursor + 1 : nxt]))
            cursor = nxt
        column = len(buf[start:first].decode("utf-8", "replace")) + 1
        yield line_no, column, _strip_eol(buf[start:end]), ctx_before, ctx_after
        pos = end + 1


def grep_python(
    vfs: JailedFS,
    root: Target,
    files: list[Entry],
    query: GrepQuery,
    progress: Progress | None = None,
    use_index: bool = False,
) -> GrepResult:
    """Scan files in order, fetching ahead concurrently (``JailedFS.cat_each``), until the page is
    full; with ``use_index``, only the files the mount's content index cannot rule out (``index``)."""
    out = Collector(query)
    clock = Stopwatch(query.budget)
    unreadable: list[str] = []
    width = FETCH_CONCURRENCY if root.mount.capabilities.host_paths else REMOTE_FETCH_CONCURRENCY
    stopped = False
    narrowed = None
    if use_index and not root.mount.capabilities.local_io:
        from vfs_mcp.ops.search import index  # loaded by the first search of an object store

        narrowed = index.plan(vfs, root, files, query)
    if narrowed is not None:
        files = narrowed.reading  # the rest cannot match: the index holds them at their ETag without the pattern
    fetched = vfs.cat_each(((e.target, e.size) for e in files), width=width, in_flight=FETCH_BYTES)
    try:
        for done, (target, data) in enumerate(fetched, 1):
            if isinstance(data, VfsError):
                unreadable.append(f"{target.display} ({data.code})")
                data = b""
            elif narrowed is not None:
                narrowed.saw(files[done - 1], data)
            if progress:
                progress(done, len(files), target.display)
            if not data or looks_binary(data):
                continue
            try:
                for line_no, column, line, ctx_b, ctx_a in scan(as_searched(data), query, clock):
                    out.add(target.display, line_no, column, line, ctx_b, ctx_a)
                    if out.full:
                        break
            except OutOfTime:
                out.out_of_time(done, len(files))
                stopped = True
                break
            if out.full:
                break
    finally:
        fetched.close()  # the fetches not taken yet are cancelled (also when progress raises: cancelled)
        if narrowed is not None:
            narrowed.finish()
    out.skipped("files could not be read", unreadable)
    return out.result(root, "python", stopped)


def grep_files(
    vfs: JailedFS,
    path: str,
    query: GrepQuery,
    *,
    recursive: bool = True,
    engine: Literal["auto", "ripgrep", "python"] = "auto",
    progress: Progress | None = None,
    use_index: bool = True,
) -> GrepResult:
    """Search a file or a tree for ``query``; ripgrep on local mounts when available; on object
    stores, the mount's content index narrows which objects are read (``use_index=False``: all)."""
    from vfs_mcp.ops.search import ripgrep  # loaded only for searches it runs

    root = vfs.resolve(path)
    entry = vfs.info(root)
    is_file = entry.type == "file"
    if entry.type not in ("file", "directory"):
        raise InvalidArgument(f"{root.display} is neither a file nor a directory")
    if not recursive:
        query.max_depth = 1
    if is_file and entry.size > query.max_file_size:
        return Collector(query).result(root, "python")  # too large to search, as in a walk
    rg = ripgrep.rg_binary() if root.mount.capabilities.native_grep else None
    if engine != "python" and rg is not None:
        try:
            return ripgrep.grep_ripgrep(vfs, root, query, rg, is_file, progress)
        except ripgrep.RipgrepFailed as err:
            if engine == "ripgrep":
                raise InvalidArgument(f"ripgrep cannot run this regex ({err}); drop engine='ripgrep'") from None
    if is_file:
        files = [entry]
    else:
        selection = select(
            vfs,
            root,
            max_depth=query.max_depth,
            include=query.include,
            exclude=query.exclude,
            respect_gitignore=query.respect_gitignore,
        )
        files = [e for e in selection.files() if e.size <= query.max_file_size]
    return grep_python(
        vfs, root, files, query, progress, use_index=use_index and not is_file and vfs.context.reads is None
    )
