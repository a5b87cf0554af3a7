"""The whole call, as a user waits for it: a ``vfs-mcp`` process over stdio, driven by a raw
JSON-RPC client (``stdio_server.py``), each workload timed beside its baseline in the same run.
The issue's rows (start, grep, glob, reads, the edit, line reads, apply_patch) are measured by
``side_by_side.py`` (``./dev bench --against REV``, and ``test_bench_side_by_side.py`` beside
their floors); these are the rows it does not have.

| group | vfs-mcp | baseline |
|---|---|---|
| e2e 5 tree, depth 3 | directory_tree | ``find -maxdepth 3`` |
| e2e 6 full tree | directory_tree of everything | ``find`` |
| e2e 7b long editing session | 100 edit_file calls of one server on the 1 MB file, each kept for undo (peak memory) | — |

Every benchmark checks its answer (entries from the tree's own summary line, the undo).
Timings are never asserted; the one bound asserted is the server's peak memory (``VmHWM``),
150 MB per row.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import SCALE, seeded_for_edit, write_log
from stdio_server import StdioServer

if TYPE_CHECKING:
    from conftest import LocalTree, Scale

MEMORY_BOUND = 150 * 10**6
READ_BYTES = 10 * 10**6
EDIT_BYTES = 10**6
SMALL_FILES = 100
EDITS_KEPT = 20 if SCALE.quick else 100
"""Edits one server makes to show the memory its undo journal keeps."""
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
