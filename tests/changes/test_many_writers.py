"""Many writers, no lost update: two real `vfs-mcp --transport http` servers over one local
folder, and two over one bucket (moto's S3 server), edited, appended to and copied onto at
once. Every write reported applied is in the final file; every other one says CONFLICT or
ALREADY_EXISTS.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Any

import anyio
import fsspec
import pytest
from conftest import Sandbox, make_sandbox
from mcp import Client
from processes import mcp_client, vfs_mcp_http

from vfs_mcp.changes.commit import commit
from vfs_mcp.errors import Stale
from vfs_mcp.ops.text.document import TextFile
from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio
slow = pytest.mark.slow

EDITS = 40
CLIENTS = 8


class Store:
    """One folder or bucket prefix, served by two servers, read directly for the verdict."""

    def __init__(self, root: str, env: dict[str, str], fs: Any, base: str) -> None:
        self.root, self.env, self.fs, self.base = root, env, fs, base

    def put(self, name: str, text: str) -> None:
        self.fs.pipe_file(f"{self.base}/{name}", text.encode())

    def text(self, name: str) -> str:
        self.fs.invalidate_cache()
        return bytes(self.fs.cat_file(f"{self.base}/{name}")).decode()

    def exists(self, name: str) -> bool:
        self.fs.invalidate_cache()
        return bool(self.fs.exists(f"{self.base}/{name}"))


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "local":
        return Store(str(tmp_path), {}, fsspec.filesystem("file"), str(tmp_path))
    endpoint = request.getfixturevalue("s3_endpoint")
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    bucket = f"writers-{uuid.uuid4().hex[:10]}"
    fs = fsspec.filesystem("s3", endpoint_url=endpoint, key="testing", secret="testing", skip_instance_cache=True)
    fs.mkdir(bucket)
    return Store(f"s3://{bucket}/data", env, fs, f"{bucket}/data")


async def run_everywhere(store: Store, calls: list[tuple[str, dict[str, Any]]]) -> list[str | None]:
    """Send ``calls`` at once through CLIENTS clients spread over two servers; each outcome's
    error code (None for a success), in the order of ``calls``."""
    (outcomes,) = await run_rounds(store, [calls])
    return outcomes


async def run_rounds(
    store: Store, rounds: list[list[tuple[str, dict[str, Any]]]], before: Any = None
) -> list[list[str | None]]:
    """``run_everywhere`` for each round in turn over the same two servers (``before(n)`` sets
    the store up for round ``n``); each round's outcomes."""
    results: list[list[str | None]] = []
    with vfs_mcp_http(store.root, store.env) as one_port, vfs_mcp_http(store.root, store.env) as other_port:
        first, second = (f"http://127.0.0.1:{port}/mcp" for port in (one_port, other_port))
        async with contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(mcp_client(first if n % 2 else second)) for n in range(CLIENTS)]
            for number, calls in enumerate(rounds):
                if before is not None:
                    before(number)
                outcomes: list[str | None] = [None] * len(calls)

                async def one(client: Client, index: int, calls: Any = calls, outcomes: Any = outcomes) -> None:
                    name, args = calls[index]
                    error = error_of(await client.call_tool(name, args))
                    outcomes[index] = None if error is None else str(error["code"])

                with anyio.fail_after(300):
                    async with anyio.create_task_group() as group:
                        for index in range(len(calls)):
                            group.start_soon(one, clients[index % CLIENTS], index)
                results.append(outcomes)
    return results


def at_most_a_tenth_conflict(outcomes: list[str | None]) -> None:
    assert set(outcomes) <= {None, "CONFLICT"}, outcomes
    assert outcomes.count("CONFLICT") <= len(outcomes) // 10, outcomes


@slow
async def test_concurrent_edits_of_one_file_through_two_servers_lose_nothing(store: Store) -> None:
    store.put("shared.txt", "".join(f"line {i:02d}\n" for i in range(EDITS)))
    calls = [
        (
            "edit_file",
            {"path": "shared.txt", "edits": [{"oldText": f"line {i:02d}\n", "newText": f"LINE {i:02d} done\n"}]},
        )
        for i in range(EDITS)
    ]
    outcomes = await run_everywhere(store, calls)
    final = store.text("shared.txt")
    applied = [i for i, outcome in enumerate(outcomes) if outcome is None]
    assert [i for i in applied if f"LINE {i:02d} done\n" not in final] == [], "edits reported applied are missing"
    assert [i for i in range(EDITS) if i not in applied and f"line {i:02d}\n" not in final] == []
    at_most_a_tenth_conflict(outcomes)


