"""The whole call, as a user waits for it: a ``vfs-mcp`` process over stdio, driven by a raw
JSON-RPC client (``stdio_server.py``), each workload timed beside its baseline in the same run.

| group | vfs-mcp | baseline |
|---|---|---|
| e2e 1 cold start | spawn + initialize + tools/list | ``python -c "import mcp"``, without and with its exit |
| e2e 2 whole read | read_file of a 10 MB text file | ``cat`` |
| e2e 3 grep | regex, first 100 matches ±2 lines | ``rg -n -C 2`` and ``rg --json -C 2`` over the same tree |
| e2e 4 name glob | search_files for one name everywhere | ``find -name`` |
| e2e 5 tree, depth 3 | directory_tree | ``find -maxdepth 3`` |
| e2e 6 full tree | directory_tree of everything | ``find`` |
| e2e 7 edit | edit_file, one unique string in 1 MB | read + ``str.replace`` + write, and the durable floor: that + fsync + rename + fsync of the folder |
| e2e 7b long editing session | 100 edit_file calls of one server on the 1 MB file, each kept for undo (peak memory) | — |
| e2e 8 many small reads | read_multiple_files of 100 files | 100 ``open().read()`` |
| e2e 9 lines deep in a log | read_file_lines at line 500,000 (and 5,000,000 at full size), first call and again | ``sed -n`` |

Every benchmark checks its answer (lines, matches, entries, bytes). Timings are never
asserted; the one bound asserted is the server's peak memory (``VmHWM``), 150 MB per row.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import REGEX, SCALE, seeded_for_edit, write_log
from stdio_server import StdioServer

if TYPE_CHECKING:
    from conftest import LocalTree, LogFile, Scale

MEMORY_BOUND = 150 * 10**6
READ_BYTES = 10 * 10**6
EDIT_BYTES = 10**6
SMALL_FILES = 100
EDITS_KEPT = 20 if SCALE.quick else 100
"""Edits one server makes to show the memory its undo journal keeps."""
LINE_OFFSETS = sorted({500_000, SCALE.offset})
"""Where the line rows read: the issue's line 500,000, and the middle of the 10,000,000-line log."""
OPTIONS = ("--max-read-bytes", str(4 * READ_BYTES))


def check_memory(root: Path, row: str, tool: str, **arguments: Any) -> None:
    """A fresh server's peak memory over three calls of a row's tool: at most 150 MB."""
    with StdioServer(root, *OPTIONS) as fresh:
        for _ in range(3):
            fresh.call(tool, **arguments)
        peak = fresh.peak_rss()
    print(f"\npeak server memory, {row}: {peak / 10**6:.0f} MB (bound 150 MB)")
    assert peak <= MEMORY_BOUND


@pytest.fixture(scope="module")
def work(data_dir: Path, source_tree: LocalTree) -> Path:
    """A folder with the source tree and the files the rows read and edit."""
    root = data_dir / "e2e"
    root.mkdir(exist_ok=True)
    shutil.copytree(source_tree.host, root / "src", dirs_exist_ok=True)
    write_log(root / "ten.log", size=READ_BYTES)
    write_log(root / "edit.txt", size=EDIT_BYTES)
    small = root / "small"
    small.mkdir(exist_ok=True)
    for i in range(SMALL_FILES):
        (small / f"f{i:03d}.txt").write_text(f"small file {i}\n" * 20)
    return root


@pytest.fixture(scope="module")
def server(work: Path) -> Iterator[StdioServer]:
    with StdioServer(work, *OPTIONS) as running:
        yield running


# -- 1. cold start ----------------------------------------------------------------------------


def test_cold_start(benchmark: Any, work: Path, scale: Scale) -> None:
    benchmark.group = "e2e 1 cold start: spawn + initialize + tools/list"

    def start() -> int:
        with StdioServer(work, *OPTIONS) as fresh:
            return len(fresh.tools)

    assert benchmark.pedantic(start, rounds=scale.rounds + 2, warmup_rounds=1) > 20
    with StdioServer(work, *OPTIONS) as fresh:
        print(f"\npeak server memory after start: {fresh.peak_rss() / 10**6:.0f} MB (bound 150 MB)")
        assert fresh.peak_rss() <= MEMORY_BOUND


