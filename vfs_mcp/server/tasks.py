"""Long calls as tasks: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663, its
2026-07-28 schema), served through the SDK's extension seam (``mcp.server.extension``).

A call of a tool that may run long (``LONG``: a bucket-wide size, search, grep or analytics; a
recursive copy, move or delete; a patch over many files; an undo or a review applied) from a
client that declared the extension on its request is started as it always is; if it is still
running after ``Settings.task_after`` seconds (``--task-after``, 2 by default), the client gets a
task handle (``resultType: "task"``) instead of waiting, and the call goes on in this server's
task group, past the request that started it. The client polls ``tasks/get``: the status, the
call's progress as the status line while it works, and once it is over its result (the very
result the call would have answered with) or its failure. ``tasks/cancel`` stops it: a change
under way is taken back, all or nothing, like one that failed (the write path's rollback:
its next write finds the call given up), and a walk that only reads stops at its next step.

The task's record is in the state store (``vfs_mcp.changes.state.task_records``): another replica sharing
the store, or this one after a restart, answers ``tasks/get`` for it; a task whose replica
died while it worked reads as ``failed``. Cancelling reaches a task only on the replica that
runs it (the client names the task in the ``Mcp-Name`` header, for a load balancer to route).

A client that did not declare the extension, every client of the 2025 era (mcp 2.3.0 serves no
``tasks/*`` there and sieves a ``tools/call`` result to a ``CallToolResult``), a call that may
ask a person first (``--confirm``: its question is answered within the request, as the schema
asks of an input round before a task), and a server whose state store cannot be written get
today's answer: the call's result, when it is over.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolRequestParams, InputRequiredResult, RequestParams
from mcp_types import methods as sdk_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from vfs_mcp.errors import VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.server.calls.confirmed import asks
from vfs_mcp.server.client_logs import log
from vfs_mcp.server.replies import encodable_reply
from vfs_mcp.settings import Settings
from vfs_mcp_backends.scopes import Abandoned

T = TypeVar("T")

if TYPE_CHECKING:  # the write path (and its state store) loads with the first task
    from vfs_mcp.changes.state import StateStore
    from vfs_mcp.changes.state.task_records import TaskRecord

IDENTIFIER = "io.modelcontextprotocol/tasks"
SCHEMA = "2026-07-28"
"""The extension's schema this server follows (its methods are served at this protocol version)."""

LONG = frozenset(
    {
        "calculate_directory_size",
        "search_files",
        "grep_files",
        "directory_tree",
        "find_large_files",
        "find_empty_directories",
        "find_duplicate_files",
        "copy_file",
        "move_file",
        "delete_path",
        "apply_patch",
        "undo",
        "review_ready",
        "fs_list_files",
        "fs_search_text",
        "fs_copy_path",
        "fs_move_path",
        "fs_delete_path",
    }
)
"""The tools (by their table keys) whose calls may run long enough to become tasks."""

POLL_MS = 1000
"""The polling interval a client is asked to keep."""
SHARED_EVERY = 2.0
"""Seconds between two writes of a working task's progress to the state store (for the other
replicas; this one answers from memory)."""
STOPPING = "stopping: taking back what it changed"
"""A task's status line once its call has stopped and its worker still takes back its change."""
CANCEL_WAIT = 5.0
"""Seconds ``tasks/cancel`` waits for a task to stop (taking back what it changed) before it
acknowledges anyway: cancelling is cooperative, its outcome is seen with ``tasks/get``."""


class TaskParams(RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] | None = None


@dataclass(eq=False)
class Run:
    """One call on its way, in this process; a task once it outlived the threshold."""

    record: TaskRecord | None = None
    """Its task (None until it became one)."""
    read_only: bool = True
    done: anyio.Event = field(default_factory=anyio.Event)
    settled: anyio.Event = field(default_factory=anyio.Event)
    result: HandlerResult = None
    error: BaseException | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    """A ``tasks/cancel`` came (set from the event loop, read in the worker)."""
    stops: list[threading.Event] = field(default_factory=list)
    """The commit scopes of its worker (``tools.in_worker``): set, its next write gives up."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    progress: str | None = None
    shared: float = 0.0
    store: StateStore | None = None
    workers: list[Worker[Any]] = field(default_factory=list)
    """The worker threads of a call that changes things (``watched``)."""

    def report(self, done: int, total: int | None, message: str) -> bool:
        """The call's progress (from its worker thread), kept as its task's status line; True
        once it is a task (its client is sent no progress notification then). A cancelled
        task's walk stops here."""
        if self.cancelled.is_set():
            raise Abandoned
        counted = f"{done:,} of {total:,}" if total else f"{done:,}"
        self.progress = f"{message} ({counted})" if message and total else message or counted
        record, now = self.record, time.monotonic()
        if record is not None and self.store is not None and now - self.shared >= SHARED_EVERY:
            self.shared = now
            from vfs_mcp.changes.state import task_records as kept

            with contextlib.suppress(OSError):
                kept.save(self.store, record.progressed(self.progress))
        return record is not None

    def join(self) -> None:
        """Wait until each of its worker threads has returned (one that never started never will)."""
        for worker in self.workers:
            worker.join()

    def cancel(self) -> None:
        self.cancelled.set()
        for stop in self.stops:
            stop.set()
        if self.read_only:  # nothing to take back: its worker is let go at once
            self.scope.cancel()


