"""Streamable HTTP over a real uvicorn server on a free loopback port."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import serving_http
from mcp import Client
from processes import INITIALIZE, mcp_client, vfs_mcp_http

from vfs_mcp.transports.http import check_bind, load_token

pytestmark = pytest.mark.anyio
TOKEN = "s3cr3t-token-for-tests"


def client_for(url: str, token: str | None = None, mode: str = "auto") -> AbstractAsyncContextManager[Client]:
    return mcp_client(url, token, mode)


async def post_initialize(url: str, headers: dict[str, str]) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": INITIALIZE,
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})


async def test_without_a_token_requests_are_refused_with_401(tmp_path: Path) -> None:
    with serving_http(tmp_path, token=TOKEN) as url:
        missing = await post_initialize(url, {})
        wrong = await post_initialize(url, {"Authorization": "Bearer nope"})
    for response in (missing, wrong):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert TOKEN not in response.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_right_token_gets_tools(tmp_path: Path, mode: str) -> None:
    (tmp_path / "a.txt").write_text("over http")
    with serving_http(tmp_path, token=TOKEN) as url:
        async with client_for(url, TOKEN, mode) as client:
            read = await client.call_tool("read_file", {"path": "a.txt"})
    assert read.content[0].text == "over http"


async def test_a_forbidden_origin_is_refused(tmp_path: Path) -> None:
    with serving_http(tmp_path) as url:
        evil = await post_initialize(url, {"Origin": "http://evil.example"})
        local = await post_initialize(url, {"Origin": "http://localhost:3000"})
    assert evil.status_code == 403
    assert local.status_code == 200


async def test_two_clients_at_once(tmp_path: Path) -> None:
    with serving_http(tmp_path) as url:

        async def worker(name: str) -> None:
            async with client_for(url) as client:
                for i in range(10):
                    await client.call_tool("write_file", {"path": f"{name}-{i}.txt", "content": name * 100})
                    read = await client.call_tool("read_file", {"path": f"{name}-{i}.txt"})
                    assert read.content[0].text == name * 100

        async with anyio.create_task_group() as group:
            group.start_soon(worker, "a")
            group.start_soon(worker, "b")
    assert len(list(tmp_path.glob("*.txt"))) == 20


async def test_stateless_mode_serves_calls_without_a_session(tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("stateless")
    with serving_http(tmp_path, stateless=True) as url:
        async with client_for(url) as client:
            first = await client.call_tool("read_file", {"path": "s.txt"})
        async with client_for(url) as client:
            second = await client.call_tool("read_file", {"path": "s.txt"})
    assert first.content[0].text == second.content[0].text == "stateless"


def test_a_non_loopback_bind_without_a_token_is_refused() -> None:
    with pytest.raises(ValueError, match="bearer token"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", TOKEN)
    check_bind("127.0.0.1", None)
    check_bind("::1", None)


def test_the_token_comes_from_a_file_or_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    assert load_token(str(token_file)) == TOKEN
    monkeypatch.setenv("VFS_MCP_TOKEN", "from-env")
    assert load_token(None) == "from-env"
    token_file.write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_token(str(token_file))


async def test_the_command_line_serves_http_with_a_token(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("via the cli")
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with vfs_mcp_http(str(tmp_path), {}, "--auth-token-file", str(token_file)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        assert (await post_initialize(url, {})).status_code == 401
        async with client_for(url, TOKEN) as client:
            read = await client.call_tool("read_file", {"path": "a.txt"})
        assert read.content[0].text == "via the cli"


def test_the_command_line_refuses_a_public_bind_without_a_token(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if k != "VFS_MCP_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "vfs_mcp", str(tmp_path), "--transport", "http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2
    assert "bearer token" in done.stderr