@pytest.mark.parametrize(
    "ending",
    [
        pytest.param("os._exit(0)", id="killed"),  # ends as the timed server does: no interpreter teardown
        pytest.param("", id="with_teardown"),  # the baseline: exit frees every module (0.1-0.3 s more)
    ],
)
def test_cold_start_import_mcp_baseline(benchmark: Any, scale: Scale, ending: str) -> None:
    benchmark.group = "e2e 1 cold start: spawn + initialize + tools/list"
    run = [sys.executable, "-c", f"import os, mcp; {ending}"]
    benchmark.pedantic(subprocess.run, (run,), {"check": True}, rounds=scale.rounds + 2, warmup_rounds=1)


# -- 2. a whole 10 MB read ----------------------------------------------------------------------


def test_read_whole_file(benchmark: Any, server: StdioServer, work: Path) -> None:
    benchmark.group = "e2e 2 read 10 MB whole"
    text = benchmark(server.call, "read_file", path="ten.log")["content"][0]["text"]
    assert text.encode() == (work / "ten.log").read_bytes()
    check_memory(work, "read 10 MB", "read_file", path="ten.log")


def test_read_whole_file_cat_baseline(benchmark: Any, work: Path) -> None:
    benchmark.group = "e2e 2 read 10 MB whole"
    out = benchmark(subprocess.run, ["cat", str(work / "ten.log")], capture_output=True, check=True).stdout
    assert len(out) == (work / "ten.log").stat().st_size


# -- 3. grep ------------------------------------------------------------------------------------


def rg() -> str:
    found = shutil.which("rg") or str(Path(sys.executable).with_name("rg"))
    if not Path(found).exists():
        pytest.skip("rg is not installed (pip install ripgrep)")
    return found


def test_grep_regex_first_100(benchmark: Any, server: StdioServer, work: Path, source_tree: LocalTree) -> None:
    benchmark.group = "e2e 3 grep regex, first 100 matches ±2 lines"
    arguments = {"path": "src", "pattern": REGEX, "is_regex": True, "context_lines": 2, "results_limit": 100}
    text = benchmark(server.text, "grep_files", **arguments)
    assert len(re.findall(r":\d+:\d+: ", text)) == min(100, len(source_tree.spec.regex_paths()))
    check_memory(work, "grep", "grep_files", **arguments)


@pytest.mark.parametrize("output", ["-n", "--json"])
def test_grep_rg_baseline(benchmark: Any, work: Path, source_tree: LocalTree, output: str) -> None:
    """ripgrep as a person runs it (``-n``, the issue's baseline: every core, no sort) and with
    the JSON output the server reads; both print all matches of the tree."""
    benchmark.group = "e2e 3 grep regex, first 100 matches ±2 lines"
    run = [rg(), output, "-C", "2", "-e", REGEX, str(work / "src")]
    out = benchmark(subprocess.run, run, capture_output=True, check=True).stdout
    found = out.count(b'"type":"match"') if output == "--json" else len(re.findall(rb"\.py:\d+:", out))
    assert found == len(source_tree.spec.regex_paths())


# -- 4. a name glob over the whole tree -----------------------------------------------------------


def glob_count(scale: Scale) -> int:
    return scale.tree_files // 20  # one m07.py a folder


def test_name_glob(benchmark: Any, server: StdioServer, work: Path, scale: Scale) -> None:
    benchmark.group = "e2e 4 name glob over the tree"
    arguments = {"path": "src", "pattern": "**/m07.py", "max_results": 10000}
    text = benchmark(server.text, "search_files", **arguments)
    assert text.count("m07.py") == glob_count(scale)
    check_memory(work, "glob", "search_files", **arguments)


def test_name_glob_find_baseline(benchmark: Any, work: Path, scale: Scale) -> None:
    benchmark.group = "e2e 4 name glob over the tree"
    run = ["find", str(work / "src"), "-name", "m07.py"]
    out = benchmark(subprocess.run, run, capture_output=True, check=True).stdout
    assert out.count(b"\n") == glob_count(scale)


# -- 5, 6. trees ----------------------------------------------------------------------------------


def find_count(folder: Path, *depth: str) -> int:
    """Entries below ``folder`` (``find -mindepth 1``, with ``-maxdepth N`` when given)."""
    run = ["find", str(folder), "-mindepth", "1", *(("-maxdepth", depth[0]) if depth else ())]
    return subprocess.run(run, capture_output=True, check=True).stdout.count(b"\n")


def tree_count(text: str) -> int:
    """Entries a directory_tree shows, from its last line: "N directories, M files"."""
    dirs, files = map(int, re.findall(r"(\d+) director(?:y|ies), (\d+) files?$", text)[0])
    return dirs + files


