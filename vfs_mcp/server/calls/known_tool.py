"""Step 9: a tool the server does not serve is a JSON-RPC error -32602 (invalid params), as the
spec's tools page has it for an unknown tool in both protocol eras, saying why (left out by
read-only mounts or ``--tools``, or no profile has it: the closest name served, or where the
tools are listed)."""

from __future__ import annotations

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from vfs_mcp.server import sdk
from vfs_mcp.server.calls.call import Call, Next, Result


async def step(call: Call, next_step: Next) -> Result:
    if sdk.registered_tool(call.server, call.name) is None:  # type: ignore[arg-type]
        raise MCPError(INVALID_PARAMS, call.server.why_not_served(call.name))
    return await next_step(call)
