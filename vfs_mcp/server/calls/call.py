"""What every stage of a request sees (``Call``) and the shape of a stage."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool

from vfs_mcp.jail import versions
from vfs_mcp.jail.context import CallContext, Confirms, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.tally import Tally
from vfs_mcp.server import sdk
from vfs_mcp.server.client_roots import ClientRoots
from vfs_mcp.server.metrics import Metrics
from vfs_mcp.sessions import SessionState
from vfs_mcp.settings import Settings

Result = Any
"""What a request is answered with: a ``CallToolResult`` or ``InputRequiredResult`` for a tool
call, the contents (or an ``InputRequiredResult``) for a resource read, an ``EmptyResult`` or
the stream's end for a subscription."""

Kind = Literal["tool", "resource", "subscribe", "listen"]
"""A tool call, a resource read, a ``resources/subscribe`` (before 2026-07-28), a
``subscriptions/listen`` stream (2026-07-28)."""


class Server(Protocol):
    """What the stages read of the server (``vfs_mcp.server.build.VfsServer``): its parts, never its logic."""

    metrics: Metrics | None
    vfs_settings: Settings | None
    vfs: JailedFS | None
    client_roots: ClientRoots | None
    many_clients: bool
    stateless: bool


@dataclass
class Call:
    """One request on its way through the stages."""

    server: Server
    name: str
    """The tool's name; the URI a resource read or a subscription names ("" for a listen stream)."""
    arguments: dict[str, Any]
    context: Context[Any, Any] | None
    kind: Kind = "tool"
    tally: Tally = field(default_factory=Tally)
    """The bytes the call moved and the matching work it did (``metered`` reads it)."""
    session: SessionState | None = None
    """Whose state the call sees (``session`` sets it; None: the server's own, one client)."""
    recording: Recording | None = None
    """The changes the call makes (``journaled`` sets it and names them in the reply)."""
    confirming: Confirms | None = None
    """Who asks a person before a change that destroys (``confirmed`` sets it)."""

    def for_tool(self) -> CallContext:
        """What the tool's operations are handed with the filesystem (``JailedFS.for_call``):
        this call's tally, changes and confirmation, the reads a recording notes."""
        return CallContext(self.tally, versions.current(), {}, self.recording, self.confirming)

    @cached_property
    def request(self) -> ServerRequestContext[Any, Any] | None:
        """The MCP request the call came in (None for a direct ``call_tool``), looked up once."""
        return request_of(self.context)

    @cached_property
    def tool(self) -> Tool | None:
        """The registered tool the call names (None: not served, or not a tool call), looked up once."""
        if self.kind != "tool" or not isinstance(self.server, MCPServer):
            return None
        return sdk.registered_tool(self.server, self.name)


def request_of(context: Context[Any, Any] | None) -> ServerRequestContext[Any, Any] | None:
    """The MCP request of ``context`` (None outside any request)."""
    try:
        return context.request_context if context is not None else None
    except ValueError:  # a Context built outside any request (a direct call_tool)
        return None


Next = Callable[[Call], Awaitable[Result]]
Stage = Callable[[Call, Next], Awaitable[Result]]
