"""grep_files: two engines, one result, each bounded in time and in the size of its reply.

On local mounts ripgrep walks and searches (``rg --json --sort path``), its output read as
a stream and the process stopped once enough matches are in (``ripgrep.py``). Elsewhere a
Python engine lists once, fetches files concurrently and scans each whole buffer with RE2.
Both give the same matches in the same order (depth-first name order, then line), the same
context lines and the same counts, and skip a file as binary when its first 8 KiB hold a
NUL byte. Both engines match in linear time (``regex.py``).

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

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import re2
from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument, VfsError
from vfs_mcp.filesystem import Entry, JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.ops.globs import caller_globs
from vfs_mcp.ops.regex import compile_regex
from vfs_mcp.ops.searched import as_searched
from vfs_mcp.ops.text import looks_binary
from vfs_mcp.ops.walk import select

FETCH_CONCURRENCY = 16
REMOTE_FETCH_CONCURRENCY = 48  # object stores: each fetch is mostly waiting on the network
FETCH_BYTES = 64 << 20
"""Bytes of files fetched ahead at most (files are listed with their sizes): memory stays
bounded however many files a grep reads."""
MAX_LINE_CHARS = 1000
"""Characters of one matched (or context) line a result carries; longer lines are cut around the match."""
DEFAULT_MAX_CHARS = 200_000
"""Characters of matched and context lines one reply carries unless the server sets --max-response-chars."""
MATCH_BUDGET_SECONDS = 5.0
"""Seconds one search may spend matching before it answers with what it found."""
MAX_FILE_SIZE = 1 << 40
MAX_CONTEXT = 1000
SCAN_WINDOW = 64 * 1024
"""Bytes searched per RE2 call (extended to the end of a line): the budget is checked between calls."""
Progress = Callable[[int, int | None, str], None]


class GrepMatch(BaseModel):
    path: str
    line_number: int = Field(description="1-based")
    column: int = Field(description="1-based character column of the first match on the line")
    line: str
    context_before: list[str] = Field(default_factory=list)
    context_after: list[str] = Field(default_factory=list)


class FileCount(BaseModel):
    path: str
    count: int = Field(description="Matching lines in the file")


class GrepResult(BaseModel):
    path: str
    engine: Literal["ripgrep", "python"]
    matches: list[GrepMatch] = Field(default_factory=list)
    counts: list[FileCount] | None = Field(None, description="Per-file counts (count_only)")
    returned: int
    has_more: bool
    next_offset: int | None = Field(None, description="Pass as results_offset for the next page")
    notes: list[str] = Field(default_factory=list, description="What cut the search short or was skipped")


def mib(value: float) -> int:
    """``value`` MiB in bytes; INVALID_ARGUMENT for what no file can be (not finite, over 1 TiB)."""
    if not math.isfinite(value) or not 0 < value * 1024 * 1024 <= MAX_FILE_SIZE:
        raise InvalidArgument(f"max_file_size_mb must be more than 0 and at most {MAX_FILE_SIZE >> 20}")
    return int(value * 1024 * 1024)


@dataclass
class GrepQuery:
    pattern: str
    is_regex: bool = False
    case_sensitive: bool = True
    whole_word: bool = False
    include: list[str] | None = None
    exclude: list[str] | None = None
    before: int = 0
    after: int = 0
    offset: int = 0
    limit: int | None = None
    max_results: int = 1000
    max_file_size: int = 10 * 1024 * 1024
    max_depth: int | None = None
    count_only: bool = False
    respect_gitignore: bool = False
    """The tools pass True unless asked not to (SPEC §7); False here: a query says what it wants."""
    max_chars: int = DEFAULT_MAX_CHARS
    budget: float = MATCH_BUDGET_SECONDS
    regex: re2._Regexp = field(init=False)

    def __post_init__(self) -> None:
        if not self.pattern:
            raise InvalidArgument("pattern is empty")
        if "\n" in self.pattern:
            raise InvalidArgument("pattern contains a newline; grep matches within one line")
        if min(self.before, self.after, self.offset) < 0 or self.max_results < 1 or (self.limit or 1) < 1:
            raise InvalidArgument("context and offsets must be 0 or more; limits 1 or more")
        if max(self.before, self.after) > MAX_CONTEXT or not 0 < self.max_file_size <= MAX_FILE_SIZE:
            raise InvalidArgument(
                f"context is at most {MAX_CONTEXT} lines and the file size limit at most {MAX_FILE_SIZE >> 20} MiB"
            )
        if self.max_depth is not None and not 1 <= self.max_depth <= 100_000:
            raise InvalidArgument("max_depth must be between 1 and 100000")
        self.regex = compile_regex(
            self.pattern, is_regex=self.is_regex, case_sensitive=self.case_sensitive, whole_word=self.whole_word
        )
        caller_globs(self.include, "include")
        caller_globs(self.exclude, "exclude")

    @property
    def wanted(self) -> int:
        """How many results the page needs, counted from the first."""
        end = self.offset + (self.limit if self.limit is not None else self.max_results)
        return min(end, self.max_results)


def cut(line: str, column: int = 1) -> str:
    """``line`` within MAX_LINE_CHARS: a window around ``column`` (1-based), saying what was left out."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    start = max(0, min(column - 1 - MAX_LINE_CHARS // 4, len(line) - MAX_LINE_CHARS))
    end = start + MAX_LINE_CHARS
    head = f"…[cut {start:,} characters]…" if start else ""
    tail = f"…[cut {len(line) - end:,} characters]…" if end < len(line) else ""
    return head + line[start:end] + tail


