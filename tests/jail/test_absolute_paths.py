"""On a server with no local mount, "/x" names the working mount's root, but a host path is refused.

Issue 13, item 10: with only ``s3://reports/2026`` mounted, ``move_file(destination=/tmp/x)`` went
to ``s3://reports/2026/tmp/x``. A path whose first folder is a host's top-level folder is
ACCESS_DENIED naming the mounts; other absolute paths keep meaning the mount's root.
"""

from __future__ import annotations

import sys

import pytest
from conftest import Sandbox
from mcp import Client, StdioServerParameters

from vfs_mcp.profiles.results import error_of

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("sandbox", ["memory", "s3"], indirect=True)
async def test_a_host_path_on_an_object_store_server_is_access_denied_and_writes_nothing(sandbox: Sandbox) -> None:
    sandbox.put("report.txt", "q1\n")
    async with sandbox.client() as client:
        moved = await client.call_tool("move_file", {"source": "report.txt", "destination": "/tmp/x"})
        written = await client.call_tool("write_file", {"path": "/home/me/notes.txt", "content": "x"})
        rooted = await client.call_tool(
            "write_file", {"path": "/src/app.py", "content": "print()", "create_dirs": True}
        )
    for result in (moved, written):
        assert result.is_error and error_of(result)["code"] == "ACCESS_DENIED"
        text = result.content[0].text
        assert "no mount holds" in text and sandbox.root in text
    assert sandbox.exists("report.txt")
    assert not sandbox.exists("tmp/x") and not sandbox.exists("home/me/notes.txt")
    assert not rooted.is_error, rooted.content
    assert sandbox.get("src/app.py") == b"print()"


async def test_a_host_path_on_a_memory_server_is_refused_over_the_real_cli() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", "memory://reports"])
    async with Client(params) as client:
        await client.call_tool("write_file", {"path": "a.txt", "content": "a"})
        moved = await client.call_tool("move_file", {"source": "a.txt", "destination": "/tmp/x"})
        still = await client.call_tool("read_file", {"path": "a.txt"})
        nothing = await client.call_tool("get_file_info", {"path": "tmp/x"})
    assert error_of(moved)["code"] == "ACCESS_DENIED"
    assert "no mount holds /tmp/x; mounts are: memory://reports" in moved.content[0].text
    assert still.content[0].text == "a"
    assert error_of(nothing)["code"] == "NOT_FOUND"
