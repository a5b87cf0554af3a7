"""What a recorded edit of a big local file costs, counted rather than timed (issue 50: the 1 MB
edit's own work): the bytes hashed for the reply and the undo record, the jobs handed to the
hashing thread, and when they start. The record still names both hashes right: undo checks the
file holds what the edit wrote and the image is the bytes it replaced, and brings them back byte
for byte."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState
from vfs_mcp.jail import entries
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.replace import TextEdit, edit_file
from vfs_mcp.ops.files.undo import undo

HALF = b"a line of the log, thirty-nine bytes..\n" * 13_000
BEFORE = HALF + b"config: retries = 3\n" + HALF
"""About 1 MB of text with the line the edit changes in its middle."""
AFTER = BEFORE.replace(b"retries = 3", b"retries = 5")


class Hashing:
    """``hashlib`` as the hashing thread sees it, counting the bytes it hashes and its jobs."""

    def __init__(self, executor: Any) -> None:
        self.counts: Counter[str] = Counter()
        self.executor = executor

    def sha256(self, data: Any = b"") -> Any:
        return _Counted(hashlib.sha256(data), self.counts, len(memoryview(data)))

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        self.counts["jobs"] += 1
        future: Future[Any] = self.executor.submit(fn, *args)
        return future


class _Counted:
    def __init__(self, digest: Any, counts: Counter[str], size: int) -> None:
        self.digest, self.counts = digest, counts
        counts["bytes"] += size

    def update(self, data: Any) -> None:
        self.counts["bytes"] += len(memoryview(data))
        self.digest.update(data)

    def copy(self) -> _Counted:
        return _Counted(self.digest.copy(), self.counts, 0)

    def hexdigest(self) -> str:
        return str(self.digest.hexdigest())


def served(tmp_path: Path) -> JailedFS:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "edit.txt").write_bytes(BEFORE)
    vfs = JailedFS(Jail([open_mount(MountSpec(str(tmp_path / "app")))]))
    changes.attach(vfs, log.ChangeLog(LocalState(str(tmp_path / "state"))))
    return vfs


def test_an_edit_in_the_middle_of_a_big_file_hashes_the_head_it_shares_with_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vfs = served(tmp_path)
    hashing = Hashing(entries._HASHER)
    monkeypatch.setattr(entries, "hashlib", SimpleNamespace(sha256=hashing.sha256))
    monkeypatch.setattr(entries, "_HASHER", hashing)
    recording = Recording("edit_file")
    result = edit_file(
        vfs.for_call(CallContext(recording=recording)),
        str(tmp_path / "app" / "edit.txt"),
        [TextEdit(old_text="retries = 3", new_text="retries = 5")],
    )
    assert result.sha256 == hashlib.sha256(AFTER).hexdigest()
    # What the edit wrote and what it replaced, one job: the bytes they begin with alike (up to
    # the edit's place) once; both whole, in two jobs, before: 2 MB.
    alike = len(HALF + b"config: ")
    assert hashing.counts == {"jobs": 1, "bytes": len(BEFORE) + len(AFTER) - alike}
    monkeypatch.undo()
    undo(vfs, changes.log_of(vfs), None, change_id=recording.changes[0])
    assert (tmp_path / "app" / "edit.txt").read_bytes() == BEFORE


def test_an_edit_hands_its_hashes_and_record_to_their_threads_once_its_bytes_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Handed over while the edit still computes, a woken thread was put on the edit's own core on
    the 2-core machine measured, and the edit waited for it: a millisecond of a 1 MB edit. Handed
    over as the edit waits for the disk, it has the core the edit leaves idle."""
    vfs = served(tmp_path)
    events: list[str] = []

    class Told:
        def __init__(self, name: str, executor: Any) -> None:
            self.name, self.executor = name, executor

        def submit(self, fn: Any, *args: Any) -> Future[Any]:
            events.append(self.name)
            future: Future[Any] = self.executor.submit(fn, *args)
            return future

    def told(name: str, call: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            events.append(name)
            return call(*args)

        return wrapper

    monkeypatch.setattr(entries, "_HASHER", Told("hash", entries._HASHER))
    monkeypatch.setattr(log, "_RECORDER", Told("record", log._RECORDER))
    monkeypatch.setattr(os, "writev", told("write", os.writev))
    monkeypatch.setattr(os, "fsync", told("fsync", os.fsync))
    edit_file(
        vfs.for_call(CallContext(recording=Recording("edit_file"))),
        str(tmp_path / "app" / "edit.txt"),
        [TextEdit(old_text="retries = 3", new_text="retries = 5")],
    )
    firsts = sorted(set(events), key=events.index)
    assert firsts == ["write", "hash", "record", "fsync"]
    assert (tmp_path / "app" / "edit.txt").read_bytes() == AFTER
