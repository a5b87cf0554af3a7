"""A file a change replaces on a local mount is kept for undo by a second name in the state store,
not a copy (``vfs_mcp.changes.state.linked``): the record names it, undo puts it back byte for byte,
and it goes with the record. Where that is not safe or not possible — a mount refusing
hard-linked files, a file with another name, a state store on another filesystem — the record
keeps a copy, as before."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Sandbox

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState
from vfs_mcp.changes.state.linked import Links
from vfs_mcp.errors import Stale
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits import patch
from vfs_mcp.ops.edits.replace import TextEdit, edit_file
from vfs_mcp.ops.files.undo import undo

BEFORE = b"a line of the file, sixty-three characters and its end of line\n" * 16384 + b"alpha the end\n"
"""A little over 1 MiB of text."""


def served(folder: Path, state: Path, **policy: bool) -> JailedFS:
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder), **policy))]))
    changes.attach(vfs, log.ChangeLog(LocalState(str(state))))
    return vfs


def edited(vfs: JailedFS, path: str = "big.bin") -> str:
    recording = Recording("edit_file")
    edit_file(vfs.for_call(CallContext(recording=recording)), path, [TextEdit(old_text="alpha", new_text="omega")])
    return recording.changes[0]


def kept(state: Path) -> list[str]:
    return sorted(os.listdir(state / "images"))


def record_size(state: Path, change_id: str) -> int:
    return (state / "changes" / f"{change_id}.rec").stat().st_size


def test_an_edit_keeps_the_file_it_replaced_by_a_second_name_and_undo_brings_it_back_byte_for_byte(
    tmp_path: Path,
) -> None:
    (tmp_path / "app").mkdir()
    big = tmp_path / "app" / "big.bin"
    big.write_bytes(BEFORE)
    inode = big.stat().st_ino
    vfs = served(tmp_path / "app", tmp_path / "state")
    change_id = edited(vfs, str(big))
    assert kept(tmp_path / "state") == [f"{change_id}.0"]
    image = tmp_path / "state" / "images" / f"{change_id}.0"
    assert image.stat().st_ino == inode and image.stat().st_nlink == 1  # the old file itself, no copy
    assert record_size(tmp_path / "state", change_id) < 4096
    undo(vfs, changes.log_of(vfs), None, change_id=change_id)
    assert big.read_bytes() == BEFORE
    assert kept(tmp_path / "state") == []  # the record went, and its image with it


@pytest.mark.parametrize("why", ["deny_hardlinked", "another name", "another filesystem"])
def test_where_a_second_name_is_not_safe_or_possible_the_record_keeps_a_copy(tmp_path: Path, why: str) -> None:
    (tmp_path / "app").mkdir()
    big = tmp_path / "app" / "big.bin"
    big.write_bytes(BEFORE)
    state = tmp_path / "state"
    if why == "another name":
        os.link(big, tmp_path / "elsewhere.bin")
    if why == "another filesystem":
        shm = Path("/dev/shm")
        if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
            pytest.skip("no second filesystem here (/dev/shm)")
        state = shm / f"vfs-mcp-test-{os.getpid()}-{tmp_path.name}"
    vfs = served(tmp_path / "app", state, deny_hardlinked=why == "deny_hardlinked")
    change_id = edited(vfs, str(big))
    assert kept(state) == [] and record_size(state, change_id) > len(BEFORE)
    undo(vfs, changes.log_of(vfs), None, change_id=change_id)
    assert big.read_bytes() == BEFORE
    if why == "another name":
        assert (tmp_path / "elsewhere.bin").read_bytes() == BEFORE  # never written through
    if why == "another filesystem":
        changes.log_of(vfs).close()
        shutil.rmtree(state)


def test_a_patch_of_several_files_keeps_each_by_a_second_name_and_a_failed_one_keeps_none(
    local_sandbox: Sandbox,
) -> None:
    box = local_sandbox
    for n in range(3):
        box.put(f"p{n}.txt", f"one {n}\ntwo\n")
    vfs = box.vfs()
    state = Path(changes.log_of(vfs).store.host_folder or "")
    three = "".join(f"--- a/p{n}.txt\n+++ b/p{n}.txt\n@@ -1,2 +1,2 @@\n-one {n}\n+1\n two\n" for n in range(3))
    recording = Recording("apply_patch")
    patch.apply_patch(vfs.for_call(CallContext(recording=recording)), three)
    change_id = recording.changes[0]
    assert kept(state) == [f"{change_id}.{n}" for n in range(3)]
    # Planned on what p3 held before someone wrote it: the first steps are prepared (their files
    # kept), the last finds p3 changed, and the change is given up with nothing changed.
    targets = [vfs.resolve(box.path(f"p{n}.txt"), write=True) for n in range(4)]
    box.put("p3.txt", "written meanwhile\n")
    ops: list[changes.Step] = [
        changes.Put(t, b"2\n", expect=changes.Expect("file", content=box.get(f"p{n}.txt")))
        for n, t in enumerate(targets)
    ]
    ops[3] = changes.Put(targets[3], b"2\n", expect=changes.Expect("file", content=b"what the plan read\n"))
    call = vfs.for_call(CallContext(recording=Recording("apply_patch")))
    with pytest.raises(Stale):
        changes.make(call, lambda: changes.Plan(None, list(ops)), replans=1)
    assert kept(state) == [f"{change_id}.{n}" for n in range(3)]  # the failed one's went
    undo(vfs, changes.log_of(vfs), None, change_id=change_id)
    assert [box.get(f"p{n}.txt") for n in range(3)] == [f"one {n}\ntwo\n".encode() for n in range(3)]
    assert kept(state) == []


def test_a_record_naming_an_image_outside_the_images_folder_is_refused_as_corrupt(tmp_path: Path) -> None:
    from vfs_mcp.changes.state import records

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "big.bin").write_bytes(BEFORE)
    vfs = served(tmp_path / "app", tmp_path / "state")
    change_id = edited(vfs, str(tmp_path / "app" / "big.bin"))
    path = tmp_path / "state" / "changes" / f"{change_id}.rec"
    aside = b"buffers/" + b"x" * 23  # as long as the image's name: the header keeps its length
    path.write_bytes(path.read_bytes().replace(f"images/{change_id}.0".encode(), aside))
    with pytest.raises(records.Corrupt):
        changes.log_of(vfs).read(f"changes/{change_id}.rec", lambda url: vfs.mounts[0])


KILLED_ONCE_LINKED = """
import os, signal, sys
from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.changes.state import LocalState
from vfs_mcp.changes.state.linked import Links
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.patch import apply_patch
from vfs_mcp.ops.edits.replace import TextEdit, edit_file

