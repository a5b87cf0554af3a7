"""The timeline's cost does not grow with the changes recorded (issue 48): a history page, and a
fresh server's start with its first write, with 0, 10,000 and 100,000 changes in the state
store (each a record in ``changes/`` and an entry in ``timeline/``, written as the log writes
them); and the redo of a 1 MB edit beside its undo.

Before the timeline, a fresh server read every record's header at its first change (5,000
records: start + first write 1.29x an empty store's, growing linearly): ``take_over``, gone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Scale

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.log import ChangeLog
from vfs_mcp.changes.state import LocalState, records
from vfs_mcp.changes.state.timeline import Retention, TimelineEntry
from vfs_mcp.changes.steps import FileImage, Restore
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.ops.files import undo, write
from vfs_mcp.ops.files.history import history

SIZES = [0, 10_000, 100_000]


def sizes(scale: Scale) -> list[int]:
    return [n for n in SIZES if not scale.quick or n <= 10_000]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, scale: Scale) -> Iterator[dict[int, tuple[Path, str]]]:
    """A folder to serve and a state folder holding N recorded changes of it, for each size this
    run measures (quick: not the 100,000, which only its skipped rows would read)."""
    made: dict[int, tuple[Path, str]] = {}
    for n in sizes(scale):
        base = tmp_path_factory.mktemp(f"timeline-{n}")
        folder, state = base / "proj", str(base / "state")
        folder.mkdir()
        LocalState(state).close()
        mount = open_mount(MountSpec(str(folder)))
        total = 0
        for seq in range(1, n + 1):
            change_id = log.new_id()
            image = FileImage(f"version {seq}\n".encode())
            steps = [Restore(Target(mount, f"src/file-{seq % 500}.txt"), image)]
            record = records.Record(change_id, "benchmark", "write_file", 1_700_000_000.0 + seq, steps)
            Path(state, "changes", f"{change_id}.rec").write_bytes(records.encode(record))
            total += len(image.data)
            entry = TimelineEntry.of(change_id, "write_file", steps, [(mount.url, "")], len(image.data), [], 0)
            entry.seq, entry.total = seq, total
            Path(state, "timeline", f"e-{seq:012d}").write_bytes(entry.encode())
        if n:
            Path(state, "timeline", "head").write_text(str(n - n % 16))
        made[n] = folder, state
    yield made


def _opened(folder: Path, state: str) -> JailedFS:
    """What a fresh server does at its first change: open the store, finish what the dead left."""
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder)))]))
    changes.attach(vfs, ChangeLog(LocalState(state), retention=Retention(10**12, changes=10**6)))
    return vfs


@pytest.mark.parametrize("n", SIZES)
def test_a_history_page(benchmark, scale: Scale, stores: dict[int, tuple[Path, str]], n: int) -> None:  # type: ignore[no-untyped-def]
    if n not in sizes(scale):
        pytest.skip("quick sizes")
    benchmark.group = "timeline: a history page (20 lines)"
    folder, state = stores[n]
    vfs = _opened(folder, state)
    try:
        page = benchmark(history, vfs, changes.log_of(vfs))
    finally:
        changes.log_of(vfs).close()
    assert len(page.changes) == min(n, 20)


@pytest.mark.parametrize("n", SIZES)
def test_start_and_first_write(benchmark, scale: Scale, stores: dict[int, tuple[Path, str]], n: int) -> None:  # type: ignore[no-untyped-def]
    if n not in sizes(scale):
        pytest.skip("quick sizes")
    benchmark.group = "timeline: a fresh server's start + first write"
    folder, state = stores[n]
    rounds = iter(range(10**6))

    def start_and_write() -> str:
        vfs = _opened(folder, state)
        try:
            record = Recording("write_file")
            write.write_file(vfs.for_call(CallContext(recording=record)), f"bench-{next(rounds)}.txt", "first write\n")
            return record.changes[0]
        finally:
            changes.log_of(vfs).close()

    change_id = benchmark.pedantic(start_and_write, rounds=15, warmup_rounds=1)
    assert os.path.exists(os.path.join(state, "changes", f"{change_id}.rec"))


@pytest.mark.parametrize("way", ["undo", "redo"])
def test_redo_of_a_1_mb_edit_beside_its_undo(benchmark, tmp_path: Path, way: str) -> None:  # type: ignore[no-untyped-def]
    benchmark.group = "timeline: a 1 MB edit taken back, and made again"
    folder = tmp_path / "proj"
    folder.mkdir()
    body = "".join(f"line {i:06d} of a megabyte file\n" for i in range(36_000)).encode()
    (folder / "big.txt").write_bytes(body)
    vfs = _opened(folder, str(tmp_path / "state"))
    changelog = changes.log_of(vfs)

    def setup() -> tuple[tuple[str], dict[str, object]]:
        (folder / "big.txt").write_bytes(body)
        record = Recording("write_file")
        write.write_file(
            vfs.for_call(CallContext(recording=record)), "big.txt", body.decode().replace("line 000000", "LINE 000000")
        )
        edit = record.changes[0]
        if way == "undo":
            return (edit,), {}
        undone = Recording("undo")
        undo.undo(vfs.for_call(CallContext(recording=undone)), changelog, None, change_id=edit)
        return (undone.changes[0],), {}

    def take_back(change_id: str) -> undo.UndoResult:
        return undo.undo(vfs.for_call(CallContext(recording=Recording("undo"))), changelog, None, change_id=change_id)

    try:
        result = benchmark.pedantic(take_back, setup=setup, rounds=15)
    finally:
        changelog.close()
    assert ((folder / "big.txt").read_bytes() == body) == (way == "undo") and result.change_id is not None
