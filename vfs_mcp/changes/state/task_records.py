"""A task's record in the state store (``tasks/<id>.json``): a long call answered with a task
handle (the ``io.modelcontextprotocol/tasks`` extension, ``vfs_mcp.server.tasks``) keeps its
status, its progress line and, once over, its result or its error here, so that any replica
sharing the store, or this one after a restart, can answer ``tasks/get`` for it.

A record is written when its task is made (durably, before the handle is returned: the schema
wants a ``tasks/get`` to resolve as soon as the client holds the id), now and then while it
works (its progress, for another replica), and once when it ends. A record still ``working``
whose owner is no longer alive (``StateStore.alive``: the replica stopped, however it stopped)
reads as ``failed``: what it left half made is taken back by recovery, like any change a dead
instance left. A record past its time to live reads as not there, and goes.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from vfs_mcp.changes.state import StateStore, layout

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
TTL_MS = 3_600_000
"""How long a task's record is kept from its creation (an hour): its result is read again as
often as the client asks within it."""
INTERNAL_ERROR = -32603
_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class TaskRecord:
    """One task as the store keeps it."""

    task_id: str
    owner: str
    """The instance running it (``StateStore.instance``)."""
    tool: str
    status: Status
    created: float
    updated: float
    message: str | None = None
    """The status line: progress while it works, why it failed, what cancelled it."""
    result: dict[str, Any] | None = None
    """A completed task's ``CallToolResult``, as it goes on the wire."""
    error: dict[str, Any] | None = None
    """A failed task's JSON-RPC error (``code``, ``message``)."""
    ttl_ms: int = TTL_MS

    def wire(self, poll_ms: int) -> dict[str, Any]:
        """The task as the schema's ``DetailedTask`` (``tasks/get``; a ``CreateTaskResult`` with
        ``resultType: "task"`` beside)."""
        shown: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
            "ttlMs": self.ttl_ms,
        }
        if self.status not in TERMINAL:
            shown["pollIntervalMs"] = poll_ms
        if self.message:
            shown["statusMessage"] = self.message
        if self.status == "completed" and self.result is not None:
            shown["result"] = self.result
        if self.status == "failed":
            shown["error"] = self.error or {"code": INTERNAL_ERROR, "message": self.message or "the task failed"}
        return shown

    def ended(self, status: Status, message: str | None = None, **payload: Any) -> TaskRecord:
        """This task ended as ``status`` (with its ``result`` or ``error``)."""
        return replace(self, status=status, message=message, updated=time.time(), **payload)

    def progressed(self, message: str) -> TaskRecord:
        return replace(self, message=message, updated=time.time())


def new_record(owner: str, tool: str) -> TaskRecord:
    """A task just made by ``owner`` for a call of ``tool``, working."""
    now = time.time()
    return TaskRecord(secrets.token_hex(16), owner, tool, "working", now, now)


def valid_id(task_id: str) -> bool:
    """Whether ``task_id`` is one this server could have made (anything else names no record)."""
    return bool(_ID.fullmatch(task_id))


def save(store: StateStore, record: TaskRecord, *, first: bool = False) -> None:
    """Write ``record`` (``first``: the task is being made; durable when this returns)."""
    data = json.dumps({"v": 1, **asdict(record)}, separators=(",", ":")).encode()
    store.write(layout.task(record.task_id), data, durable=first, create=first)


def read(store: StateStore, task_id: str) -> TaskRecord | None:
    """The task ``task_id`` as the store has it now: None when there is none (never made, gone
    past its time to live, or a record that cannot be read); one whose owner died while it
    worked, ``failed``."""
    if not valid_id(task_id):
        return None
    try:
        fields = json.loads(store.read(layout.task(task_id)))
        fields.pop("v", None)
        record = TaskRecord(**fields)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):  # not a record this server wrote: as if there were none
        return None
    if (time.time() - record.created) * 1000 > record.ttl_ms:
        with contextlib.suppress(OSError):
            store.delete(layout.task(task_id))
        return None
    if record.status not in TERMINAL and record.owner != store.instance and not store.alive(record.owner):
        return record.ended(
            "failed",
            "the server running this task stopped before it finished; what it left half made is taken back, "
            "as after any crash: call the tool again",
        )
    return record


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
