"""The state store keeps what outlives a call — every change's record with its before-images,
ide buffers — in one place: private, outside every served folder, named so that two servers
never collide, freed when a change leaves the log, and taken back whole or not at all."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Sandbox, Syncs
from results import assert_error, changed, ok

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState, ObjectState, open_state
from vfs_mcp.errors import Internal
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.jail.state_place import StateUnavailable, default_folder
from vfs_mcp.ops.edits import patch
from vfs_mcp.ops.files import transfers, write
from vfs_mcp.ops.files.undo import undo
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

BINARY = bytes(range(256)) * 4096 + b"\r\n\x00 the end"
"""A little over 1 MiB that no text decoding would keep as it is."""


def records(vfs: object) -> list[str]:
    return sorted(item.name for item in changes.log_of(vfs).store.listing("changes"))  # type: ignore[arg-type]


def test_the_default_store_is_a_private_folder_per_user_and_set_of_mounts_outside_every_served_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "served" / ".state"))
    (tmp_path / "served").mkdir()
    served = [str(tmp_path / "served")]
    one = default_folder(served, ["/a", "/b"])
    assert not one.startswith(served[0] + "/"), "a default inside a served folder is passed over"
    assert default_folder(served, ["/b", "/a"]) == one
    assert default_folder(served, ["/a"]) != one
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    store = open_state(None, served=served, urls=["/a", "/b"])
    assert isinstance(store, LocalState) and store.folder.startswith(str(tmp_path / "state"))
    store.write("changes/x.rec", b"record")
    assert stat.S_IMODE(os.stat(store.folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(store.folder, "changes", "x.rec")).st_mode) == 0o600
    assert str(os.getpid()) not in store.instance and len(store.instance) == 16


def test_a_state_store_named_inside_a_served_mount_stops_the_server_naming_both(tmp_path: Path) -> None:
    folder = tmp_path / "served"
    folder.mkdir()
    started = subprocess.run(
        [sys.executable, "-m", "vfs_mcp", str(folder), "--state", str(folder / "state")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert started.returncode != 0
    assert str(folder / "state") in started.stderr and f"served mount {folder}" in started.stderr
    with pytest.raises(StateUnavailable):
        build_server(open_mounts([MountSpec(str(folder))]), Settings(state=str(folder / "inner")))


async def test_what_a_deleted_denied_file_held_never_shows_in_a_served_folder_whatever_the_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder deleted whole keeps, for undo, the files the deny list hides in it: with
    $XDG_STATE_HOME and $TMPDIR inside the served folder, the store goes elsewhere, and no tool
    finds anything of the deleted secret."""
    folder = tmp_path / "served"
    (folder / "keys").mkdir(parents=True)
    (folder / "keys" / "id.pem").write_text("SECRET-KEY-" + "x" * (5 << 20))
    (folder / "keys" / "readme.txt").write_text("keys live here\n")
    monkeypatch.setenv("XDG_STATE_HOME", str(folder / ".local"))
    monkeypatch.setenv("TMPDIR", str(folder / "tmp"))
    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(deny=("*.pem",)))
    from mcp import Client

    async with Client(server) as client:
        changed(await client.call_tool("delete_path", {"path": str(folder / "keys"), "recursive": True}))
        found = await client.call_tool("grep_files", {"path": str(folder), "pattern": "SECRET-KEY"})
        listed = ok(await client.call_tool("directory_tree", {"path": str(folder), "format": "json"}))
    assert found.content[0].text.startswith("No matches")
    assert sorted(p.name for p in folder.iterdir()) == [] and listed
    kept_in = changes.log_of(server.vfs).store.host_folder  # type: ignore[attr-defined]
    assert kept_in is not None and not kept_in.startswith(str(folder) + "/")
    shutil.rmtree(kept_in)  # a folder of the fallback place, outside this test's own


def test_two_instances_on_one_store_never_collide_and_one_ending_leaves_the_others_changes_undoable(
    local_sandbox: Sandbox,
) -> None:
    box = local_sandbox
    box.put("a.txt", "before\n")
    first, second = box.vfs(), box.vfs()
    assert changes.log_of(first).store.instance != changes.log_of(second).store.instance
    record = Recording("write_file")
    write.write_file(first.for_call(CallContext(recording=record)), "a.txt", "after\n")
    changes.log_of(first).close()  # the first server ends
    undone = undo(second, changes.log_of(second), None, change_id=record.changes[0])
    assert undone.restored == [box.path("a.txt")] and box.get("a.txt") == b"before\n"


def test_a_record_gives_way_to_its_undos_when_its_change_is_undone(sandbox: Sandbox) -> None:
    sandbox.put("big.bin", BINARY)
    vfs = sandbox.vfs()
    record = Recording("delete_path")
    write.delete_path(vfs.for_call(CallContext(recording=record)), "big.bin")
    assert records(vfs) == [f"{record.changes[0]}.rec"]
    undone = undo(vfs, changes.log_of(vfs), None, change_id=record.changes[0])
    assert sandbox.get("big.bin") == BINARY and records(vfs) == [f"{undone.change_id}.rec"]


