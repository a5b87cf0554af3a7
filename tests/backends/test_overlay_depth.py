"""A walk of a mount under review to a depth reads the pending layer to that depth only: the
nodes below it are not merged (only one of them for each folder at the last level, which is
all that names the folder), and the walk shows what the whole walk shows cut at the depth.
On every store: memory, a local folder, S3 (folders that are key prefixes)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import OBJECT_STORES, store_options

from vfs_mcp.changes.state import LocalState
from vfs_mcp_backends import BackendMount, create_mount
from vfs_mcp_backends.layers import Layer, Node
from vfs_mcp_backends.overlay import OverlayMount

_names = itertools.count()
DEEP = 400
"""Pending files below the depth walked (in ``deep/a/b/``)."""


def base_mount(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> BackendMount:
    if kind == "memory":
        return create_mount(f"memory://depth{next(_names)}")
    if kind == "local":
        (tmp_path / "store").mkdir()
        return create_mount(str(tmp_path / "store"), {"auto_mkdir": True})
    bucket = f"depth-{next(_names)}"
    mount = create_mount(f"{OBJECT_STORES[kind]}://{bucket}/tests", store_options(kind, request))
    mount.fs.mkdir(bucket)
    return mount


@pytest.fixture(params=["memory", "local", pytest.param("s3", marks=pytest.mark.s3)])
def reviewed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OverlayMount]:
    """A mount under review: the store holds ``kept/one.txt`` and ``deep/a/b/old.txt``; the
    layer adds ``DEEP`` files in ``deep/a/b/``, one in a new folder ``new/x/y/`` and
    ``top.txt``, and deletes ``deep/a/b/old.txt`` and ``kept/one.txt``."""
    base = base_mount(request.param, tmp_path, request)
    base.fs.pipe_file(f"{base.root}/kept/one.txt", b"one")
    base.fs.pipe_file(f"{base.root}/deep/a/b/old.txt", b"old")
    state = LocalState(str(tmp_path / "state"))
    layer = Layer(state, f"kit://{next(_names)}")
    nodes = [(f"deep/a/b/f{n:03d}.txt", Node("file", blob=layer.put_blob(b"new"), size=3)) for n in range(DEEP)]
    nodes += [
        ("new/x/y/z.txt", Node("file", blob=layer.put_blob(b"z"), size=1)),
        ("deep/a/b/old.txt", Node("gone")),
        ("kept/one.txt", Node("gone")),
        ("top.txt", Node("file", blob=layer.put_blob(b"top"), size=3)),
    ]
    layer.change(lambda: [("set", rel, node) for rel, node in nodes])
    try:
        yield OverlayMount.over(base, layer)
    finally:
        state.close()


def below_root(mount: BackendMount, found: dict[str, Any]) -> dict[str, str]:
    top = mount.root.rstrip("/") + "/"
    return {path[len(top) :]: str(info["type"]) for path, info in found.items() if path.startswith(top)}


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_walk_to_a_depth_shows_the_whole_walk_cut_at_that_depth(reviewed: OverlayMount, depth: int) -> None:
    whole = below_root(reviewed, reviewed.walk(reviewed.root))
    cut = below_root(reviewed, reviewed.walk(reviewed.root, maxdepth=depth))

    assert cut == {path: kind for path, kind in whole.items() if path.count("/") < depth}
    assert "new" in cut and ("new/x" in cut) == (depth > 1)  # a folder only the layer's files name
    paged = [item for page in reviewed.pages(reviewed.root, depth) for item in page.items]
    assert {rel: kind for rel, kind, _ in paged} == cut


def test_a_walk_to_a_depth_reads_none_of_the_pending_nodes_below_it(
    reviewed: OverlayMount, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []
    below = Layer.below

    def counted(self: Layer, rel: str) -> Iterator[tuple[str, Node]]:
        for path, node in below(self, rel):
            read.append(path)
            yield path, node

    monkeypatch.setattr(Layer, "below", counted)
    cut = below_root(reviewed, reviewed.walk(reviewed.root, maxdepth=2))
    list(reviewed.pages(reviewed.root, 2))

    assert "deep/a" in cut and "deep/a/b" not in cut
    # One node for each folder at the last level with nodes deeper (deep/a, new/x), for the walk
    # and for the pages; it was every node below the root, DEEP + 4, for each.
    assert sorted(read) == sorted(["deep/a/b/f000.txt", "new/x/y/z.txt"] * 2)
