"""What one client's calls change belongs to its own session: two clients of one HTTP server
never see each other's working directory, relative paths or ide buffers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from vfs_mcp.http import http_app
from vfs_mcp.mounts import MountSpec, open_mounts
from vfs_mcp.server import build_server
from vfs_mcp.sessions import Sessions
from vfs_mcp.settings import Settings
from vfs_mcp.tooling import data_of

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def two_clients(folder: Path, mode: str, stateless: bool = False) -> AsyncIterator[tuple[Client, Client]]:
    from conftest import serving_in_thread

    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(profiles=("default", "ide")))
    with serving_in_thread(http_app(server, stateless=stateless)) as url:
        async with (
            httpx2.AsyncClient(timeout=30) as http_a,
            httpx2.AsyncClient(timeout=30) as http_b,
            Client(streamable_http_client(url, http_client=http_a), mode=mode) as a,  # type: ignore[arg-type]
            Client(streamable_http_client(url, http_client=http_b), mode=mode) as b,  # type: ignore[arg-type]
        ):
            yield a, b


def text(result: object) -> str:
    return str(result.content[0].text)  # type: ignore[attr-defined]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "x.txt").write_text("root's x\n")
    (tmp_path / "a" / "x.txt").write_text("a's x\n")
    return tmp_path


async def test_one_clients_working_directory_never_moves_another_clients_paths(folder: Path) -> None:
    async with two_clients(folder, "legacy") as (a, b):
        assert not (await a.call_tool("change_directory", {"path": "a"})).is_error
        read_a = await a.call_tool("read_file", {"path": "x.txt"})
        read_b = await b.call_tool("read_file", {"path": "x.txt"})
        where_b = data_of(await b.call_tool("get_working_directory", {}))
        written = await b.call_tool("write_file", {"path": "new.txt", "content": "from b"})
    assert (text(read_a), text(read_b)) == ("a's x\n", "root's x\n")
    assert where_b["current_dir"] == str(folder)
    assert not written.is_error and (folder / "new.txt").read_text() == "from b"
    assert not (folder / "a" / "new.txt").exists()


async def test_one_clients_ide_buffers_are_its_own(folder: Path) -> None:
    uri = (folder / "x.txt").as_uri()
    async with two_clients(folder, "legacy") as (a, b):
        assert data_of(await a.call_tool("file_open", {"uri": uri}))["success"] is True
        closed_by_b = data_of(await b.call_tool("file_close", {"uri": uri}))
        closed_by_a = data_of(await a.call_tool("file_close", {"uri": uri}))
    assert closed_by_b["was_open"] is False
    assert closed_by_a["was_open"] is True


@pytest.mark.parametrize(("mode", "stateless"), [("auto", False), ("legacy", True)])
async def test_without_sessions_no_request_sees_another_requests_working_directory(
    folder: Path, mode: str, stateless: bool
) -> None:
    """The 2026 era has no sessions, nor has --stateless: every request starts at the root."""
    async with two_clients(folder, mode, stateless) as (a, b):
        moved = await a.call_tool("change_directory", {"path": "a"})
        again_a = await a.call_tool("read_file", {"path": "x.txt"})
        read_b = await b.call_tool("read_file", {"path": "x.txt"})
    assert not moved.is_error
    assert (text(again_a), text(read_b)) == ("root's x\n", "root's x\n")


def test_session_state_is_bounded_and_expires() -> None:
    class Session:
        pass

    sessions = Sessions(limit=3, idle=60.0)
    held = [Session() for _ in range(5)]
    for session in held:
        sessions.state(session)
    assert len(sessions) == 3
    first = sessions.state(held[-1])
    first.used -= 120.0  # idle for two minutes
    sessions.state(Session())
    assert held[-1] not in sessions._states


async def test_one_clients_metrics_never_show_another_clients_calls(folder: Path) -> None:
    async with two_clients(folder, "legacy") as (a, b):
        await a.call_tool("read_file", {"path": "x.txt"})
        seen_by_b = json.loads((await b.read_resource("vfs://metrics")).contents[0].text)  # type: ignore[union-attr]
        seen_by_a = json.loads((await a.read_resource("vfs://metrics")).contents[0].text)  # type: ignore[union-attr]
    assert "read_file" not in seen_by_b["tools"] and seen_by_b["bytes_read"] == 0
    assert seen_by_a["tools"]["read_file"]["calls"] == 1
