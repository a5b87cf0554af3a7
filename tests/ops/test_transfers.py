"""Copies and moves that fail change nothing; moves never drop what they cannot carry;
walks of deep or partly unreadable trees; a mount root is a directory whatever sits beside it.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox
from fsspec.implementations.memory import MemoryFile
from mcp_types import CallToolResult
from results import code, ok

from vfs_mcp.errors import Internal
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.jail.resolve import Target

pytestmark = pytest.mark.anyio

DEPTH = 5000


def text(result: CallToolResult) -> str:
    return str(getattr(result.content[0], "text", ""))


def second(sandbox: Sandbox, url: str = "memory://elsewhere") -> Mount:
    mount = open_mount(MountSpec(url))
    sandbox.extra_mounts.append(mount)
    return mount


def files_under(mount: Mount) -> list[str]:
    mount.backend.invalidate_tree(mount.backend.root)
    base = mount.backend.root.rstrip("/")
    return sorted(str(k)[len(base) + 1 :] for k in mount.fs.find(base, withdirs=True) if str(k) != base)


# -- deep trees -------------------------------------------------------------------------


def build_deep(vfs: JailedFS, sandbox: Sandbox, depth: int) -> None:
    """A chain ``deep/d/d/.../d`` of ``depth`` folders with a file in each, made around the jail."""
    if sandbox.mount.capabilities.host_paths:
        fd = os.open(sandbox.mount.fs_path(""), os.O_RDONLY | os.O_DIRECTORY)
        names = ["deep"] + ["d"] * (depth - 1)
        for name in names:
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            handle = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(handle, b"x")
            os.close(handle)
        os.close(fd)
        return
    fs, rel = sandbox.mount.fs, "deep"
    for _ in range(depth):  # straight into the store: fsspec's own puts walk every parent
        path = sandbox.mount.fs_path(f"{rel}/f.txt")
        fs.store[path] = MemoryFile(fs, path, b"x")
        rel += "/d"


@pytest.fixture
def deep_sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sandbox]:
    box = make_sandbox(request.param, tmp_path, request)
    yield box
    if box.mount.capabilities.host_paths:  # pytest's own clean-up recurses: take the deep chain down first
        subprocess.run(["rm", "-rf", box.mount.fs_path("deep")], check=True)


@pytest.mark.parametrize("deep_sandbox", ["local", "memory"], indirect=True)
async def test_a_tree_deeper_than_any_path_can_name_fails_to_copy_with_nothing_left_behind(
    deep_sandbox: Sandbox,
) -> None:
    build_deep(deep_sandbox.vfs(), deep_sandbox, DEPTH)
    elsewhere = second(deep_sandbox)
    async with deep_sandbox.client() as client:
        size = ok(await client.call_tool("calculate_directory_size", {"path": deep_sandbox.path("deep")}))
        copied = await client.call_tool(
            "copy_file",
            {"source": deep_sandbox.path("deep"), "destination": deep_sandbox.path("copy/of/deep"), "recursive": True},
        )
        across = await client.call_tool(
            "copy_file",
            {"source": deep_sandbox.path("deep"), "destination": "memory://elsewhere/deep", "recursive": True},
        )
        moved = await client.call_tool(
            "move_file", {"source": deep_sandbox.path("deep"), "destination": "memory://elsewhere/deep"}
        )
    assert (size["files"], size["directories"]) == (DEPTH, DEPTH - 1)
    for failed in (copied, across, moved):
        assert code(failed) == "INVALID_ARGUMENT"
        assert "nothing was" in text(failed)
    assert not deep_sandbox.exists("copy")
    assert files_under(elsewhere) == []
    assert deep_sandbox.exists("deep/" + "d/" * (DEPTH - 1) + "f.txt")


@pytest.mark.parametrize("deep_sandbox", ["local", "memory"], indirect=True)
async def test_a_deep_tree_within_path_limits_copies_and_deletes_whole(deep_sandbox: Sandbox) -> None:
    depth = 300
    build_deep(deep_sandbox.vfs(), deep_sandbox, depth)
    async with deep_sandbox.client() as client:
        copied = ok(await client.call_tool("copy_file", {"source": "deep", "destination": "copy", "recursive": True}))
        deleted = ok(await client.call_tool("delete_path", {"path": "copy", "recursive": True}))
    assert copied["bytes_copied"] == depth
    assert deleted["removed"]
    assert not deep_sandbox.exists("copy")


# -- failures midway ----------------------------------------------------------------------


def failing_reads_of(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every look at or read of a file called ``name`` fails, midway through a copy."""
    for method in ("require_file", "cat", "open_read"):
        real = getattr(JailedFS, method)

        def failing(self: JailedFS, target: Target, *args: Any, __real: Any = real, **kwargs: Any) -> Any:
            if target.name == name:
                raise Internal(f"{target.display} could not be read (simulated)")
            return __real(self, target, *args, **kwargs)

        monkeypatch.setattr(JailedFS, method, failing)


