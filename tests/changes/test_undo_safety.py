"""undo is a change like any other: it restores exactly what the change altered (bytes,
modes, links, empty folders, files the deny list hides), never deletes what someone else
made since, never writes where a write would be refused, and a failed undo changes nothing."""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any

import anyio
import pytest
from conftest import Sandbox
from mcp import Client
from results import ok

from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.testing.faults import Fault, FaultyMount

pytestmark = pytest.mark.anyio


async def calls(box: Sandbox, *steps: tuple[str, dict[str, Any]], **settings: Any) -> list[Any]:
    async with box.client(**settings) as client:
        return [await client.call_tool(name, args) for name, args in steps]


async def test_undo_of_a_move_refuses_to_take_away_a_file_someone_saved_in_the_moved_folder(sandbox: Sandbox) -> None:
    sandbox.put("proj/main.py", "print(1)\n")
    async with sandbox.client() as client:
        ok(await client.call_tool("move_file", {"source": "proj", "destination": "proj2"}))
        sandbox.put("proj2/colleague.txt", "their work\n")
        result = await client.call_tool("undo", {})
    assert error_of(result)["code"] == "CONFLICT" and "colleague.txt" in result.content[0].text
    assert sandbox.get("proj2/colleague.txt") == b"their work\n"
    assert sandbox.get("proj2/main.py") == b"print(1)\n" and not sandbox.exists("proj/main.py")


@pytest.mark.parametrize("moved", ["notes.txt", "proj"])
async def test_undo_of_a_move_refuses_when_someone_rewrote_what_was_moved_with_as_many_bytes(
    sandbox: Sandbox, moved: str
) -> None:
    inside = "notes.txt" if moved == "notes.txt" else "proj/notes.txt"
    sandbox.put(inside, "version 1\n")
    async with sandbox.client() as client:
        ok(await client.call_tool("move_file", {"source": moved, "destination": f"{moved}2"}))
        sandbox.put(inside.replace(moved, f"{moved}2", 1), "version 2\n")  # another program, same size
        result = await client.call_tool("undo", {})
    assert error_of(result)["code"] == "CONFLICT", result.content
    assert sandbox.get(inside.replace(moved, f"{moved}2", 1)) == b"version 2\n" and not sandbox.exists(inside)


async def test_undo_of_a_folder_move_brings_back_hidden_files_empty_folders_and_links(sandbox: Sandbox) -> None:
    box = sandbox
    box.put("kit/a.txt", "a\n")
    box.put("kit/id.pem", "secret\n")
    if box.mount.capabilities.empty_dirs:
        box.mount.fs.mkdir(box.mount.fs_path("kit/empty"))
    if box.mount.capabilities.symlinks:
        os.symlink("a.txt", box.mount.fs_path("kit/link"))
    async with box.client(deny=("*.pem",)) as client:
        ok(await client.call_tool("move_file", {"source": "kit", "destination": "kit2"}))
        ok(await client.call_tool("undo", {}))
    assert box.get("kit/a.txt") == b"a\n" and box.get("kit/id.pem") == b"secret\n"
    assert not box.exists("kit2")
    if box.mount.capabilities.empty_dirs:
        assert os.path.isdir(box.mount.fs_path("kit/empty")) if box.kind == "local" else box.exists("kit/empty")
    if box.mount.capabilities.symlinks:
        assert os.readlink(box.mount.fs_path("kit/link")) == "a.txt"


async def test_a_move_across_mounts_of_a_folder_holding_hidden_files_is_refused_before_it_starts(
    sandbox: Sandbox,
) -> None:
    box = sandbox
    other = open_mount(MountSpec(f"memory://other-{id(box)}"))
    box.extra_mounts.append(other)
    box.put("kit/a.txt", "a\n")
    box.put("kit/id.pem", "secret\n")
    async with box.client(deny=("*.pem",)) as client:
        result = await client.call_tool("move_file", {"source": "kit", "destination": other.display("kit")})
    assert error_of(result) is not None and "id.pem" not in result.content[0].text
    assert "deny list hides" in result.content[0].text
    assert box.get("kit/id.pem") == b"secret\n" and box.get("kit/a.txt") == b"a\n"


