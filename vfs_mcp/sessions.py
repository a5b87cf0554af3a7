"""What one client's calls can change belongs to that client's session.

The working directory (``change_directory``), the ide profile's open buffers and the list of
changes ``undo()`` takes back newest first are kept per MCP session: one client's calls never
change what another client's relative paths mean, nor see its buffers. Over stdio there is one
session; over HTTP each MCP session has its own state. A request without a session (the
2026-07-28 era over HTTP, or ``--stateless``) is ``sessionless``: it starts from the server's
defaults, and a tool that would keep state for later refuses, or hands the state back as a
handle the client passes again (a change id, a buffer handle).

The server sets ``current`` for the length of each call; code that keeps session state
reads it (``Jail.cwd``, ``state_of``). A session's state is kept on its connection
(``session_state``), so it lasts exactly as long as the session: it is never dropped under
a session that is still valid. Bounding how many sessions are held is the transport's job
(``vfs_mcp.transports.http_sessions``): it ends a session, whose id then answers 404 and whose client
starts a new one, instead of resetting what its paths mean.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class Slot(Generic[T]):
    """One owner's place in ``Slots``, holding a ``T``: the owner makes it once, at import, and
    no one reaches what it keeps by spelling a name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name
        """What it holds, in words (for a reader of a ``repr``)."""

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


class Slots:
    """What is kept for a session or a server, one typed ``Slot`` for each owner (the change
    log, the content index, line indexes, a session's undo journal, ...)."""

    def __init__(self) -> None:
        self._held: dict[Slot[Any], Any] = {}

    def get(self, slot: Slot[T]) -> T | None:
        return cast("T | None", self._held.get(slot))

    def put(self, slot: Slot[T], value: T) -> None:
        self._held[slot] = value

    def made(self, slot: Slot[T], make: Callable[[], T]) -> T:
        """What ``slot`` holds, made by ``make`` on first use (once, whoever asks at once)."""
        with _making:
            if slot not in self._held:
                self._held[slot] = make()
            return cast("T", self._held[slot])

    def __contains__(self, slot: Slot[Any]) -> bool:
        return slot in self._held


_KEY = "vfs_mcp.session"
"""Where a connection's ``state`` holds its session's ``SessionState``."""


@dataclass
class SessionState:
    """One session's changeable state: its working directory and what tools keep for it."""

    cwd: Any = None
    """The session's working directory (a ``Target``); None: the server's default."""
    kept: Slots = field(default_factory=Slots)
    """State a tool family keeps for the session (``state_of``), in its own slot."""
    sessionless: bool = False
    """A request of its own, outside any session: nothing kept here outlives it."""


current: ContextVar[SessionState | None] = ContextVar("vfs_mcp_session", default=None)
"""The state of the session whose call is running (None outside calls, e.g. at start-up)."""


def session_state(connection: Any) -> SessionState:
    """The state of the session ``connection`` serves (made on first use), kept in the
    connection's own ``state``: it goes with the connection, and only with it."""
    state = connection.state.get(_KEY)
    if state is None:
        state = connection.state[_KEY] = SessionState()
    return state  # type: ignore[no-any-return]


@contextmanager
def serving(state: SessionState | None) -> Iterator[SessionState | None]:
    """Make ``state`` current for one call: ``SessionState()`` for a request of its own."""
    token = current.set(state)
    try:
        yield state
    finally:
        current.reset(token)


def state_of(slot: Slot[T], make: Callable[[], T], server: Slots) -> T:
    """The current session's state in ``slot`` (``kept_by`` the session whose call is running):
    for an adapter, which is given no call."""
    return kept_by(current.get(), slot, make, server)


def kept_by(state: SessionState | None, slot: Slot[T], make: Callable[[], T], server: Slots) -> T:
    """``state``'s state in ``slot`` (made by ``make`` on first use); outside any session
    (``state`` None), the server's, kept in ``server`` (its ``JailedFS.kept``: one home for what
    the server keeps)."""
    return (server if state is None else state.kept).made(slot, make)


_making = threading.RLock()
"""Two calls of one session (or outside any) never make the same state twice."""
