"""Injected faults, through the public harness only (no conftest fixtures, no internals).

Every fault kind on every store the harness serves: memory, a local folder, S3 (moto).
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from itertools import count
from pathlib import Path
from typing import Any

import anyio
import pytest

from vfs_mcp.testing import Fault, Files, VfsClient, error_of, faults, local_server, memory_server, moto_s3, s3_server

pytestmark = pytest.mark.anyio

STORES = ["memory", "local", "s3"]
_buckets = count()


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_s3() as url:
        yield url


@pytest.fixture(params=STORES)
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A function like ``memory_server`` for the store the test runs on."""
    store = request.param

    def server(files: Files, faults: Sequence[Fault], **options: Any) -> AbstractAsyncContextManager[VfsClient]:
        if store == "memory":
            return memory_server(files, faults=faults, **options)
        if store == "local":
            return local_server(files, folder=tmp_path / "work", faults=faults, **options)
        url = request.getfixturevalue("endpoint")
        return s3_server(files, bucket=f"faults-{next(_buckets)}", endpoint_url=url, faults=faults, **options)

    return server


async def call(client: VfsClient, tool: str, **arguments: Any) -> str | None:
    """The call's error code, None when it succeeded."""
    result = await client.call_tool(tool, arguments)
    error = error_of(result)
    return str(error["code"]) if error else None


async def test_a_full_disk_fails_the_write_with_its_reason_and_changes_nothing(serve: Any) -> None:
    files = {"data/a.csv": "x,y\n", "notes.md": "keep\n"}
    async with serve(files, [Fault.on("write", "data/*.csv", errno.ENOSPC)]) as client:
        result = await client.call_tool("write_file", {"path": "data/a.csv", "content": "1,2\n"})
        assert result.is_error and "no space left" in result.content[0].text
        assert await call(client, "write_file", path="data/a.csv", content="1,2\n", append=True) == "INTERNAL"
        assert await call(client, "edit_file", path="data/a.csv", edits=[{"oldText": "x", "newText": "z"}]) == (
            "INTERNAL"
        )
        assert await call(client, "write_file", path="notes.md", content="other files are written\n") is None
        assert client.fs.snapshot() == {**files, "notes.md": "other files are written\n"}


async def test_a_fault_with_times_fires_that_often_then_the_store_works_again(serve: Any) -> None:
    async with serve({}, [Fault.on("write", "out.txt", errno.ENOSPC, times=1)]) as client:
        assert await call(client, "write_file", path="out.txt", content="one") == "INTERNAL"
        assert await call(client, "write_file", path="out.txt", content="two") is None
        assert client.fs.snapshot() == {"out.txt": "two"}


async def test_a_read_fault_after_two_calls_fires_on_the_third(serve: Any) -> None:
    files = {"src/a.py": "a\n", "src/b.py": "b\n", "docs/c.md": "c\n"}
    async with serve(files, [Fault.on("read", "src/**", errno.EACCES, after=2)]) as client:
        codes = [await call(client, "read_file", path=p) for p in ("src/a.py", "docs/c.md", "src/b.py", "src/a.py")]
    assert codes == [None, None, None, "ACCESS_DENIED"]  # docs/c.md is not under src/, so not counted


async def test_list_stat_delete_and_move_faults_reach_their_tools(serve: Any) -> None:
    files = {"a.txt": "a\n", "dir/b.txt": "b\n"}
    faults = [
        Fault.on("list", "dir", errno.EACCES),
        Fault.on("stat", "a.txt", errno.EACCES, after=1),
        Fault.on("delete", "dir/b.txt", errno.EPERM),
        Fault.on("move", "dir/**", errno.EROFS),
    ]
    async with serve(files, faults) as client:
        assert await call(client, "list_directory", path="dir") == "ACCESS_DENIED"
        assert await call(client, "delete_path", path="dir/b.txt") == "ACCESS_DENIED"
        moved = await call(client, "move_file", source="dir/b.txt", destination="dir/c.txt")
        assert moved in ("READ_ONLY", "ACCESS_DENIED")
        assert await call(client, "get_file_info", path="a.txt") is None
        assert await call(client, "get_file_info", path="a.txt") == "ACCESS_DENIED"
        after = client.fs.snapshot()
    assert after["a.txt"] == "a\n"
    # A store that renames in one step refuses the move; one that copies and deletes meets the
    # delete fault instead and takes its copy back: either way nothing moved.
    assert after == files


async def test_a_file_changed_after_every_read_fails_an_edit_as_changed_since_read(serve: Any) -> None:
    async with serve({"notes.md": "one\ntwo\n"}, [Fault.conflict("notes.md")]) as client:
        code = await call(client, "edit_file", path="notes.md", edits=[{"oldText": "one", "newText": "1"}])
        assert code == "CONFLICT"
        after = client.fs.read_text("notes.md")
    assert after.startswith("one\ntwo\n") and after.strip("\n") == "one\ntwo"  # only the other writer's newlines


