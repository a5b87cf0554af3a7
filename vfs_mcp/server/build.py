"""``build_server``: the one factory for an MCP server over a set of mounts (no module-level server)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import anyio
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.resolve import (
    ListRoots,
    Resolve,
    build_resolver_plans,
    find_resolved_parameters,
    resolve_arguments,
)
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    CallToolResult,
    EmptyResult,
    InputRequiredResult,
    ListRootsResult,
    NotificationParams,
    SetLevelRequestParams,
)
from mcp_types import Tool as MCPTool
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyUrl

from vfs_mcp import profiles
from vfs_mcp.errors import AccessDenied
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.server import calls, client_logs, replies, resources, sdk, tools, watch
from vfs_mcp.server.calls.call import request_of
from vfs_mcp.server.client_logs import log
from vfs_mcp.server.metrics import Metrics
from vfs_mcp.server.roots import ClientRoots
from vfs_mcp.sessions import SessionState, serving, session_state
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


# -- client roots -------------------------------------------------------------------------


def _ask_for_roots() -> ListRoots:
    return ListRoots()


async def _client_roots(roots: Annotated[ListRootsResult, Resolve(_ask_for_roots)]) -> ListRootsResult:
    """The consumer the SDK's resolver machinery fills: mid-call ``roots/list`` through
    2025-11-25, an ``InputRequiredResult`` round on 2026-07-28."""
    return roots


_ROOTS_PARAMS = find_resolved_parameters(_client_roots)
_ROOTS_PLANS = build_resolver_plans(_ROOTS_PARAMS, set())


class VfsServer(MCPServer):
    """MCPServer whose every failure carries a stable code (arguments rejected by the schema
    included), and whose every call is counted in its metrics (and audit log, if any).

    It also asks the client for its roots when they decide the mounts, forwards its log
    records to a client that asked for them, and watches subscribed files (``watches``
    while it runs).
    """

    metrics: Metrics | None = None
    vfs_settings: Settings | None = None
    vfs: JailedFS | None = None
    client_roots: ClientRoots | None = None
    watches: watch.Watches | None = None
    many_clients: bool = False
    """Served over HTTP: clients without a session must not share state (``_session_of``)."""
    stateless: bool = False
    """Served over HTTP without sessions (``--stateless``): no request has one."""
    warming: threading.Thread | None = None
    """The import of what calls need, started by the first ``tools/list`` (``tools.warm``) in a
    server process (``Settings.warm_up``)."""

    async def list_tools(self) -> list[MCPTool]:
        listed = await super().list_tools()
        if self.warming is None and self.vfs_settings is not None and self.vfs_settings.warm_up:
            self.warming = tools.warm(self.vfs_settings)
        return listed

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The call through the pipeline's steps (``vfs_mcp.server.calls``); the warm-up waits
        while it runs (``tools.in_flight``)."""
        with tools.in_flight():
            result = await calls.run(calls.Call(self, name, arguments, context))
        return result if isinstance(result, InputRequiredResult) else replies.wired(result)

    async def call_registered(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None) -> Any:
        """The SDK's own call of a registered tool (the pipeline's last step)."""
        return await super().call_tool(name, arguments, context)

    def session_of(self, context: Context[Any, Any] | None) -> AbstractContextManager[SessionState | None]:
        """Whose state a request sees (``vfs_mcp.sessions``): its MCP session's, in the eras
        with sessions; the server's own on a one-client transport (stdio, in-process); a
        fresh one per request over HTTP without sessions (stateless, or the 2026 era)."""
        request = request_of(context)
        connection = watch.connection_state(request)[1] if request is not None else None
        if (
            not self.stateless
            and connection is not None
            and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            return serving(session_state(connection))
        return serving(SessionState(sessionless=True)) if self.many_clients else serving(None)

    def why_not_served(self, name: str) -> str:
        """Why there is no tool ``name``: left out by read-only mounts or ``--tools``, or none
        of the profiles has it (with the closest name served)."""
        settings, vfs = self.vfs_settings, self.vfs
        if settings is not None and vfs is not None and name in tools.profile_tools(settings):
            if all(mount.read_only for mount in vfs.mounts) and not tools.profile_tools(settings)[name]:
                return f"{name} is not served: every mount is read-only, so no tool that writes is listed"
            if settings.tools:
                return f"{name} is not served: --tools {','.join(settings.tools)} leaves it out"
        import difflib  # here: only a name that is not known needs it

        known = difflib.get_close_matches(name, [tool.name for tool in sdk.registered_tools(self)], n=1)
        hint = f"; did you mean {known[0]!r}?" if known else "; tools/list shows the tools this server offers"
        return f"there is no tool named {name!r}{hint}"

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        asking = await self.settle_roots(context)
        if asking is not None:
            return asking
        if self.client_roots is not None and self.client_roots.denied and str(uri) != resources.METRICS_URI:
            raise ResourceError(str(AccessDenied(self.client_roots.denied)))
        with self.session_of(context):
            return await super().read_resource(uri, context)

    # -- roots ------------------------------------------------------------------------

    async def settle_roots(self, context: Context[Any, Any] | None) -> InputRequiredResult | None:
        """Ask the client for its roots when they are due, and apply them to the jail.

        Returns the ``InputRequiredResult`` to answer with while a 2026-07-28 client is being
        asked; None once the mounts are settled for this request.
        """
        roots, request = self.client_roots, request_of(context)
        if roots is None or self.vfs is None or context is None or request is None:
            return None
        if not roots.due(request.protocol_version in MODERN_PROTOCOL_VERSIONS):
            return None
        capabilities = request.session.client_capabilities
        uris: list[str] | None = None
        if capabilities is not None and capabilities.roots is not None:
            try:
                answer = await resolve_arguments(_ROOTS_PARAMS, _ROOTS_PLANS, {}, context)
            except MCPError as err:  # the client failed to answer, or there is no channel to ask on
                log.warning("could not get the client's roots: %s", err)
            else:
                if isinstance(answer, InputRequiredResult):
                    return answer
                uris = [str(root.uri) for root in answer["roots"].roots]
        # Checking the roots touches the disk (real paths, folders): not on the event loop.
        await anyio.to_thread.run_sync(roots.settle, self.vfs.jail, uris)
        return None

    async def _settle_for(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Settle the roots ahead of a subscription, a request that cannot answer with an input
        round: a 2026-07-28 client that offers roots must have made a call or read first."""
        asking = await self.settle_roots(Context(request_context=ctx, mcp_server=self))
        if asking is not None:
            raise MCPError(INTERNAL_ERROR, "the client's roots are not known yet; call a tool first")

    def watchable(self, uri: str) -> Target:
        """The file a subscription names, through the jail and the client's roots (VfsError if not)."""
        assert self.vfs is not None
        roots = self.client_roots
        if roots is not None and roots.denied:
            raise AccessDenied(roots.denied)
        if roots is not None and not roots.known:
            raise AccessDenied("the client's roots are not known yet; call a tool or read a resource first")
        return self.vfs.resolve(uri)


@asynccontextmanager
async def _run(app: MCPServer) -> AsyncIterator[watch.Watches]:
    """The server's lifespan (a stdio session, an in-process client, an HTTP app): its watches."""
    server: VfsServer = app  # type: ignore[assignment]
    assert server.vfs is not None and server.vfs_settings is not None
    if server.client_roots is not None:
        server.client_roots.reset(server.vfs.jail)
    async with watch.watching(server.vfs, server.watchable, server.vfs_settings.poll_interval) as watches:
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
    watch.serve(lowlevel, bus, server._settle_for)


def _record_changes(vfs: JailedFS, settings: Settings) -> None:
    """Where ``vfs``'s changes are recorded (``--state``), opened now — finishing what dead
    servers left under way there — when it is named or holds such work; else at the first
    change (a server that only reads never imports the write path)."""
    from vfs_mcp.jail.state_place import pending_in

    def opened() -> Any:
        from vfs_mcp.changes.log import default_log

        return default_log(vfs.mounts, settings.state, settings.undo_bytes)

    vfs.caches["changes.open"] = opened
    if settings.state is not None or pending_in(vfs.mounts):
        from vfs_mcp import changes

        changes.log_of(vfs)


def build_server(mounts: Sequence[Mount], settings: Settings | None = None) -> MCPServer:
    """A new server with its own jail and working directory over ``mounts``.

    With ``settings.client_roots`` other than ``off``, ``mounts`` are the operator's (or, in
    ``mount`` mode, the fallback for a client that offers no roots) and the client's roots
    decide the mounts in use (see ``vfs_mcp.server.roots``).
    """
    settings = settings or Settings()
    profiles.check(settings.profiles)
    reviewed = settings.review or any(mount.review for mount in mounts)
    if reviewed:
        from vfs_mcp.review import jailed_under_review

        vfs = jailed_under_review(
            mounts, state=settings.state, deny=settings.deny, every=settings.review, undo_bytes=settings.undo_bytes
        )
        mounts = vfs.mounts
    else:
        vfs = JailedFS(Jail(mounts, deny=settings.deny))
        _record_changes(vfs, settings)
    bus = InMemorySubscriptionBus()
    server = VfsServer(
        "vfs-mcp",
        version=_version(),
        instructions=instructions(mounts),
        lifespan=_run,
        subscriptions=bus,
        cache_hints=CACHE_HINTS,
    )
    server.vfs = vfs
    server.metrics = Metrics(vfs, settings.audit_log)
    server.vfs_settings = settings
    if settings.client_roots != "off":
        server.client_roots = ClientRoots(settings.client_roots, list(mounts), refresh=settings.roots_refresh)
    tools.register(server, vfs, settings)
    resources.register(server, vfs, server.metrics, any_local=settings.client_roots == "mount", pending=reviewed)
    _serve_protocol(server, bus)
    sdk.withdraw_requests(server, "prompts/list", "prompts/get")  # no prompts: no capability, -32601 for both
    server.middleware.insert(0, replies.encodable_replies)
    client_logs.forward()
    return server
