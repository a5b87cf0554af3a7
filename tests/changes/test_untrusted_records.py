"""A record in the state store is untrusted input: anyone who can write the store can plant one.
Recovery resolves every path of a record through the jail before it takes a lock or runs a
step; a record that cannot be honoured (a path with ``..``, a folder's image reaching out, bytes
that are no record, a name that is not ours) is moved aside to ``quarantine/`` in the state
store, logged with its id, and the server starts and serves the rest.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest
from processes import RawStdio

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState, ObjectState, StateStore, records
from vfs_mcp.changes.steps import Absent, DirImage, Expect, FileImage, Restore
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.ops.files import write

DEAD = "0123456789abcdef"
"""An instance that is not alive (it holds no lock, no lease)."""


def escaping(mount: Mount) -> records.Record:
    """A change cut short whose taking back would delete ``../victim.txt`` beside the mount."""
    step = Restore(Target(mount, "../victim.txt"), Absent(), Expect("file"))
    return records.Record(log.new_id(), DEAD, "write_file", 1.0, [step], atomic=False)


def plant(store: StateStore, record: records.Record) -> str:
    name = f"pending/{record.id}.{record.owner}.rec"
    store.write(name, records.encode(record))
    return name


def served_once_recovered(vfs: JailedFS, state: StateStore) -> None:
    changes.attach(vfs, log.ChangeLog(state))
    write.write_file(vfs.for_call(CallContext(recording=Recording("write_file"))), "after.txt", "served\n")


@pytest.fixture
def local(tmp_path: Path) -> tuple[JailedFS, Path]:
    folder = tmp_path / "served"
    folder.mkdir()
    (tmp_path / "victim.txt").write_text("victim\n")
    return JailedFS(Jail(open_mounts([MountSpec(str(folder))]))), tmp_path / "state"


def test_a_pending_record_whose_path_leaves_the_mount_is_quarantined_and_the_server_starts(
    local: tuple[JailedFS, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vfs, state = local
    planter = LocalState(str(state))
    record = escaping(vfs.mounts[0])
    plant(planter, record)
    planter.close()
    with caplog.at_level(logging.ERROR, logger="vfs_mcp"):
        served_once_recovered(vfs, LocalState(str(state)))
    assert (tmp_path / "victim.txt").read_text() == "victim\n"
    assert (tmp_path / "served" / "after.txt").read_text() == "served\n"
    assert [p.name for p in (state / "quarantine").iterdir()] == [f"pending.{record.id}.{DEAD}.rec"]
    assert list((state / "pending").iterdir()) == []
    assert any(record.id in line and "quarantine" in line for line in caplog.messages)


def _folder_reaching_out(mount: Mount) -> records.Record:
    image = DirImage(None, (("../../planted.txt", FileImage(b"planted\n", None)),))
    return records.Record(
        log.new_id(), DEAD, "delete_path", 1.0, [Restore(Target(mount, "d"), image, Expect("absent"))]
    )


def _absolute(mount: Mount) -> records.Record:
    step = Restore(Target(mount, "/etc/victim"), Absent(), Expect("file"))
    return records.Record(log.new_id(), DEAD, "write_file", 1.0, [step], atomic=False)


BAD: dict[str, Callable[[Mount], bytes]] = {
    "a folder's image reaching out": lambda mount: records.encode(_folder_reaching_out(mount)),
    "an absolute path": lambda mount: records.encode(_absolute(mount)),
    "garbage": lambda mount: b"\x00\xff not a record at all",
    "truncated": lambda mount: records.encode(escaping(mount))[:40],
    "a header of the wrong shape": lambda mount: records.MAGIC + b"\x00\x00\x00\x02[]",
    "a header nested too deep": lambda mount: (
        records.MAGIC + (200_000).to_bytes(4, "big") + b"[" * 100_000 + b"]" * 100_000
    ),
}


@pytest.mark.parametrize("bad", list(BAD))
def test_a_record_that_cannot_be_honoured_goes_to_quarantine_and_the_rest_is_recovered(
    local: tuple[JailedFS, Path], tmp_path: Path, bad: str
) -> None:
    """One bad record among good ones: the bad one goes aside, a good one (a change a dead
    server cut short) is still taken back."""
    vfs, state = local
    mount = vfs.mounts[0]
    (tmp_path / "served" / "made.txt").write_text("made by the dead change\n")
    steps = [Restore(Target(mount, name), Absent(), Expect("file")) for name in ("made.txt", "never.txt")]
    good = records.Record(log.new_id(), DEAD, "apply_patch", 1.0, steps, atomic=False)  # cut short after one step
    planter = LocalState(str(state))
    plant(planter, good)
    bad_id = log.new_id()
    planter.write(f"pending/{bad_id}.{DEAD}.rec", BAD[bad](mount))
    planter.close()
    served_once_recovered(vfs, LocalState(str(state)))
    assert [p.name for p in (state / "quarantine").iterdir()] == [f"pending.{bad_id}.{DEAD}.rec"]
    assert not (tmp_path / "served" / "made.txt").exists(), "the good record was taken back"
    assert list((state / "pending").iterdir()) == []
    assert not (tmp_path / "planted.txt").exists() and (tmp_path / "victim.txt").exists()


def test_an_undo_mark_naming_no_instance_of_ours_is_quarantined_not_followed(
    local: tuple[JailedFS, Path], tmp_path: Path
) -> None:
    """A mark's bytes name its undoer: a name that leads out of the store's folder (or holds a
    NUL) is never opened as a lock file."""
    vfs, state = local
    planter = LocalState(str(state))
    planter.write(f"pending/{log.new_id()}.undo", b"../../../escaped")
    planter.write(f"pending/{log.new_id()}.undo", b"\x00\xff\xfe")
    planter.close()
    served_once_recovered(vfs, LocalState(str(state)))
    assert len(list((state / "quarantine").iterdir())) == 2
    assert not (tmp_path / "escaped.lock").exists() and not (tmp_path.parent / "escaped.lock").exists()


def _state_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """A served root, its state store's URL, the server's environment, and how to read both."""
    if kind == "local":
        folder = tmp_path / "served"
        folder.mkdir()
        (tmp_path / "victim.txt").write_text("victim\n")
        state = str(tmp_path / "state")
        return {"root": str(folder), "state": state, "env": {}, "planter": lambda: LocalState(state)}
    endpoint = request.getfixturevalue("s3_endpoint")
    fs = fsspec.filesystem("s3", endpoint_url=endpoint, key="testing", secret="testing", skip_instance_cache=True)
    bucket = f"untrusted-{uuid.uuid4().hex[:10]}"
    fs.mkdir(bucket)
    fs.pipe_file(f"{bucket}/data/keep.txt", b"kept\n")
    fs.pipe_file(f"{bucket}/victim.txt", b"victim\n")
    state = f"s3://{bucket}/state"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    return {
        "root": f"s3://{bucket}/data",
        "state": state,
        "env": env,
        "planter": lambda: ObjectState(state, {"endpoint_url": endpoint}),
        "fs": fs,
        "bucket": bucket,
    }


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", "s3"])
def test_servers_started_on_a_store_holding_a_record_that_leaves_its_mount_start_and_serve(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The issue's reproduction: a pending record whose path holds ``..`` made every server
    started on that store exit with a traceback; on a shared ``s3://`` prefix, every replica."""
    place = _state_of(kind, tmp_path, request)
    options = {"endpoint_url": place["env"]["AWS_ENDPOINT_URL"]} if kind == "s3" else {}
    mount = open_mounts([MountSpec(place["root"], options=options)])[0]
    planter = place["planter"]()
    record = escaping(mount)
    plant(planter, record)
    planter.close()
    for _replica in range(2):
        with RawStdio(place["root"], "--state", place["state"], env=place["env"]) as server:
            answer = server.call("write_file", path="after.txt", content="served\n")
            assert not answer["result"].get("isError"), answer
            listed = server.call("list_directory", path=".")
            assert "after.txt" in str(listed["result"])
    store = place["planter"]()
    try:
        assert [item.name for item in store.listing("quarantine")] == [f"pending.{record.id}.{DEAD}.rec"]
        assert [item.name for item in store.listing("pending")] == []
    finally:
        store.close()
    if kind == "local":
        assert (tmp_path / "victim.txt").read_text() == "victim\n"
    else:
        place["fs"].invalidate_cache()
        assert place["fs"].cat_file(f"{place['bucket']}/victim.txt") == b"victim\n"
