"""What every step of a tool call sees (``Call``) and the shape of a step."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, InputRequiredResult

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.tally import Tally
from vfs_mcp.server.metrics import Metrics
from vfs_mcp.server.roots import ClientRoots
from vfs_mcp.sessions import SessionState
from vfs_mcp.settings import Settings

Result = CallToolResult | InputRequiredResult


class Server(Protocol):
    """What the steps ask of the server (``vfs_mcp.server.build.VfsServer``)."""

    metrics: Metrics | None
    vfs_settings: Settings | None
    vfs: JailedFS | None
    client_roots: ClientRoots | None

    def session_of(self, context: Context[Any, Any] | None) -> AbstractContextManager[SessionState | None]: ...

    async def settle_roots(self, context: Context[Any, Any] | None) -> InputRequiredResult | None: ...

    def why_not_served(self, name: str) -> str: ...

    async def call_registered(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None) -> Any: ...


@dataclass
class Call:
    """One tool call on its way through the steps."""

    server: Server
    name: str
    arguments: dict[str, Any]
    context: Context[Any, Any] | None
    tally: Tally = field(default_factory=Tally)
    """The bytes the call moved (``counted`` sets it; ``metered`` reads it)."""

    @property
    def request(self) -> ServerRequestContext[Any, Any] | None:
        """The MCP request the call came in (None for a direct ``call_tool``)."""
        return request_of(self.context)


def request_of(context: Context[Any, Any] | None) -> ServerRequestContext[Any, Any] | None:
    """The MCP request of ``context`` (None outside any request)."""
    try:
        return context.request_context if context is not None else None
    except ValueError:  # a Context built outside any request (a direct call_tool)
        return None


Next = Callable[[Call], Awaitable[Result]]
Step = Callable[[Call, Next], Awaitable[Result]]