def test_tree_depth_3(benchmark: Any, server: StdioServer, work: Path) -> None:
    benchmark.group = "e2e 5 tree depth 3"
    arguments = {"path": ".", "max_depth": 3, "max_entries": 100000}
    text = benchmark(server.text, "directory_tree", **arguments)
    print(f"\ndirectory_tree depth 3: {len(text):,} characters")
    assert tree_count(text) == find_count(work, "3")
    check_memory(work, "tree depth 3", "directory_tree", **arguments)


def test_tree_depth_3_find_baseline(benchmark: Any, work: Path) -> None:
    benchmark.group = "e2e 5 tree depth 3"
    benchmark(subprocess.run, ["find", str(work), "-maxdepth", "3"], capture_output=True, check=True)


def test_full_tree(benchmark: Any, server: StdioServer, work: Path) -> None:
    benchmark.group = "e2e 6 full tree"
    arguments = {"path": "src", "max_depth": 100, "max_entries": 100000}
    text = benchmark(server.text, "directory_tree", **arguments)
    print(f"\ndirectory_tree full: {len(text):,} characters")
    assert tree_count(text) == find_count(work / "src")
    check_memory(work, "full tree", "directory_tree", **arguments)


def test_full_tree_find_baseline(benchmark: Any, work: Path, scale: Scale) -> None:
    benchmark.group = "e2e 6 full tree"
    out = benchmark(subprocess.run, ["find", str(work / "src")], capture_output=True, check=True).stdout
    assert out.count(b".py\n") == scale.tree_files


# -- 7. one edit ------------------------------------------------------------------------------------


@pytest.fixture
def edit_target(work: Path) -> Iterator[Callable[[], None]]:
    """Puts the unique string back into edit.txt; the file is restored at the end."""
    path = work / "edit.txt"
    original = path.read_bytes()
    seeded = seeded_for_edit(original)

    def restore() -> None:  # returns nothing: pytest-benchmark would take a value as the arguments
        path.write_bytes(seeded)

    yield restore
    path.write_bytes(original)


def test_edit_one_string(benchmark: Any, server: StdioServer, work: Path, edit_target: Callable[[], None]) -> None:
    benchmark.group = "e2e 7 edit one string in 1 MB"
    edit = {"oldText": "retries = 3", "newText": "retries = 5"}
    benchmark.pedantic(lambda: server.call("edit_file", path="edit.txt", edits=[edit]), setup=edit_target, rounds=30)
    assert b"retries = 5" in (work / "edit.txt").read_bytes()
    # Memory of edits made, not dry runs: each keeps its 1 MB before-image for undo.
    with StdioServer(work, *OPTIONS) as fresh:
        for _ in range(3):
            edit_target()
            fresh.call("edit_file", path="edit.txt", edits=[edit])
        print(f"\npeak server memory, edit (3 made): {fresh.peak_rss() / 10**6:.0f} MB (bound 150 MB)")
        assert fresh.peak_rss() <= MEMORY_BOUND
    edit_target()


def test_edit_long_session(benchmark: Any, work: Path, edit_target: Callable[[], None]) -> None:
    """A fresh server making 100 edits of the 1 MB file, each kept for undo (the journal's
    budget is 64 MiB a session: past a few MiB the before-images wait on disk)."""
    benchmark.group = "e2e 7b long editing session: 100 edits of 1 MB, one server"
    edit = {"oldText": "retries = 3", "newText": "retries = 5"}
    peaks = []

    def session() -> None:
        with StdioServer(work, *OPTIONS) as fresh:
            for _ in range(EDITS_KEPT):
                edit_target()
                fresh.call("edit_file", path="edit.txt", edits=[edit])
            assert "edit_file" in fresh.text("undo")  # the newest is undone from memory
            peaks.append(fresh.peak_rss())

    benchmark.pedantic(session, rounds=2)
    print(f"\npeak server memory after {EDITS_KEPT} edits of 1 MB kept for undo: {max(peaks) / 10**6:.0f} MB")
    assert max(peaks) <= MEMORY_BOUND
    edit_target()


def test_edit_replace_and_write_baseline(benchmark: Any, work: Path, edit_target: Callable[[], None]) -> None:
    benchmark.group = "e2e 7 edit one string in 1 MB"
    path = work / "edit.txt"

    def replace() -> None:
        text = path.read_bytes().decode()
        path.write_bytes(text.replace("retries = 3", "retries = 5", 1).encode())

    benchmark.pedantic(replace, setup=edit_target, rounds=30)
    assert b"retries = 5" in path.read_bytes()


