"""Links on a local folder under review: read through the store, and judged by the jail where
they lead in the view (the layer asked, ``resolve_links``): a link moved by the agent still
cannot reach a file the deny list hides, a link out of the mount is still refused, and a link
whose target the agent changed leads to the changed file."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from results import code, text_of

from vfs_mcp import build_server
from vfs_mcp.cli.review import main as review_main
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


@pytest.fixture
def linked_away(folder: Path, tmp_path: Path) -> Path:
    """``d/x.txt`` and ``other.txt`` pending; then, on disk, ``d`` moved aside and a link out put
    in its place (``mv d d.real && ln -s ELSEWHERE d``)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.txt").write_text("not the mount's\n")
    return elsewhere


async def make_pending_then_link_away(folder: Path, tmp_path: Path, elsewhere: Path) -> Any:
    server = servers(folder, tmp_path)
    async with Client(server) as client:
        for path in ("d/x.txt", "other.txt"):
            written = await client.call_tool("write_file", {"path": path, "content": "pending\n"})
            assert not written.is_error, text_of(written)
    os.rename(folder / "d", folder / "d.real")
    os.symlink(elsewhere, folder / "d")
    return server


def review_cli(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = review_main([str(folder), "--state", str(tmp_path / "state"), "--deny", ".env", *argv])
    out = capsys.readouterr()
    return code, out.out + out.err


async def test_a_pending_path_whose_folder_became_a_link_out_is_listed_blocked_and_the_rest_applies(
    folder: Path, tmp_path: Path, linked_away: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await make_pending_then_link_away(folder, tmp_path, linked_away)
    async with Client(server) as client:
        ready = await client.call_tool("review_ready", {})
        assert not ready.is_error, text_of(ready)
        assert f"blocked {folder}/d/x.txt" in text_of(ready) and f"added {folder}/other.txt" in text_of(ready)
        shown = await client.read_resource("vfs://pending")
        assert f"blocked {folder}/d/x.txt" in str(shown) and str(linked_away) not in str(shown)

    code, said = review_cli(folder, tmp_path, capsys)
    assert code == 0 and f"blocked {folder}/d/x.txt" in said and "--discard" in said
    code, said = review_cli(folder, tmp_path, capsys, "--apply", "other.txt")
    assert code == 0 and f"applied 1 path to {folder}" in said
    assert (folder / "other.txt").read_text() == "pending\n"
    code, said = review_cli(folder, tmp_path, capsys, "--apply")
    assert code == 1 and f"{folder}/d/x.txt (resolves outside its root through a symbolic link)" in said
    code, said = review_cli(folder, tmp_path, capsys)
    assert f"blocked {folder}/d/x.txt" in said, "it stays pending"
    assert (linked_away / "x.txt").read_text() == "not the mount's\n" and os.listdir(linked_away) == ["x.txt"]
    assert (folder / "d.real" / "x.txt").read_text() == "x in d\n"


async def test_a_blocked_path_is_discarded_by_its_path_and_nothing_escapes(
    folder: Path, tmp_path: Path, linked_away: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await make_pending_then_link_away(folder, tmp_path, linked_away)
    code, said = review_cli(folder, tmp_path, capsys, "--discard", "d/x.txt")
    assert code == 0 and f"discarded 1 path pending on {folder}" in said and f"{folder}/d/x.txt" in said
    code, said = review_cli(folder, tmp_path, capsys, "--discard")
    assert code == 0 and f"{folder}/other.txt" in said
    code, said = review_cli(folder, tmp_path, capsys)
    assert code == 0 and said.startswith("nothing pending")
    assert os.listdir(linked_away) == ["x.txt"] and not (folder / "other.txt").exists()
    assert os.listdir(tmp_path / "state" / "review") == []


async def test_a_tampered_layer_node_is_dropped_with_a_log_line_and_the_view_still_lists(
    folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Records of the layer in the state store with a node at ``../`` (and one that is no JSON):
    the reviewing server lists its mount, without them."""
    server = servers(folder, tmp_path)
    async with Client(server) as client:
        await client.call_tool("write_file", {"path": "d/x.txt", "content": "pending\n"})
        layer = tmp_path / "state" / "review"
        (meta,) = layer.glob("*.layer")
        epoch = json.loads(meta.read_text())["epoch"]
        records = sorted(layer.glob(f"{meta.stem}.{epoch}.j*"))
        seq = int(records[-1].name.rsplit(".j", 1)[1])
        node = {"k": "file", "b": "0" * 64, "n": 5}
        tampered = [["set", "../evil.txt", node], ["set", "d/../../evil2.txt", node], ["set", "fine.txt", node]]
        (layer / f"{meta.stem}.{epoch}.j{seq + 1:010d}").write_text(json.dumps(tampered))
        (layer / f"{meta.stem}.{epoch}.j{seq + 2:010d}").write_bytes(b"\x00 not json")
        moved = {"k": "moved", "s": "../../etc", "sh": "directory"}
        (layer / f"{meta.stem}.{epoch}.j{seq + 3:010d}").write_text(json.dumps([["set", "etc", moved]]))
        with caplog.at_level(logging.ERROR, logger="vfs_mcp"):
            listed = await client.call_tool("list_directory", {"path": "."})
        assert not listed.is_error, text_of(listed)
        assert "evil" not in text_of(listed) and "etc" not in text_of(listed) and "fine.txt" in text_of(listed)
        shown = await client.call_tool("read_file", {"path": "d/x.txt"})
        assert text_of(shown).startswith("pending")
    assert sum("cannot be taken" in line or "not JSON" in line for line in caplog.messages) == 4


async def test_a_layer_name_that_is_no_layer_of_ours_shows_the_mount_as_the_store_holds_it(
    folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = servers(folder, tmp_path)
    async with Client(server) as client:
        await client.call_tool("write_file", {"path": "d/x.txt", "content": "pending\n"})
        (meta,) = (tmp_path / "state" / "review").glob("*.layer")
        meta.write_text(json.dumps({"url": "x", "epoch": "../../../elsewhere"}))
        with caplog.at_level(logging.ERROR, logger="vfs_mcp"):
            listed = await client.call_tool("list_directory", {"path": "d"})
            shown = await client.call_tool("read_file", {"path": "d/x.txt"})
        assert not listed.is_error and text_of(shown).startswith("x in d"), text_of(listed)
    assert any("not one this version wrote" in line for line in caplog.messages)