class OutOfTime(Exception):
    """The search used its matching budget."""


class Stopwatch:
    """Time spent matching, against the query's budget."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.used = 0.0

    def search(self, regex: re2._Regexp, buf: bytes, pos: int, end: int) -> re2._Match | None:
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


class Collector:
    """Gathers matches in order and knows when the page (plus one, for has_more) is full."""

    def __init__(self, query: GrepQuery) -> None:
        self.query = query
        self.seen = 0
        self.chars = 0
        self.over_size = False
        self.matches: list[GrepMatch] = []
        self.counts: dict[str, int] = {}
        self.notes: list[str] = []

    @property
    def full(self) -> bool:
        return self.over_size or self.seen > self.query.wanted

    def add(self, path: str, line_no: int, column: int, line: str, ctx_b: list[str], ctx_a: list[str]) -> None:
        self.seen += 1
        if self.query.count_only:
            self.counts[path] = self.counts.get(path, 0) + 1
        elif self.query.offset < self.seen <= self.query.wanted:
            match = GrepMatch(
                path=path,
                line_number=line_no,
                column=column,
                line=cut(line, column),
                context_before=[cut(c) for c in ctx_b],
                context_after=[cut(c) for c in ctx_a],
            )
            size = len(path) + len(match.line) + sum(len(c) + len(path) for c in (*ctx_b, *ctx_a)) + 16
            if self.matches and self.chars + size > self.query.max_chars:
                self.over_size = True
                return
            self.chars += size
            self.matches.append(match)

    def skipped(self, what: str, paths: list[str]) -> None:
        if paths:
            shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
            self.notes.append(f"{len(paths)} {what}: {shown}")

    def out_of_time(self, done: int | None, total: int | None) -> None:
        where = f" after {done} of {total} files" if done is not None and total else ""
        self.notes.append(
            f"matching stopped at its {self.query.budget:g} s budget{where}: the results are incomplete. "
            "Simplify the pattern, or narrow path or include_patterns"
        )

    def result(self, root: Target, engine: Literal["ripgrep", "python"], stopped: bool = False) -> GrepResult:
        q = self.query
        if q.count_only:
            files = [FileCount(path=p, count=c) for p, c in self.counts.items()]
            page_end = q.offset + (q.limit or len(files))
            page = files[q.offset : page_end]
            more = page_end < len(files) or self.full or stopped
            return GrepResult(
                path=root.display,
                engine=engine,
                counts=page,
                returned=len(page),
                has_more=more,
                next_offset=page_end if page_end < len(files) else None,
                notes=self.notes,
            )
        notes = list(self.notes)
        next_offset = q.wanted if self.full and q.wanted < q.max_results else None
        if self.over_size:
            next_offset = q.offset + len(self.matches)
            notes.insert(
                0,
                f"the reply reached its size budget ({q.max_chars:,} characters) after {len(self.matches)} matches: "
                f"continue with results_offset={next_offset}, or narrow (fewer context lines, include_patterns, "
                "a smaller path)",
            )
        return GrepResult(
            path=root.display,
            engine=engine,
            matches=self.matches,
            returned=len(self.matches),
            has_more=self.full or stopped,
            next_offset=None if stopped and not self.over_size else next_offset,
            notes=notes,
        )


def grep_python(
    vfs: JailedFS, root: Target, files: list[Entry], query: GrepQuery, progress: Progress | None = None
) -> GrepResult:
    """Scan files in order, fetching ahead concurrently (``JailedFS.cat_each``), until the page is full."""
    out = Collector(query)
    clock = Stopwatch(query.budget)
    unreadable: list[str] = []
    width = FETCH_CONCURRENCY if root.mount.capabilities.host_paths else REMOTE_FETCH_CONCURRENCY
    stopped = False
    fetched = vfs.cat_each(((e.target, e.size) for e in files), width=width, in_flight=FETCH_BYTES)
    try:
        for done, (target, data) in enumerate(fetched, 1):
            if isinstance(data, VfsError):
                unreadable.append(f"{target.display} ({data.code})")
                data = b""
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
) -> GrepResult:
    """Search a file or a tree for ``query``; ripgrep on local mounts when available."""
    from vfs_mcp.ops import ripgrep  # ripgrep.py builds on this module's query and collector

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
    return grep_python(vfs, root, files, query, progress)
