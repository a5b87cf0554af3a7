"""A call that outlasts ``--call-timeout`` is an INTERNAL error naming the limit (its worker
thread is abandoned, and commits nothing after that: ``tools.in_worker``)."""

from __future__ import annotations

import anyio

from vfs_mcp.errors import Internal
from vfs_mcp.server.calls.call import Call, Next, Result


async def step(call: Call, next_step: Next) -> Result:
    limit = call.server.vfs_settings.call_timeout if call.server.vfs_settings else None
    try:
        with anyio.fail_after(limit):
            return await next_step(call)
    except TimeoutError:
        raise Internal(
            f"{call.name} timed out after {limit:g} s; the mount is slow or unreachable, try again"
        ) from None
