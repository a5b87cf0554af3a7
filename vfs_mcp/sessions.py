"""What one client's calls can change belongs to that client's session.

The working directory (``change_directory``) and the ide profile's open buffers are kept
per MCP session: one client's calls never change what another client's relative paths
mean, nor see its buffers. Over stdio there is one session; over HTTP each MCP session
has its own state; a stateless HTTP request (``--stateless``, or a protocol era without
sessions) starts from the server's defaults every time.

The server sets ``current`` for the length of each call; code that keeps session state
reads it (``Jail.cwd``, ``state_of``). State of a session that ended goes with it; idle
state expires and the number of sessions held is bounded.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

MAX_SESSIONS = 1000
"""Sessions whose state is held at once; past it the least recently used one's goes."""
IDLE_SECONDS = 24 * 3600.0
"""State of a session that made no call for this long is dropped (it starts again from the defaults)."""


@dataclass
class SessionState:
    """One session's changeable state: its working directory and what tools keep for it."""

    cwd: Any = None
    """The session's working directory (a ``Target``); None: the server's default."""
    kept: dict[str, Any] = field(default_factory=dict)
    """State a tool family keeps for the session (``state_of``), by name."""
    used: float = field(default_factory=time.monotonic)


current: ContextVar[SessionState | None] = ContextVar("vfs_mcp_session", default=None)
"""The state of the session whose call is running (None outside calls, e.g. at start-up)."""


class Sessions:
    """The state of every live session, keyed by the session object (weakly: a session that
    ends takes its state with it), bounded in number and idle time."""

    def __init__(self, limit: int = MAX_SESSIONS, idle: float = IDLE_SECONDS) -> None:
        self.limit, self.idle = limit, idle
        self._states: weakref.WeakKeyDictionary[object, SessionState] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._states)

    def state(self, session: object) -> SessionState:
        now = time.monotonic()
        with self._lock:
            state = self._states.get(session)
            if state is None:
                self._forget_idle(now)
                state = self._states[session] = SessionState()
            state.used = now
            return state

    def _forget_idle(self, now: float) -> None:
        live = sorted(self._states.items(), key=lambda item: item[1].used)
        for index, (session, state) in enumerate(live):
            if now - state.used > self.idle or len(live) - index >= self.limit:
                del self._states[session]

    def serving(self, session: object | None) -> AbstractContextManager[SessionState | None]:
        """Make ``session``'s state current for one call (None: no session, server defaults)."""
        return serving(self.state(session) if session is not None else None)


@contextmanager
def serving(state: SessionState | None) -> Iterator[SessionState | None]:
    """Make ``state`` current for one call: ``SessionState()`` for a request of its own."""
    token = current.set(state)
    try:
        yield state
    finally:
        current.reset(token)


def state_of(name: str, make: Callable[[], T], default: Callable[[], T]) -> T:
    """The current session's ``name`` state (made by ``make`` on first use), or ``default()``
    outside any session."""
    state = current.get()
    if state is None:
        return default()
    kept = state.kept.get(name)
    if kept is None:
        kept = state.kept[name] = make()
    return kept  # type: ignore[no-any-return]
