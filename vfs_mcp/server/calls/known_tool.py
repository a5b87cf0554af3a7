"""Step 9: a tool the server does not serve is INVALID_ARGUMENT saying why (left out by
read-only mounts or ``--tools``, or no profile has it: the closest name served)."""

from __future__ import annotations

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.profiles.results import failed
from vfs_mcp.server import sdk
from vfs_mcp.server.calls.call import Call, Next, Result


async def step(call: Call, next_step: Next) -> Result:
    if sdk.registered_tool(call.server, call.name) is None:  # type: ignore[arg-type]
        return failed(InvalidArgument(call.server.why_not_served(call.name)))
    return await next_step(call)