folder, state, change = sys.argv[1:]
vfs = JailedFS(Jail([open_mount(MountSpec(folder))]))
changelog = changes.attach(vfs, log.ChangeLog(LocalState(state)))
real_keep = Links.keep
linked = []


def keep(self, target, entry):
    name = real_keep(self, target, entry)
    linked.append(name)
    if len(linked) == (1 if change == "edit_file" else 2):  # each file kept, no record written yet
        os.kill(os.getpid(), signal.SIGKILL)
    return name


Links.keep = keep
call = vfs.for_call(CallContext(recording=Recording(change)))
if change == "edit_file":
    edit_file(call, "a.txt", [TextEdit(oldText="alpha", newText="omega")])
else:
    apply_patch(call, "".join(f"--- a/{n}.txt\\n+++ b/{n}.txt\\n@@ -1 +1 @@\\n-alpha\\n+omega\\n" for n in "ab"))
"""


def after_the_tick_of_the_last_link(images: Path) -> None:
    """Returns once the filesystem's clock has moved past the newest image's change time. The
    sweep tells an orphan by a change time older than the next instance's start; one linked in
    the same tick of that clock (a few ms: it is coarse) is left, as it could be a live
    instance's (``linked.orphans``). A full run under load once started the next instance in it."""
    newest = max(entry.stat(follow_symlinks=False).st_ctime_ns for entry in os.scandir(images))
    marker = images.parent / "tick"
    for _ in range(10**6):  # bounded: a coarse tick is some thousand touches at most
        marker.touch()
        if marker.stat().st_ctime_ns > newest:
            break
    marker.unlink()


