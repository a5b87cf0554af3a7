"""What one client's calls change belongs to its own session: two clients of one HTTP server
never see each other's working directory, relative paths or ide buffers. The sessions held are
bounded without ever changing what a live session means: a session whose state goes is ended
(its id answers 404, so its client starts again), sessions that never make a call go soon, one
client cannot take every slot, and a new client is not refused for sessions that sit idle."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from raw_http import RawSession, text_of

from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.profiles.results import data_of
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.transports.http import http_app
from vfs_mcp.transports.http_sessions import SessionLimits

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
    """The 2026 era has no sessions, nor has --stateless: every request starts at the root, and
    change_directory refuses rather than report a move no later request would see."""
    async with two_clients(folder, mode, stateless) as (a, b):
        moved = await a.call_tool("change_directory", {"path": "a"})
        again_a = await a.call_tool("read_file", {"path": "x.txt"})
        read_b = await b.call_tool("read_file", {"path": "x.txt"})
    assert moved.is_error and "relative paths start at" in text(moved)
    assert (text(again_a), text(read_b)) == ("root's x\n", "root's x\n")


async def test_one_clients_metrics_never_show_another_clients_calls(folder: Path) -> None:
    async with two_clients(folder, "legacy") as (a, b):
        await a.call_tool("read_file", {"path": "x.txt"})
        seen_by_b = json.loads((await b.read_resource("vfs://metrics")).contents[0].text)  # type: ignore[union-attr]
        seen_by_a = json.loads((await a.read_resource("vfs://metrics")).contents[0].text)  # type: ignore[union-attr]
    assert "read_file" not in seen_by_b["tools"] and seen_by_b["bytes_read"] == 0
    assert seen_by_a["tools"]["read_file"]["calls"] == 1


@asynccontextmanager
async def bounded(folder: Path, limits: SessionLimits) -> AsyncIterator[str]:
    """The URL of an HTTP server over ``folder`` holding sessions within ``limits``."""
    from conftest import serving_in_thread

    server = build_server(open_mounts([MountSpec(str(folder))]))
    with serving_in_thread(http_app(server, sessions=limits)) as url:
        yield url


def peer(address: str) -> httpx2.AsyncClient:
    """An HTTP client whose connections come from ``address`` (any of 127.0.0.0/8 on Linux)."""
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=address), timeout=30)


async def test_a_session_whose_state_goes_answers_404_and_never_writes_where_its_paths_meant(folder: Path) -> None:
    (folder / "config.txt").write_text("root's config\n")
    async with bounded(folder, SessionLimits(sessions=4, per_peer=4)) as url, peer("127.0.0.1") as http:
        quiet = RawSession(http, url)
        assert await quiet.open() == 200
        assert (await quiet.call("change_directory", path="a"))[0] == 200
        for _ in range(10):  # others come and go while it sits idle
            other = RawSession(http, url)
            assert await other.open() == 200
            assert (await other.call("get_working_directory"))[0] == 200
        status, _ = await quiet.call("write_file", path="config.txt", content="quiet's config\n")
    assert (folder / "config.txt").read_text() == "root's config\n"
    assert status == 404, "a session that lost its working directory must stop working"
    assert not (folder / "a" / "config.txt").exists()


async def test_a_session_in_use_keeps_its_working_directory_while_others_pass_the_limit(folder: Path) -> None:
    async with bounded(folder, SessionLimits(sessions=4, per_peer=4)) as url, peer("127.0.0.1") as http:
        steady = RawSession(http, url)
        assert await steady.open() == 200
        assert (await steady.call("change_directory", path="a"))[0] == 200
        for number in range(10):
            other = RawSession(http, url)
            assert await other.open() == 200
            assert (await other.call("get_working_directory"))[0] == 200
            status, result = await steady.call("write_file", path=f"steady-{number}.txt", content="x")
            assert status == 200 and not result["isError"], result  # type: ignore[index]
    assert sorted(p.name for p in (folder / "a").glob("steady-*")) == [f"steady-{n}.txt" for n in range(10)]


async def test_sessions_that_never_make_a_call_go_at_the_next_new_session(folder: Path) -> None:
    async with bounded(folder, SessionLimits(unused_seconds=0.0)) as url, peer("127.0.0.1") as http:
        unused = [RawSession(http, url) for _ in range(5)]
        for session in unused:
            assert await session.open() == 200
        used = RawSession(http, url)
        assert await used.open() == 200
        assert (await used.call("change_directory", path="a"))[0] == 200
        assert await RawSession(http, url).open() == 200  # a new session: the unused ones go
        gone = [(await session.call("list_allowed_directories"))[0] for session in unused]
        status, result = await used.call("get_working_directory")
    assert gone == [404] * 5
    assert status == 200 and str(folder / "a") in text_of(result)


async def test_one_peer_cannot_take_every_slot_and_a_new_client_is_never_refused_for_idle_sessions(
    folder: Path,
) -> None:
    limits = SessionLimits(sessions=8, per_peer=3)
    async with bounded(folder, limits) as url, AsyncExitStack() as stack:
        flood_http = await stack.enter_async_context(peer("127.0.0.2"))
        flood = [RawSession(flood_http, url) for _ in range(20)]
        opened = [await session.open() for session in flood]
        for session in flood:
            await session.call("list_allowed_directories")
        clients = []
        for address in ("127.0.0.3", "127.0.0.4", "127.0.0.5"):  # 3 + 6 sessions: one idle one must go
            http = await stack.enter_async_context(peer(address))
            clients += [RawSession(http, url), RawSession(http, url)]
        statuses, answered = [], []
        for client in clients:  # each calls once it is open, as clients do
            statuses.append(await client.open())
            answered.append((await client.call("change_directory", path="a"))[0])
        answered += [(await client.call("write_file", path="mine.txt", content="x"))[0] for client in clients]
        flood_left = [(await session.call("list_allowed_directories"))[0] for session in flood]
    assert opened == [200] * 20 and statuses == [200] * 6 and answered == [200] * 12
    assert (folder / "a" / "mine.txt").exists() and not (folder / "mine.txt").exists()
    assert flood_left.count(200) <= 2, flood_left  # at most its 3, less the one that went for the new clients
