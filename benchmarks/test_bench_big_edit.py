"""An edit of a 100 MB file (8 MB in quick mode), kept for undo, beside the least a durable
rewrite of it does: read it, replace, write a temp file, fsync it, rename it over the file,
fsync the folder (issue 50: at most 1.2x). In process, on local disk, the state store on the
same filesystem (the default for a home folder): the file the edit replaces is kept by a second
name in the state store, not a copy (``vfs_mcp.changes.state.linked``), so the edit writes the file's
bytes once, as the rewrite does.

Each round puts the file back as it was (untimed), both for the edit and for the rewrite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import MiB, Scale, write_log

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.replace import TextEdit, edit_file

OLD, NEW = b"retries = 3", b"retries = 5"


def size_of(scale: Scale) -> int:
    return 8 * MiB if scale.quick else 100 * 10**6


@dataclass
class BigFile:
    folder: Path
    path: Path
    seeded: bytes

    def put_back(self) -> None:
        self.path.write_bytes(self.seeded)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory, scale: Scale) -> Iterator[BigFile]:
    folder = tmp_path_factory.mktemp("big-edit")
    path = folder / "served" / "big.log"
    path.parent.mkdir()
    write_log(path, size=size_of(scale))
    data = path.read_bytes()
    middle = data.index(b"\n", len(data) // 2) + 1
    seeded = data[:middle] + OLD + b"\n" + data[middle:]
    made = BigFile(folder, path, seeded)
    made.put_back()
    yield made
    path.unlink()


def test_edit_of_a_big_file_kept_for_undo(benchmark: Any, big: BigFile, scale: Scale) -> None:
    benchmark.group = f"edit of a {size_of(scale) / 1e6:g} MB file vs a durable rewrite"
    vfs = JailedFS(Jail([open_mount(MountSpec(str(big.path.parent)))]))
    store = LocalState(str(big.folder / "state"))
    changes.attach(vfs, log.ChangeLog(store, budget=4 * size_of(scale)))
    limit = 2 * size_of(scale)
    kept: list[str] = []

    def edit() -> None:
        recording = Recording("edit_file", limit)
        call = vfs.for_call(CallContext(recording=recording))
        edit_file(call, str(big.path), [TextEdit(old_text=OLD.decode(), new_text=NEW.decode())], max_bytes=limit)
        kept.extend(recording.changes)

    benchmark.pedantic(edit, setup=big.put_back, rounds=3 if scale.quick else 5)
    assert NEW in big.path.read_bytes()
    assert kept and changes.log_of(vfs).holds(kept[-1]), "each edit is kept for undo"
    changes.log_of(vfs).close()


def test_durable_rewrite_of_a_big_file_baseline(benchmark: Any, big: BigFile, scale: Scale) -> None:
    benchmark.group = f"edit of a {size_of(scale) / 1e6:g} MB file vs a durable rewrite"
    temp = big.path.with_name(".big.log.rewrite")

    def rewrite() -> None:
        data = big.path.read_bytes().replace(OLD, NEW, 1)
        with temp.open("wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.rename(temp, big.path)
        folder = os.open(big.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)

    benchmark.pedantic(rewrite, setup=big.put_back, rounds=3 if scale.quick else 5)
    assert NEW in big.path.read_bytes()