async def test_a_single_conflict_is_absorbed_by_the_edit_retry(serve: Any) -> None:
    async with serve({"notes.md": "one\ntwo\n"}, [Fault.conflict("notes.md", content="one\nTWO\n", times=1)]) as c:
        assert await call(c, "edit_file", path="notes.md", edits=[{"oldText": "one", "newText": "1"}]) is None
        assert c.fs.read_text("notes.md") == "1\nTWO\n"  # the edit redone on the other writer's version


async def test_a_conflict_fails_a_write_pinned_to_the_hash_read(serve: Any) -> None:
    async with serve({"notes.md": "v1\n"}, [Fault.conflict("notes.md", times=1)]) as client:
        read = await client.call_tool("read_file", {"path": "notes.md"})
        sha = (read.structured_content or {}).get("sha256") or (read.meta or {})["vfs-mcp/result"]["sha256"]
        assert await call(client, "write_file", path="notes.md", content="v2\n", expected_hash=sha) == "CONFLICT"
        assert client.fs.read_text("notes.md") == "v1\n\n"


async def test_a_delay_holds_the_call_back_without_changing_its_answer(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(faults.time, "sleep", slept.append)  # what the store call waits, not a clock
    async with serve({"a.txt": "a"}, [Fault.delay("list", "**", seconds=0.3)]) as client:
        assert await call(client, "list_directory", path=".") is None
    assert slept and set(slept) == {0.3}


async def test_a_pause_holds_the_call_at_its_step_until_the_test_resumes_it(serve: Any) -> None:
    reached, resume = threading.Event(), threading.Event()
    answers: list[str | None] = []
    pause = Fault.pause("write", "b.txt", reached, resume, times=1)
    async with serve({"a.txt": "a"}, [pause]) as client, anyio.create_task_group() as group:

        async def write() -> None:
            answers.append(await call(client, "write_file", path="b.txt", content="b"))

        group.start_soon(write)
        await anyio.to_thread.run_sync(reached.wait, 60)
        held = (list(answers), client.fs.exists("b.txt"))
        assert await call(client, "read_file", path="a.txt") is None  # another call meanwhile
        resume.set()
    assert reached.is_set() and held == ([], False)
    assert answers == [None] and client.fs.read_text("b.txt") == "b"


async def flaky_run(serve: Any, seed: int) -> list[str | None]:
    files = {f"f{i}.txt": str(i) for i in range(12)}
    async with serve(files, [Fault.flaky("read", "**", rate=0.5, seed=seed)]) as client:
        return [await call(client, "read_file", path=f"f{i % 12}.txt") for i in range(24)]


async def test_a_seeded_flaky_store_fails_the_same_calls_every_run(serve: Any) -> None:
    first = await flaky_run(serve, seed=7)
    assert await flaky_run(serve, seed=7) == first
    assert None in first and "INTERNAL" in first  # EIO: some calls pass, some fail
    assert await flaky_run(serve, seed=8) != first


async def test_a_fault_on_the_second_file_of_a_patch_leaves_every_file_as_it_was(serve: Any) -> None:
    files = {"a.txt": "a1\n", "b.txt": "b1\n"}
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+a2\n"
        "*** Update File: b.txt\n@@\n-b1\n+b2\n*** Add File: c.txt\n+c\n*** End Patch\n"
    )
    async with serve(files, [Fault.on("write", "b.txt", errno.ENOSPC)]) as client:
        assert await call(client, "apply_patch", patch=patch) == "INTERNAL"
        assert client.fs.snapshot() == files


async def test_faults_leave_the_jail_whole(serve: Any) -> None:
    async with serve({"a.txt": "a"}, [Fault.on("stat", "**", errno.ENOENT), Fault.delay("read", "**", 0.0)]) as c:
        assert await call(c, "read_file", path="../../etc/passwd") in ("ACCESS_DENIED", "INVALID_ARGUMENT")
        assert await call(c, "read_file", path="a.txt") == "NOT_FOUND"


async def test_a_fault_names_a_known_operation_and_a_valid_glob() -> None:
    with pytest.raises(ValueError, match="unknown operation 'open'"):
        Fault.on("open", "**", errno.EIO)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probability"):
        Fault.flaky("read", "**", rate=2)


async def test_a_search_meets_read_faults_and_names_the_files_it_could_not_read(serve: Any) -> None:
    files = {"src/a.py": "needle\n", "src/b.py": "needle\n"}
    async with serve(files, [Fault.on("read", "src/b.py", errno.EACCES)]) as client:
        result = await client.call_tool("grep_files", {"path": ".", "pattern": "needle"})
    assert not result.is_error
    text = result.content[0].text
    assert "src/a.py:1:1: needle" in text and "src/b.py (ACCESS_DENIED)" in text
