"""What the call reads, writes and matches, for the metrics (``call.tally``): the jail counts the
bytes into the call's context (``CallContext.tally``); the matching work is counted here, the
running call's tally made ambient for the matchers the calls share (``tally.counting``)."""

from __future__ import annotations

from vfs_mcp.jail.tally import counting
from vfs_mcp.server.calls.call import Call, Next, Result


async def stage(call: Call, next_stage: Next) -> Result:
    with counting(call.tally):
        return await next_stage(call)
