"""A file a change replaces on a local mount is kept for undo by a second name in the state store,
not a copy (``vfs_mcp.changes.state.linked``): the record names it, undo puts it back byte for byte,
and it goes with the record. Where that is not safe or not possible — a mount refusing
hard-linked files, a file with another name, a state store on another filesystem — the record
keeps a copy, as before."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import Sandbox

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState
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
