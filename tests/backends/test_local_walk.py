"""The local store's own name walk (descriptors, no dict per entry) lists exactly what the
generic walk over its fsspec ``find`` lists: the same paths, types, sizes and order."""

from __future__ import annotations

import os

import pytest
from conftest import Sandbox

from vfs_mcp_backends import BackendMount


@pytest.mark.parametrize("maxdepth", [None, 1, 2])
@pytest.mark.parametrize("metadata", [True, False])
def test_the_local_name_walk_lists_what_the_generic_walk_lists(
    local_sandbox: Sandbox, maxdepth: int | None, metadata: bool
) -> None:
    for rel, data in {"a.txt": "a", "a.b/x": "xx", "a/b/c.py": "ccc", "a/b/d/e": "", "z": "zzzz"}.items():
        local_sandbox.put(rel, data)
    host = local_sandbox.mount.fs_path("")
    os.symlink("a", os.path.join(host, "link_to_a"))
    os.symlink("nowhere", os.path.join(host, "a", "dangling"))
    backend = local_sandbox.mount.backend
    path = local_sandbox.mount.fs_path("")

    items, unreadable = backend.names(path, maxdepth, metadata)
    assert (items, unreadable) == BackendMount.names(backend, path, maxdepth, metadata)
    expected = [
        ("a", "directory"),
        ("a/b", "directory"),
        ("a/b/c.py", "file"),
        ("a/b/d", "directory"),
        ("a/b/d/e", "file"),
        ("a/dangling", "symlink"),
        ("a.b", "directory"),
        ("a.b/x", "file"),
        ("a.txt", "file"),
        ("link_to_a", "symlink"),
        ("z", "file"),
    ]
    deep_enough = [item for item in expected if maxdepth is None or item[0].count("/") < maxdepth]
    assert [(rel, kind) for rel, kind, _ in items] == deep_enough
    sizes = {rel: size for rel, _, size in items}
    assert sizes.get("a.txt") == (1 if metadata else 0)  # a walk without metadata has no sizes


@pytest.mark.parametrize("metadata", [True, False])
def test_a_name_walk_that_keeps_some_names_lists_and_measures_just_those(
    local_sandbox: Sandbox, metadata: bool
) -> None:
    for rel, data in {"a/x.py": "xx", "a/b/y.py": "yyy", "a/b/z.txt": "", "w.py": "w"}.items():
        local_sandbox.put(rel, data)
    backend, path = local_sandbox.mount.backend, local_sandbox.mount.fs_path("")

    def keep(name: str, rel: str) -> bool:
        return name.endswith(".py") or rel == "a/b"

    kept, _ = backend.names(path, None, metadata, keep)
    assert [(rel, kind) for rel, kind, _ in kept] == [
        ("a/b", "directory"),
        ("a/b/y.py", "file"),
        ("a/x.py", "file"),
        ("w.py", "file"),
    ]
    assert [size for _, _, size in kept] == ([0, 3, 2, 1] if metadata else [0, 0, 0, 0])
    assert backend.names(path, None, True, keep) == BackendMount.names(backend, path, None, True, keep)
