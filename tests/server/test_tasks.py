"""Long calls as tasks (the ``io.modelcontextprotocol/tasks`` extension, 2026-07-28 schema): a
call still running after ``--task-after`` answers a client that declared the extension with a
task handle; ``tasks/get`` shows its progress, then its result, the same as the call answers
in its request; ``tasks/cancel`` of a recursive copy midway takes back what it copied; the
task's record in the state store answers for it after a restart, and says so when its replica
died. A client without the extension, and every client of the 2025 era, gets today's answer.

Each test sets the threshold to 0 (every long call is a task at once) or far beyond the call,
so nothing depends on a clock; a copy is held midway by a hook on its writes until the test
cancels (an event, never a sleep).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from conftest import BACKENDS, Sandbox, store_params
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult
from results import assert_error, changed, ok

from vfs_mcp import build_server
from vfs_mcp.changes.state import LocalState
from vfs_mcp.changes.state import task_records as kept
from vfs_mcp.cli.options import parser, settings_from
from vfs_mcp.jail.mounts import Config, MountSpec, open_mounts
from vfs_mcp.profiles.results import data_of
from vfs_mcp.server import tasks
from vfs_mcp.settings import Settings
from vfs_mcp.testing.task_client import TERMINAL, TaskHandle, TasksClient, cancel_task, get_task
from vfs_mcp.transports.http import http_app, serving_in_thread

pytestmark = pytest.mark.anyio

POLLS = 100_000
"""Polls of ``tasks/get`` a task may take to end (its work is a few files)."""


async def get(client: Client, task_id: str) -> dict[str, Any]:
    return await get_task(client.session, task_id)


async def cancel(client: Client, task_id: str) -> None:
    await cancel_task(client.session, task_id)


async def settled(client: Client, task_id: str) -> dict[str, Any]:
    """The task once it ended (polled, a bounded number of times)."""
    for _ in range(POLLS):
        state = await get(client, task_id)
        if state["status"] in TERMINAL:
            return state
    raise AssertionError(f"task {task_id} still {state['status']} after {POLLS} polls")


def answered(result: CallToolResult | dict[str, Any]) -> tuple[Any, ...]:
    """What a call answered: its text, its fields, whether it failed (not the server's stamp)."""
    if isinstance(result, dict):
        result = CallToolResult.model_validate(result)
    return result.content, data_of(result), result.is_error


def polling() -> ClientExtension:
    """The extension's client side, polling without a pause (the tests' tasks are a few files)."""
    return TasksClient(poll_every=0)


def tree(root: Path, files: int = 6) -> None:
    for i in range(files):
        (root / "src" / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"d{i % 3}" / f"f{i}.txt").write_text(f"file {i}\n" * (i + 1))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    tree(root)
    return root


def server(folder: Path, **settings: Any) -> Any:
    settings.setdefault("state", str(folder.parent / "state"))
    return build_server(open_mounts([MountSpec(str(folder))]), Settings(**settings))


async def task_of(client: Client, tool: str, arguments: dict[str, Any]) -> TaskHandle:
    handle = await client.session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(handle, TaskHandle), handle
    return handle


async def test_a_long_call_past_the_threshold_is_a_task_whose_result_is_the_answer_it_gives_in_its_request(
    folder: Path,
) -> None:
    async with Client(server(folder, task_after=None)) as plain:
        answer = await plain.call_tool("calculate_directory_size", {"path": str(folder), "format": "json"})
    async with Client(server(folder, task_after=0), extensions=[polling()]) as client:
        handle = await task_of(client, "calculate_directory_size", {"path": str(folder), "format": "json"})
        assert handle.status == "working" and handle.poll_interval_ms == tasks.POLL_MS
        done = await settled(client, handle.task_id)
        assert done["status"] == "completed"
        assert answered(done["result"]) == answered(answer)
        assert ok(CallToolResult.model_validate(done["result"]))["files"] == 6
        # The client of the extension gets it as the call's own result (it polls for it).
        again = await client.call_tool("calculate_directory_size", {"path": str(folder), "format": "json"})
        assert answered(again) == answered(answer)


async def test_tasks_get_shows_the_calls_progress_while_it_works(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reported, release = threading.Event(), threading.Event()
    report = tasks.Run.report

    def held(run: tasks.Run, done: int, total: int | None, message: str) -> bool:
        taken = report(run, done, total, message)
        if not reported.is_set():
            reported.set()
            release.wait(30)
        return taken

    monkeypatch.setattr(tasks.Run, "report", held)
    monkeypatch.setattr(tasks, "SHARED_EVERY", 0.0)
    for i in range(4):  # files of one size: the search reports each group it hashes
        (folder / "same" / f"{i}.txt").parent.mkdir(exist_ok=True)
        (folder / "same" / f"{i}.txt").write_text(f"same size {i}\n")
    async with Client(server(folder, task_after=0), extensions=[polling()]) as client:
        handle = await task_of(client, "find_duplicate_files", {"path": str(folder)})
        assert await anyio.to_thread.run_sync(reported.wait, 30)
        working = await get(client, handle.task_id)
        assert working["status"] == "working"
        assert working["statusMessage"].startswith(str(folder)) and " of " in working["statusMessage"]
        release.set()
        assert (await settled(client, handle.task_id))["status"] == "completed"


class Held:
    """A recursive copy held midway (``copy_held_after``): how many files it began to write."""

    def __init__(self) -> None:
        self.written = 0
        self.reached = threading.Event()

    async def midway(self) -> None:
        """Wait until the copy is held."""
        assert await anyio.to_thread.run_sync(self.reached.wait, 30)


async def test_cancelling_a_walk_that_only_reads_ends_its_task_cancelled(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported, release = threading.Event(), threading.Event()
    report = tasks.Run.report

    def held(run: tasks.Run, done: int, total: int | None, message: str) -> bool:
        reported.set()
        release.wait(30)
        return report(run, done, total, message)

    monkeypatch.setattr(tasks.Run, "report", held)
    for i in range(4):
        (folder / "same" / f"{i}.txt").parent.mkdir(exist_ok=True)
        (folder / "same" / f"{i}.txt").write_text(f"same size {i}\n")
    try:
        async with Client(server(folder, task_after=0), extensions=[polling()]) as client:
            handle = await task_of(client, "find_duplicate_files", {"path": str(folder)})
            assert await anyio.to_thread.run_sync(reported.wait, 30)
            await cancel(client, handle.task_id)
            assert (await get(client, handle.task_id))["status"] == "cancelled"
    finally:
        release.set()


@contextmanager
def copy_held_after(files: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[Held]:
    """A recursive copy's writes: after ``files`` of them, the next waits until its task is
    cancelled (then goes on, to find the call given up)."""
    from vfs_mcp.changes import prepared

    write: Callable[..., str] = prepared._write
    held = Held()

    def counted(*args: Any, **kwargs: Any) -> str:
        if held.written == files:
            run = tasks._running.get()
            held.reached.set()
            assert run is not None and run.cancelled.wait(30)
        held.written += 1
        return write(*args, **kwargs)

    monkeypatch.setattr(prepared, "_write", counted)
    yield held


@pytest.mark.parametrize("sandbox", store_params(*BACKENDS), indirect=True)
async def test_cancelling_a_recursive_copy_midway_leaves_the_destination_as_it_was(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for i in range(6):
        sandbox.put(f"src/d{i % 3}/f{i}.txt", f"file {i}\n")
    served = build_server([sandbox.mount], Settings(task_after=0, state=str(tmp_path / "state")))
    async with Client(served, extensions=[polling()]) as client:
        with copy_held_after(3, monkeypatch) as held:
            arguments = {"source": "src", "destination": "copy/src", "recursive": True}
            handle = await task_of(client, "copy_file", arguments)
            await held.midway()
            assert len(ok(await client.call_tool("search_files", {"path": "copy", "pattern": "*.txt"}))["results"]) == 3
            await cancel(client, handle.task_id)
            state = await get(client, handle.task_id)
        assert state["status"] == "cancelled", state
        assert held.written == 4  # three files copied, the fourth refused: all taken back
        assert_error(await client.call_tool("get_file_info", {"path": "copy"}), "NOT_FOUND")
        assert len(ok(await client.call_tool("search_files", {"path": "src", "pattern": "*.txt"}))["results"]) == 6
        # Nothing was recorded as a change to undo.
        history = ok(await client.call_tool("history", {}))
        assert not [entry for entry in history.get("changes", []) if entry.get("tool") == "copy_file"]


NESTED = {"src/a/f1.txt": "1\n", "src/a/b/": "", "src/a/c/f2.txt": "2\n", "src/e/": "", "src/g.txt": "g\n"}
"""A tree with folders empty and not, nested, on S3 (``key/``: a folder's marker)."""
NESTED_WRITES = 8
"""The copy's writes: its destination's marker, then one for each of the 7 paths below ``src``."""


def bucket_keys(sandbox: Sandbox) -> list[str]:
    """Every key of the sandbox's bucket, markers included (straight from the store)."""
    fs, bucket = sandbox.mount.fs, sandbox.mount.backend.root.split("/")[0]
    return sorted(key.partition("/")[2] for key in fs.find(bucket, withdirs=False, refresh=True))


class HeldWrites:
    """A copy's writes to the store, counted: write ``at`` waits, once it is under way, until the
    task is cancelled; with ``hold_rollback`` the first removal that takes it back waits for
    ``release`` (the worker is then still at work when its call gives up on it)."""

    def __init__(self, fs: Any, at: int, hold_rollback: bool, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at, self.written, self.run = at, 0, None
        self.reached, self.removing, self.release = threading.Event(), threading.Event(), threading.Event()
        pipe, rm_file, rm = fs.pipe_file, fs.rm_file, fs.rm

        def write(*args: Any, **kwargs: Any) -> Any:
            self.written += 1
            if self.written == self.at:
                self.run = tasks._running.get()
                self.reached.set()
                assert self.run is not None and self.run.cancelled.wait(30)
            return pipe(*args, **kwargs)

        def removing(remove: Callable[..., Any]) -> Callable[..., Any]:
            def held(*args: Any, **kwargs: Any) -> Any:
                if hold_rollback and not self.removing.is_set():
                    self.removing.set()
                    assert self.release.wait(30)
                return remove(*args, **kwargs)

            return held

        monkeypatch.setattr(fs, "pipe_file", write)
        monkeypatch.setattr(fs, "rm_file", removing(rm_file))
        monkeypatch.setattr(fs, "rm", removing(rm))


@pytest.mark.parametrize("sandbox", store_params("s3"), indirect=True)
@pytest.mark.parametrize("given_up", [False, True], ids=["waited-for", "given-up-midway"])
@pytest.mark.parametrize("at", range(1, NESTED_WRITES + 1))
async def test_a_copy_cancelled_at_any_write_leaves_the_buckets_keys_as_they_were(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, at: int, given_up: bool
) -> None:
    """The cancel lands while write ``at`` is under way (it reaches the store; the next finds
    the call given up; after the last, the change's commit does). ``given-up-midway``: the call
    then stops waiting for its worker while it takes the copy back (what the call's time limit
    does), and the task still reads ``working`` until the worker is done."""
    for rel, data in NESTED.items():
        sandbox.mount.fs.pipe_file(f"{sandbox.mount.backend.root}/{rel}", data.encode())
    before = bucket_keys(sandbox)
    monkeypatch.setattr(tasks, "CANCEL_WAIT", 0.0)
    held = HeldWrites(sandbox.mount.fs, at, given_up, monkeypatch)
    served = build_server([sandbox.mount], Settings(task_after=0, state=str(tmp_path / "state")))
    async with Client(served, extensions=[polling()]) as client:
        arguments = {"source": "src", "destination": "copy/src", "recursive": True}
        handle = await task_of(client, "copy_file", arguments)
        assert await anyio.to_thread.run_sync(held.reached.wait, 30)
        await cancel(client, handle.task_id)
        if given_up:
            assert held.run is not None
            held.run.scope.cancel()
            await held.run.done.wait()
            for _ in range(POLLS):
                state = await get(client, handle.task_id)
                if state["status"] != "working" or state.get("statusMessage") == tasks.STOPPING:
                    break
            assert state["status"] == "working", state
            held.release.set()
        state = await settled(client, handle.task_id)
    assert state["status"] == "cancelled", state
    assert held.written == at
    monkeypatch.undo()
    assert bucket_keys(sandbox) == before


async def test_a_copy_that_becomes_a_task_and_ends_is_the_change_it_makes_in_its_request(folder: Path) -> None:
    async with Client(server(folder, task_after=0), extensions=[polling()]) as client:
        arguments = {"source": str(folder / "src"), "destination": str(folder / "copy"), "recursive": True}
        result = await client.call_tool("copy_file", arguments)
        changed(result)
    assert sorted(p.name for p in (folder / "copy").rglob("*.txt")) == [f"f{i}.txt" for i in range(6)]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_without_the_extension_or_in_the_2025_era_the_call_is_answered_in_its_request(
    folder: Path, mode: str
) -> None:
    served = server(folder, task_after=0)
    extensions = [polling()] if mode == "legacy" else []
    async with Client(served, mode=mode, extensions=extensions) as client:  # type: ignore[arg-type]
        handle = await client.session.call_tool(
            "calculate_directory_size", {"path": str(folder), "format": "json"}, allow_claimed=True
        )
        assert isinstance(handle, CallToolResult)
        assert ok(handle)["files"] == 6
    assert not (folder.parent / "state" / "tasks").exists() or not list((folder.parent / "state" / "tasks").iterdir())


async def test_a_call_that_ends_within_the_threshold_is_answered_in_its_request(folder: Path) -> None:
    async with Client(server(folder, task_after=3600), extensions=[polling()]) as client:
        result = await client.session.call_tool("calculate_directory_size", {"path": str(folder)}, allow_claimed=True)
        assert isinstance(result, CallToolResult) and not result.is_error


async def test_the_extension_is_declared_and_its_methods_refuse_an_unknown_task_and_a_client_without_it(
    folder: Path,
) -> None:
    async with Client(server(folder), extensions=[polling()]) as client:
        capabilities = client.session.server_capabilities
        assert capabilities is not None and tasks.IDENTIFIER in (capabilities.extensions or {})
        with pytest.raises(MCPError) as unknown:
            await get(client, "0" * 32)
        assert unknown.value.error.code == -32602
    async with Client(server(folder)) as client:
        with pytest.raises(MCPError) as undeclared:
            await get(client, "0" * 32)
        assert undeclared.value.error.code == -32021


async def test_a_tasks_result_is_found_again_after_a_restart_and_a_task_whose_server_died_reads_as_failed(
    folder: Path,
) -> None:
    async with Client(server(folder, task_after=0), extensions=[polling()]) as client:
        handle = await task_of(client, "calculate_directory_size", {"path": str(folder), "format": "json"})
        first = await settled(client, handle.task_id)
    dead = kept.new_record("0123456789abcdef", "copy_file")  # an instance that no longer runs
    store = LocalState(str(folder.parent / "state"))
    kept.save(store, dead, first=True)
    store.close()
    async with Client(server(folder, task_after=0), extensions=[polling()]) as restarted:
        assert await get(restarted, handle.task_id) == first
        failed = await get(restarted, dead.task_id)
        assert failed["status"] == "failed" and failed["error"]["code"] == -32603
        assert "stopped before it finished" in failed["statusMessage"]


async def test_over_http_a_task_outlives_its_request_and_a_new_connection_polls_it(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = server(folder, task_after=0)
    with serving_in_thread(http_app(served)) as url:
        async with Client(url) as plain:
            answer = await plain.call_tool("calculate_directory_size", {"path": str(folder), "format": "json"})
        async with Client(url, extensions=[polling()]) as client:
            handle = await task_of(client, "calculate_directory_size", {"path": str(folder), "format": "json"})
        async with Client(url, extensions=[polling()]) as other:
            done = await settled(other, handle.task_id)
        assert answered(done["result"]) == answered(answer)
        with copy_held_after(2, monkeypatch) as held:
            async with Client(url, extensions=[polling()]) as client:
                arguments = {"source": str(folder / "src"), "destination": str(folder / "copy"), "recursive": True}
                handle = await task_of(client, "copy_file", arguments)
            await held.midway()
            async with Client(url, extensions=[polling()]) as client:
                await cancel(client, handle.task_id)
                assert (await get(client, handle.task_id))["status"] == "cancelled"
        assert not (folder / "copy").exists()


def test_the_threshold_comes_from_the_option_else_the_config_and_never_turns_tasks_off(tmp_path: Path) -> None:
    assert settings_from(parser().parse_args([]), None).task_after == 2.0
    assert settings_from(parser().parse_args(["--task-after", "0"]), None).task_after == 0.0
    assert settings_from(parser().parse_args(["--task-after", "never"]), None).task_after is None
    config = tmp_path / "vfs.toml"
    config.write_text("task_after = 5\n")
    assert settings_from(parser().parse_args([]), Config.load(config)).task_after == 5.0
    assert settings_from(parser().parse_args(["--task-after", "0.5"]), Config.load(config)).task_after == 0.5
    config.write_text('task_after = "never"\n')
    assert settings_from(parser().parse_args([]), Config.load(config)).task_after is None
    config.write_text("task_after = -1\n")
    with pytest.raises(ValueError, match="task_after"):
        Config.load(config)
    with pytest.raises(SystemExit):
        parser().parse_args(["--task-after", "-1"])
