"""The MCP SDK's private names the server reaches for (``vfs_mcp.sdk``) are still there.

When an SDK release renames one, these fail first, naming the function to fix, instead of
the server failing somewhere else.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer

from vfs_mcp import sdk
from vfs_mcp.mounts import MountSpec, open_mounts
from vfs_mcp.server import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio


def a_server() -> MCPServer:
    return build_server(open_mounts([MountSpec("memory://sdk-seams")]), Settings())


async def test_registered_tools_are_the_ones_tools_list_shows() -> None:
    server = a_server()
    listed = await server.list_tools()

    assert [tool.name for tool in sdk.registered_tools(server)] == [tool.name for tool in listed]
    tool = sdk.registered_tool(server, "read_file")
    assert tool is not None and callable(tool.fn) and "path" in tool.parameters["properties"]
    assert sdk.registered_tool(server, "no_such_tool") is None


def test_the_lowlevel_server_is_reached() -> None:
    lowlevel = sdk.lowlevel(a_server())
    assert isinstance(lowlevel, Server) and callable(lowlevel.create_initialization_options)


async def test_a_requests_session_names_its_connection_with_state_and_an_exit_stack() -> None:
    server = a_server()
    seen: list[Any] = []

    @server.tool()
    def probe(ctx: Context) -> str:
        seen.append(sdk.connection_of(ctx.session))
        return "ok"

    async with Client(server) as client:
        for _ in range(2):
            result = await client.call_tool("probe", {})
            assert not result.is_error, result.content

    assert all(isinstance(connection.state, dict) and connection.exit_stack is not None for connection in seen)
