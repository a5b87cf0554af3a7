"""Attacks on the one write path (issue 27), black box through the MCP tools: each test is a
minimal reproduction of a way a change loses or corrupts data, writes where it must not, or
leaves half of itself behind. Every test here fails on the branch it was written against.

A "second writer" is another vfs-mcp writer on the same store, going through the same write
path and its locks (``write_file`` on a ``JailedFS`` of its own, in a thread of its own),
run at one exact moment of the first change: right before the store step named (``hooked``),
so a race is reproduced every time instead of hoped for.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox
from mcp import Client
from results import ok

from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.ops.files.write import write_file
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.testing.faults import Fault, FaultyMount
from vfs_mcp_backends import folder_locks

pytestmark = pytest.mark.anyio


def shown(result: Any) -> str:
    return result.content[0].text if result.content else ""


def hooked(box: Sandbox, op: str, rel: str, action: Callable[[], object], *, error: int | None = None) -> Mount:
    """The sandbox's mount with ``action`` run once, right before the store does ``op``
    (FaultyMount's names: write, delete, move...) on ``rel``; then ``error`` is raised
    there when given (the store failing that step)."""
    backend = FaultyMount(box.mount.backend, [])
    plan = backend.plan
    original = plan.check
    fired: list[bool] = []

    def check(kind: str, *paths: str) -> None:
        if kind == op and not fired and any(plan.rel(p) == rel for p in paths):
            fired.append(True)
            action()
            if error is not None:
                raise OSError(error, "injected", paths[0])
        original(kind, *paths)

    plan.check = check  # type: ignore[method-assign,assignment]
    mount: Mount = dataclasses.replace(box.mount, backend=backend)
    return mount


def second_writer(box: Sandbox, path: str, content: str, outcome: dict[str, Any]) -> Callable[[], None]:
    """Another writer's ``write_file`` (its own jail, its own thread, the same locks)."""

    def run() -> None:
        def write() -> None:
            try:
                outcome["written"] = write_file(box.vfs(), path, content, create_dirs=True)
            except Exception as exc:
                outcome["refused"] = exc

        thread = threading.Thread(target=write)
        thread.start()
        thread.join()

    return run


def nested(tmp_path: Path) -> tuple[Path, list[Mount]]:
    """A writable mount ``x`` holding a read-only mount ``x/sub/ro`` with one file."""
    outer = tmp_path / "x"
    (outer / "sub" / "ro").mkdir(parents=True)
    (outer / "sub" / "ro" / "keep.txt").write_text("read-only\n")
    return outer, [open_mount(MountSpec(str(outer))), open_mount(MountSpec(str(outer / "sub" / "ro"), read_only=True))]


# -- read-only mounts inside writable ones ------------------------------------------------


async def test_a_recursive_delete_of_a_folder_holding_a_read_only_mount_deletes_nothing_of_it(tmp_path: Path) -> None:
    outer, mounts = nested(tmp_path)
    async with Client(build_server(mounts, Settings())) as client:  # type: ignore[arg-type]
        result = await client.call_tool("delete_path", {"path": "sub", "recursive": True})
    assert (outer / "sub" / "ro" / "keep.txt").read_text() == "read-only\n", shown(result)


async def test_moving_a_folder_holding_a_read_only_mount_leaves_that_mount_as_it_was(tmp_path: Path) -> None:
    outer, mounts = nested(tmp_path)
    async with Client(build_server(mounts, Settings())) as client:  # type: ignore[arg-type]
        result = await client.call_tool("move_file", {"source": "sub", "destination": "elsewhere"})
    assert (outer / "sub" / "ro" / "keep.txt").read_text() == "read-only\n", shown(result)


# -- the deny list ------------------------------------------------------------------------


async def test_moving_a_folder_never_makes_a_file_the_deny_list_hides_readable(sandbox: Sandbox) -> None:
    sandbox.put("conf/server.key", "secret\n")
    sandbox.put("conf/a.txt", "a\n")
    async with sandbox.client(deny=("conf/*.key",)) as client:
        moved = await client.call_tool("move_file", {"source": "conf", "destination": "pub"})
        read = await client.call_tool("read_file", {"path": "pub/server.key"})
    assert error_of(read) is not None, (shown(moved), shown(read))


async def test_moving_a_folder_never_puts_a_file_where_the_deny_list_would_refuse_to_write_it(
    sandbox: Sandbox,
) -> None:
    sandbox.put("keys/server.key", "k\n")
    async with sandbox.client(deny=("conf/*.key",)) as client:
        direct = await client.call_tool("write_file", {"path": "conf/other.key", "content": "k\n", "create_dirs": True})
        moved = await client.call_tool("move_file", {"source": "keys", "destination": "conf"})
    assert error_of(direct) is not None
    assert error_of(moved) is not None or not sandbox.exists("conf/server.key"), shown(moved)


# -- a second writer ----------------------------------------------------------------------


@pytest.fixture
def short_lock_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second writer meets the first's lock, held while the hook runs: it is refused after
    half a second instead of ten (the same outcome, 9.5 s less of a test run)."""
    monkeypatch.setattr(folder_locks, "LOCK_WAIT", 0.5)


@pytest.mark.usefixtures("short_lock_wait")
async def test_undo_of_a_folder_copy_never_deletes_a_file_another_writer_saved_in_it_meanwhile(
    sandbox: Sandbox,
) -> None:
    box = sandbox
    box.put("d/a.txt", "a\n")
    outcome: dict[str, Any] = {}
    mount = hooked(box, "delete", "e", second_writer(box, "e/colleague.txt", "theirs\n", outcome))
    async with Client(build_server([mount], Settings())) as client:  # type: ignore[arg-type]
        ok(await client.call_tool("copy_file", {"source": "d", "destination": "e", "recursive": True}))
        undone = await client.call_tool("undo", {})
    if "written" in outcome:  # acknowledged: it must still be there
        assert box.exists("e/colleague.txt"), shown(undone)


@pytest.mark.usefixtures("short_lock_wait")
async def test_a_write_that_fails_never_deletes_a_file_another_writer_saved_in_a_folder_it_made(
    sandbox: Sandbox,
) -> None:
    box = sandbox
    outcome: dict[str, Any] = {}
    action = second_writer(box, "n/other.txt", "theirs\n", outcome)
    mount = hooked(box, "write", "n/m/f.txt", action, error=errno.EIO)
    async with Client(build_server([mount], Settings())) as client:  # type: ignore[arg-type]
        failed = await client.call_tool("write_file", {"path": "n/m/f.txt", "content": "x", "create_dirs": True})
    assert error_of(failed) is not None
    if "written" in outcome:
        assert box.get("n/other.txt") == b"theirs\n", shown(failed)


# -- abandoned calls ----------------------------------------------------------------------


@pytest.fixture(params=["memory", "s3"])
def unstaged_sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    """Stores whose writes are one request (no staged file to give up at its rename)."""
    return make_sandbox(request.param, tmp_path, request)


async def test_a_write_its_time_limit_gave_up_never_lands_afterwards(unstaged_sandbox: Sandbox) -> None:
    box = unstaged_sandbox
    box.put("f.txt", "old\n")
    release = threading.Event()
    # The store's request is under way (it waits) when the call's time limit passes.
    mount = hooked(box, "write", "f.txt", lambda: release.wait(30))
    async with Client(build_server([mount], Settings(call_timeout=0.5))) as client:  # type: ignore[arg-type]
        timed_out = await client.call_tool("write_file", {"path": "f.txt", "content": "new\n"})
        release.set()
    assert error_of(timed_out) is not None
    async with box.client() as client:  # takes the folder's lock: the abandoned call has finished by then
        ok(await client.call_tool("write_file", {"path": "g.txt", "content": "sync\n"}))
    assert box.get("f.txt") == b"old\n", shown(timed_out)


# -- half-applied changes -----------------------------------------------------------------


async def test_a_failed_fs_move_path_leaves_no_folder_it_made_for_the_destination(sandbox: Sandbox) -> None:
    box = sandbox
    box.put("a.txt", "a\n")
    faults = [Fault.on("move", "**", errno.EIO), Fault.on("write", "new/deep/b.txt", errno.EIO)]
    mount = dataclasses.replace(box.mount, backend=FaultyMount(box.mount.backend, faults))
    async with Client(build_server([mount], Settings(profiles=("fs",)))) as client:  # type: ignore[arg-type]
        result = await client.call_tool("fs_move_path", {"from": "a.txt", "to": "new/deep/b.txt"})
    assert error_of(result) is not None
    assert not box.exists("new"), shown(result)
    assert box.get("a.txt") == b"a\n"


# -- undo ---------------------------------------------------------------------------------


async def test_undo_takes_back_an_edit_inside_a_moved_folder_and_then_the_move(local_sandbox: Sandbox) -> None:
    # Local disks time files to the nanosecond: the restored file's time always differs from
    # the one the move kept (S3 times to the second: there it fails when a second passes).
    box = local_sandbox
    box.put("p/a.txt", "one\n")
    async with box.client() as client:
        ok(await client.call_tool("move_file", {"source": "p", "destination": "q"}))
        ok(await client.call_tool("edit_file", {"path": "q/a.txt", "edits": [{"oldText": "one", "newText": "two"}]}))
        edit_undone = await client.call_tool("undo", {})
        move_undone = await client.call_tool("undo", {})
    assert error_of(edit_undone) is None and error_of(move_undone) is None, (shown(edit_undone), shown(move_undone))
    assert box.get("p/a.txt") == b"one\n" and not box.exists("q")


async def test_undo_given_the_link_a_change_was_made_through_takes_that_change_back(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("data.txt", "one\n")
    os.symlink("data.txt", box.mount.fs_path("alias.txt"))
    async with box.client() as client:
        ok(await client.call_tool("write_file", {"path": "alias.txt", "content": "two\n"}))
        undone = await client.call_tool("undo", {"path": "alias.txt"})
    assert box.get("data.txt") == b"one\n", shown(undone)
    assert os.readlink(box.mount.fs_path("alias.txt")) == "data.txt"


# -- patches ------------------------------------------------------------------------------


async def test_a_patch_adding_a_line_at_the_end_of_a_file_without_a_final_newline_adds_none(
    sandbox: Sandbox,
) -> None:
    sandbox.put("f.txt", "a\nb")
    patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n b\n+c\n*** End Patch\n"
    async with sandbox.client() as client:
        result = await client.call_tool("apply_patch", {"patch": patch})
    assert sandbox.get("f.txt") == b"a\nb\nc", shown(result)


async def test_a_patch_changes_the_first_line_of_a_file_that_starts_with_a_byte_order_mark(sandbox: Sandbox) -> None:
    sandbox.put("b.txt", b"\xef\xbb\xbfa\nb\n")
    patch = "*** Begin Patch\n*** Update File: b.txt\n@@\n-a\n+A\n b\n*** End Patch\n"
    async with sandbox.client() as client:
        result = await client.call_tool("apply_patch", {"patch": patch})
    assert sandbox.get("b.txt") == b"\xef\xbb\xbfA\nb\n", shown(result)


async def test_a_patch_deleting_a_link_deletes_the_link_and_never_the_file_it_points_to(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("data.txt", "one\n")
    os.symlink("data.txt", box.mount.fs_path("alias.txt"))
    patch = "*** Begin Patch\n*** Delete File: alias.txt\n*** End Patch\n"
    async with box.client() as client:
        result = await client.call_tool("apply_patch", {"patch": patch})
    assert box.get("data.txt") == b"one\n", shown(result)


async def test_a_patch_renaming_a_link_never_takes_away_the_file_it_points_to(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("data.txt", "one\n")
    os.symlink("data.txt", box.mount.fs_path("alias.txt"))
    patch = "*** Begin Patch\n*** Update File: alias.txt\n*** Move to: renamed.txt\n-one\n+ONE\n*** End Patch\n"
    async with box.client() as client:
        result = await client.call_tool("apply_patch", {"patch": patch})
    assert box.exists("data.txt"), shown(result)