@pytest.mark.parametrize("change", ["edit_file", "apply_patch"])
def test_an_image_a_killed_change_linked_before_its_record_was_written_is_swept_by_the_next_instance(
    tmp_path: Path, change: str
) -> None:
    """A SIGKILL between the second name of a replaced file and the change's record (one step:
    the record written beside it; several: before the first): no record names the image. The
    next instance to open the store finds the dead one's lock and removes it; the file, never
    replaced, is as it was, and nothing is in the history."""
    folder, state = tmp_path / "served", tmp_path / "state"
    folder.mkdir()
    for name in "ab":
        (folder / f"{name}.txt").write_bytes(b"alpha\n")
    child = subprocess.run([sys.executable, "-c", KILLED_ONCE_LINKED, str(folder), str(state), change])
    assert child.returncode == -signal.SIGKILL
    assert len(kept(state)) == (1 if change == "edit_file" else 2), "killed once the file(s) were linked"
    assert not os.listdir(state / "pending") and not os.listdir(state / "changes"), "and before any record"
    after_the_tick_of_the_last_link(state / "images")
    vfs = served(folder, state)
    assert kept(state) == []
    assert [(folder / f"{name}.txt").read_bytes() for name in "ab"] == [b"alpha\n", b"alpha\n"]
    assert [entry.tool for entry in changes.log_of(vfs).timeline.newest_first()] == []


def test_an_image_a_live_instance_linked_and_has_not_recorded_yet_is_never_swept(tmp_path: Path) -> None:
    """An instance alive between linking a file and writing the record that names it: another
    instance that sweeps meanwhile (it found a dead one's lock) leaves the image, which is newer
    than the live one's start though older than the sweeper's."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "b.bin").write_bytes(BEFORE)
    state = tmp_path / "state"
    vfs = served(tmp_path / "app", state)
    live = changes.log_of(vfs).store
    assert isinstance(live, LocalState)
    target = vfs.resolve(str(tmp_path / "app" / "b.bin"), write=True)
    entry = vfs.lookup(target)
    assert entry is not None and Links(live, "A" * 22).keep(target, entry) == f"images/{'A' * 22}.0"
    # An instance killed since (its process started after the link), whose lock makes the next sweep.
    child = subprocess.run([sys.executable, "-c", KILLED_ONCE_OPEN, str(state)])
    assert child.returncode == -signal.SIGKILL
    LocalState(str(state))
    assert kept(state) == [f"{'A' * 22}.0"]
    assert [name for name in os.listdir(state / "instances") if name.endswith(".lock")] == [f"{live.instance}.lock"]


KILLED_ONCE_OPEN = """
import os, signal, sys
from vfs_mcp.changes.state import LocalState

store = LocalState(sys.argv[1])  # held: a store let go of removes its lock
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_images_of_a_killed_instances_records_filed_or_set_aside_are_never_swept(tmp_path: Path) -> None:
    """A dead instance's changes, recorded before it was killed: their images are older than
    every live instance, and stay (one's record in the log, the other's set aside in quarantine)."""
    app, state = tmp_path / "app", tmp_path / "state"
    app.mkdir()
    for name in "cd":
        (app / f"{name}.bin").write_bytes(BEFORE)
    child = subprocess.run([sys.executable, "-c", EDITED_THEN_KILLED, str(app), str(state)], capture_output=True)
    assert child.returncode == -signal.SIGKILL
    filed, set_aside = child.stdout.decode().split()
    (state / "changes" / f"{set_aside}.rec").rename(state / "quarantine" / f"changes.{set_aside}.rec")
    LocalState(str(state))
    assert kept(state) == sorted([f"{filed}.0", f"{set_aside}.0"])
    assert [name for name in os.listdir(state / "instances") if name.endswith(".lock")] == []


EDITED_THEN_KILLED = """
import os, signal, sys
from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.changes.state import LocalState
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.replace import TextEdit, edit_file

folder, state = sys.argv[1:]
vfs = JailedFS(Jail([open_mount(MountSpec(folder))]))
changes.attach(vfs, log.ChangeLog(LocalState(state)))
for name in "cd":
    made = Recording("edit_file")
    edit_file(vfs.for_call(CallContext(recording=made)), f"{name}.bin", [TextEdit(oldText="alpha", newText="omega")])
    print(made.changes[0], flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
