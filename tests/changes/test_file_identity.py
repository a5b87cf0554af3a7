"""A local file's identity (device, inode, size, mtime, ctime) stands for its bytes when an
edit's save (or a patch's) checks the file still holds what the edit read: the bytes are read again only where
the identity cannot tell (the file changed within a step of the clock before the read, git's
racy index entry), and another program's change is seen either way."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import cast

import pytest
from conftest import Sandbox

from vfs_mcp.changes import store
from vfs_mcp.changes.commit import commit
from vfs_mcp.errors import Stale
from vfs_mcp.ops.edits.patch import apply_patch
from vfs_mcp.ops.text.document import TextFile
from vfs_mcp_backends import localreads


def read_long_after_its_change(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    """The clock the stats are made by, ten seconds past the file's last change (a file a model
    edits was mostly written long before)."""
    changed = os.stat(host).st_ctime_ns
    monkeypatch.setattr(localreads, "time_ns", lambda: changed + 10 * 10**9)


def read_in_the_tick_of_its_change(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    changed = os.stat(host).st_ctime_ns
    monkeypatch.setattr(localreads, "time_ns", lambda: changed)


def compared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the contents a save reads back to compare (``store.holds``)."""
    sizes: list[int] = []
    holds = store.holds

    def counted(*args: object) -> bool:
        sizes.append(len(cast(bytes, args[2])))
        return holds(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "holds", counted)
    return sizes


def test_a_save_over_a_file_unchanged_since_it_was_read_long_after_its_change_reads_it_no_more(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_sandbox.put("a.txt", "alpha\n")
    host = local_sandbox.mount.fs_path("a.txt")
    read_long_after_its_change(monkeypatch, host)
    reads = compared(monkeypatch)
    vfs = local_sandbox.vfs()
    doc = TextFile.load(vfs, vfs.resolve("a.txt", write=True), "utf-8")
    commit(vfs, doc.saved("ALPHA\n"), keep=1 << 20)
    assert reads == []
    assert local_sandbox.get("a.txt") == b"ALPHA\n"


def test_a_patch_over_a_file_unchanged_since_it_was_read_long_after_its_change_reads_it_no_more(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_sandbox.put("a.txt", "alpha\nbeta\ngamma\n")
    read_long_after_its_change(monkeypatch, local_sandbox.mount.fs_path("a.txt"))
    reads = compared(monkeypatch)
    apply_patch(local_sandbox.vfs(), "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n")
    assert reads == []
    assert local_sandbox.get("a.txt") == b"alpha\nBETA\ngamma\n"


def test_a_file_changed_in_the_clock_step_before_it_was_read_is_compared_by_its_bytes(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_sandbox.put("a.txt", "alpha\n")
    host = local_sandbox.mount.fs_path("a.txt")
    read_in_the_tick_of_its_change(monkeypatch, host)
    reads = compared(monkeypatch)
    vfs = local_sandbox.vfs()
    doc = TextFile.load(vfs, vfs.resolve("a.txt", write=True), "utf-8")
    assert doc.identity is None
    commit(vfs, doc.saved("ALPHA\n"), keep=1 << 20)
    assert reads == [len(b"alpha\n")]
    assert local_sandbox.get("a.txt") == b"ALPHA\n"


def test_a_file_another_program_replaces_with_the_same_size_and_time_is_a_conflict_however_long_ago_it_changed(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor's save: a new file of the same size renamed over the one read, its old mtime put back."""
    local_sandbox.put("a.txt", "alpha\n")
    host = local_sandbox.mount.fs_path("a.txt")
    read_long_after_its_change(monkeypatch, host)
    vfs = local_sandbox.vfs()
    doc = TextFile.load(vfs, vfs.resolve("a.txt", write=True), "utf-8")
    assert doc.identity is not None
    before = os.stat(host)
    theirs = f"{host}.theirs"
    with open(theirs, "wb") as file:
        file.write(b"omega\n")
    os.utime(theirs, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(theirs, host)
    with pytest.raises(Stale):
        commit(vfs, doc.saved("ALPHA\n"), keep=1 << 20)
    assert local_sandbox.get("a.txt") == b"omega\n"


def test_a_file_rewritten_in_place_to_the_same_size_and_time_since_it_was_read_is_a_conflict(
    local_sandbox: Sandbox,
) -> None:
    """The same writer in place, on the clock as it is: the file's ctime moved, or the read was
    within the clock's step of the file's change and the bytes are compared."""
    local_sandbox.put("a.txt", "alpha\n")
    host = local_sandbox.mount.fs_path("a.txt")
    vfs = local_sandbox.vfs()
    doc = TextFile.load(vfs, vfs.resolve("a.txt", write=True), "utf-8")
    before = os.stat(host)
    with open(host, "r+b") as file:
        file.write(b"omega\n")
    os.utime(host, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(Stale):
        commit(vfs, doc.saved("ALPHA\n"), keep=1 << 20)
    assert local_sandbox.get("a.txt") == b"omega\n"


def stat_of(ctime_ns: int) -> os.stat_result:
    return cast(
        os.stat_result,
        SimpleNamespace(st_dev=1, st_ino=2, st_size=3, st_mtime_ns=ctime_ns, st_ctime_ns=ctime_ns),
    )


@pytest.mark.parametrize(
    ("ctime_ns", "seen_ns", "tells"),
    [
        (1_700_000_000_123_456_789, 1_700_000_000_123_456_789, False),  # read in the tick of the change
        (1_700_000_000_123_456_789, 1_700_000_000_140_000_000, False),  # within the clock's step
        (1_700_000_000_123_456_789, 1_700_000_000_150_000_000, True),  # past it
        (1_700_000_001_000_000_000, 1_700_000_002_500_000_000, False),  # whole seconds: a 2 s step (FAT)
        (1_700_000_001_000_000_000, 1_700_000_003_100_000_000, True),
        (1_700_000_001_123_456_789, 1_700_000_000_000_000_000, False),  # stamped after the read: a clock set back
    ],
)
def test_a_stat_tells_the_content_only_when_made_past_a_step_of_the_clock_after_the_files_change(
    ctime_ns: int, seen_ns: int, tells: bool
) -> None:
    found = localreads.identity(stat_of(ctime_ns), seen_ns)
    assert (found is not None) == tells
    assert found is None or found == (1, 2, 3, ctime_ns, ctime_ns)