@slow
async def test_concurrent_appends_through_two_servers_lose_no_line(store: Store) -> None:
    store.put("log.txt", "start\n")
    calls = [("write_file", {"path": "log.txt", "content": f"append {i:02d}\n", "append": True}) for i in range(EDITS)]
    outcomes = await run_everywhere(store, calls)
    lines = store.text("log.txt").splitlines()
    applied = [i for i, outcome in enumerate(outcomes) if outcome is None]
    assert sorted(line for line in lines if line != "start") == [f"append {i:02d}" for i in applied]
    assert lines[0] == "start"
    at_most_a_tenth_conflict(outcomes)


@slow
async def test_eight_copies_onto_one_new_name_through_two_servers_let_exactly_one_win(store: Store) -> None:
    for i in range(8):
        store.put(f"source-{i}.txt", f"from source {i}\n")
    calls = [("copy_file", {"source": f"source-{i}.txt", "destination": "winner.txt"}) for i in range(8)]
    outcomes = await run_everywhere(store, calls)
    winners = [i for i, outcome in enumerate(outcomes) if outcome is None]
    assert len(winners) == 1, outcomes
    assert sorted(o for o in outcomes if o is not None) == ["ALREADY_EXISTS"] * 7
    assert store.text("winner.txt") == f"from source {winners[0]}\n"


# -- one conditional put, seen at the S3 API ------------------------------------------------


