"""A local state store keeps the record a change of several steps writes before its first step
in place, in its instance's journal (``vfs_mcp.changes.state.journal``): read back, listed and let go
under the record's name as a file was, by this instance and, once it is dead, by any other."""

from __future__ import annotations

import os
from pathlib import Path

from vfs_mcp.changes.state import LocalState
from vfs_mcp.changes.state.journal import SUFFIX


def journals(state: Path) -> list[str]:
    return sorted(name for name in os.listdir(state / "instances") if name.endswith(SUFFIX))


def test_a_durable_pending_record_is_kept_in_the_journal_and_read_listed_and_filed_under_its_name(
    tmp_path: Path,
) -> None:
    store = LocalState(str(tmp_path / "state"))
    name = f"pending/abc.{store.instance}.rec"
    store.write(name, b"the record", durable=True)
    assert os.listdir(tmp_path / "state" / "pending") == []  # no name made: nothing to fsync a folder for
    assert journals(tmp_path / "state") == [f"{store.instance}.0{SUFFIX}"]
    assert store.read(name) == b"the record" and store.read(name, 4, 7) == b"rec"
    assert [item.name for item in store.listing("pending")] == [f"abc.{store.instance}.rec"]
    store.move(name, "changes/abc.rec")
    assert store.read("changes/abc.rec") == b"the record"
    assert store.listing("pending") == [] and not store.exists(name)
    store.close()
    assert journals(tmp_path / "state") == []  # one holding no record goes with its instance


def test_a_second_change_at_once_gets_a_journal_of_its_own_and_a_record_let_go_frees_its_journal(
    tmp_path: Path,
) -> None:
    store = LocalState(str(tmp_path / "state"))
    one, two, three = (f"pending/{n}.{store.instance}.rec" for n in ("one", "two", "three"))
    store.write(one, b"first" * 1000, durable=True)
    store.write(two, b"second", durable=True)
    assert len(journals(tmp_path / "state")) == 2
    store.delete(one)
    store.write(three, b"third", durable=True)  # in the journal the first left: shorter, no stale tail
    assert len(journals(tmp_path / "state")) == 2
    assert (store.read(two), store.read(three)) == (b"second", b"third")
    assert not store.exists(one)


def test_a_dead_instances_record_is_found_in_its_journal_and_its_journal_goes_with_it(tmp_path: Path) -> None:
    dead = LocalState(str(tmp_path / "state"))
    name = f"pending/abc.{dead.instance}.rec"
    dead.write(name, b"cut short", durable=True)
    dead.close()  # its lock goes as a killed process's does; its journal stays
    survivor = LocalState(str(tmp_path / "state"))
    assert [item.name for item in survivor.listing("pending")] == [f"abc.{dead.instance}.rec"]
    assert survivor.read(name) == b"cut short"
    survivor.delete(name)
    assert journals(tmp_path / "state") == [] and survivor.listing("pending") == []


def test_a_record_torn_by_a_crash_reads_as_none_and_goes_at_the_next_start(tmp_path: Path) -> None:
    dead = LocalState(str(tmp_path / "state"))
    name = f"pending/abc.{dead.instance}.rec"
    dead.write(name, b"half written", durable=True)
    dead.close()
    [file] = journals(tmp_path / "state")
    path = tmp_path / "state" / "instances" / file
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    survivor = LocalState(str(tmp_path / "state"))
    assert journals(tmp_path / "state") == [] and survivor.listing("pending") == []
    assert not survivor.exists(name)
