"""Step 8: where the client's roots decide the mounts, they are asked for and applied first
(an input round on 2026-07-28 clients); a client whose roots are all refused gets ACCESS_DENIED."""

from __future__ import annotations

from vfs_mcp.errors import AccessDenied
from vfs_mcp.profiles.results import failed
from vfs_mcp.server.calls.call import Call, Next, Result


async def step(call: Call, next_step: Next) -> Result:
    asking = await call.server.settle_roots(call.context)
    if asking is not None:
        return asking
    roots = call.server.client_roots
    if roots is not None and roots.denied:
        return failed(AccessDenied(roots.denied))
    return await next_step(call)
