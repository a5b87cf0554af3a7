"""The profiles' tables registered on the MCP SDK: each row's adapter bound to the server's
jailed filesystem and settings, run in a worker thread (its errors become error results at
the boundary, ``calls.boundary``).

``register`` lists the chosen profiles' tools in their tables' order (the tools that write
only when some mount is writable), then ``toolset.publish`` compacts their schemas and keeps
only those ``--tools`` names.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import threading
import time
import typing
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool as SdkTool
from mcp_types import CallToolResult
from pydantic.fields import FieldInfo

from vfs_mcp import profiles
from vfs_mcp.jail.context import CallContext
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import as_written
from vfs_mcp.profiles.table import Tool
from vfs_mcp.server import schemas, sdk, tasks, toolset
from vfs_mcp.server.replies import encodable
from vfs_mcp.settings import Settings
from vfs_mcp_backends import commit_scope

if TYPE_CHECKING:
    from vfs_mcp.ops.walks.progress import Progress

PROGRESS_ARGUMENT = "progress"
"""An adapter's argument that receives the call's progress reporter (the SDK's Context on the way in)."""
PROGRESS_INTERVAL = 0.1


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Register every chosen profile's tools, in the order given; then publish them compactly,
    only those ``settings.tools`` names (ValueError for a name that is neither a tool nor a set).
    A tool whose schemas the table knows (``schemas.known``) gets its argument model on its
    first call, or in a server process at start when its row says so (``Tool.at_start``); any
    other the SDK's way, now."""
    profiles.check(settings.profiles)
    writable = any(not mount.read_only for mount in vfs.mounts)
    reviewed = any(mount.layer is not None for mount in vfs.mounts)
    exact: set[str] = set()
    early: list[str] = []
    for profile in dict.fromkeys(settings.profiles):
        table = profiles.tools_of(profile)
        names = {tool.key: tool.named(settings) for tool in table}
        for tool in table:
            if (tool.needs_writable and not writable) or (tool.review and not reviewed):
                continue
            name, fn = names[tool.key], bound(tool, vfs, settings)
            planned = schemas.known().get(tool.where)
            if planned is None:
                fn.sign()
                server.add_tool(
                    fn, name=name, title=tool.title, description=tool.described(names), annotations=tool.annotations
                )
            else:
                sdk.add_planned_tool(
                    server,
                    fn,
                    fn.sign,
                    name=name,
                    title=tool.title,
                    description=tool.described(names),
                    annotations=tool.annotations,
                    parameters=planned["parameters"],
                    output_schema=planned["output"],
                    context_kwarg=planned["context"],
                )
            if profile in profiles.STATED_DEFAULTS:
                exact.add(name)
            if tool.at_start and settings.warm_up:
                early.append(name)
    toolset.publish(server, settings.tools, exact)
    for name in early:
        if (registered := sdk.registered_tool(server, name)) is not None:  # not left out by ``--tools``
            _ = registered.fn_metadata.arg_model  # made now: its adapter's module and operations imported


def generated_schemas() -> dict[str, dict[str, Any]]:
    """What ``schemas.known`` should hold: every profile's tools' schemas as the SDK makes them now."""
    table: dict[str, dict[str, Any]] = {}
    for profile in profiles.PROFILES:
        for row in profiles.tools_of(profile):
            fn = bound(row, None, Settings())  # type: ignore[arg-type]  # never called: only its signature is read
            fn.sign()
            tool = SdkTool.from_function(fn, name=row.key)
            table[row.where] = {
                "parameters": tool.parameters,
                "output": tool.output_schema,
                "context": tool.context_kwarg,
            }
    return table


WARM_AFTER = 0.25
"""Seconds after ``tools/list`` is answered, and after the last call, that ``warm`` imports:
longer than a script's client takes between two calls (one that parses a big reply is quiet
for a while, and a shorter wait let the warm-up's imports meet its next read), far shorter than
a model's turn (the figures: benchmarks/README.md, "Figures behind choices in the code")."""


def warm(settings: Settings, then: Callable[[], object] | None = None) -> threading.Thread:
    """Import, on a thread of its own, what the chosen profiles' tools will need: their
    adapters and operations, and the write path. Started once ``tools/list`` is answered, it
    runs while the client reads the list and its model takes its turn, so a start stays quick
    and a first call does not pay for the imports. A call that needs a module being imported
    waits for it (the import lock), as it would have imported it itself. ``then``: the
    server's housekeeping (a sweep of a whole tree), started once the imports are done and
    no call is in flight, on a daemon thread of its own (it imports nothing, so the process
    need not wait for it at exit).

    A process that ends first stops it at exit, between two tools, and waits for it: a thread
    still importing while the interpreter finalizes crashes in native modules (pydantic-core
    panics), which a short-lived client (``vfs-mcp call``) would print.

    It gives way to calls: it imports nothing while one is in flight (``in_flight``) nor
    until ``WARM_AFTER`` has passed since the last, so a client that calls at once, or calls
    after calls, does not share the interpreter with it (each call imports what it needs
    itself); a call meets at most the rest of one tool's import."""
    stop = threading.Event()

    def load() -> None:
        try:
            for profile in dict.fromkeys(settings.profiles):
                for tool in profiles.tools_of(profile):
                    if not _quiet(stop):
                        return
                    _ = tool.adapter
            if then is not None and _quiet(stop):
                threading.Thread(target=then, name="vfs-mcp-housekeeping", daemon=True).start()
        finally:
            _WARMING.discard(warming)

    thread = threading.Timer(WARM_AFTER, load)  # after the list has gone out: not competing with its reply
    thread.name, thread.daemon = "vfs-mcp-warm", True
    warming = (stop, thread)
    _WARMING.add(warming)
    thread.start()
    return thread


_WARMING: set[tuple[threading.Event, threading.Timer]] = set()
"""The warm-ups not yet over (``warm``)."""
_NO_CALL = threading.Event()
_NO_CALL.set()
_calls = 0
"""Tool calls in flight (``in_flight``); counted on the event loop's thread."""


_last_call = 0.0
"""When the last call ended (``time.monotonic``)."""


@contextlib.contextmanager
def in_flight() -> Iterator[None]:
    """A tool call is being answered: the warm-up waits until none has been for ``WARM_AFTER``."""
    global _calls, _last_call
    _calls += 1
    _NO_CALL.clear()
    try:
        yield
    finally:
        _calls -= 1
        _last_call = time.monotonic()
        if not _calls:
            _NO_CALL.set()


def _quiet(stop: threading.Event) -> bool:
    """Wait until no call has been in flight for ``WARM_AFTER``; False when ``stop`` came first."""
    while not stop.is_set():
        if _NO_CALL.wait(WARM_AFTER):
            idle = time.monotonic() - _last_call
            if idle >= WARM_AFTER:
                return not stop.is_set()
            stop.wait(WARM_AFTER - idle)
    return False


def between_calls() -> None:
    """Wait while a tool call is in flight: what runs beside a server's calls (its sweep) gives
    way to them, as the warm-up does."""
    _NO_CALL.wait()


@atexit.register
def _stop_warming() -> None:
    for stop, thread in list(_WARMING):
        stop.set()
        thread.cancel()
        thread.join()


@functools.lru_cache(maxsize=8)
def profile_tools(settings: Settings) -> dict[str, bool]:
    """Every tool the profiles of ``settings`` have (name -> read-only), whatever the mounts and ``--tools``."""
    return {
        tool.named(settings): tool.read_only
        for profile in dict.fromkeys(settings.profiles)
        for tool in profiles.tools_of(profile)
    }


class Bound(Protocol):
    """A row's adapter as the SDK registers it (``bound``)."""

    def sign(self) -> None:
        """Give it the signature the SDK builds its arguments from (idempotent)."""

    async def __call__(self, **arguments: Any) -> CallToolResult: ...


def bound(tool: Tool, vfs: JailedFS, settings: Settings) -> Bound:
    """The function the SDK registers for ``tool``, calling its adapter with ``vfs`` and
    ``settings``. Its signature, the adapter's without those two (the SDK builds the tool's
    arguments from it), is made by ``sign()``, when the SDK first needs it: resolving the
    adapter's annotations imports the types they name. Neither imports the adapter's module:
    its first call does."""
    aliases: dict[str, str] = {}

    def call(context: CallContext, **arguments: Any) -> CallToolResult:
        arguments = {aliases.get(key, key): value for key, value in arguments.items()}
        if PROGRESS_ARGUMENT in arguments:
            arguments[PROGRESS_ARGUMENT] = reporter(arguments[PROGRESS_ARGUMENT])
        result: CallToolResult = tool.adapter(vfs.for_call(context), settings, **arguments)
        return result

    def sign() -> None:
        if hasattr(call, "__signature__"):
            return
        fn = tool.adapter
        hints = typing.get_type_hints(fn, include_extras=True)
        parameters = [
            parameter.replace(annotation=Context if parameter.name == PROGRESS_ARGUMENT else hints[parameter.name])
            for parameter in list(inspect.signature(fn).parameters.values())[2:]
        ]
        aliases.update({alias: p.name for p in parameters if (alias := _alias(p.annotation)) and alias != p.name})
        call.__annotations__.clear()  # in place: the wrapper shares this dict (functools.wraps)
        call.__annotations__.update({p.name: p.annotation for p in parameters} | {"return": hints["return"]})
        call.__signature__ = inspect.Signature(parameters, return_annotation=hints["return"])  # type: ignore[attr-defined]

    call.__module__, _, call.__name__ = tool.where.partition(":")
    call.__qualname__ = call.__name__
    wrapper: Any = in_worker(call)
    wrapper.sign = sign
    return typing.cast(Bound, wrapper)


def _alias(annotation: Any) -> str | None:
    """The name a caller spells an argument with (``Field(alias=...)``), where it has one."""
    for meta in typing.get_args(annotation)[1:] if typing.get_origin(annotation) is typing.Annotated else ():
        if isinstance(meta, FieldInfo) and meta.alias:
            return meta.alias
    return None


_calling: ContextVar[CallContext | None] = ContextVar("vfs_mcp_call_context", default=None)
"""The context of the tool call the pipeline runs (``calling``): the SDK calls a tool's function
with the tool's arguments alone, so its last stage hands the context over here, to be read
once, by that function (``in_worker``), which gives the adapter the call's view of the filesystem."""


@contextlib.contextmanager
def calling(context: CallContext) -> Iterator[None]:
    """The tool the SDK calls inside runs with ``context`` (``calls.run_tool``)."""
    token = _calling.set(context)
    try:
        yield
    finally:
        _calling.reset(token)


def in_worker(fn: Callable[..., CallToolResult]) -> Callable[..., Awaitable[CallToolResult]]:
    """Run a tool in a worker thread, given the call's context first (``calling``; outside the
    pipeline, a context of its own); what it raises goes up to the error boundary
    (``calls.boundary``), naming each path as the caller wrote it too (``as_written``).

    The SDK waits for a sync tool's thread even after the call was cancelled or timed out.
    Here the thread is abandoned on cancellation (it finishes in the background), so a slow
    mount cannot hang the caller; ``commit_scope`` makes sure the abandoned thread commits no
    change after that. A task waits for it still (``tasks.watched``): it ends once what the
    thread changed is taken back.
    """

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> CallToolResult:
        context = _calling.get() or CallContext(written={})
        written = context.written if context.written is not None else {}
        with as_written(written), commit_scope() as stop, tasks.stopping(stop):
            call = tasks.watched(functools.partial(fn, context, *args, **kwargs))
            return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)

    return wrapper


def reporter(ctx: Context[Any, Any]) -> Progress:
    """A progress callback for operations running in a worker thread.

    It sends MCP progress notifications (at most every 100 ms; the SDK drops them when the
    client gave no progress token) and raises when the request was cancelled, so a long
    walk stops within 100 ms (asking the event loop costs more than a step of a walk).
    """
    last = 0.0
    task = tasks.progress_sink()  # a call that may become a task: its progress is the task's status

    def report(done: int, total: int | None, message: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < PROGRESS_INTERVAL and (total is None or done < total):
            return
        last = now
        anyio.from_thread.check_cancelled()
        if task is None or not task(done, total, encodable(message)):
            anyio.from_thread.run(ctx.report_progress, done, total, encodable(message))

    return report