def test_a_record_whose_image_is_not_what_was_kept_refuses_the_whole_undo(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("kit/a.txt", "a\n")
    box.put("kit/b.txt", "b\n")
    vfs = box.vfs()
    record = Recording("delete_path")
    write.delete_path(vfs.for_call(CallContext(recording=record)), "kit", recursive=True)
    store = changes.log_of(vfs).store
    assert isinstance(store, LocalState)
    name = os.path.join(store.folder, "changes", f"{record.changes[0]}.rec")
    data = Path(name).read_bytes()
    Path(name).write_bytes(data[:-3] + b"XXX")  # the last image's bytes
    with pytest.raises(Internal, match="is not what was kept"):
        undo(vfs, changes.log_of(vfs), None, change_id=record.changes[0])
    assert not box.exists("kit"), "a refused undo puts back nothing"


class Unwritable(ObjectState):
    """A state store that can no longer be written (a full disk, a bucket that went away)."""

    def write(self, name: str, data: bytes, *, durable: bool = False, create: bool = True) -> None:
        raise OSError(28, "No space left on device")


def test_a_change_of_several_steps_is_refused_before_it_starts_when_its_record_cannot_be_written(
    sandbox: Sandbox,
) -> None:
    sandbox.put("tree/a.txt", "a\n")
    sandbox.put("tree/b.txt", "b\n")
    vfs = sandbox.vfs()
    changes.attach(vfs, log.ChangeLog(Unwritable("memory://unwritable-state")))
    with pytest.raises(Internal, match="nothing was changed"):
        transfers.copy_file(vfs, "tree", "copy", recursive=True)
    assert not sandbox.exists("copy")


async def test_a_change_of_one_step_whose_record_cannot_be_written_is_made_and_says_it_cannot_be_undone(
    sandbox: Sandbox,
) -> None:
    sandbox.put("a.txt", "before\n")
    server = sandbox.server()
    changes.attach(server.vfs, log.ChangeLog(Unwritable("memory://unwritable-state")))  # type: ignore[attr-defined]
    from mcp import Client

    async with Client(server) as client:
        written = await client.call_tool("write_file", {"path": "a.txt", "content": "after\n"})
        undone = await client.call_tool("undo", {})
    assert "cannot be undone: the state store could not be written" in written.content[-1].text
    assert sandbox.get("a.txt") == b"after\n"
    assert_error(undone, "NOT_FOUND")


def test_what_a_killed_instance_left_half_written_and_its_lock_are_swept_by_the_next(tmp_path: Path) -> None:
    store = LocalState(str(tmp_path / "state"))
    dead = "0123456789abcdef"
    (tmp_path / "state" / "instances" / f".tmp-{dead}-aaaa").write_bytes(b"half a rec")
    (tmp_path / "state" / "instances" / f"{dead}.lock").write_bytes(b"")
    (tmp_path / "state" / "instances" / f".tmp-{store.instance}-bbbb").write_bytes(b"a live one's")
    LocalState(str(tmp_path / "state"))
    left = os.listdir(tmp_path / "state" / "instances")
    assert f".tmp-{store.instance}-bbbb" in left and f".tmp-{dead}-aaaa" not in left and f"{dead}.lock" not in left


def test_a_dead_instance_is_claimed_though_a_probe_holds_its_lock_at_that_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``alive`` probes a lock with a shared flock for a moment, from any process sharing the
    store; a survivor claiming the dead instance then waits the probe out instead of leaving its
    unfinished work for a later start. A lock held exclusively (its owner alive) is still refused."""
    store = LocalState(str(tmp_path / "state"))
    lock = tmp_path / "state" / "instances" / "0123456789abcdef.lock"
    lock.write_bytes(b"")
    probe = os.open(lock, os.O_RDONLY)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
    real_flock = fcntl.flock

    def probe_ends_as_the_claim_waits(fd: int, operation: int) -> None:
        if operation == fcntl.LOCK_EX:
            os.close(probe)
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", probe_ends_as_the_claim_waits)
    with store.claim("0123456789abcdef") as mine:
        assert mine
    monkeypatch.undo()
    assert not lock.exists()

    owner = os.open(store_lock := tmp_path / "state" / "instances" / "fedcba9876543210.lock", os.O_CREAT | os.O_RDWR)
    fcntl.flock(owner, fcntl.LOCK_EX)
    with store.claim("fedcba9876543210") as mine:
        assert not mine
    os.close(owner)
    assert store_lock.exists()


def test_every_temp_name_is_made_in_instances_so_the_start_never_lists_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh instance's sweep lists instances/ only: the records' and the timeline's folders,
    however large, are never listed at start (issue 48: start + first write with 100,000 changes)."""
    store = LocalState(str(tmp_path / "state"))
    made: list[str] = []
    real_open = os.open

    def watched(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if str(path).startswith(".tmp-"):
            made.append(os.readlink(f"/proc/self/fd/{dir_fd}") if dir_fd is not None else str(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", watched)
    store.write("changes/x.rec", b"a record")
    store.write("timeline/e-000000000001", b"an entry")
    monkeypatch.undo()
    assert made and {os.path.basename(folder) for folder in made} == {"instances"}
    assert (tmp_path / "state" / "changes" / "x.rec").read_bytes() == b"a record"


def test_an_edit_and_a_patch_of_one_file_cost_no_fsync_beyond_their_own_and_one_of_several_files_one(
    local_sandbox: Sandbox, syncs: Syncs
) -> None:
    """What durability costs: a change of one atomic step is recorded without waiting for the
    disk (a crash cannot cut it in two), so it fsyncs what it writes and its folder, as before
    there was a record; a change of several steps makes its record durable first, in place in
    its instance's journal: one fdatasync, no name made (the journal's own name is made, and
    its folder fsynced, by the instance's first such change)."""
    box = local_sandbox
    box.put("one.txt", "alpha\n")
    for n in range(3):
        box.put(f"p{n}.txt", "one\ntwo\n")
    call = box.vfs().for_call(CallContext(recording=Recording("test")))  # recorded, as a tool call's
    one_file = "--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-alpha\n+beta\n"
    three = "".join(f"--- a/p{n}.txt\n+++ b/p{n}.txt\n@@ -1,2 +1,2 @@\n-{{0}}\n+{{1}}\n two\n" for n in range(3))
    assert syncs.during(lambda: write.write_file(call, "one.txt", "gamma\n")) == 2  # the file, its folder
    assert syncs.during(lambda: patch.apply_patch(call, one_file.replace("alpha", "gamma"))) == 2
    first = syncs.during(lambda: patch.apply_patch(call, three.format("one", "1")))
    assert first == 3 * 2 + 1 + 1  # three files and their folder, the record, the journal's name
    assert syncs.during(lambda: patch.apply_patch(call, three.format("1", "2"))) == 3 * 2 + 1
    assert [name for name, _ in syncs.calls].count("fdatasync") == 1  # the record, in place
    assert box.get("p0.txt") == b"2\ntwo\n"


KILLED_EDIT = """
import os, signal, sys, time
from vfs_mcp import changes
from vfs_mcp.changes import log, store
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.replace import TextEdit, edit_file

folder, state, when = sys.argv[1:]
vfs = JailedFS(Jail([open_mount(MountSpec(folder))]))
changes.attach(vfs, log.ChangeLog(changes.state.LocalState(state)))
pending = os.path.join(state, "pending")


def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


if when == "before the step":
    # Killed once the record written beside the step is whole, before the step is made: the
    # record starts as the step's write first waits for the disk.
    started = store.waiting

    def waiting():
        started()
        deadline = time.monotonic() + 30
        while not any(name.endswith(".rec") for name in os.listdir(pending)):
            if time.monotonic() > deadline:
                os._exit(3)  # no record is written beside the step
            time.sleep(0.001)
        killed()

    store.waiting = waiting
else:
    log.ChangeLog.made = killed  # the step is made, its record written beside it: not yet filed
edit_file(vfs.for_call(CallContext(recording=Recording("edit_file"))), "a.txt", [TextEdit(oldText="alpha", newText="omega")])
"""


@pytest.mark.parametrize("when", ["before the step", "after the step"])
def test_an_edit_killed_while_its_record_is_written_beside_it_is_all_before_or_undoable_after(
    tmp_path: Path, when: str
) -> None:
    """The record of a change of one step is written beside the step and filed once it is made;
    a SIGKILL in between leaves it pending: the next instance lets it go where the step was not
    made, and files it where it was, so the change the dead one made can still be undone."""
    folder, state = tmp_path / "served", tmp_path / "state"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"alpha\n" + b"a line of text\n" * 4096)
    before = (folder / "a.txt").read_bytes()
    child = subprocess.run([sys.executable, "-c", KILLED_EDIT, str(folder), str(state), when], timeout=120)
    assert child.returncode == -9
    assert len(os.listdir(state / "pending")) == 1, "the dead instance left its record pending"
    vfs = JailedFS(Jail([open_mounts([MountSpec(str(folder))])[0]]))
    changelog = changes.attach(vfs, log.ChangeLog(LocalState(str(state))))
    assert os.listdir(state / "pending") == []
    filed = [name.removesuffix(".rec") for name in os.listdir(state / "changes")]
    if when == "before the step":
        assert (folder / "a.txt").read_bytes() == before and filed == []
        return
    assert (folder / "a.txt").read_bytes() == b"omega" + before[5:] and len(filed) == 1
    undo(vfs, changelog, None, change_id=filed[0])
    assert (folder / "a.txt").read_bytes() == before
