"""Review before apply, decided by a person: what an agent left pending on a mount under review
is listed with its diffs and change ids, applied all or nothing (refused whole, naming the file,
where the store changed behind the agent's back), in part by path or change id, or discarded
leaving nothing behind in the state store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fsspec
import pytest
from conftest import Sandbox, make_sandbox
from mcp import Client
from results import code, ok, text_of

from vfs_mcp import build_server
from vfs_mcp.errors import Conflict, NotFound
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.review import Review
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

SEED = {"a.txt": "alpha\n", "b.txt": "beta\n", "src/app.py": "print('hi')\n"}


def store_files(box: Sandbox) -> dict[str, bytes]:
    """The files the store holds, read around the jail."""
    return {rel: data if isinstance(data, bytes) else data.encode() for rel, data in box.snapshot(text=False).items()}


@pytest.fixture(params=["memory", "local", "s3"])
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    made = make_sandbox(request.param, tmp_path, request)
    made.seed(SEED)
    return made


def reviewed(box: Sandbox, tmp_path: Path, **settings: Any) -> Any:
    return build_server([box.mount], Settings(review=True, state=str(tmp_path / "state"), **settings))


async def work(server: Any, *calls: tuple[str, dict[str, Any]]) -> None:
    async with Client(server) as client:
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            assert not result.is_error, f"{tool} {args}: {text_of(result)}"


EDITS = (
    ("edit_file", {"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}),
    ("write_file", {"path": "b.txt", "content": "BETA\n"}),
    ("write_file", {"path": "new/notes.md", "content": "todo\n", "create_dirs": True}),
    ("move_file", {"source": "src", "destination": "lib"}),
)


async def test_a_file_changed_behind_the_agents_back_makes_apply_refuse_whole_naming_it(
    box: Sandbox, tmp_path: Path
) -> None:
    server = reviewed(box, tmp_path)
    await work(server, *EDITS)
    box.put("a.txt", "someone else's\n")
    before = store_files(box)

    with pytest.raises(Conflict, match=rf"{box.path('a.txt')} changed since the agent read it.*nothing was applied"):
        Review(server.vfs).apply()

    assert store_files(box) == before
    assert [item.path for item in Review(server.vfs).pending()][:2] == [box.path("a.txt"), box.path("b.txt")]


async def test_apply_makes_the_store_show_what_the_agent_saw_in_one_change_undo_takes_back(
    box: Sandbox, tmp_path: Path
) -> None:
    server = reviewed(box, tmp_path)
    await work(server, *EDITS)

    applied = Review(server.vfs).apply()

    assert store_files(box) == {
        "a.txt": b"ALPHA\n",
        "b.txt": b"BETA\n",
        "new/notes.md": b"todo\n",
        "lib/app.py": b"print('hi')\n",
    }
    assert Review(server.vfs).pending() == []
    assert applied.change_id is not None
    # A server of the mount itself (not under review) takes the apply back by its id.
    await work(
        build_server([box.mount], Settings(state=str(tmp_path / "state"))), ("undo", {"change_id": applied.change_id})
    )
    assert store_files(box) == {rel: data.encode() for rel, data in SEED.items()}


async def test_a_path_or_a_change_id_applies_that_part_and_leaves_the_rest_pending(
    box: Sandbox, tmp_path: Path
) -> None:
    server = reviewed(box, tmp_path)
    await work(server, *EDITS)
    review = Review(server.vfs)
    by_path = {item.path: item for item in review.pending()}

    review.apply("b.txt")
    review.apply(by_path[box.path("new/notes.md")].changes[0])

    assert store_files(box)["b.txt"] == b"BETA\n" and store_files(box)["new/notes.md"] == b"todo\n"
    assert store_files(box)["a.txt"] == b"alpha\n"
    assert [item.path for item in review.pending()] == [box.path("a.txt"), box.path("lib")]


async def test_a_move_is_applied_with_its_source_whichever_end_is_named(box: Sandbox, tmp_path: Path) -> None:
    server = reviewed(box, tmp_path)
    await work(server, ("move_file", {"source": "src/app.py", "destination": "app.py"}))

    Review(server.vfs).apply("app.py")

    assert "src/app.py" not in store_files(box)
    assert store_files(box)["app.py"] == b"print('hi')\n"


async def test_something_that_picks_nothing_is_not_found_and_applies_nothing(box: Sandbox, tmp_path: Path) -> None:
    server = reviewed(box, tmp_path)
    await work(server, *EDITS)

    with pytest.raises(NotFound, match=r"nothing pending matches c\.txt"):
        Review(server.vfs).apply("b.txt", "c.txt")

    assert store_files(box)["b.txt"] == b"beta\n"


def hint(path: Path) -> bool:
    return path.parent.name == "instances" or (path.parent.name == "timeline" and path.name in ("head", "tail"))


async def test_discard_leaves_nothing_behind_in_the_state_store(box: Sandbox, tmp_path: Path) -> None:
    server = reviewed(box, tmp_path)
    state = tmp_path / "state"
    # (the timeline's two hints hold a number each: where its entries start and end)
    before = sorted(p.relative_to(state) for p in state.rglob("*") if p.is_file() and not hint(p))
    await work(server, *EDITS, ("undo", {}))
    assert any((state / "review").iterdir())

    Review(server.vfs).discard()

    after = sorted(p.relative_to(state) for p in state.rglob("*") if p.is_file() and not hint(p))
    assert after == before
    assert store_files(box) == {rel: data.encode() for rel, data in SEED.items()}
    async with Client(server) as client:
        assert text_of(await client.call_tool("read_file", {"path": "a.txt"})).startswith("alpha")


async def test_a_pending_layer_outlives_its_server_and_shows_to_the_next(box: Sandbox, tmp_path: Path) -> None:
    await work(reviewed(box, tmp_path), *EDITS)

    async with Client(reviewed(box, tmp_path)) as client:
        assert text_of(await client.call_tool("read_file", {"path": "b.txt"})).startswith("BETA")
        listed = text_of(await client.call_tool("list_directory", {"path": "."}))
    assert "lib" in listed and "src" not in listed
    assert store_files(box)["b.txt"] == b"beta\n"


async def test_the_model_gets_one_tool_more_that_lists_what_is_pending_and_applies_only_if_allowed(
    box: Sandbox, tmp_path: Path
) -> None:
    plain = build_server([box.mount], Settings())
    server = reviewed(box, tmp_path)
    async with Client(plain) as one, Client(server) as other:
        names = {tool.name for tool in (await one.list_tools()).tools}
        more = {tool.name for tool in (await other.list_tools()).tools}
        assert more - names == {"review_ready"} and names <= more
        await other.call_tool("write_file", {"path": "b.txt", "content": "BETA\n"})
        ready = text_of(await other.call_tool("review_ready", {}))
        assert f"modified {box.path('b.txt')}" in ready and "vfs-mcp review --apply" in ready
        refused = await other.call_tool("review_ready", {"apply": True})
        assert code(refused) == "ACCESS_DENIED"
    assert store_files(box)["b.txt"] == b"beta\n"

    async with Client(reviewed(box, tmp_path, agent_may_apply=True)) as client:
        applied = await client.call_tool("review_ready", {"apply": True})
    assert not applied.is_error and store_files(box)["b.txt"] == b"BETA\n"


async def test_the_pending_resource_shows_each_files_diff_and_change_ids(box: Sandbox, tmp_path: Path) -> None:
    server = reviewed(box, tmp_path)
    await work(server, EDITS[0])
    async with Client(server) as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        text = (await client.read_resource("vfs://pending")).contents[0].text  # type: ignore[union-attr]

    (change,) = Review(server.vfs).pending()[0].changes
    assert "vfs://pending" in listed
    assert f"modified {box.path('a.txt')}  [changes {change}]\n" in text and "-alpha\n+ALPHA\n" in text


async def test_a_server_without_review_mounts_offers_neither_the_tool_nor_the_resource(box: Sandbox) -> None:
    async with Client(build_server([box.mount], Settings())) as client:
        assert "review_ready" not in {tool.name for tool in (await client.list_tools()).tools}
        assert "vfs://pending" not in {str(r.uri) for r in (await client.list_resources()).resources}


def test_an_undone_change_is_not_listed_as_one_of_a_files_changes(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    import anyio

    box = make_sandbox("memory", tmp_path, request)
    box.seed(SEED)
    server = reviewed(box, tmp_path)

    async def run() -> None:
        async with Client(server) as client:
            await client.call_tool("write_file", {"path": "a.txt", "content": "one\n"})
            await client.call_tool("write_file", {"path": "a.txt", "content": "two\n"})
            await client.call_tool("undo", {})

    anyio.run(run)
    (item,) = Review(server.vfs).pending()
    assert len(item.changes) == 1 and "+one" in item.diff


async def test_the_mounts_under_review_apply_in_one_change_or_none_does(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "a.txt").write_text("alpha\n")
    server = build_server(
        open_mounts([MountSpec(str(one)), MountSpec(str(two))]), Settings(review=True, state=str(tmp_path / "state"))
    )
    await work(
        server,
        ("write_file", {"path": str(one / "a.txt"), "content": "one\n"}),
        ("write_file", {"path": str(two / "a.txt"), "content": "two\n"}),
    )
    (two / "a.txt").write_text("someone else's\n")

    with pytest.raises(Conflict, match=str(two / "a.txt")):
        Review(server.vfs).apply()
    assert (one / "a.txt").read_text() == "alpha\n"

    (two / "a.txt").write_text("alpha\n")
    applied = Review(server.vfs).apply()
    assert (one / "a.txt").read_text() == "one\n" and (two / "a.txt").read_text() == "two\n"
    assert applied.change_id is not None and len(applied.paths) == 2


async def ids_of(client: Client, *calls: tuple[str, dict[str, Any]]) -> list[str]:
    """Make each call; the change id each reply names."""
    return [str(ok(await client.call_tool(tool, args))["change_id"]) for tool, args in calls]


def view_files(server: Any) -> dict[str, bytes]:
    """The files a server's mount under review shows (its pending layer applied)."""
    backend = server.vfs.mounts[0].backend
    root = backend.root.rstrip("/")
    found = backend.fs.find(root, detail=True)
    return {
        str(path)[len(root) :].strip("/"): bytes(backend.fs.cat_file(path))
        for path, info in found.items()
        if info["type"] == "file"
    }


