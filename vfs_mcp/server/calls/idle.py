"""The call counted as under way while it runs, so the heap is given back only once the server
is idle (``memory.Idle``): its end asks the event loop to check again ``memory.IDLE`` seconds
later. Where the loop is not asyncio's, nothing is scheduled and the heap is kept."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.server.memory import IDLE_SERVER


async def stage(call: Call, next_stage: Next) -> Result:
    IDLE_SERVER.began()
    try:
        return await next_stage(call)
    finally:
        IDLE_SERVER.ended(_later)


def _later(delay: float, job: Callable[[], None]) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    loop.call_later(delay, job)
