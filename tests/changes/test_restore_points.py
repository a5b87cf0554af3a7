"""A restore point: ``undo(change_id=X, and_after=true)`` takes back X and every later change of
the mounts X touched, newest first, as one undo — on every backend, from any connection or
process sharing the state store; all of it, or (a file not as its change left it) none of it;
changes of other mounts stay."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox
from mcp import Client
from processes import stdio_params
from results import assert_error, changed, ok

from vfs_mcp import changes
from vfs_mcp.changes import log, restore_points
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

SEED = {"a.txt": "a1\n", "b.txt": "b1\n", "c.txt": "c1\n", "old.txt": "old\n", "d.txt": "d1\n"}
PATCH = "*** Begin Patch\n*** Update File: c.txt\n-c1\n+c2\n*** Add File: new.txt\n+new\n*** End Patch\n"
LATER = [
    ("edit_file", {"path": "b.txt", "edits": [{"oldText": "b1", "newText": "b2"}]}),
    ("apply_patch", {"patch": PATCH}),
    ("create_directory", {"path": "sub"}),
    ("move_file", {"source": "old.txt", "destination": "sub/moved.txt"}),
    ("delete_path", {"path": "d.txt"}),
    ("write_file", {"path": "a.txt", "content": "a3\n"}),
    ("edit_file", {"path": "sub/moved.txt", "edits": [{"oldText": "old", "newText": "moved"}]}),
]
"""Changes after the restore point (a write of a.txt): an edit, a patch, a new folder, a move
into it, a delete, a second write of the file the restore point wrote, an edit of the moved file."""


async def made(client: Client, *steps: tuple[str, dict[str, Any]]) -> list[str]:
    """The change ids of ``steps``, each a call that changed files, oldest first."""
    ids = []
    for name, arguments in steps:
        result = await client.call_tool(name, arguments)
        changed(result)
        ids.append(ok(result)["change_id"])
    return ids


def seeded(box: Sandbox) -> None:
    for rel, text in SEED.items():
        box.put(rel, text)


async def test_a_restore_point_puts_every_file_of_its_mount_back_and_its_records_give_way_to_its_own(
    sandbox: Sandbox,
) -> None:
    seeded(sandbox)
    server = sandbox.server()
    async with Client(server) as client:
        ids = await made(client, ("write_file", {"path": "a.txt", "content": "a2\n"}), *LATER)
        preview = ok(await client.call_tool("undo", {"change_id": ids[0], "and_after": True, "dry_run": True}))
        assert sandbox.snapshot() != SEED
        undone = await client.call_tool("undo", {"change_id": ids[0], "and_after": True})
        again = await client.call_tool("undo", {"change_id": ids[-1]})
    assert preview["undone"] == ok(undone)["undone"] == ids[::-1]
    assert sandbox.snapshot() == SEED and not sandbox.exists("sub")
    assert sorted(ok(undone)["restored"]) == sorted(sandbox.path(rel) for rel in SEED)
    assert sorted(ok(undone)["removed"]) == [sandbox.path(rel) for rel in ("new.txt", "sub", "sub/moved.txt")]
    assert f"undid write_file (change {ids[0]}) and 7 later changes: " in undone.content[0].text
    listed = changes.log_of(server.vfs).store.listing("changes")  # type: ignore[attr-defined]
    assert [item.name for item in listed] == [f"{ok(undone)['change_id']}.rec"]
    assert "already" in assert_error(again, "NOT_FOUND")


async def test_one_file_changed_behind_the_servers_back_refuses_the_whole_restore_naming_it(sandbox: Sandbox) -> None:
    seeded(sandbox)
    async with sandbox.client() as client:
        ids = await made(client, ("write_file", {"path": "a.txt", "content": "a2\n"}), *LATER)
        sandbox.put("c.txt", "someone else\n")
        before = sandbox.snapshot()
        refused = await client.call_tool("undo", {"change_id": ids[0], "and_after": True})
        assert sandbox.snapshot() == before
        sandbox.put("c.txt", "c2\n")  # as the patch left it: the same restore now goes through
        ok(await client.call_tool("undo", {"change_id": ids[0], "and_after": True}))
    shown = assert_error(refused, "CONFLICT")
    assert shown.startswith(f"CONFLICT: {sandbox.path('c.txt')} changed since apply_patch wrote it")
    assert "nothing was undone" in shown
    assert sandbox.snapshot() == SEED


async def test_changes_of_another_mount_made_in_between_stay(sandbox: Sandbox) -> None:
    seeded(sandbox)
    other = open_mount(MountSpec(f"memory://other-{time.monotonic_ns()}"))
    sandbox.extra_mounts.append(other)
    elsewhere = other.url + "/notes.txt"
    async with sandbox.client() as client:
        first, kept, _, kept_too = await made(
            client,
            ("write_file", {"path": "a.txt", "content": "a2\n"}),
            ("write_file", {"path": elsewhere, "content": "one\n"}),
            ("edit_file", {"path": "b.txt", "edits": [{"oldText": "b1", "newText": "b2"}]}),
            ("write_file", {"path": elsewhere, "content": "two\n"}),
        )
        undone = ok(await client.call_tool("undo", {"change_id": first, "and_after": True}))
        assert sandbox.snapshot() == SEED
        assert (await client.call_tool("read_file", {"path": elsewhere})).content[0].text == "two\n"
        ok(await client.call_tool("undo", {"change_id": kept_too}))
        back = await client.call_tool("read_file", {"path": elsewhere})
    assert kept not in undone["undone"] and kept_too not in undone["undone"] and len(undone["undone"]) == 2
    assert back.content[0].text == "one\n"


async def test_a_change_touching_both_mounts_brings_the_other_mounts_later_changes_along(sandbox: Sandbox) -> None:
    seeded(sandbox)
    other = open_mount(MountSpec(f"memory://other-{time.monotonic_ns()}"))
    sandbox.extra_mounts.append(other)
    async with sandbox.client() as client:
        before_it, first, across, after_it = await made(
            client,
            ("write_file", {"path": other.url + "/early.txt", "content": "early\n"}),
            ("write_file", {"path": "a.txt", "content": "a2\n"}),
            ("move_file", {"source": "b.txt", "destination": other.url + "/b.txt"}),
            ("write_file", {"path": other.url + "/b.txt", "content": "rewritten over there\n"}),
        )
        undone = ok(await client.call_tool("undo", {"change_id": first, "and_after": True}))
    assert undone["undone"] == [after_it, across, first] and before_it not in undone["undone"]
    assert sandbox.snapshot() == SEED


async def test_a_restore_point_is_taken_back_by_id_from_a_second_connection(sandbox: Sandbox) -> None:
    seeded(sandbox)
    server = sandbox.server()
    async with Client(server) as client:
        ids = await made(client, ("write_file", {"path": "a.txt", "content": "a2\n"}), *LATER)
    async with Client(server) as second:
        undone = ok(await second.call_tool("undo", {"change_id": ids[0], "and_after": True}))
    assert undone["undone"] == ids[::-1] and sandbox.snapshot() == SEED


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["local", "s3"], indirect=True)
async def test_a_restore_point_is_taken_back_by_id_from_another_process_sharing_the_state_store(
    sandbox: Sandbox, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    seeded(sandbox)
    state = str(tmp_path / "state")
    server = build_server([sandbox.mount], Settings(state=state))
    async with Client(server) as client:
        ids = await made(client, ("write_file", {"path": "a.txt", "content": "a2\n"}), *LATER)
        env = {}
        if sandbox.kind == "s3":
            keys = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
            env = {"AWS_ENDPOINT_URL": request.getfixturevalue("s3_endpoint"), **keys}
        async with Client(stdio_params(sandbox.root, "--state", state, env=env)) as other:
            undone = ok(await other.call_tool("undo", {"change_id": ids[0], "and_after": True}))
        gone = await client.call_tool("undo", {"change_id": ids[-1]})
    assert undone["undone"] == ids[::-1] and sandbox.snapshot() == SEED
    assert "already" in assert_error(gone, "NOT_FOUND")


async def test_a_restore_point_further_back_than_one_undo_takes_is_refused_saying_how_many(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(restore_points, "RESTORE_CHANGES", 3)
    sandbox.put("f.txt", "0")
    async with sandbox.client() as client:
        ids = await made(client, *(("write_file", {"path": "f.txt", "content": str(n)}) for n in range(1, 6)))
        refused = await client.call_tool("undo", {"change_id": ids[0], "and_after": True})
        assert sandbox.get("f.txt") == b"5"
        ok(await client.call_tool("undo", {"change_id": ids[2], "and_after": True}))
    shown = assert_error(refused, "TOO_LARGE")
    assert "takes back 5 changes, more than one undo takes back (3); undo to a later change first" in shown
    assert sandbox.get("f.txt") == b"2"


async def test_and_after_needs_the_id_of_the_change_to_go_back_to(sandbox: Sandbox) -> None:
    sandbox.put("f.txt", "0")
    async with sandbox.client() as client:
        await made(client, ("write_file", {"path": "f.txt", "content": "1"}))
        bare = await client.call_tool("undo", {"and_after": True})
    assert "give change_id" in assert_error(bare, "INVALID_ARGUMENT")
    assert sandbox.get("f.txt") == b"1"


def test_changes_made_within_one_tick_of_the_clock_keep_their_order(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock that stands still (or steps back) never gives two changes of one instance the
    same place in the log."""
    changelog = changes.log_of(sandbox.vfs())
    monkeypatch.setattr(log.time, "time", lambda: 1_000_000.0)
    first, second, third = changelog.clock(), changelog.clock(), changelog.clock()
    assert first < second < third


