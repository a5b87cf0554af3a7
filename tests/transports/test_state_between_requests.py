"""What lasts between calls when the protocol has no session: over HTTP the SDK's default
``Client`` speaks 2026-07-28, where each request stands alone, so state a client needs later
comes back to it as a value it passes again (a change id, a buffer handle); a tool that would
keep state nowhere refuses instead of reporting a change it will not keep. Each step below is a
new connection, as a client of that era makes one. Over stdio and in the 2025 era (one session)
the same calls work without the values."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from processes import stdio_params
from results import assert_error, changed, ok

from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.transports.http import http_app, serving_in_thread

pytestmark = pytest.mark.anyio


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "era"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("hello\n")
    (root / "sub" / "inner.txt").write_text("inside\n")
    return root


@asynccontextmanager
async def http(folder: Path) -> AsyncIterator[str]:
    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(profiles=("default", "ide")))
    with serving_in_thread(http_app(server)) as url:
        yield url


async def call(url: str, tool: str, arguments: dict[str, Any], mode: str = "auto") -> Any:
    """One call on a connection of its own."""
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        assert (client.protocol_version in MODERN_PROTOCOL_VERSIONS) is (mode == "auto")
        return await client.call_tool(tool, arguments)


async def test_an_edit_is_undone_by_its_change_id_from_another_request_and_a_bare_undo_asks_for_the_id(
    folder: Path,
) -> None:
    async with http(folder) as url:
        edited = await call(url, "edit_file", {"path": "a.txt", "edits": [{"oldText": "hello", "newText": "bye"}]})
        bare = await call(url, "undo", {})
        change_id = changed(edited) and ok(edited)["change_id"]
        undone = await call(url, "undo", {"change_id": change_id})
        again = await call(url, "undo", {"change_id": change_id})
    assert "change_id" in assert_error(bare, "INVALID_ARGUMENT")
    assert ok(undone)["undid"] == change_id and (folder / "a.txt").read_text() == "hello\n"
    assert ok(undone)["change_id"] not in (None, change_id)
    assert "already" in assert_error(again, "NOT_FOUND")


async def test_change_directory_refuses_without_a_session_instead_of_a_move_it_would_not_keep(folder: Path) -> None:
    async with http(folder) as url:
        moved = await call(url, "change_directory", {"path": "sub"})
        read = await call(url, "read_file", {"path": "sub/inner.txt"})
    assert "relative paths start at" in assert_error(moved, "INVALID_ARGUMENT")
    assert read.content[0].text == "inside\n"


async def test_a_session_of_the_2025_era_keeps_its_directory_and_undoes_its_newest_change(folder: Path) -> None:
    async with http(folder) as url, Client(url, mode="legacy") as client:
        ok(await client.call_tool("change_directory", {"path": "sub"}))
        read = await client.call_tool("read_file", {"path": "inner.txt"})
        changed(await client.call_tool("write_file", {"path": "inner.txt", "content": "new\n"}))
        undone = await client.call_tool("undo", {})
    assert read.content[0].text == "inside\n"
    assert ok(undone)["tool"] == "write_file" and (folder / "sub" / "inner.txt").read_text() == "inside\n"


async def test_an_ide_buffer_is_found_by_its_handle_from_any_request(folder: Path) -> None:
    uri = (folder / "a.txt").as_uri()
    async with http(folder) as url:
        opened = ok(await call(url, "file_open", {"uri": uri}))
        without = await call(url, "file_close", {"uri": uri})
        (folder / "a.txt").write_text("changed behind the buffer\n")
        read = ok(await call(url, "file_read", {"uri": uri, "handle": opened["handle"]}))
        refused = await call(url, "file_save", {"uri": uri, "content": "mine\n", "handle": opened["handle"]})
        closed = ok(await call(url, "file_close", {"uri": uri, "handle": opened["handle"], "save_if_modified": False}))
        gone = await call(url, "file_read", {"uri": uri, "handle": opened["handle"]})
    assert ok(without)["was_open"] is False  # no session: without the handle nothing is open
    assert read["content"] == "hello\n" and read["externally_modified"] is True
    assert "changed on disk since it was opened" in assert_error(refused, "CONFLICT")
    assert closed["was_open"] is True and closed["was_modified"] is True
    assert "file_open the file again" in assert_error(gone, "NOT_FOUND")
    assert (folder / "a.txt").read_text() == "changed behind the buffer\n"


async def test_over_stdio_undo_takes_back_the_newest_change_and_a_new_server_undoes_an_older_one_by_id(
    folder: Path,
) -> None:
    async with Client(stdio_params(str(folder))) as client:
        first = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "one\n"}))
        changed(await client.call_tool("write_file", {"path": "a.txt", "content": "two\n"}))
        ok(await client.call_tool("undo", {}))
        assert (folder / "a.txt").read_text() == "one\n"
    async with Client(stdio_params(str(folder))) as client:  # another process: the log outlives it
        undone = await client.call_tool("undo", {"change_id": first["change_id"]})
    assert ok(undone)["tool"] == "write_file" and (folder / "a.txt").read_text() == "hello\n"
