"""Where pending changes live: the state store, shared by every server, process and replica
that uses it (a change one makes shows to the others; a person's discard shows to the server at
its next call), on a local folder or a bucket; one mount of several under review from the
config file; and the ``vfs`` fsspec protocol under review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fsspec
import pytest
from conftest import make_sandbox, tree_hash
from mcp import Client
from results import text_of

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import Config, MountSpec, merge_specs, open_mount, open_mounts
from vfs_mcp.review import Review, open_review
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


def reviewed(folder: Path, state: Path) -> Any:
    return build_server([open_mount(MountSpec(str(folder)))], Settings(review=True, state=str(state)))


async def test_two_servers_on_one_state_store_see_each_others_pending_changes_at_once(
    folder: Path, tmp_path: Path
) -> None:
    one, other = reviewed(folder, tmp_path / "state"), reviewed(folder, tmp_path / "state")
    async with Client(one) as first, Client(other) as second:
        await first.call_tool("write_file", {"path": "a.txt", "content": "from one\n"})
        assert text_of(await second.call_tool("read_file", {"path": "a.txt"})).startswith("from one")
        await second.call_tool("write_file", {"path": "b.txt", "content": "from the other\n"})
        assert "b.txt" in text_of(await first.call_tool("list_directory", {"path": "."}))
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"]


async def test_a_discard_by_the_person_shows_to_the_running_server_at_its_next_call(
    folder: Path, tmp_path: Path
) -> None:
    async with Client(reviewed(folder, tmp_path / "state")) as client:
        await client.call_tool("write_file", {"path": "a.txt", "content": "pending\n"})
        with open_review([str(folder)], state=str(tmp_path / "state")) as review:
            assert [item.status for item in review.pending()] == ["modified"]
            review.discard()
        assert text_of(await client.call_tool("read_file", {"path": "a.txt"})).startswith("alpha")
        await client.call_tool("write_file", {"path": "a.txt", "content": "again\n"})
        with open_review([str(folder)], state=str(tmp_path / "state")) as review:
            (item,) = review.pending()
            assert "+again" in item.diff
            review.apply()
    assert (folder / "a.txt").read_text() == "again\n"


async def test_a_layer_on_a_shared_bucket_leaves_nothing_there_once_discarded(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_sandbox("memory", tmp_path, request)
    box.seed({"a.txt": "alpha\n"})
    (tmp_path / "s3").mkdir()
    bucket = make_sandbox("s3", tmp_path / "s3", request)
    monkeypatch.setenv("AWS_ENDPOINT_URL", request.getfixturevalue("s3_endpoint"))
    state = f"{bucket.mount.url}/state"
    server = build_server([box.mount], Settings(review=True, state=state))
    async with Client(server) as client:
        await client.call_tool("write_file", {"path": "a.txt", "content": "pending\n"})
        await client.call_tool("delete_path", {"path": "a.txt"})
        await client.call_tool("write_file", {"path": "n/b.txt", "content": "new\n", "create_dirs": True})
    held = bucket.snapshot("state/review")
    assert held, "the layer lives in the bucket"
    assert box.snapshot() == {"a.txt": "alpha\n"}

    Review(server.vfs).discard()

    assert bucket.snapshot("state/review") == {}
    assert not any(name.startswith("changes/") for name in bucket.snapshot("state"))


async def test_one_mount_of_two_under_review_from_the_config_file(tmp_path: Path, folder: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    config = tmp_path / "vfs-mcp.toml"
    config.write_text(
        f'state = "{tmp_path / "state"}"\n\n[[mount]]\nroot = "{folder}"\nreview = true\n\n[[mount]]\nroot = "{plain}"\n'
    )
    loaded = Config.load(config)
    server = build_server(open_mounts(merge_specs([], loaded)), Settings(state=loaded.state))
    async with Client(server) as client:
        await client.call_tool("write_file", {"path": str(folder / "a.txt"), "content": "pending\n"})
        await client.call_tool("write_file", {"path": str(plain / "b.txt"), "content": "written\n"})
    assert (folder / "a.txt").read_text() == "alpha\n" and (plain / "b.txt").read_text() == "written\n"
    with open_review(config=config) as review:
        assert [item.path for item in review.pending()] == [str(folder / "a.txt")]


def test_the_vfs_protocol_under_review_keeps_its_writes_pending(folder: Path, tmp_path: Path) -> None:
    before = tree_hash(folder)
    fs = fsspec.filesystem(
        "vfs", roots=[str(folder)], review=True, state=str(tmp_path / "state"), skip_instance_cache=True
    )
    with fs.open(str(folder / "a.txt"), "a") as handle:
        handle.write("beta\n")
    fs.pipe_file(str(folder / "n" / "c.txt"), b"new\n")
    fs.rm_file(str(folder / "a.txt"))
    fs.pipe_file(str(folder / "a.txt"), b"rewritten\n")

    assert fs.cat_file(str(folder / "a.txt")) == b"rewritten\n" and fs.exists(str(folder / "n" / "c.txt"))
    assert tree_hash(folder) == before
    assert sorted(item.status for item in Review(fs.vfs).pending()) == ["added", "modified"]
