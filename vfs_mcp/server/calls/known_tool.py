"""A tool the server does not serve is a JSON-RPC error -32602 (invalid params), as the spec's
tools page has it for an unknown tool in both protocol eras, saying why (left out by read-only
mounts or ``--tools``, or no profile has it: the closest name served, or where the tools are
listed)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from vfs_mcp.errors import echoed
from vfs_mcp.server import sdk, tools
from vfs_mcp.server.calls.boundary import NotServed
from vfs_mcp.server.calls.call import Call, Next, Result, Server


async def stage(call: Call, next_stage: Next) -> Result:
    if call.tool is None:
        raise NotServed(why_not_served(call.server, call.name))
    return await next_stage(call)


def why_not_served(server: Server, name: str) -> str:
    """Why there is no tool ``name``: left out by read-only mounts or ``--tools``, or none of
    the profiles has it (with the closest name served)."""
    settings, vfs = server.vfs_settings, server.vfs
    if settings is not None and vfs is not None and name in tools.profile_tools(settings):
        if all(mount.read_only for mount in vfs.mounts) and not tools.profile_tools(settings)[name]:
            return f"{name} is not served: every mount is read-only, so no tool that writes is listed"
        if settings.tools:
            return f"{name} is not served: --tools {','.join(settings.tools)} leaves it out"
    import difflib  # here: only a name that is not known needs it

    served = [tool.name for tool in sdk.registered_tools(server)] if isinstance(server, MCPServer) else []
    known = difflib.get_close_matches(name, served, n=1)
    hint = f"; did you mean {known[0]!r}?" if known else "; tools/list shows the tools this server offers"
    return f"there is no tool named {echoed(name)}{hint}"
