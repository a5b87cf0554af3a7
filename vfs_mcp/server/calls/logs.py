"""The server's log records made while a request is served go to a client that asked for them."""

from __future__ import annotations

from vfs_mcp.server import client_logs
from vfs_mcp.server.calls.call import Call, Next, Result


async def stage(call: Call, next_stage: Next) -> Result:
    return await client_logs.forwarded(call.request, lambda: next_stage(call))
