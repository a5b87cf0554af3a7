"""Links on a local folder under review: read through the store, and judged by the jail where
they lead in the view (the layer asked, ``resolve_links``): a link moved by the agent still
cannot reach a file the deny list hides, a link out of the mount is still refused, and a link
whose target the agent changed leads to the changed file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from results import code, text_of

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "d").mkdir(parents=True)
    (root / "d" / "x.txt").write_text("x in d\n")
    (root / ".env").write_text("SECRET=1\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    os.symlink(".env", root / "notes")
    os.symlink("../outside.txt", root / "out")
    os.symlink("d", root / "l")
    return root


def servers(folder: Path, tmp_path: Path) -> Any:
    settings = Settings(deny=(".env",), review=True, state=str(tmp_path / "state"))
    return build_server([open_mount(MountSpec(str(folder)))], settings)


async def test_a_link_the_agent_moved_still_cannot_reach_a_hidden_file(folder: Path, tmp_path: Path) -> None:
    async with Client(servers(folder, tmp_path)) as client:
        assert code(await client.call_tool("read_file", {"path": "notes"})) == "NOT_FOUND"
        moved = await client.call_tool("move_file", {"source": "notes", "destination": "notes2"})
        assert not moved.is_error, text_of(moved)
        assert code(await client.call_tool("read_file", {"path": "notes2"})) == "NOT_FOUND"
        assert code(await client.call_tool("copy_file", {"source": "notes2", "destination": "c.txt"})) == "NOT_FOUND"
    assert os.readlink(folder / "notes") == ".env" and not (folder / "notes2").exists()


async def test_a_link_out_of_the_mount_is_refused_through_the_layer_too(folder: Path, tmp_path: Path) -> None:
    async with Client(servers(folder, tmp_path)) as client:
        await client.call_tool("write_file", {"path": "d/x.txt", "content": "pending\n"})
        assert code(await client.call_tool("read_file", {"path": "out"})) == "ACCESS_DENIED"
        moved = await client.call_tool("move_file", {"source": "out", "destination": "out2"})
        assert not moved.is_error, text_of(moved)
        assert code(await client.call_tool("read_file", {"path": "out2"})) == "ACCESS_DENIED"
        assert code(await client.call_tool("write_file", {"path": "out2", "content": "x"})) == "ACCESS_DENIED"
    assert (tmp_path / "outside.txt").read_text() == "outside\n"


async def test_a_link_leads_to_what_the_layer_holds_at_its_target(folder: Path, tmp_path: Path) -> None:
    async with Client(servers(folder, tmp_path)) as client:
        await client.call_tool("write_file", {"path": "d/x.txt", "content": "pending\n"})
        assert text_of(await client.call_tool("read_file", {"path": "l/x.txt"})).startswith("pending")
        await client.call_tool("delete_path", {"path": "d", "recursive": True})
        assert code(await client.call_tool("read_file", {"path": "l/x.txt"})) == "NOT_FOUND"
        await client.call_tool("write_file", {"path": "l/y.txt", "content": "through the link\n"})
        assert code(await client.call_tool("read_file", {"path": "d/y.txt"})) == "NOT_FOUND"
    assert (folder / "d" / "x.txt").read_text() == "x in d\n"
