"""How many HTTP sessions are held, and whose go first: a bound that never changes what a live
session means.

A session's state (working directory, ide buffers, undo journal) lives as long as the session
itself (``vfs_mcp.sessions``). To keep their number bounded a session is *ended*: its id then
answers 404 and its client starts a new one, as the MCP specification has it. ``Admission``
sits in front of the SDK's session manager and decides, when a request opens a session:

- a session that made no call after its handshake (``initialize`` and its notification)
  within ``unused_seconds`` is ended: a client that only opens sessions holds none for long;
- one peer (a client address, with its bearer token) holds at most ``per_peer`` sessions:
  past it, its own least recently used one is ended (unused ones first), so it cannot take
  every slot;
- the server holds at most ``sessions``: past it, the least recently used is ended (unused
  ones first). A new client is refused (503) only when every session is serving a request.

A session is *used* by each request after its handshake, and busy while a POST of it is
served (an open GET stream, which only listens, neither uses it nor keeps it). The SDK still
ends a session nothing reached for ``session_idle_timeout`` (30 minutes).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vfs_mcp.config import MAX_SESSIONS, MAX_SESSIONS_PER_PEER
from vfs_mcp.server import sdk

Refuse = Callable[[Send, str], Awaitable[None]]
"""Answers a request with an HTTP 503 and a message."""

UNUSED_SECONDS = 60.0
HANDSHAKE_REQUESTS = 2
"""A session's first requests: ``initialize``, then ``notifications/initialized``."""


@dataclass(frozen=True)
class SessionLimits:
    """The bounds on held HTTP sessions (see the module's docstring)."""

    sessions: int = MAX_SESSIONS
    per_peer: int = MAX_SESSIONS_PER_PEER
    unused_seconds: float = UNUSED_SECONDS

    def __post_init__(self) -> None:
        if self.sessions < 1 or self.per_peer < 1:
            raise ValueError("--max-sessions and --max-sessions-per-peer must be 1 or more")


@dataclass
class _Held:
    peer: str
    used: float
    """When a request of it last started or ended (the clock of ``Admission``)."""
    requests: int = 1
    busy: int = 0

    @property
    def unused(self) -> bool:
        return self.requests <= HANDSHAKE_REQUESTS


class Admission:
    """ASGI middleware that bounds the sessions ``manager`` holds (see the module's docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        manager: StreamableHTTPSessionManager,
        limits: SessionLimits,
        refuse: Refuse,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app, self.manager, self.limits, self.refuse, self.clock = app, manager, limits, refuse, clock
        self.held: dict[str, _Held] = {}
        """The sessions opened through here, by id."""
        self.opening = 0
        """Requests let through to open a session whose id is not known yet."""
        self._lock = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value for key, value in scope.get("headers", [])}
        session_id = headers.get(MCP_SESSION_ID_HEADER, b"").decode("latin-1") or None
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if session_id is not None:
            await self._serve(session_id, scope, receive, send)
        elif scope.get("method") != "POST" or (
            version and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
        ):
            await self.app(scope, receive, send)  # opens no session (a later era's request, a stray GET)
        else:
            await self._open(_peer(scope, headers.get("authorization", b"")), scope, receive, send)

    async def _serve(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        held = self.held.get(session_id)
        if held is None:
            await self.app(scope, receive, send)  # unknown, or ended: the SDK answers 404
            return
        held.requests += 1
        busy = scope.get("method") == "POST"
        if busy:
            held.busy += 1
            held.used = self.clock()
        try:
            await self.app(scope, receive, send)
        finally:
            if busy:
                held.busy -= 1
                held.used = self.clock()

    async def _open(self, peer: str, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._lock:
            admitted = await self._make_room(peer)
            if admitted:
                self.opening += 1
        if not admitted:
            await self.refuse(
                send,
                f"503: every one of the {self.limits.sessions} sessions this server holds (--max-sessions), or of "
                f"the {self.limits.per_peer} one client may hold (--max-sessions-per-peer), is serving a request; "
                "try again in a moment",
            )
            return
        noted = False

        async def noting(message: Message) -> None:
            nonlocal noted
            if message["type"] == "http.response.start" and not noted:
                for key, value in message.get("headers", []):
                    if key.decode("latin-1").lower() == MCP_SESSION_ID_HEADER:
                        self.held[value.decode("latin-1")] = _Held(peer, self.clock())
                noted = True
                self.opening -= 1
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            if not noted:
                self.opening -= 1

    async def _make_room(self, peer: str) -> bool:
        """Whether a session for ``peer`` may open, after ending those the limits want ended."""
        live = sdk.session_ids(self.manager)
        for session_id in [sid for sid in self.held if sid not in live]:
            del self.held[session_id]  # ended by the SDK (idle, deleted by its client)
        now = self.clock()
        stale = [sid for sid, held in self.held.items() if held.unused and now - held.used > self.limits.unused_seconds]
        for session_id in stale:
            await self._end(session_id)
        peers = [sid for sid, held in self.held.items() if held.peer == peer]
        if len(peers) >= self.limits.per_peer and not await self._end_one(peers):
            return False
        full = len(self.held) + self.opening >= self.limits.sessions
        return not full or await self._end_one(list(self.held))

    async def _end_one(self, candidates: list[str]) -> bool:
        """End the first of ``candidates`` to go (unused first, then the least recently used),
        leaving those serving a request; False when every one is."""
        idle = [sid for sid in candidates if not self.held[sid].busy]
        if not idle:
            return False
        await self._end(min(idle, key=lambda sid: (not self.held[sid].unused, self.held[sid].used)))
        return True

    async def _end(self, session_id: str) -> None:
        self.held.pop(session_id, None)
        await sdk.end_session(self.manager, session_id)


def _peer(scope: Scope, authorization: bytes) -> str:
    """Who opens a session: the client's address, and a digest of the token it presents."""
    client = scope.get("client") or ("?", 0)
    return f"{client[0]} {hashlib.sha256(authorization).hexdigest()[:16]}"