_running: ContextVar[Run | None] = ContextVar("vfs_mcp_task_run", default=None)


class Worker(Generic[T]):
    """A call's work in its worker thread, as its task sees it: the request may stop waiting
    for it (the call's time limit), but the work goes on, taking back what it changed."""

    def __init__(self, call: Callable[[], T]) -> None:
        self.call = call
        self.lock = threading.Lock()
        self.started = self.dropped = False
        self.returned = threading.Event()

    def __call__(self) -> T:
        with self.lock:
            if self.dropped:
                raise Abandoned
            self.started = True
        try:
            return self.call()
        finally:
            self.returned.set()

    def join(self) -> None:
        with self.lock:
            if not self.started:
                self.dropped = True
                return
        self.returned.wait()


def watched(call: Callable[[], T]) -> Callable[[], T]:
    """``call`` as the current call's worker thread runs it: when the call may change things,
    its task ends only once the worker has returned (``Run.join``), not when the request stopped
    waiting for it, so a task that reads ``cancelled`` has taken back what it changed."""
    run = _running.get()
    if run is None or run.read_only:
        return call
    worker = Worker(call)
    run.workers.append(worker)
    return worker


def progress_sink() -> Callable[[int, int | None, str], bool] | None:
    """Where the current call's progress goes (``Run.report``) when it may become a task
    (None: it may not)."""
    run = _running.get()
    return run.report if run is not None else None


@contextlib.contextmanager
def stopping(stop: threading.Event) -> Iterator[None]:
    """The worker of the current call commits nothing once ``stop`` is set: a ``tasks/cancel``
    sets it (``tools.in_worker``)."""
    run = _running.get()
    if run is None:
        yield
        return
    run.stops.append(stop)
    if run.cancelled.is_set():
        stop.set()
    try:
        yield
    finally:
        run.stops.remove(stop)


