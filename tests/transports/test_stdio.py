"""The real thing: `vfs-mcp` spawned as a stdio subprocess, driven by the SDK's client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from vfs_mcp.tooling import data_of, error_of

pytestmark = pytest.mark.anyio


def server_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", *args])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_server_lists_tools_reads_and_writes(tmp_path: Path, mode: str) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk\n")
    async with Client(server_params(str(tmp_path)), mode=mode) as client:  # type: ignore[arg-type]
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"read_file", "write_file", "list_directory"} <= names

        read = await client.call_tool("read_file", {"path": str(tmp_path / "hello.txt")})
        assert not read.is_error
        assert read.content[0].text == "hello from disk\n"

        written = await client.call_tool("write_file", {"path": "new.txt", "content": "written over stdio"})
        assert not written.is_error
        denied = await client.call_tool("read_file", {"path": "/etc/passwd"})
        assert denied.is_error
        assert error_of(denied)["code"] == "ACCESS_DENIED"
    assert (tmp_path / "new.txt").read_text() == "written over stdio"


async def test_stdio_server_with_no_root_serves_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("cwd")
    params = StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp"], cwd=tmp_path)
    async with Client(params) as client:
        result = await client.call_tool("list_allowed_directories", {})
        read = await client.call_tool("read_file", {"path": "here.txt"})
    assert data_of(result)["directories"][0]["root"] == str(tmp_path)
    assert read.content[0].text == "cwd"


async def test_read_only_stdio_server_does_not_list_write_tools(tmp_path: Path) -> None:
    async with Client(server_params(str(tmp_path), "--read-only")) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "read_file" in names
    assert not names & {"write_file", "create_directory", "move_file", "copy_file", "delete_path"}


def test_bad_root_exits_with_a_clear_message(tmp_path: Path) -> None:
    import subprocess

    missing = tmp_path / "missing"
    done = subprocess.run([sys.executable, "-m", "vfs_mcp", str(missing)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "cannot mount" in done.stderr
    assert done.stdout == ""


async def test_a_30_mb_request_is_refused_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with Client(server_params(str(tmp_path))) as client:
        huge = await client.call_tool("write_file", {"path": "huge.txt", "content": "x" * (30 * 1024 * 1024)})
        assert huge.is_error
        assert error_of(huge)["code"] == "TOO_LARGE"
        after = await client.call_tool("write_file", {"path": "small.txt", "content": "still serving"})
        assert not after.is_error
    assert not (tmp_path / "huge.txt").exists()
    assert (tmp_path / "small.txt").read_text() == "still serving"
