"""``build_server``: the one factory for an MCP server over a set of mounts (no module-level server)."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp_types import (
    CallToolResult,
    EmptyResult,
    InputRequiredResult,
    NotificationParams,
    SetLevelRequestParams,
)
from mcp_types import Tool as MCPTool
from pydantic import AnyUrl

from vfs_mcp import profiles
from vfs_mcp.jail import state_place
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.server import calls, client_logs, replies, resources, sdk, tasks, tools, watch
from vfs_mcp.server.calls import boundary, rooted
from vfs_mcp.server.client_roots import ClientRoots
from vfs_mcp.server.metrics import Metrics
from vfs_mcp.settings import Settings

STORES = {"file": "local folders", "memory": "in-memory folders", "s3": "S3 buckets", "gs": "GCS buckets"}
"""How the instructions name the mounts of a scheme (others: ``az:// containers`` and the like)."""


LIST_TTL_MS = 3_600_000
"""How long a client may keep this server's lists of tools and resource templates (an hour):
they are fixed when the server starts (profiles, ``--tools``, read-only mounts, one template
per mount; the client's roots change the jail, not the lists) and the same for every client."""

CACHE_HINTS: dict[CacheableMethod, CacheHint] = {
    "tools/list": CacheHint(ttl_ms=LIST_TTL_MS, scope="public"),
    "resources/templates/list": CacheHint(ttl_ms=LIST_TTL_MS, scope="public"),
    "resources/list": CacheHint(ttl_ms=LIST_TTL_MS, scope="public"),  # the metrics resource, fixed too
    "resources/read": CacheHint(ttl_ms=0, scope="private"),  # a file may change under the client at any time
}
"""The freshness hints of the 2026-07-28 era's cacheable results (SEP-2549)."""


def instructions(mounts: Sequence[Mount]) -> str:
    """The server's instructions, what the served mounts need first: some clients (Codex)
    show a model only their first ~200 characters. Local folders take host paths, other
    mounts URLs; only the kinds served are named."""
    schemes = list(dict.fromkeys(mount.scheme for mount in mounts))
    stores = " and ".join(STORES.get(scheme, f"{scheme}:// stores") for scheme in schemes)
    urls = [next(m.url for m in mounts if m.scheme == scheme) for scheme in schemes if scheme != "file"]
    forms = (["absolute paths inside a folder"] if "file" in schemes else []) + [f"{url}/..." for url in urls]
    kind = "Read-only filesystem" if all(mount.read_only for mount in mounts) else "Filesystem"
    return (
        f"{kind} tools over {stores} (list_allowed_directories names them). Paths: {', '.join(forms)}, or "
        "relative to the working directory, which starts at the first mount. Errors start with a stable code "
        "(NOT_FOUND, ACCESS_DENIED, CONFLICT, ...) and say what to do instead."
    )


def _version() -> str:
    try:
        return version("vfs-mcp")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class VfsServer(MCPServer):
    """MCPServer whose requests for a client's files (tool calls, resource reads,
    subscriptions) run through the steps of ``vfs_mcp.server.calls``: session, log records for
    the client, the client's roots, and the one error boundary, which gives every failure a
    stable code; a tool call's also metrics (and audit log), limits and its changes' record.
    It holds the server's parts (jail, settings, metrics, roots, watches) and wires them: the
    logic is in the steps.
    """

    metrics: Metrics | None = None
    vfs_settings: Settings | None = None
    vfs: JailedFS | None = None
    client_roots: ClientRoots | None = None
    watches: watch.Watches | None = None
    long_calls: tasks.Tasks | None = None
    """Long calls as tasks (the ``io.modelcontextprotocol/tasks`` extension)."""
    many_clients: bool = False
    """Served over HTTP: clients without a session must not share state (``calls.session``)."""
    stateless: bool = False
    """Served over HTTP without sessions (``--stateless``): no request has one."""
    warming: threading.Thread | None = None
    """The import of what calls need, started by the first ``tools/list`` (or the first call of
    a client that lists no tools) in a server process (``Settings.warm_up``, ``tools.warm``)."""
    housekeeping: Callable[[], object] | None = None
    """What a server process does once the warm-up is over and no call is in flight (the sweep
    of the temp files killed writes left, ``cli.options.server_from``): a walk of a whole tree
    that would otherwise share the interpreter with the start and the first calls."""

    async def list_tools(self) -> list[MCPTool]:
        listed = await super().list_tools()
        self._warm_up()
        return listed

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The call through the pipeline's steps (``vfs_mcp.server.calls``); the warm-up waits
        while it runs (``tools.in_flight``)."""
        with tools.in_flight():
            result = await calls.run(calls.Call(self, name, arguments, context))
        self._warm_up()
        return result if isinstance(result, InputRequiredResult) else replies.wired(result)

    def _warm_up(self) -> None:
        if self.warming is None and self.vfs_settings is not None and self.vfs_settings.warm_up:
            self.warming = tools.warm(self.vfs_settings, then=self.housekeeping)

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        """The read through the steps of every request (``calls.serve``)."""

        async def answer() -> Iterable[ReadResourceContents] | InputRequiredResult:
            return await super(VfsServer, self).read_resource(uri, context)

        read: Iterable[ReadResourceContents] | InputRequiredResult = await calls.serve(
            calls.Call(self, str(uri), {}, context, kind="resource"), answer
        )
        return read

    async def through(
        self, ctx: ServerRequestContext[Any, Any], kind: calls.Kind, uri: str, answer: Callable[[], Awaitable[Any]]
    ) -> Any:
        """A subscription request through the steps of every request (``watch.Through``)."""
        return await calls.serve(calls.Call(self, uri, {}, Context(request_context=ctx, mcp_server=self), kind), answer)


@asynccontextmanager
async def _run(app: MCPServer) -> AsyncIterator[watch.Watches]:
    """The server's lifespan (a stdio session, an in-process client, an HTTP app): its watches."""
    server: VfsServer = app  # type: ignore[assignment]
    assert server.vfs is not None and server.vfs_settings is not None
    if server.client_roots is not None:
        server.client_roots.reset(server.vfs.jail)
    allow = functools.partial(rooted.watchable, server)
    async with (
        watch.watching(server.vfs, allow, server.vfs_settings.poll_interval) as watches,
        server.long_calls.serving() if server.long_calls is not None else contextlib.nullcontext(),
    ):
        server.watches = watches
        try:
            yield watches
        finally:
            if server.watches is watches:
                server.watches = None


def _serve_protocol(server: VfsServer, bus: InMemorySubscriptionBus) -> None:
    """Handlers the low-level server needs for what MCPServer has no hook for."""
    lowlevel = sdk.lowlevel(server)  # MCPServer has no hook for these: they go on its low-level server

    async def set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        client_logs.set_level(ctx, params.level)
        return EmptyResult()

    async def roots_changed(ctx: ServerRequestContext[Any, Any], params: NotificationParams) -> None:
        if server.client_roots is not None:
            server.client_roots.changed()

    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    lowlevel.add_notification_handler("notifications/roots/list_changed", NotificationParams, roots_changed)
    watch.serve(lowlevel, bus, server.through)


def _record_changes(vfs: JailedFS, settings: Settings, place: str | None, unusable: OSError | None) -> None:
    """Where ``vfs``'s changes are recorded (``place``: ``--state`` or the default folder of the
    operator's mounts; ``unusable``: why there is none, said at each change), opened now —
    finishing what dead servers left under way there — when it is named or holds such work; else
    at the first change (a server that only reads never imports the write path)."""

    def opened() -> Any:
        from vfs_mcp.changes.log import default_log

        if unusable is not None:
            raise unusable
        return default_log(vfs.mounts, place, settings.undo_bytes)

    vfs.kept.put(state_place.OPENER, opened)
    if settings.state is not None or state_place.pending_in(vfs.mounts):
        from vfs_mcp import changes

        changes.attach(vfs, opened())  # one that cannot be used stops the server, saying where and why


def _jailed(mounts: Sequence[Mount], settings: Settings, reviewed: bool) -> tuple[JailedFS, str | None]:
    """The server's jailed filesystem over ``mounts`` (under review where asked), its changes
    recorded in the state store, and where that store is (None: every default place is served)."""
    # Where the state store is, decided once: no mount, the client's included, may reach it.
    unusable: OSError | None = None
    place: str | None
    try:
        place = state_place.decided(settings.state, mounts)
    except state_place.StateUnavailable as err:  # every default place is served: writes say so
        place, unusable = None, err
    if reviewed:
        from vfs_mcp.review import jailed_under_review

        vfs = jailed_under_review(
            mounts, state=place, deny=settings.deny, every=settings.review, undo_bytes=settings.undo_bytes
        )
    else:
        vfs = JailedFS(Jail(mounts, deny=settings.deny))
        _record_changes(vfs, settings, place, unusable)
    if not settings.index:
        from vfs_mcp.ops.search import index  # only then: a server loads it at its first grep

        vfs.kept.put(index.INDEXES, False)
    return vfs, place


def build_server(mounts: Sequence[Mount], settings: Settings | None = None) -> MCPServer:
    """A new server with its own jail and working directory over ``mounts``.

    With ``settings.client_roots`` other than ``off``, ``mounts`` are the operator's (or, in
    ``mount`` mode, the fallback for a client that offers no roots) and the client's roots
    decide the mounts in use (see ``vfs_mcp.server.client_roots``).
    """
    settings = settings or Settings()
    profiles.check(settings.profiles)
    reviewed = settings.review or any(mount.review for mount in mounts)
    vfs, place = _jailed(mounts, settings, reviewed)
    if reviewed:
        mounts = vfs.mounts  # the mounts under review, each over its pending layer
    bus = InMemorySubscriptionBus()
    sdk.logging_set_up_once()  # a vfs-mcp process set its own up: rich's handler would go unused
    sdk.tool_results_keep_their_meta()
    long_calls = tasks.Tasks(vfs, settings)
    server = VfsServer(
        "vfs-mcp",
        version=_version(),
        instructions=instructions(mounts),
        lifespan=_run,
        subscriptions=bus,
        cache_hints=CACHE_HINTS,
        request_state_security=RequestStateSecurity(keys=[settings.request_state_key])
        if settings.request_state_key
        else None,
        extensions=[long_calls],
    )
    server.long_calls = long_calls
    server.vfs = vfs
    server.metrics = Metrics(vfs, settings.audit_log)
    server.vfs_settings = settings
    if settings.client_roots != "off":
        server.client_roots = ClientRoots(
            settings.client_roots,
            list(mounts),
            refresh=settings.roots_refresh,
            store=None if place is None else state_place.place_of(place),
        )
    tools.register(server, vfs, settings)
    resources.register(server, vfs, server.metrics, any_local=settings.client_roots == "mount", pending=reviewed)
    _serve_protocol(server, bus)
    sdk.withdraw_requests(server, "prompts/list", "prompts/get")  # no prompts: no capability, -32601 for both
    server.middleware.insert(0, boundary.replies)
    client_logs.forward()
    return server
