"""Resource subscriptions: watch subscribed files and tell the subscribers when one changes.

Local files are watched with watchfiles (inotify, FSEvents, ReadDirectoryChangesW through
the Rust ``notify`` crate): one watcher thread for all of them, over the folders that hold
them, restarted when the set changes. Files on other backends (S3, memory, plug-ins) are
polled: their size and etag or mtime (``JailedFS.version``) every ``poll_interval`` seconds.

A ``Watches`` lives as long as the server's run (its lifespan: one stdio session, or one
in-process client); each subscription is a sink for one URI, removed when the client
unsubscribes, its listen stream ends or its connection closes. Before telling anyone, the
URI is resolved again: a file the client's roots no longer cover stays silent.

Protocol eras:

- through 2025-11-25: ``resources/subscribe`` / ``resources/unsubscribe`` on the connection;
  changes arrive as ``notifications/resources/updated`` on it.
- 2026-07-28: a ``subscriptions/listen`` request names the URIs; the watches last as long
  as that stream, and changes are published on the server's subscription bus.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.abc
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp_types import (
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
)
from watchfiles import awatch

from vfs_mcp.errors import InvalidArgument, VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.server import sdk
from vfs_mcp_backends.hostpaths import real_path

log = logging.getLogger("vfs_mcp")

Sink = Callable[[str], Awaitable[None]]
"""Tells one subscriber that the resource at a URI changed."""

Allow = Callable[[str], Target]
"""Resolves a subscribed URI through the jail (and the client's roots), or raises VfsError."""

_WATCH_STEP_MS = 50
"""How long watchfiles waits for more changes before reporting a batch (and how fast it stops)."""

_CATCH_UP_MS = 200
"""The longest a restarted watcher waits before checking what changed while it restarted."""


@dataclass(eq=False)
class _Watch:
    uri: str
    target: Target
    host: str | None
    """The real host path, when watchfiles watches it; None when polled."""
    sinks: list[Sink] = field(default_factory=list)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    seen: tuple[int, ...] | None = None
    """The local file's stat when last announced (or watched), to catch what a restart missed."""


class Watches:
    """The subscribed files of one server run, each watched once whatever its number of sinks."""

    def __init__(self, vfs: JailedFS, allow: Allow, task_group: anyio.abc.TaskGroup, poll_interval: float) -> None:
        self.vfs = vfs
        self.allow = allow
        self.poll_interval = poll_interval
        self._tg = task_group
        self._watched: dict[str, _Watch] = {}
        self._folders: set[str] = set()
        self._local_changed = anyio.Event()
        self._local_stop = anyio.Event()
        task_group.start_soon(self._watch_local)

    @property
    def uris(self) -> list[str]:
        """The URIs watched now."""
        return sorted(self._watched)

    async def add(self, uri: str, sink: Sink) -> Callable[[], None]:
        """Watch ``uri`` for ``sink``; returns the (idempotent) way to stop. Raises VfsError.

        Returns once the file's version to compare with is taken (its stat, or for a polled
        store the version its first look reads), so a change made after the subscription is
        answered is announced, however soon it comes."""
        watch = self._watched.get(uri)
        if watch is None:
            target = self.allow(uri)
            watch = _Watch(uri, target, _host_path(target))
            self._watched[uri] = watch
            if watch.host is None:
                self._tg.start_soon(self._poll, watch, await self._version(target))
            else:
                watch.seen = _stat(watch.host)
                self._restart_local()
        watch.sinks.append(sink)

        def remove() -> None:
            if sink in watch.sinks:
                watch.sinks.remove(sink)
            if not watch.sinks and self._watched.get(uri) is watch:
                del self._watched[uri]
                watch.scope.cancel()
                self._restart_local()

        return remove

    def close(self) -> None:
        """Stop every watch (the watcher thread notices within a step)."""
        for watch in self._watched.values():
            watch.scope.cancel()
        self._watched.clear()
        self._local_stop.set()

    # -- watching ---------------------------------------------------------------------

    def _local(self) -> dict[str, _Watch]:
        return {w.host: w for w in self._watched.values() if w.host is not None}

    def _restart_local(self) -> None:
        """Restart the watcher when the set of folders to watch changed."""
        if {os.path.dirname(path) for path in self._local()} != self._folders:
            self._local_stop.set()
            self._local_changed.set()

    async def _watch_local(self) -> None:
        """One watchfiles loop over the folders of every local watch, restarted when they change.

        A restart leaves a moment when nothing watches: the first report of the new watcher
        (at the latest after ``rust_timeout``) compares every file with what was last
        announced, so a change made meanwhile is still announced.
        """
        while True:
            self._local_changed = anyio.Event()
            self._local_stop = anyio.Event()
            self._folders = {os.path.dirname(path) for path in self._local()}
            if not self._folders:
                await self._local_changed.wait()
                continue
            caught_up = False
            try:
                async for changes in awatch(
                    *sorted(self._folders),
                    watch_filter=None,
                    recursive=False,
                    stop_event=self._local_stop,
                    step=_WATCH_STEP_MS,
                    debounce=1_000,
                    rust_timeout=_CATCH_UP_MS,
                    yield_on_timeout=True,
                ):
                    local = self._local()
                    paths = {path for _change, path in changes if path in local}
                    if not caught_up:
                        caught_up = True
                        paths |= {path for path, w in local.items() if _stat(path) != w.seen}
                    for path in sorted(paths):
                        await self._notify(local[path])
            except (OSError, RuntimeError) as exc:  # a folder vanished: poll its files instead
                log.info("watching %s failed (%s); polling instead", ", ".join(sorted(self._folders)), exc)
                for watch in self._local().values():
                    watch.host = None
                    self._tg.start_soon(self._poll, watch, await self._version(watch.target))

    async def _poll(self, watch: _Watch, last: tuple[Any, ...] | None) -> None:
        with watch.scope:
            while True:
                await anyio.sleep(self.poll_interval)
                now = await self._version(watch.target)
                if now != last:
                    last = now
                    await self._notify(watch)

    async def _version(self, target: Target) -> tuple[Any, ...] | None:
        def version() -> tuple[Any, ...] | None:
            try:
                return self.vfs.version(target)
            except VfsError:
                return None  # missing (or not a file) is a version too: appearing is a change

        return await anyio.to_thread.run_sync(version, abandon_on_cancel=True)

    async def _notify(self, watch: _Watch) -> None:
        if watch.host is not None:
            watch.seen = _stat(watch.host)
        try:
            self.allow(watch.uri)  # the roots may have moved since the subscription
        except VfsError:
            return
        for sink in list(dict.fromkeys(watch.sinks)):
            try:
                await sink(watch.uri)
            except Exception:  # one subscriber's broken channel must not silence the others
                log.debug("could not tell a subscriber that %s changed", watch.uri, exc_info=True)


def _stat(path: str) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _host_path(target: Target) -> str | None:
    """Where watchfiles can watch the file: its real path, when it is local and its folder exists."""
    if not target.mount.capabilities.host_paths:
        return None  # no host path (a mount under review shows its layer): polled
    folder = real_path(os.path.dirname(target.fs_path))
    if not os.path.isdir(folder):
        return None
    return os.path.join(folder, os.path.basename(target.fs_path))


@asynccontextmanager
async def watching(vfs: JailedFS, allow: Allow, poll_interval: float) -> AsyncIterator[Watches]:
    """Watches for one server run; every watch stops when the block ends."""
    async with anyio.create_task_group() as tg:
        watches = Watches(vfs, allow, tg, poll_interval)
        try:
            yield watches
        finally:
            watches.close()
            tg.cancel_scope.cancel()


# -- the protocol -------------------------------------------------------------------------

_SUBSCRIPTIONS = "vfs_mcp.subscriptions"
MAX_SUBSCRIPTIONS = 256
"""Resources one client may watch at once: each is a watch (a poll on object stores), so a
client must not be able to make the idle server work without bound."""


def connection_state(ctx: ServerRequestContext[Any, Any]) -> tuple[dict[str, Any], Any]:
    """The connection's scratch state (kept across its requests) and the connection itself.

    The SDK (2.3) hands low-level handlers the per-request session only; the connection it
    proxies, with ``state`` and the ``exit_stack`` unwound when the client goes, is reached
    through ``sdk.connection_of``. Without one (None), state lasts for the request.
    """
    connection: Any = sdk.connection_of(ctx.session)
    return (connection.state if connection is not None else {}), connection


Through = Callable[
    [ServerRequestContext[Any, Any], Literal["subscribe", "listen"], str, Callable[[], Awaitable[Any]]], Awaitable[Any]
]
"""Runs a subscription request (its context, ``subscribe`` or ``listen``, its URI) through the
steps of every request (``calls.serve``: session, the client's roots, the error boundary),
answered by the function given."""


def serve(lowlevel: Server[Any], bus: SubscriptionBus, through: Through) -> None:
    """Serve subscriptions in both eras, each request ``through`` the steps of every request.

    The server's lifespan context must be the ``Watches`` of the run.
    """

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        uri = str(params.uri)

        async def answer() -> EmptyResult:
            watches: Watches = ctx.lifespan_context
            state, connection = connection_state(ctx)
            subscriptions: dict[str, Callable[[], None]] | None = state.get(_SUBSCRIPTIONS)
            if subscriptions is None:
                subscriptions = state[_SUBSCRIPTIONS] = {}
                if connection is not None:
                    connection.exit_stack.callback(_remove_all, subscriptions)
            if uri in subscriptions:
                return EmptyResult()
            if len(subscriptions) >= MAX_SUBSCRIPTIONS:
                raise InvalidArgument(
                    f"this client already watches {MAX_SUBSCRIPTIONS} resources, the most one client may; "
                    "unsubscribe from some first"
                )
            session = ctx.session

            async def tell(changed: str) -> None:
                await session.send_resource_updated(changed)

            subscriptions[uri] = await watches.add(uri, tell)
            return EmptyResult()

        result: EmptyResult = await through(ctx, "subscribe", uri, answer)
        return result

    async def unsubscribe(ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        state, _ = connection_state(ctx)
        remove = state.get(_SUBSCRIPTIONS, {}).pop(str(params.uri), None)
        if remove is not None:
            remove()
        return EmptyResult()

    listen_entry = lowlevel.get_request_handler("subscriptions/listen")

    async def publish(uri: str) -> None:
        await bus.publish(ResourceUpdated(uri=uri))

    async def listen(ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams) -> Any:
        assert listen_entry is not None
        wanted = list(params.notifications.resource_subscriptions or ())

        async def answer() -> Any:
            watches: Watches = ctx.lifespan_context
            if len(wanted) > MAX_SUBSCRIPTIONS:
                raise InvalidArgument(
                    f"{len(wanted)} resources in one listen; one client may watch at most {MAX_SUBSCRIPTIONS}"
                )
            removers: list[Callable[[], None]] = []
            for uri in wanted:
                try:
                    removers.append(await watches.add(uri, publish))
                except VfsError as err:
                    # The stream still honours the URI (the spec's "never fires"); say why on stderr.
                    log.warning("not watching %s: %s", uri, err)
            try:
                return await listen_entry.handler(ctx, params)
            finally:
                for remove in removers:
                    remove()

        return await through(ctx, "listen", "", answer)

    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    if listen_entry is not None:
        lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, listen)


def _remove_all(removers: dict[Any, Callable[[], None]]) -> None:
    for remove in list(removers.values()):
        remove()
    removers.clear()
