"""What a big tree costs on a local disk, counted rather than timed: the lstats its listing
makes (one a file, only where sizes are shown; none of a folder or a link) and the Python
calls it makes (a few a folder, not one or more an entry: rows, not an object a step)."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

from conftest import Sandbox, counting

from vfs_mcp.ops.trees.directory_tree import TreeResult, directory_tree, render_tree

FOLDERS, FILES = 30, 40  # 30 folders of 40 files, under 3 folders: 1,233 entries
ENTRIES = 3 + FOLDERS + FOLDERS * FILES


def planted(sandbox: Sandbox) -> None:
    for folder in range(FOLDERS):
        for file in range(FILES):
            sandbox.put(f"top{folder % 3}/f{folder:02d}/m{file:02d}.py", "x" * file)
    host = sandbox.mount.fs_path("")
    os.symlink("top0", os.path.join(host, "top0", "f00", "back"))  # a link: listed, never measured


def lstats(called: Any) -> str | None:
    """Counts the lstats of listed entries (``DirEntry.stat``)."""
    stat = getattr(called, "__name__", "") == "stat" and isinstance(getattr(called, "__self__", None), os.DirEntry)
    return "lstats" if stat else None


def measured(call: Callable[[], TreeResult]) -> tuple[TreeResult, Counter[str]]:
    call()  # imports and first-use caches are not the tree's cost
    with counting(lstats) as seen:
        result = call()
    return result, seen


def test_a_local_tree_measures_each_file_once_and_no_folder_or_link(local_sandbox: Sandbox) -> None:
    planted(local_sandbox)
    vfs = local_sandbox.vfs()
    result, seen = measured(lambda: directory_tree(vfs, ".", max_entries=10_000))
    assert (result.directories, result.files) == (3 + FOLDERS, FOLDERS * FILES)
    assert seen["lstats"] == FOLDERS * FILES


def test_a_local_tree_without_sizes_makes_no_lstat_and_says_no_size(local_sandbox: Sandbox) -> None:
    planted(local_sandbox)
    vfs = local_sandbox.vfs()
    result, seen = measured(lambda: directory_tree(vfs, ".", max_entries=10_000, sizes=False))
    assert seen["lstats"] == 0
    first = result.tree["children"][0]["children"][0]["children"][0]
    assert (first["name"], first["type"], first["size"]) == ("back", "symlink", None)
    assert (result.tree["children"][0]["children"][0]["children"][1]["size"]) is None
    sized = directory_tree(vfs, ".", max_entries=10_000)
    assert render_tree(sized) == render_tree(result)  # the text shows no size either way


def test_a_local_tree_makes_a_few_python_calls_a_folder_not_one_an_entry(local_sandbox: Sandbox) -> None:
    planted(local_sandbox)
    vfs = local_sandbox.vfs()
    result, seen = measured(lambda: directory_tree(vfs, ".", max_entries=10_000, sizes=False))
    text = render_tree(result)
    with counting() as drawn:
        render_tree(result)
    assert text.count(".py\n") == FOLDERS * FILES
    # Before the listing made rows (a Visit a step of a generator, a node by a function call),
    # the tree made 3-4 calls an entry; now a folder's: its listing, its walk, its drawing.
    assert seen["python calls"] < ENTRIES / 4, seen
    assert drawn["python calls"] < ENTRIES / 10, drawn


class _Cyclic:
    """Garbage only the collector frees (it refers to itself), with a finalizer: what other work
    leaves behind for a collection that may come in the middle of a count."""

    def __init__(self) -> None:
        self.itself = self

    def __del__(self) -> None:
        pass


def test_a_count_leaves_out_the_finalizers_of_what_other_work_left_to_the_collector() -> None:
    def work() -> int:
        return len(list(map(list, itertools.repeat((), 20_000))))  # enough new objects to start collections

    with counting() as alone:
        work()
    left = [_Cyclic() for _ in range(2_000)]
    del left
    with counting() as seen:
        work()
    assert seen == alone
