"""Step 2: the call sees its client's session state (working directory, buffers, undo journal)."""

from __future__ import annotations

from vfs_mcp.server.calls.call import Call, Next, Result


async def step(call: Call, next_step: Next) -> Result:
    with call.server.session_of(call.context):
        return await next_step(call)
