"""Every request sees its client's session state (working directory, buffers, undo journal):
its MCP session's, in the eras with sessions; the server's own on a one-client transport
(stdio, in-process); a fresh one per request over HTTP without sessions (stateless, or the
2026-07-28 era)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from vfs_mcp.server import watch
from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.sessions import SessionState, serving, session_state


async def stage(call: Call, next_stage: Next) -> Result:
    with session_of(call) as state:
        call.session = state
        return await next_stage(call)


def session_of(call: Call) -> AbstractContextManager[SessionState | None]:
    """Whose state ``call`` sees (``vfs_mcp.sessions``)."""
    request, server = call.request, call.server
    connection = watch.connection_state(request)[1] if request is not None else None
    if not server.stateless and connection is not None and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return serving(session_state(connection))
    return serving(SessionState(sessionless=True)) if server.many_clients else serving(None)