def another_writer_first(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, rel: str, text: str) -> list[str]:
    """Make the next conditional put of this mount meet a write another client got in just
    before it (straight to the bucket); returns what each put_if call asked for."""
    backend = sandbox.mount.backend
    real = backend.put_if
    asked: list[str] = []

    def racing(path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        if not asked:
            sandbox.put(rel, text)
        asked.append("create-only" if create_only else f"if-match {if_match}")
        return real(path, data, if_match=if_match, create_only=create_only)

    monkeypatch.setattr(backend, "put_if", racing)
    return asked


async def test_an_edit_that_meets_a_concurrent_write_on_s3_is_redone_on_the_new_version(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_sandbox("s3", tmp_path, request)
    box.put("notes.md", "alpha\nbeta\n")
    asked = another_writer_first(box, monkeypatch, "notes.md", "alpha\nbeta\ngamma\n")
    async with box.client() as client:
        result = await client.call_tool(
            "edit_file", {"path": "notes.md", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}
        )
    assert error_of(result) is None
    assert box.get("notes.md") == b"ALPHA\nbeta\ngamma\n"
    assert len(asked) == 2 and all(a.startswith("if-match ") and a != "if-match None" for a in asked)


async def test_a_pinned_write_that_meets_a_concurrent_write_on_s3_is_a_conflict_and_writes_nothing(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_sandbox("s3", tmp_path, request)
    box.put("notes.md", "v1\n")
    async with box.client() as client:
        read = await client.call_tool("read_file", {"path": "notes.md"})
        pinned = data_of(read)["sha256"]
        another_writer_first(box, monkeypatch, "notes.md", "v2 from elsewhere\n")
        result = await client.call_tool(
            "write_file", {"path": "notes.md", "content": "mine\n", "expected_hash": pinned}
        )
    assert error_of(result)["code"] == "CONFLICT" and "changed since it was read" in result.content[0].text
    assert box.get("notes.md") == b"v2 from elsewhere\n"


async def test_a_create_on_s3_that_meets_a_concurrent_create_is_already_exists(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_sandbox("s3", tmp_path, request)
    box.put("source.txt", "mine\n")
    asked = another_writer_first(box, monkeypatch, "copy.txt", "theirs\n")
    async with box.client() as client:
        result = await client.call_tool("copy_file", {"source": "source.txt", "destination": "copy.txt"})
    assert error_of(result)["code"] == "ALREADY_EXISTS"
    assert asked == ["create-only"] and box.get("copy.txt") == b"theirs\n"


async def test_concurrent_edits_inside_one_server_all_land_on_every_backend(sandbox: Sandbox) -> None:
    sandbox.put("shared.txt", "".join(f"line {i:02d}\n" for i in range(EDITS)))
    outcomes: list[dict[str, Any] | None] = []
    async with sandbox.client() as client:

        async def edit(i: int) -> None:
            edits = [{"oldText": f"line {i:02d}\n", "newText": f"LINE {i:02d} done\n"}]
            outcomes.append(error_of(await client.call_tool("edit_file", {"path": "shared.txt", "edits": edits})))

        async with anyio.create_task_group() as group:
            for i in range(EDITS):
                group.start_soon(edit, i)
    assert outcomes == [None] * EDITS
    assert sandbox.get("shared.txt").decode() == "".join(f"LINE {i:02d} done\n" for i in range(EDITS))


def test_a_file_rewritten_in_place_to_the_same_size_and_time_since_an_edit_read_it_is_a_conflict(
    local_sandbox: Sandbox,
) -> None:
    """Another program's write the version cannot see (same size, its old mtime put back):
    the edit's save compares the bytes and writes nothing."""
    local_sandbox.put("a.txt", "alpha\n")
    vfs = local_sandbox.vfs()
    doc = TextFile.load(vfs, vfs.resolve("a.txt", write=True), "utf-8")
    host = local_sandbox.mount.fs_path("a.txt")
    before = os.stat(host)
    with open(host, "r+b") as file:
        file.write(b"omega\n")
    os.utime(host, ns=(before.st_atime_ns, before.st_mtime_ns))
    ops = doc.saved("ALPHA\n")
    with pytest.raises(Stale):
        commit(vfs, ops, keep=1 << 20)
    assert local_sandbox.get("a.txt") == b"omega\n"


MIXED_LINES = 30
MIXED_ROUNDS = int(os.environ.get("VFS_MIXED_ROUNDS", "20"))


def mixed_calls() -> list[tuple[str, dict[str, Any]]]:
    """One change per line of mixed.txt, each by one of the three edit tools in turn."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(MIXED_LINES):
        old, new = f"line {i:02d}", f"LINE {i:02d}"  # the same size: a version of size and time cannot tell
        if i % 3 == 0:
            calls.append(
                ("edit_file", {"path": "mixed.txt", "edits": [{"oldText": old + "\n", "newText": new + "\n"}]})
            )
        elif i % 3 == 1:
            edit = {"line_number": i + 1, "action": "replace", "content": new, "expected_content": old}
            calls.append(
                (
                    "edit_file_at_line",
                    {"path": "mixed.txt", "line_edits": [edit], "abort_on_verification_failure": True},
                )
            )
        else:
            patch = f"*** Begin Patch\n*** Update File: mixed.txt\n@@\n-{old}\n+{new}\n*** End Patch\n"
            calls.append(("apply_patch", {"patch": patch}))
    return calls


@slow
async def test_mixed_edit_tools_on_distinct_lines_through_two_servers_lose_no_acknowledged_change(store: Store) -> None:
    """edit_file, edit_file_at_line and apply_patch at once, each on its own line of one file,
    through two servers, round after round: every change reported applied is in the file."""
    original = "".join(f"line {i:02d}\n" for i in range(MIXED_LINES))
    finals: list[str] = []

    def reset(number: int) -> None:
        if number:
            finals.append(store.text("mixed.txt"))
        store.put("mixed.txt", original)

    store.put("mixed.txt", original)  # an object-store mount's root must hold something when it starts
    results = await run_rounds(store, [mixed_calls() for _ in range(MIXED_ROUNDS)], before=reset)
    finals.append(store.text("mixed.txt"))
    missing = [
        (number, i)
        for number, (outcomes, final) in enumerate(zip(results, finals, strict=True))
        for i, outcome in enumerate(outcomes)
        if outcome is None and f"LINE {i:02d}\n" not in final
    ]
    applied = sum(outcome is None for outcomes in results for outcome in outcomes)
    print(f"\nmixed edit tools: {len(results)} rounds, {applied} applied, {len(missing)} missing")
    assert missing == [], "changes reported applied are missing"
    for outcomes, final in zip(results, finals, strict=True):
        assert set(outcomes) <= {None, "CONFLICT"}, outcomes
        assert [i for i, o in enumerate(outcomes) if o is not None and f"line {i:02d}\n" not in final] == []
