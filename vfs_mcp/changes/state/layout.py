"""Every name in the state store, spelt once: the folders, a change's record and the marks of
its making and undoing, the timeline's index, what is quarantined, an ide buffer, an index
segment, a long call's task. Everything else asks here (``tests/changes/test_state_names.py`` holds it).

    instances/<iid>.lock | .lease | .claim    an instance alive, a dead one claimed
    instances/<iid>.<n>.journal               the pending records an instance writes in place
                                              (``journal.py``: one fdatasync a record)
    changes/<id>.rec                          a change's record (``records.py``)
    pending/<id>.<iid>.rec                    the record of a change instance <iid> is making
    pending/<id>.undo                         an undo of change <id> under way
    images/<id>.<n>                           a file change <id> replaced on a local mount, kept by
                                              a hard link, not a copy (``linked.py``)
    timeline/e-<seq> | head | tail            the timeline's entries and hints (``timeline.py``)
    timeline/u-<id> | n-<name>                "undone by", a checkpoint's name
    quarantine/<name>                         a record set aside (``recovery.quarantine``)
    buffers/<handle>                          an ide buffer
    review/<layer>.*                          a pending layer (``vfs_mcp_backends.layers``, which
                                              imports nothing of ours: it is handed ``REVIEW``'s folder)
    index/<mount>.<sha256>.db                 a content index segment (``vfs_mcp.ops.search.index``)
    tasks/<id>.json                           a long call answered with a task handle: its status,
                                              then its result or error (``task_records.py``)
"""

from __future__ import annotations

from typing import Literal

from vfs_mcp.changes.frozen import frozen

INSTANCES = "instances"
CHANGES = "changes"
PENDING = "pending"
BUFFERS = "buffers"
REVIEW = "review"
QUARANTINE = "quarantine"
INDEX = "index"
TIMELINE = "timeline"
TASKS = "tasks"
IMAGES = "images"
FOLDERS = (INSTANCES, CHANGES, PENDING, BUFFERS, REVIEW, QUARANTINE, INDEX, TIMELINE, TASKS, IMAGES)

RECORD = ".rec"
UNDO = ".undo"


def record(change_id: str) -> str:
    """The record of a change in the log."""
    return f"{CHANGES}/{change_id}{RECORD}"


def pending(change_id: str, instance: str) -> str:
    """The record of a change ``instance`` is making."""
    return f"{PENDING}/{change_id}.{instance}{RECORD}"


def undo_mark(change_id: str) -> str:
    """The mark of an undo of ``change_id`` under way (it holds the undoer's instance)."""
    return f"{PENDING}/{change_id}{UNDO}"


def quarantined(name: str) -> str:
    """Where ``name`` is set aside."""
    return f"{QUARANTINE}/{name.replace('/', '.')}"


def buffer(handle: str) -> str:
    return f"{BUFFERS}/{handle}"


def task(task_id: str) -> str:
    """A long call's task: its status, then its result or error (``task_records.py``)."""
    return f"{TASKS}/{task_id}.json"


def segment(name: str) -> str:
    """A segment of a content index."""
    return f"{INDEX}/{name}"


def entry(seq: int) -> str:
    """The timeline's entry number ``seq``."""
    return f"{TIMELINE}/e-{seq:012d}"


def hint(which: Literal["head", "tail"]) -> str:
    return f"{TIMELINE}/{which}"


def undone_by(change_id: str) -> str:
    """The mark naming the undo that took ``change_id`` back."""
    return f"{TIMELINE}/u-{change_id}"


def checkpoint(name: str) -> str:
    """The checkpoint ``name``: the id of its change."""
    return f"{TIMELINE}/n-{name}"


@frozen
class UnderWay:
    """A name of ``pending/`` read back: a change being made (``owner`` its instance) or an undo
    (its owner is in the mark's bytes)."""

    kind: Literal["change", "undo"]
    change_id: str
    owner: str = ""


def under_way(listed: str) -> UnderWay | None:
    """What the name ``listed`` of ``pending/`` is (None: not one of ours)."""
    parts = listed.split(".")
    if len(parts) == 3 and "." + parts[2] == RECORD:
        return UnderWay("change", parts[0], parts[1])
    if len(parts) == 2 and "." + parts[1] == UNDO:
        return UnderWay("undo", parts[0])
    return None


def set_aside(listed: str) -> str | None:
    """The id of the change whose record (or undo's mark) the name ``listed`` of ``quarantine/``
    is (``quarantined``); None: not one of ours."""
    folder, _, name = listed.partition(".")
    if folder == CHANGES and name.endswith(RECORD) and name.count(".") == 1:
        return name.removesuffix(RECORD)
    found = under_way(name) if folder == PENDING else None
    return found.change_id if found is not None else None


def of_change(listed: str, change_id: str) -> bool:
    """Whether the name ``listed`` of ``pending/`` is of the change ``change_id``."""
    return listed.startswith(change_id + ".")
