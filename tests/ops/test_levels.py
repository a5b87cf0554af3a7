"""A tree listed level by level (as on object stores, ``breadth_first.breadth_first``) shows exactly
the breadth-first cut of the whole walk, for every cap, ignore files included; and a listing
in key order decides an entry only once its folders' ignore files have been listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Sandbox, make_sandbox

from vfs_mcp.jail.entries import Listing
from vfs_mcp.ops.trees import breadth_first
from vfs_mcp.ops.trees.directory_tree import capped
from vfs_mcp.ops.walks.selection import Sieve, sifted

TREE = {
    ".gitignore": "build/\n*.tmp\n",
    "a/x.txt": "x",
    "a/y.tmp": "x",
    "a/b/c/d.txt": "x",
    "a/b/e.txt": "x",
    "build/out.txt": "x",
    "z.txt": "x",
    "m/n/o/p/q.txt": "x",
    "m/n/r.txt": "x",
    "m/.gitignore": "n/o/\n",
}


@pytest.fixture(params=["memory", "local", "s3"])
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    sandbox = make_sandbox(request.param, tmp_path, request)
    for rel, text in TREE.items():
        sandbox.put(rel, text)
    return sandbox


@pytest.mark.parametrize("max_depth", [1, 2, 3, 10])
def test_level_by_level_is_the_breadth_first_cut_of_the_whole_walk_for_every_cap(box: Sandbox, max_depth: int) -> None:
    vfs = box.vfs()
    root = vfs.resolve(box.path(""))
    whole = breadth_first.tree_listing(vfs, root, max_depth, 10**6, Sieve(vfs, root), None)
    assert "build" not in [rel for rel, _, _ in whole.items] and "m/n/o" not in [rel for rel, _, _ in whole.items]
    for cap in range(1, len(whole.items) + 2):
        expected, _ = capped(whole, root, cap)
        listed = breadth_first.breadth_first(vfs, root, max_depth, cap, Sieve(vfs, root), None)
        assert listed.items == expected, cap
        assert listed.complete == (cap >= len(whole.items)), cap


def test_a_key_order_listing_decides_an_entry_once_its_folders_ignore_files_are_listed(box: Sandbox) -> None:
    """``.cache/`` sorts before ``.gitignore`` in key order: the page that ends between them
    must not decide ``.cache``'s entries yet."""
    box.put(".gitignore", ".cache/\n")
    vfs = box.vfs()
    root = vfs.resolve(box.path(""))
    prefix = f"{root.rel}/" if root.rel else ""
    first = Listing([(prefix + ".cache", "directory", 0), (prefix + ".cache/x.py", "file", 1)], [], False, 2)
    first.until = prefix + ".cache/x.py"
    second = Listing([(prefix + ".gitignore", "file", 9), (prefix + "a.py", "file", 1)], [], True, 2)
    batches = list(sifted(Sieve(vfs, root), root, [first, second]))
    assert batches[0] == []  # held: .gitignore, which could ignore them, was not listed yet
    assert [rel.removeprefix(prefix) for rel, _, _ in batches[1]] == [".gitignore", "a.py"]