def test_edit_durable_floor_baseline(benchmark: Any, work: Path, edit_target: Callable[[], None]) -> None:
    """The least a durable edit does, in process: read, replace, write a temp file, fsync it,
    rename it over the file, fsync the folder (the issue's floor for the row)."""
    benchmark.group = "e2e 7 edit one string in 1 MB"
    path = work / "edit.txt"
    temp = work / ".edit.txt.floor"

    def replace() -> None:
        text = path.read_bytes().decode()
        with temp.open("wb") as out:
            out.write(text.replace("retries = 3", "retries = 5", 1).encode())
            out.flush()
            os.fsync(out.fileno())
        os.rename(temp, path)
        folder = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)

    benchmark.pedantic(replace, setup=edit_target, rounds=30)
    assert b"retries = 5" in path.read_bytes()


# -- 8. many small reads ------------------------------------------------------------------------------


def small_paths(work: Path) -> list[str]:
    return [f"small/f{i:03d}.txt" for i in range(SMALL_FILES)]


def test_read_multiple_files(benchmark: Any, server: StdioServer, work: Path) -> None:
    benchmark.group = "e2e 8 read 100 small files"
    text = benchmark(server.text, "read_multiple_files", paths=small_paths(work))
    assert all(f"small file {i}\n" in text for i in range(SMALL_FILES))
    check_memory(work, "100 small reads", "read_multiple_files", paths=small_paths(work))


def test_read_multiple_files_open_baseline(benchmark: Any, work: Path) -> None:
    benchmark.group = "e2e 8 read 100 small files"

    def read_all() -> list[str]:
        out = []
        for rel in small_paths(work):
            with open(work / rel) as handle:
                out.append(handle.read())
        return out

    assert len(benchmark(read_all)) == SMALL_FILES


CLIENT_TURN = 0.5
"""Seconds between a client's ``tools/list`` and its first call (a model's turn takes longer):
the server imports what calls need meanwhile (``tools.warm``), so the row measures the first
read of the log (its line index), as a user's first call meets it."""


# -- 9. lines deep in a big log -------------------------------------------------------------------------


@pytest.mark.parametrize("offset", LINE_OFFSETS)
def test_lines_first_call(benchmark: Any, work: Path, numbered_log: LogFile, scale: Scale, offset: int) -> None:
    benchmark.group = f"e2e 9 lines {offset:,} of a log"
    folder = numbered_log.host.parent
    servers: list[StdioServer] = []

    def fresh() -> tuple[tuple[StdioServer], dict[str, Any]]:
        servers.append(StdioServer(folder))
        time.sleep(CLIENT_TURN)  # a client's turn between listing the tools and its first call
        return (servers[-1],), {}

    def read(running: StdioServer) -> str:
        return running.text("read_file_lines", path=numbered_log.name, offset=offset, limit=scale.limit)

    try:
        text = benchmark.pedantic(read, setup=fresh, rounds=scale.rounds)
        assert text.startswith(numbered_log.text(offset, offset + scale.limit))
        peak = servers[-1].peak_rss()
        print(f"\npeak server memory, lines deep in a log: {peak / 10**6:.0f} MB (bound 150 MB)")
        assert peak <= MEMORY_BOUND
    finally:
        for running in servers:
            running.close()


@pytest.mark.parametrize("offset", LINE_OFFSETS)
def test_lines_again(benchmark: Any, numbered_log: LogFile, scale: Scale, offset: int) -> None:
    benchmark.group = f"e2e 9 lines {offset:,} of a log"
    with StdioServer(numbered_log.host.parent) as running:
        arguments = {"path": numbered_log.name, "offset": offset, "limit": scale.limit}
        running.call("read_file_lines", **arguments)
        text = benchmark(running.text, "read_file_lines", **arguments)
        assert text.startswith(numbered_log.text(offset, offset + scale.limit))


@pytest.mark.parametrize("offset", LINE_OFFSETS)
def test_lines_sed_baseline(benchmark: Any, numbered_log: LogFile, scale: Scale, offset: int) -> None:
    benchmark.group = f"e2e 9 lines {offset:,} of a log"
    first, last = offset + 1, offset + scale.limit
    run = ["sed", "-n", f"{first},{last}p;{last}q", str(numbered_log.host)]
    out = benchmark.pedantic(subprocess.run, (run,), {"capture_output": True, "check": True}, rounds=scale.rounds)
    assert out.stdout.decode() == numbered_log.text(offset, offset + scale.limit)