async def test_undo_of_a_write_through_a_link_restores_the_file_and_keeps_the_link(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("data.txt", "original\n")
    os.symlink("data.txt", box.mount.fs_path("alias.txt"))
    written, undone = await calls(
        box, ("write_file", {"path": "alias.txt", "content": "model's change\n"}), ("undo", {})
    )
    ok(written)
    assert ok(undone)["restored"] == [box.path("data.txt")]
    assert os.readlink(box.mount.fs_path("alias.txt")) == "data.txt"
    assert box.get("data.txt") == b"original\n"


async def test_undo_never_writes_into_a_denied_folder_through_a_link(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("private/keep.txt", "private\n")
    box.put("d3/z.txt", "z\n")
    os.symlink("private", box.mount.fs_path("shortcut"))
    async with box.client(deny=("private/",)) as client:
        ok(await client.call_tool("delete_path", {"path": "d3/z.txt"}))
        ok(await client.call_tool("delete_path", {"path": "d3"}))
        move = await client.call_tool("move_file", {"source": "shortcut", "destination": "d3"})
        results = [await client.call_tool("undo", {}) for _ in range(3)]
    assert not os.path.exists(box.mount.fs_path("private/z.txt")), [r.content[0].text for r in [move, *results]]
    assert box.get("private/keep.txt") == b"private\n"


async def test_undo_never_writes_through_a_folder_someone_swapped_for_a_link(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("private/keep.txt", "private\n")
    box.put("d3/z.txt", "z\n")
    async with box.client(deny=("private/",)) as client:
        ok(await client.call_tool("delete_path", {"path": "d3/z.txt"}))
        os.rmdir(box.mount.fs_path("d3"))
        os.symlink("private", box.mount.fs_path("d3"))
        result = await client.call_tool("undo", {})
    assert error_of(result) is not None
    assert not os.path.exists(box.mount.fs_path("private/z.txt"))


async def test_a_failed_undo_changes_nothing_and_can_be_tried_again(sandbox: Sandbox) -> None:
    box = sandbox
    box.put("pa.txt", "one\n")
    box.put("sub/x.txt", "x\n")
    text = "*** Begin Patch\n*** Update File: pa.txt\n-one\n+ONE\n*** Delete File: sub/x.txt\n*** End Patch\n"
    async with box.client() as client:
        ok(await client.call_tool("apply_patch", {"patch": text}))
        if box.exists("sub"):
            box.mount.fs.rm(box.mount.fs_path("sub"), recursive=True)
        box.put("sub", "now a file\n")
        first = await client.call_tool("undo", {})
        second = await client.call_tool("undo", {})
    assert error_of(first) is not None
    assert error_of(second)["code"] == error_of(first)["code"]
    assert box.get("pa.txt") == b"ONE\n" and box.get("sub") == b"now a file\n"


def announcing_locks(box: Sandbox) -> tuple[Mount, threading.Event]:
    """The sandbox's mount, its store set to say (an event) when it is first asked for a lock
    (a write's first step, before it reads what it will change)."""
    asked = threading.Event()
    backend = FaultyMount(box.mount.backend, [])
    real = backend.hold

    def hold(*args: Any, **kwargs: Any) -> Any:
        asked.set()
        return real(*args, **kwargs)

    backend.hold = hold  # type: ignore[method-assign]
    return dataclasses.replace(box.mount, backend=backend), asked


async def test_undo_checks_and_restores_under_the_locks_of_every_file(local_sandbox: Sandbox) -> None:
    """Another server edits a small file of a patch while the undo restores a large one (held
    there by a pause in front of the store until the edit asks for its lock): the edit either
    lands after the undo (and is there) or makes the undo refuse; it is never lost."""
    box = local_sandbox
    box.put("big.txt", "".join(f"line {n}\n" for n in range(1000)))
    box.put("small.txt", "alpha\n")
    text = "*** Begin Patch\n*** Update File: big.txt\n-line 0\n+LINE 0\n*** Update File: small.txt\n-alpha\n+beta\n"
    text += "*** End Patch\n"
    restoring, restore = threading.Event(), threading.Event()
    restore.set()  # the patch's own write of big.txt passes; the undo's is held
    held = FaultyMount(box.mount.backend, [Fault.pause("write", "big.txt", restoring, restore)])
    mine = dataclasses.replace(box.mount, backend=held)
    other, locking = announcing_locks(box)
    outcomes: dict[str, Any] = {}
    async with Client(build_server([mine], Settings())) as me, Client(build_server([other], Settings())) as theirs:
        ok(await me.call_tool("apply_patch", {"patch": text}))
        restoring.clear()
        restore.clear()

        async def undo() -> None:
            outcomes["undo"] = await me.call_tool("undo", {})

        async def edit() -> None:
            await anyio.to_thread.run_sync(restoring.wait, 60)  # the undo is in its restore of big.txt
            outcomes["restoring"] = restoring.is_set()
            async with anyio.create_task_group() as inner:

                async def resume_the_undo() -> None:
                    outcomes["edit locks meanwhile"] = await anyio.to_thread.run_sync(locking.wait, 60)
                    restore.set()

                inner.start_soon(resume_the_undo)
                outcomes["edit"] = await theirs.call_tool(
                    "edit_file",
                    {"path": "small.txt", "edits": [{"oldText": "a", "newText": "A", "replace_all": True}]},
                )

        async with anyio.create_task_group() as group:
            group.start_soon(undo)
            group.start_soon(edit)
    assert outcomes["restoring"] and outcomes["edit locks meanwhile"], outcomes
    small = box.get("small.txt")
    assert error_of(outcomes["edit"]) is None or error_of(outcomes["edit"])["code"] == "CONFLICT"
    if error_of(outcomes["edit"]) is None:
        assert b"A" in small, (small, outcomes["undo"].content[0].text)
