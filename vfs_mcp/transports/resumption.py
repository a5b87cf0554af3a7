"""Resumable event streams over HTTP, without keeping what was sent.

The SDK primes every POST event stream with an event id (and a ``retry`` hint, in
milliseconds) only when it has an ``EventStore``. With the id, a client whose connection broke
during a call reconnects (GET with ``Last-Event-ID``) and the rest of the stream, the reply
included, comes on the new connection; without it the call is lost with the connection.

This store hands out the ids and keeps no messages: what was sent while the client was away
is not replayed. Keeping messages would cost memory in proportion to the replies (10 MB
reads), and the SDK gives one store to every session with stream ids that repeat across
sessions (request ids): a replay could hand one client another's results, the flaw of
GHSA-84j6-jc92-77jm in another SDK.
"""

from __future__ import annotations

import itertools

from mcp.server.streamable_http import EventCallback, EventId, EventStore, StreamId
from mcp_types import JSONRPCMessage

RETRY_MS = 1000
"""How long a client waits before it reconnects a broken stream."""

_SEPARATOR = "#"


class StreamIds(EventStore):
    """Event ids that name their stream (``<stream>#<n>``), and no stored events."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        return f"{stream_id}{_SEPARATOR}{next(self._numbers)}"

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Nothing to replay; the stream the id names, for the SDK to carry on (on the
        reconnecting client's own session: the SDK routes the request by its session id)."""
        stream_id, separator, number = last_event_id.rpartition(_SEPARATOR)
        return stream_id if separator and stream_id and number.isdigit() else None