async def test_a_copy_that_fails_midway_removes_what_it_created(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rel in ("src/a.txt", "src/b/c.txt", "src/b/d.txt", "src/e/f.txt"):
        sandbox.put(rel, rel)
    before = files_under(sandbox.mount)
    failing_reads_of("d.txt", monkeypatch)
    async with sandbox.client() as client:
        result = await client.call_tool(
            "copy_file",
            {"source": sandbox.path("src"), "destination": sandbox.path("new/place/copy"), "recursive": True},
        )
    assert code(result) == "INTERNAL"
    assert files_under(sandbox.mount) == before


@pytest.mark.parametrize("sandbox", ["s3"], indirect=True)
async def test_a_file_someone_else_creates_in_a_copys_way_meanwhile_is_theirs_and_stays(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's create-only put of ``copy/b/c.txt`` is refused (another writer made it first):
    the copy takes back what it wrote, and not their file."""
    for rel in ("src/a.txt", "src/b/c.txt", "src/b/d.txt"):
        sandbox.put(rel, rel)
    backend = sandbox.mount.backend
    put_if = backend.put_if

    def theirs_first(path: str, data: bytes, **conditions: Any) -> str | None:
        if path.endswith("copy/b/c.txt") and not sandbox.mount.fs.exists(path):
            sandbox.mount.fs.pipe_file(path, b"theirs")
        return put_if(path, data, **conditions)

    monkeypatch.setattr(backend, "put_if", theirs_first)
    async with sandbox.client() as client:
        result = await client.call_tool("copy_file", {"source": "src", "destination": "copy", "recursive": True})
    assert sandbox.get("copy/b/c.txt") == b"theirs"
    assert code(result) == "ALREADY_EXISTS"
    assert [rel for rel in files_under(sandbox.mount) if rel.startswith("copy/") and "." in rel] == ["copy/b/c.txt"]


async def test_a_move_across_mounts_that_fails_midway_leaves_the_source_whole(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rel in ("src/a.txt", "src/b/c.txt", "src/b/d.txt"):
        sandbox.put(rel, rel)
    elsewhere = second(sandbox)
    before = files_under(sandbox.mount)
    failing_reads_of("d.txt", monkeypatch)
    async with sandbox.client() as client:
        result = await client.call_tool(
            "move_file", {"source": sandbox.path("src"), "destination": "memory://elsewhere/src"}
        )
    assert code(result) == "INTERNAL"
    assert files_under(sandbox.mount) == before
    assert files_under(elsewhere) == []


# -- what a move cannot carry -------------------------------------------------------------


async def test_a_move_to_a_store_without_links_refuses_before_it_starts(local_sandbox: Sandbox) -> None:
    local_sandbox.put("folder/a.txt", "a")
    local_sandbox.put("folder/target.txt", "t")
    os.symlink("target.txt", local_sandbox.mount.fs_path("folder/one"))
    os.symlink("a.txt", local_sandbox.mount.fs_path("folder/two"))
    elsewhere = second(local_sandbox)
    async with local_sandbox.client() as client:
        result = await client.call_tool(
            "move_file", {"source": local_sandbox.path("folder"), "destination": "memory://elsewhere/folder"}
        )
    assert code(result) == "INVALID_ARGUMENT"
    assert "2 symbolic links" in text(result)
    assert "nothing was moved" in text(result)
    assert os.path.islink(local_sandbox.mount.fs_path("folder/one"))
    assert os.readlink(local_sandbox.mount.fs_path("folder/two")) == "a.txt"
    assert files_under(elsewhere) == []


async def test_a_move_to_a_store_without_modes_refuses_executables(local_sandbox: Sandbox) -> None:
    local_sandbox.put("tools/run.sh", "#!/bin/sh\n")
    os.chmod(local_sandbox.mount.fs_path("tools/run.sh"), 0o755)
    second(local_sandbox)
    async with local_sandbox.client() as client:
        result = await client.call_tool(
            "move_file", {"source": local_sandbox.path("tools"), "destination": "memory://elsewhere/tools"}
        )
    assert code(result) == "INVALID_ARGUMENT"
    assert "execute" in text(result)
    assert local_sandbox.exists("tools/run.sh")


async def test_a_move_between_local_mounts_carries_modes(local_sandbox: Sandbox, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    local_sandbox.extra_mounts.append(open_mount(MountSpec(str(other))))
    local_sandbox.put("tools/run.sh", "#!/bin/sh\n")
    local_sandbox.put("tools/private/key", "k")
    os.chmod(local_sandbox.mount.fs_path("tools/run.sh"), 0o750)
    os.chmod(local_sandbox.mount.fs_path("tools/private/key"), 0o600)
    os.chmod(local_sandbox.mount.fs_path("tools/private"), 0o700)
    async with local_sandbox.client() as client:
        ok(
            await client.call_tool(
                "move_file", {"source": local_sandbox.path("tools"), "destination": str(other / "tools")}
            )
        )
    assert stat.S_IMODE((other / "tools/run.sh").stat().st_mode) == 0o750
    assert stat.S_IMODE((other / "tools/private/key").stat().st_mode) == 0o600
    assert stat.S_IMODE((other / "tools/private").stat().st_mode) == 0o700
    assert not local_sandbox.exists("tools")


async def test_moving_a_link_across_mounts_is_refused_and_within_one_renames_it(local_sandbox: Sandbox) -> None:
    local_sandbox.put("target.txt", "t")
    os.symlink("target.txt", local_sandbox.mount.fs_path("link"))
    second(local_sandbox)
    async with local_sandbox.client() as client:
        across = await client.call_tool(
            "move_file", {"source": local_sandbox.path("link"), "destination": "memory://elsewhere/l"}
        )
        within = ok(
            await client.call_tool(
                "move_file", {"source": local_sandbox.path("link"), "destination": local_sandbox.path("renamed")}
            )
        )
    assert code(across) == "INVALID_ARGUMENT"
    assert within["type"] == "symlink"
    assert os.readlink(local_sandbox.mount.fs_path("renamed")) == "target.txt"


# -- unreadable folders -------------------------------------------------------------------


async def test_an_unreadable_folder_is_skipped_counted_and_named(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the suite may run as root, for whom no folder is unreadable (a real
    permission test runs the CLI as another user in test_special_files)."""
    local_sandbox.put("tree/ok/a.txt", "aaaa")
    local_sandbox.put("tree/locked/secret.txt", "bbbb")
    locked = os.path.realpath(local_sandbox.mount.fs_path("tree/locked"))
    real_open = os.open

    def guarded(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        if flags & os.O_DIRECTORY and os.readlink(f"/proc/self/fd/{fd}") == locked:
            os.close(fd)
            raise PermissionError(13, "Permission denied")
        return fd

    monkeypatch.setattr(os, "open", guarded)
    async with local_sandbox.client() as client:
        size = await client.call_tool("calculate_directory_size", {"path": local_sandbox.path("tree")})
        tree = await client.call_tool("directory_tree", {"path": local_sandbox.path("tree")})
        copied = await client.call_tool(
            "copy_file", {"source": local_sandbox.path("tree"), "destination": "copy", "recursive": True}
        )
    shown = local_sandbox.path("tree/locked")
    assert (ok(size)["files"], ok(size)["total_bytes"], ok(size)["skipped"]) == (1, 4, [shown])
    assert "skipped 1 unreadable folder" in text(size) and shown in text(size)
    assert ok(tree)["skipped"] == [shown]
    assert "skipped 1 unreadable folder" in text(tree) and shown in text(tree)
    assert code(copied) == "ACCESS_DENIED" and "nothing was copied" in text(copied)
    assert not local_sandbox.exists("copy")


# -- object stores ------------------------------------------------------------------------


async def test_an_object_beside_a_prefix_mount_does_not_break_the_mount(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    box = make_sandbox("s3", tmp_path, request)
    box.put("inside.txt", "in")
    bucket, _, prefix = box.mount.backend.root.partition("/")
    box.mount.fs.pipe_file(f"{bucket}/{prefix}", b"a sibling object named like the prefix")
    box.mount.backend.invalidate()
    async with box.client() as client:
        listed = ok(await client.call_tool("list_directory", {"path": box.path()}))
        tree = ok(await client.call_tool("directory_tree", {"path": box.path()}))
        written = ok(await client.call_tool("write_file", {"path": box.path("new.txt"), "content": "n"}))
        info = ok(await client.call_tool("get_file_info", {"path": box.path()}))
    assert [e["name"] for e in listed["entries"]] == ["inside.txt"]
    assert tree["files"] == 1
    assert written["created"]
    assert info["type"] == "directory"
    assert box.get("new.txt") == b"n"