CUT_SHORT = """
import os, sys
from vfs_mcp.changes import log, prepared
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.ops.edits import replace as edit
from vfs_mcp.ops.files import undo
from vfs_mcp.ops.files import write
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

root, state, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
vfs = build_server(open_mounts([MountSpec(root)]), Settings(state=state)).vfs
ids = []
for tool, make in [
    ("write_file", lambda call: write.write_file(call, "a.txt", "a2\\n")),
    ("edit_file", lambda call: edit.edit_file(call, "a.txt", [edit.TextEdit(oldText="a2", newText="a3")])),
    ("write_file", lambda call: write.write_file(call, "b.txt", "b2\\n")),
    ("write_file", lambda call: write.write_file(call, "a.txt", "a4\\n")),
    ("edit_file", lambda call: edit.edit_file(call, "a.txt", [edit.TextEdit(oldText="a4", newText="a5")])),
]:
    record = Recording(tool)
    make(vfs.for_call(CallContext(recording=record)))
    ids += record.changes
made, perform = 0, prepared.Prepared.perform

def killed_after(step):
    global made
    perform(step)
    made += 1
    if made == after:
        os._exit(9)  # as SIGKILL would: no rollback, no cleanup

prepared.Prepared.perform = killed_after
from vfs_mcp import changes
undo.undo(vfs, changes.log_of(vfs), None, change_id=ids[0], and_after=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("after", [1, 2, 3, 4])
def test_a_restore_cut_short_by_a_crash_is_carried_to_its_end_newest_first_by_the_next_server(
    tmp_path: Path, after: int
) -> None:
    """Five changes, three of them to one file: killed after any step of their undo, the next
    server on the state store finishes it — each record from what the newer one left, those
    whose steps were all made only let go."""
    import subprocess
    import sys

    root, state = tmp_path / "files", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("a1\n")
    (root / "b.txt").write_text("b1\n")
    child = subprocess.run([sys.executable, "-c", CUT_SHORT, str(root), str(state), str(after)], timeout=120)
    assert child.returncode == 9
    assert (root / "a.txt").read_text() != "a1\n"  # cut short: not all taken back yet
    server = build_server([open_mount(MountSpec(str(root)))], Settings(state=str(state)))
    changelog = changes.log_of(server.vfs)  # type: ignore[attr-defined]
    assert ((root / "a.txt").read_text(), (root / "b.txt").read_text()) == ("a1\n", "b1\n")
    assert changelog.store.listing("pending") == [] and changelog.store.listing("changes") == []
