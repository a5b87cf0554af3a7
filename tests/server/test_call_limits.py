"""Long calls: progress, cancellation, per-call timeouts and reply size caps."""

from __future__ import annotations

import re
import threading
from typing import Any

import anyio
import pytest
from conftest import Sandbox

from vfs_mcp.ops.search import grep
from vfs_mcp.profiles.results import error_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def memory(request: pytest.FixtureRequest, tmp_path: Any) -> Sandbox:
    from conftest import make_sandbox

    return make_sandbox("memory", tmp_path, request)


async def test_a_slow_call_times_out_with_a_clear_error(memory: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    memory.put("slow.txt", "x")
    reading, finish, finished = threading.Event(), threading.Event(), threading.Event()
    real = memory.mount.fs.cat_file

    def held(path: str, *args: Any, **kwargs: Any) -> bytes:  # a read that ends when the test says
        reading.set()
        finish.wait(60)
        finished.set()
        return bytes(real(path, *args, **kwargs))

    monkeypatch.setattr(memory.mount.fs, "cat_file", held)
    async with memory.client(call_timeout=0.3) as client:
        result = await client.call_tool("read_file", {"path": memory.path("slow.txt")})
        answered_before_the_read_ended = reading.is_set() and not finished.is_set()
        finish.set()
    assert answered_before_the_read_ended, "the call waited for its read instead of timing out"
    assert error_of(result)["code"] == "INTERNAL"
    assert "timed out" in result.content[0].text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_long_searches_report_progress(memory: Sandbox, mode: str) -> None:
    for i in range(40):
        memory.put(f"f{i:02}.txt", "needle\n")
    updates: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, total))

    async with memory.client(mode=mode) as client:
        await client.call_tool(
            "grep_files", {"path": memory.path(), "pattern": "needle"}, progress_callback=on_progress
        )
    assert updates, "no progress notification arrived"
    assert updates[-1] == (40, 40)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_cancelled_search_stops_reading(memory: Sandbox, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    for i in range(200):
        memory.put(f"f{i:03}.txt", "nothing here\n")
    reads: list[str] = []
    reading, go_on, ended = threading.Event(), threading.Event(), threading.Event()
    real = memory.mount.fs.cat_file

    def held(path: str, *args: Any, **kwargs: Any) -> bytes:  # every read waits until the test lets it go on
        reads.append(path)
        reading.set()
        go_on.wait(60)
        return bytes(real(path, *args, **kwargs))

    search = grep.grep_files

    def watched(*args: Any, **kwargs: Any) -> Any:  # says when the search has returned, however it ends
        try:
            return search(*args, **kwargs)
        finally:
            ended.set()

    monkeypatch.setattr(memory.mount.fs, "cat_file", held)
    monkeypatch.setattr(grep, "grep_files", watched)
    async with memory.client(mode=mode) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "grep_files", {"path": memory.path(), "pattern": "needle"})
            await anyio.to_thread.run_sync(reading.wait, 60)
            group.cancel_scope.cancel()  # the client cancels the call while its reads are held
        await client.call_tool("list_allowed_directories", {})  # answered after the cancel was taken in
        seen = len(reads)
        go_on.set()
        assert await anyio.to_thread.run_sync(ended.wait, 60), "the search never ended"
    assert 0 < seen < 200
    assert len(reads) <= seen + 64, "the search went on reading after it was cancelled"


async def test_replies_over_the_character_cap_are_cut_with_a_note(memory: Sandbox) -> None:
    memory.put("big.txt", "y" * 5000)
    async with memory.client(max_response_chars=1000) as client:
        result = await client.call_tool("read_file", {"path": memory.path("big.txt")})
    texts = [block.text for block in result.content]  # type: ignore[union-attr]
    assert texts[0] == "y" * 1000
    size = re.search(r"the reply was (\d+) characters", texts[-1])
    assert size and int(size[1]) > 5000 and "read_file_lines" in texts[-1]