class Tasks(Extension):
    """The extension: which calls become tasks, the task group they run in, ``tasks/*``."""

    identifier = IDENTIFIER

    def __init__(self, vfs: JailedFS, settings: Settings) -> None:
        self.vfs, self.vfs_settings = vfs, settings
        self.runs: dict[str, Run] = {}
        self.group: TaskGroup | None = None
        rows = list(_rows(settings))
        self.long = {tool.named(settings) for tool in rows if tool.key in LONG}
        self.read_only = {tool.named(settings): tool.read_only for tool in rows}

    def methods(self) -> Sequence[MethodBinding]:
        era = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, self._get, era),
            MethodBinding("tasks/update", UpdateParams, self._update, era),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, era),
        )

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The task group this server's tasks run in, for its lifespan (an HTTP app's whole
        life, a stdio session's, an in-process client's); tasks still running at its end stop
        as if cancelled."""
        async with anyio.create_task_group() as group:
            self.group = group
            try:
                yield
            finally:
                self.group = None
                for run in self.runs.values():
                    run.cancel()
                    run.scope.cancel()

    # -- a call, and a task when it runs long ----------------------------------------------------

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        limit = self.vfs_settings.task_after
        if limit is None or self.group is None or not self._may_task(params.name, ctx):
            return await call_next(ctx)
        run = Run(read_only=self.read_only.get(params.name, False))
        self.group.start_soon(self._work, run, call_next, ctx)
        try:
            with anyio.move_on_after(limit):
                await run.done.wait()
            if not run.done.is_set():
                task = await self._made(run, params.name)
                if task is not None:
                    return task
                await run.done.wait()
        except anyio.get_cancelled_exc_class():
            if run.record is None:  # the request went away before its call became a task
                run.cancel()
                run.scope.cancel()
            raise
        if run.error is not None:
            raise run.error
        return run.result

    def _may_task(self, tool: str, ctx: ServerRequestContext[Any, Any]) -> bool:
        capabilities = ctx.session.client_capabilities
        return (
            tool in self.long
            and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            and capabilities is not None
            and IDENTIFIER in (capabilities.extensions or {})
            and not asks(self.vfs_settings.confirm, capabilities, self.read_only.get(tool, False))
        )

    async def _work(self, run: Run, call_next: CallNext, ctx: ServerRequestContext[Any, Any]) -> None:
        _running.set(run)  # this task's own context: its worker threads copy it
        with run.scope:
            try:
                run.result = await call_next(ctx)
            except Exception as exc:
                run.error = exc
        run.done.set()
        if run.record is not None:
            await self._settle(run)

    async def _made(self, run: Run, tool: str) -> dict[str, Any] | None:
        """``run`` made a task, its record durable in the state store: the handle to answer
        with (None: the store cannot be written, so the call is answered when it is over)."""
        from vfs_mcp.changes import log_of
        from vfs_mcp.changes.state import task_records as kept

        try:
            store = log_of(self.vfs).store
            record = kept.new_record(store.instance, tool)
            await anyio.to_thread.run_sync(lambda: kept.save(store, record, first=True))
        except (OSError, VfsError) as err:  # no state store, or one that cannot be written now
            log.warning("a call of %s stays in its request: its task cannot be recorded (%s)", tool, err)
            return None
        run.store, run.record = store, record
        self.runs[record.task_id] = run
        if run.done.is_set():  # it ended while its record was written: settled here, once
            assert self.group is not None
            self.group.start_soon(self._settle, run)
        return {"resultType": "task", **record.wire(POLL_MS)}

    async def _settle(self, run: Run) -> None:
        """The task is over: its outcome in its record, once."""
        from vfs_mcp.changes.state import task_records as kept

        assert run.record is not None and run.store is not None
        if not all(worker.returned.is_set() for worker in run.workers):
            # Its request stopped waiting for its worker (the call's time limit): the worker
            # is still taking back what it changed, and the task says so until it is done.
            run.progress = STOPPING
            await anyio.to_thread.run_sync(run.join, abandon_on_cancel=True)
        run.record = _outcome(run, run.record)
        record, store = run.record, run.store
        try:
            await anyio.to_thread.run_sync(lambda: kept.save(store, record))
        except OSError as err:  # this replica still answers it, from memory
            log.warning("the outcome of task %s could not be recorded: %s", record.task_id[:12], err)
        else:  # answered from the store from now on: no result held here for an hour
            self.runs.pop(record.task_id, None)
        run.settled.set()

    # -- tasks/get, tasks/update, tasks/cancel -------------------------------------------------

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        record = await self._found(ctx, params.task_id)
        return record.wire(POLL_MS)

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> dict[str, Any]:
        await self._found(ctx, params.task_id)
        return {}  # no task of this server asks for input: every response is for no outstanding request

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        await self._found(ctx, params.task_id)
        run = self.runs.get(params.task_id)
        if run is not None and not run.settled.is_set():
            run.cancel()
            with anyio.move_on_after(CANCEL_WAIT):
                await run.settled.wait()
        return {}

    async def _found(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskRecord:
        """The task ``task_id`` as it is now: from memory where it runs here, else from the
        state store; -32602 when there is none."""
        require_client_extension(ctx, IDENTIFIER)
        run = self.runs.get(task_id)
        if run is not None and run.record is not None:
            if run.record.status == "working" and run.progress:
                return run.record.progressed(run.progress)
            return run.record
        from vfs_mcp.changes import log_of
        from vfs_mcp.changes.state import task_records as kept

        try:
            store = log_of(self.vfs).store
            record = await anyio.to_thread.run_sync(lambda: kept.read(store, task_id))
        except (OSError, VfsError) as err:  # no state store, or one that cannot be read now
            log.warning("task %s cannot be looked up: %s", task_id[:12], err)
            record = None
        if record is None:
            raise MCPError(INVALID_PARAMS, "Failed to retrieve task: no such task (it may have expired)")
        return record


def _outcome(run: Run, record: TaskRecord) -> TaskRecord:
    """How ``run`` ended, as its task's record: a cancelled call that did not finish is
    ``cancelled``; a JSON-RPC error is ``failed``; any tool result (an error result too) is
    ``completed``, with the result as the call would have answered it."""
    result = run.result
    gave_up = result is None or run.error is not None or getattr(result, "is_error", False) is True
    if run.cancelled.is_set() and gave_up:
        return record.ended("cancelled", "cancelled: nothing it was changing was kept")
    if isinstance(run.error, MCPError):
        return record.ended(
            "failed", run.error.error.message, error={"code": run.error.error.code, "message": run.error.error.message}
        )
    if run.error is not None or isinstance(result, InputRequiredResult) or not isinstance(result, BaseModel | dict):
        return record.ended("failed", "the call failed unexpectedly; the detail is in the server log")
    wired = encodable_reply(result)
    dumped = (
        wired.model_dump(by_alias=True, mode="json", exclude_none=True) if isinstance(wired, BaseModel) else dict(wired)
    )
    return record.ended("completed", None, result=sdk_methods.serialize_server_result("tools/call", SCHEMA, dumped))


def _rows(settings: Settings) -> Iterator[Any]:
    from vfs_mcp import profiles

    for profile in dict.fromkeys(settings.profiles):
        yield from profiles.tools_of(profile)
