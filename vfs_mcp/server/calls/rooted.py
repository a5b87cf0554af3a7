"""Where the client's roots decide the mounts, every request asks for them when they are due
and applies them first (an input round of a tool call or a read on 2026-07-28 clients); a
client whose roots are all refused gets ACCESS_DENIED for whatever touches its files.

A request that cannot answer with an input round (a subscription) is refused while a
2026-07-28 client's roots are not known; a ``subscriptions/listen`` stream goes on, and each
URI it names is refused, saying why (``watchable``)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp_types import InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from vfs_mcp.errors import AccessDenied, Internal
from vfs_mcp.jail.resolve import Target
from vfs_mcp.server import sdk
from vfs_mcp.server.calls.call import Call, Next, Result, Server, request_of
from vfs_mcp.server.calls.confirmed import KEY as CONFIRM_KEY
from vfs_mcp.server.client_logs import log
from vfs_mcp.server.resources import METRICS_URI


async def stage(call: Call, next_stage: Next) -> Result:
    asking = await settle(call.server, call.context)
    if asking is not None:
        if call.kind in ("tool", "resource"):
            return asking
        if call.kind == "subscribe":
            raise Internal("the client's roots are not known yet; call a tool first")
        log.info("subscriptions before the client's roots: each URI is refused")
    roots = call.server.client_roots
    if roots is not None and call.kind != "listen" and not (call.kind == "resource" and call.name == METRICS_URI):
        roots.check()
    return await next_stage(call)


def watchable(server: Server, uri: str) -> Target:
    """The file a subscription names, through the jail and the client's roots (VfsError if not):
    asked when it is added and again before each change is told."""
    assert server.vfs is not None
    roots = server.client_roots
    if roots is not None:
        roots.check()
        if not roots.known:
            raise AccessDenied("the client's roots are not known yet; call a tool or read a resource first")
    return server.vfs.resolve(uri)


async def settle(server: Server, context: Context[Any, Any] | None) -> InputRequiredResult | None:
    """Ask the client for its roots when they are due, and apply them to the jail.

    Returns the ``InputRequiredResult`` to answer with while a 2026-07-28 client is being
    asked; None once the mounts are settled for this request.
    """
    roots, request = server.client_roots, request_of(context)
    if roots is None or server.vfs is None or context is None or request is None:
        return None
    if not roots.due(request.protocol_version in MODERN_PROTOCOL_VERSIONS):
        return None
    if roots.known and CONFIRM_KEY in (context.input_responses or {}):
        # The call comes again with a person's answer (``calls.confirmed``): a round for a roots
        # refresh now would drop it and ask the person again. The refresh is made at the next call.
        return None
    capabilities = request.session.client_capabilities
    uris: list[str] | None = None
    if capabilities is not None and capabilities.roots is not None:
        try:
            answer = await sdk.client_roots(context)
        except MCPError as err:  # the client failed to answer, or there is no channel to ask on
            log.warning("could not get the client's roots: %s", err)
        else:
            if isinstance(answer, InputRequiredResult):
                return answer
            uris = [str(root.uri) for root in answer.roots]
    # Checking the roots touches the disk (real paths, folders): not on the event loop.
    await anyio.to_thread.run_sync(roots.settle, server.vfs.jail, uris)
    return None
