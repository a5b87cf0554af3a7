"""The MCP SDK's private names the server reaches for (``vfs_mcp.server.sdk``) are still there, and
its runner still dumps a tool result with the result's own ``model_dump`` (``replies.WireResult``).

When an SDK release renames one, these fail first, naming the function to fix, instead of
the server failing somewhere else (or, for the dump, quietly copying every reply once more).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from mcp_types import methods as sdk_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.server import replies, sdk
from vfs_mcp.server.build import build_server
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


def test_withdrawn_requests_were_registered_under_those_names_and_are_gone() -> None:
    plain = MCPServer("plain")
    methods = ("prompts/list", "prompts/get")
    assert all(sdk.lowlevel(plain).get_request_handler(m) is not None for m in methods)
    sdk.withdraw_requests(plain, *methods)
    assert all(sdk.lowlevel(plain).get_request_handler(m) is None for m in methods)
    assert sdk.lowlevel(plain).get_capabilities().prompts is None


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


WIRE = {"by_alias": True, "mode": "json", "exclude_none": True}
"""How the SDK's runner dumps a handler's result."""


def test_a_wire_result_dumps_as_the_result_it_wraps_handing_its_meta_over() -> None:
    meta = {"vfs-mcp/result": {"tree": {"name": "x", "type": "directory", "size": None, "children": []}}}
    result = CallToolResult(
        content=[TextContent(type="text", text="t")], structured_content={"a": 1}, is_error=False, _meta=meta
    )
    wired = replies.wired(result)
    assert wired.model_dump(**WIRE) == result.model_dump(**WIRE)
    assert wired.model_dump(**WIRE)["_meta"] is result.meta  # not copied
    assert wired.model_dump() == result.model_dump()


async def test_the_runner_dumps_a_tool_result_with_the_results_own_model_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    dumps: list[dict[str, Any]] = []
    dump = replies.WireResult.model_dump

    def counted(self: replies.WireResult, **options: Any) -> dict[str, Any]:
        dumps.append(options)
        return dump(self, **options)

    monkeypatch.setattr(replies.WireResult, "model_dump", counted)
    async with Client(a_server()) as client:
        result = await client.call_tool("list_allowed_directories", {})
    assert not result.is_error
    assert WIRE.items() <= dumps[0].items()


def test_standard_input_and_output_are_claimed_through_the_sdks_claim() -> None:
    # Under pytest neither stream is backed by its descriptor, so the claim serves them in
    # place; a renamed claim function fails here (what it diverts: tests/transports/test_stdio.py).
    with sdk.claimed_stdio() as (stdin, stdout):
        assert callable(stdin.read) and callable(stdout.write)


async def test_a_session_manager_names_its_sessions_and_ends_one_so_its_id_answers_404() -> None:
    from raw_http import RawSession

    server = a_server()
    app = server.streamable_http_app(max_sessions=None)
    manager = sdk.lowlevel(server).session_manager
    async with (
        manager.run(),  # on this event loop, as the transport's own tasks must be
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), timeout=30) as http,
    ):
        session = RawSession(http, "http://127.0.0.1:8765/mcp")
        assert await session.open() == 200
        session_id = session.headers["mcp-session-id"]
        held = session_id in sdk.session_ids(manager)
        await sdk.end_session(manager, session_id)
        gone = session_id not in sdk.session_ids(manager)
        status, _ = await session.call("list_allowed_directories")
    assert held and gone and status == 404


@pytest.mark.parametrize(("set_up", "rich"), [(False, True), (True, False)])
def test_the_sdks_logging_setup_runs_only_where_logging_is_not_set_up(set_up: bool, rich: bool) -> None:
    # A fresh interpreter: rich is loaded (for the SDK's handler) only where the constructor's
    # setup runs; where it runs, the root logger gets the SDK's handler as before.
    script = (
        "import logging, sys\n"
        "from mcp.server.mcpserver import MCPServer\n"
        "from vfs_mcp.server import sdk\n"
        "sdk.logging_set_up_once()\n"
        + ("logging.basicConfig(handlers=[logging.NullHandler()])\n" if set_up else "")
        + "MCPServer('a')\n"
        "print('rich' in sys.modules, [type(h).__name__ for h in logging.getLogger().handlers])\n"
    )
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout

    assert printed.split(" ", 1) == [str(rich), "['RichHandler']\n" if rich else "['NullHandler']\n"]


def test_the_sieve_hands_a_tool_results_meta_over_as_it_is_and_sieves_the_rest_as_the_sdk_does() -> None:
    sdk.tool_results_keep_their_meta()
    meta = {"vfs-mcp/result": {"tree": {"name": "x", "size": None, "children": [{"name": "y", "size": 3}]}}}
    data = {"content": [{"type": "text", "text": "t", "extra": None}], "isError": False, "_meta": meta}
    for method, version in sdk_methods.SERVER_RESULTS:
        if method != "tools/call" or version in MODERN_PROTOCOL_VERSIONS:
            continue
        sieved = sdk_methods.serialize_server_result(method, version, data)
        assert sieved == sdk._SIEVE(method, version, data)
        assert sieved["_meta"] is meta  # not copied


async def test_the_runner_sieves_a_tool_result_through_the_sdks_serialize_server_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sieved: list[tuple[str, Any]] = []
    sieve = sdk._SIEVE

    def counted(method: str, version: str, data: Any, **options: Any) -> dict[str, Any]:
        sieved.append((method, data.get("_meta")))
        return sieve(method, version, data, **options)

    monkeypatch.setattr(sdk, "_SIEVE", counted)
    async with Client(a_server()) as client:
        result = await client.call_tool("list_allowed_directories", {})
    assert not result.is_error and result.meta and "vfs-mcp/result" in result.meta
    assert ("tools/call", {}) in sieved  # the runner's sieve met the result without its _meta
