"""An undo is a change with its own id: its reply names it, and an undo of it (by that id) makes
again what it took back — byte for byte, modes and links kept, on every backend and under
review, from any process sharing the state store; CONFLICT when a file moved on since. A
restore point is one change: its undo brings back every change it took back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Sandbox
from mcp import Client
from processes import stdio_params
from results import assert_error, changed, ok, text_of

from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

BINARY = bytes(range(256)) * 40


async def test_an_undo_names_its_own_change_and_an_undo_of_it_makes_the_edit_again(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "one\ntwo\n")
    async with sandbox.client() as client:
        edited = ok(
            await client.call_tool("edit_file", {"path": "a.txt", "edits": [{"oldText": "two", "newText": "2"}]})
        )
        undone = await client.call_tool("undo", {"change_id": edited["change_id"]})
        assert sandbox.get("a.txt") == b"one\ntwo\n"
        own = ok(undone)["change_id"]
        redone = await client.call_tool("undo", {"change_id": own})
        assert sandbox.get("a.txt") == b"one\n2\n"
        again = await client.call_tool("undo", {"change_id": ok(redone)["change_id"]})
    assert own not in (None, edited["change_id"]) and ok(undone)["undid"] == edited["change_id"]
    assert f"change {own}" in text_of(undone) and edited["change_id"] in text_of(undone)
    assert ok(redone)["undid"] == own and ok(redone)["tool"] == "undo"
    assert sandbox.get("a.txt") == b"one\ntwo\n" and ok(again)["undid"] == ok(redone)["change_id"]


async def test_a_redo_puts_back_a_deleted_binary_file_byte_for_byte(sandbox: Sandbox) -> None:
    sandbox.put("bin/blob.bin", BINARY)
    async with sandbox.client() as client:
        deleted = ok(await client.call_tool("delete_path", {"path": "bin", "recursive": True}))
        undone = ok(await client.call_tool("undo", {"change_id": deleted["change_id"]}))
        assert sandbox.get("bin/blob.bin") == BINARY
        ok(await client.call_tool("undo", {"change_id": undone["change_id"]}))
        assert not sandbox.exists("bin")
        bare = await client.call_tool("undo", {})
    # A bare undo takes back the session's own changes, never an undo (those go by their ids).
    assert "no change to undo" in assert_error(bare, "NOT_FOUND")


async def test_a_redo_keeps_modes_and_links(local_sandbox: Sandbox, tmp_path: Path) -> None:
    box = local_sandbox
    root = tmp_path / "app"
    box.put("run.sh", "#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o751)
    (root / "link").symlink_to("run.sh")
    async with box.client() as client:
        wrote = ok(await client.call_tool("write_file", {"path": "run.sh", "content": "#!/bin/sh\necho bye\n"}))
        gone = ok(await client.call_tool("delete_path", {"path": "link"}))
        undone = ok(await client.call_tool("undo", {"change_id": gone["change_id"]}))
        assert os.readlink(root / "link") == "run.sh"
        ok(await client.call_tool("undo", {"change_id": undone["change_id"]}))
        assert not (root / "link").is_symlink()
        back = ok(await client.call_tool("undo", {"change_id": wrote["change_id"]}))
        assert (root / "run.sh").read_bytes() == b"#!/bin/sh\necho hi\n"
        ok(await client.call_tool("undo", {"change_id": back["change_id"]}))
    assert (root / "run.sh").read_bytes() == b"#!/bin/sh\necho bye\n"
    assert (root / "run.sh").stat().st_mode & 0o777 == 0o751


async def test_a_redo_is_refused_when_the_file_moved_on_since_the_undo(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "one\n")
    async with sandbox.client() as client:
        wrote = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "two\n"}))
        undone = ok(await client.call_tool("undo", {"change_id": wrote["change_id"]}))
        sandbox.put("a.txt", "someone else's\n")
        refused = await client.call_tool("undo", {"change_id": undone["change_id"]})
        retried = await client.call_tool("undo", {"change_id": undone["change_id"]})
    assert "a.txt changed since undo wrote it" in assert_error(refused, "CONFLICT")
    assert_error(retried, "CONFLICT")  # the redo stays on the timeline: nothing was taken
    assert sandbox.get("a.txt") == b"someone else's\n"


async def test_an_undo_of_a_restore_point_brings_back_every_change_it_took_back(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "a\n")
    sandbox.put("old.txt", "old\n")
    async with sandbox.client() as client:
        first = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "a2\n"}))
        for name, arguments in [
            ("write_file", {"path": "new/b.txt", "content": "b\n", "create_dirs": True}),
            ("move_file", {"source": "old.txt", "destination": "new/old.txt"}),
            ("edit_file", {"path": "a.txt", "edits": [{"oldText": "a2", "newText": "a3"}]}),
        ]:
            changed(await client.call_tool(name, arguments))
        after = sandbox.snapshot(text=False)
        restored = ok(await client.call_tool("undo", {"change_id": first["change_id"], "and_after": True}))
        assert sandbox.snapshot(text=False) == {"a.txt": b"a\n", "old.txt": b"old\n"}
        redone = ok(await client.call_tool("undo", {"change_id": restored["change_id"]}))
        assert sandbox.snapshot(text=False) == after
        ok(await client.call_tool("undo", {"change_id": redone["change_id"]}))
    assert sandbox.snapshot(text=False) == {"a.txt": b"a\n", "old.txt": b"old\n"}
    assert len(restored["undone"]) == 4 and redone["undone"] == [restored["change_id"]]


async def test_an_undo_is_taken_back_by_another_process_sharing_the_state_store(
    local_sandbox: Sandbox, tmp_path: Path
) -> None:
    box = local_sandbox
    box.put("a.txt", "one\n")
    state = str(tmp_path / "state")
    async with Client(build_server([box.mount], Settings(state=state))) as client:
        wrote = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "two\n"}))
        undone = ok(await client.call_tool("undo", {"change_id": wrote["change_id"]}))
    async with Client(stdio_params(box.root, "--state", state)) as other:
        redone = ok(await other.call_tool("undo", {"change_id": undone["change_id"]}))
    assert box.get("a.txt") == b"two\n" and redone["undid"] == undone["change_id"]


async def test_an_undo_on_a_mount_under_review_is_redone_in_its_pending_layer(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n")
    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(review=True, state=str(tmp_path / "s")))
    async with Client(server) as client:
        wrote = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "two\n"}))
        undone = ok(await client.call_tool("undo", {"change_id": wrote["change_id"]}))
        shown_undone = text_of(await client.call_tool("read_file", {"path": "a.txt"}))
        ok(await client.call_tool("undo", {"change_id": undone["change_id"]}))
        shown_redone = text_of(await client.call_tool("read_file", {"path": "a.txt"}))
    assert "one" in shown_undone and "two" in shown_redone
    assert (folder / "a.txt").read_text() == "one\n"  # pending: the folder itself never changed
