"""What one call carries down to the jail and the write path (``CallContext``), handed to them
with the filesystem they are given: ``JailedFS.for_call(context)`` is the call's view of the
shared filesystem, and the jail (``Jail.resolve`` notes how the caller spelt each path), the
tally (bytes read and written), the version pins of a replay, the confirmation and the write
path (the changes the call made, ``Recording``) read their part from the ``vfs`` they are
given, never from an ambient variable. A view outlives no call: what outlives one (an index,
a session's buffers) keeps ``JailedFS.shared``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from vfs_mcp.config import DEFAULT_UNDO_BYTES
from vfs_mcp.jail.tally import Tally
from vfs_mcp.jail.versions import Reads


@dataclass
class Recording:
    """The changes one call made, by id, oldest first (what its reply names); ``why_not``: why
    one cannot be undone; ``limit``: the before-images (bytes) a change of it may keep."""

    tool: str
    limit: int = DEFAULT_UNDO_BYTES
    changes: list[str] = field(default_factory=list)
    why_not: str | None = None

    def made(self, change_id: str, why_not: str | None) -> None:
        """The write path made the change ``change_id``: recorded (``why_not`` None) or not."""
        if why_not is None:
            self.changes.append(change_id)
        else:
            self.why_not = self.why_not or why_not


class Confirms(Protocol):
    """Who decides whether a person accepts a change before the write path commits it
    (``vfs_mcp.changes.confirm.Confirming``; its questions are the write path's types)."""

    accepted: set[str]

    def question(self, vfs: Any, steps: list[Any], undoing: int) -> Any: ...

    def ask(self, question: Any) -> None: ...


@dataclass(frozen=True)
class CallContext:
    """One call's part of what the jail and the write path do (None: that part is not asked
    for: nothing counted, noted, recorded or asked)."""

    tally: Tally | None = None
    """The bytes the call reads and writes through the jail (its metrics)."""
    reads: Reads | None = None
    """The version of every file the call reads, and the versions a replay pins."""
    written: dict[str, str] | None = None
    """The paths the call named, as the mount names them -> as its caller wrote them
    (``resolve.as_written`` names both in an error)."""
    recording: Recording | None = None
    """The changes the call makes, to name in its reply (a change outside any call — a program
    through the ``vfs`` protocol — is kept for no undo)."""
    confirming: Confirms | None = None
    """Asks a person before a change that destroys (``--confirm``)."""


NO_CALL = CallContext()
"""The context outside any call: what the shared filesystem (``JailedFS.shared``) carries."""
