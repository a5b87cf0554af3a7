"""A call that outlasts ``--call-timeout`` is an INTERNAL error naming the limit (its worker
thread is abandoned, and commits nothing after that: ``tools.in_worker``)."""

from __future__ import annotations

import anyio

from vfs_mcp.errors import Internal
from vfs_mcp.server.calls.call import Call, Next, Result


async def stage(call: Call, next_stage: Next) -> Result:
    limit = call.server.vfs_settings.call_timeout if call.server.vfs_settings else None
    if limit is None:
        return await next_stage(call)
    # A cancel scope of its own (what ``anyio.fail_after`` wraps in two generators more, on every call).
    with anyio.CancelScope(deadline=anyio.current_time() + limit):
        return await next_stage(call)
    # Here only when the scope caught its own cancellation: nothing but its deadline cancels it.
    raise Internal(f"{call.name} timed out after {limit:g} s; the mount is slow or unreachable, try again")
