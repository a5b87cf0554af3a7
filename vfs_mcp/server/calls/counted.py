"""The bytes the call reads and writes through the jail, for the metrics (``call.tally``)."""

from __future__ import annotations

from vfs_mcp.jail.tally import counting
from vfs_mcp.server.calls.call import Call, Next, Result


async def stage(call: Call, next_stage: Next) -> Result:
    with counting() as tally:
        call.tally = tally
        return await next_stage(call)