async def test_undo_by_id_and_a_restore_point_take_back_pending_changes_and_leave_the_store_alone(
    box: Sandbox, tmp_path: Path
) -> None:
    server = reviewed(box, tmp_path)
    seed = {rel: data.encode() for rel, data in SEED.items()}
    async with Client(server) as client:
        first, second, *_ = await ids_of(client, *EDITS)

        ok(await client.call_tool("undo", {"change_id": first}))  # not the newest: that one alone
        assert view_files(server) == {
            "a.txt": b"alpha\n",
            "b.txt": b"BETA\n",
            "new/notes.md": b"todo\n",
            "lib/app.py": b"print('hi')\n",
        }
        assert [item.path for item in Review(server.vfs).pending()] == [
            box.path(p) for p in ("b.txt", "lib", "new/notes.md")
        ]

        undone = ok(await client.call_tool("undo", {"change_id": second, "and_after": True}))
        # Back to the point before the second change: the undo of the first came later, so it
        # is taken back too (an undo is a change of the timeline): the first edit is there again.

    assert len(undone["undone"]) == 4 and undone["undone"][-1] == second  # newest first
    assert view_files(server) == {**seed, "a.txt": b"ALPHA\n"}
    assert [item.path for item in Review(server.vfs).pending()] == [box.path("a.txt")]
    assert store_files(box) == seed


async def test_a_restore_point_on_a_pending_layer_takes_back_all_or_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha\n")
    state = str(tmp_path / "state")
    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(review=True, state=state))
    async with Client(server) as client:
        first, _ = await ids_of(
            client,
            ("write_file", {"path": "a.txt", "content": "one\n"}),
            ("write_file", {"path": "b.txt", "content": "two\n"}),
        )
        # A program writes b.txt through the vfs protocol on the same pending layer: no change
        # of the log made it, so no undo takes it back, and b.txt is not as the agent left it.
        fs = fsspec.filesystem("vfs", roots=[str(folder)], review=True, state=state, skip_instance_cache=True)
        fs.pipe_file(str(folder / "b.txt"), b"someone else's\n")

        refused = await client.call_tool("undo", {"change_id": first, "and_after": True})

    assert code(refused) == "CONFLICT" and str(folder / "b.txt") in text_of(refused)
    assert view_files(server) == {"a.txt": b"one\n", "b.txt": b"someone else's\n"}
    assert (folder / "a.txt").read_text() == "alpha\n" and not (folder / "b.txt").exists()
