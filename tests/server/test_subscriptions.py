"""Resource subscriptions: a subscribed file that changes gives ``notifications/resources/updated``.

Through 2025-11-25 with ``resources/subscribe``; on 2026-07-28 with a ``subscriptions/listen``
stream. Local files are watched (watchfiles), S3 and memory files polled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from conftest import Sandbox
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import ResourceUpdatedNotification

from vfs_mcp.server.build import VfsServer
from vfs_mcp.server.resources import base_uri
from vfs_mcp.server.watch import MAX_SUBSCRIPTIONS

pytestmark = pytest.mark.anyio

POLL = 0.05
WAIT = 10.0  # generous: a loaded machine may be slow to deliver a file event


def uri(sandbox: Sandbox, rel: str) -> str:
    return f"{base_uri(sandbox.mount).rstrip('/')}/{rel}"


class Updates:
    """The resource-updated notifications a client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    async def handler(self, message: IncomingMessage) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.add(str(message.params.uri))

    def add(self, uri: str) -> None:
        self.uris.append(uri)
        self._arrived.set()
        self._arrived = anyio.Event()

    async def wait_for(self, uri: str) -> None:
        with anyio.fail_after(WAIT):
            while uri not in self.uris:
                await self._arrived.wait()


@asynccontextmanager
async def subscribed(server: VfsServer, mode: str, uris: list[str]) -> AsyncIterator[Updates]:
    """A client of ``server`` subscribed to ``uris`` in either era."""
    updates = Updates()
    async with Client(server, mode=mode, message_handler=updates.handler) as client:
        if mode == "legacy":
            for one in uris:
                with pytest.warns(MCPDeprecationWarning):
                    await client.subscribe_resource(one)
            yield updates
            return
        async with client.listen(resource_subscriptions=uris) as stream, anyio.create_task_group() as tg:

            async def collect() -> None:
                async for event in stream:
                    updates.add(str(getattr(event, "uri", "")))

            tg.start_soon(collect)
            yield updates
            tg.cancel_scope.cancel()


async def until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT):
        while not condition():
            await anyio.sleep(0.01)


def server_of(sandbox: Sandbox, **settings: Any) -> VfsServer:
    server = sandbox.server(poll_interval=POLL, **settings)
    assert isinstance(server, VfsServer)
    return server


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_subscribed_file_changed_behind_the_server_is_announced(sandbox: Sandbox, mode: str) -> None:
    sandbox.put("watched.txt", "one")
    sandbox.put("quiet.txt", "one")
    server = server_of(sandbox)
    async with subscribed(server, mode, [uri(sandbox, "watched.txt")]) as updates:
        assert server.watches is not None
        assert server.watches.uris == [uri(sandbox, "watched.txt")]
        # no wait: the subscription is answered once the file's version to compare with is taken
        sandbox.put("quiet.txt", "two")
        sandbox.put("watched.txt", "two, longer")
        await updates.wait_for(uri(sandbox, "watched.txt"))
    assert set(updates.uris) == {uri(sandbox, "watched.txt")}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_write_through_the_server_is_announced_and_watches_end_with_the_session(
    local_sandbox: Sandbox, mode: str
) -> None:
    sandbox = local_sandbox
    sandbox.put("doc.txt", "v1")
    server = server_of(sandbox)
    async with subscribed(server, mode, [uri(sandbox, "doc.txt")]) as updates:
        watches = server.watches
        assert watches is not None
        async with Client(server, mode=mode) as writer:  # an atomic write: temp file, then rename
            await writer.call_tool("write_file", {"path": sandbox.path("doc.txt"), "content": "v2"})
        await updates.wait_for(uri(sandbox, "doc.txt"))
    if mode == "auto":
        await until(lambda: watches.uris == [])  # the listen stream's end unsubscribes
    assert watches.uris == []
    assert server.watches is None or server.watches is not watches


async def test_unsubscribing_stops_the_announcements_legacy(local_sandbox: Sandbox) -> None:
    sandbox = local_sandbox
    sandbox.put("a.txt", "1")
    sandbox.put("b.txt", "1")
    server = server_of(sandbox)
    updates = Updates()
    async with Client(server, mode="legacy", message_handler=updates.handler) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(uri(sandbox, "a.txt"))
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(uri(sandbox, "b.txt"))
        with pytest.warns(MCPDeprecationWarning):
            await client.unsubscribe_resource(uri(sandbox, "a.txt"))
        assert server.watches is not None and server.watches.uris == [uri(sandbox, "b.txt")]
        sandbox.put("a.txt", "2")
        sandbox.put("b.txt", "2")
        await updates.wait_for(uri(sandbox, "b.txt"))
    assert uri(sandbox, "a.txt") not in updates.uris


async def test_subscribing_outside_the_jail_is_refused_legacy(local_sandbox: Sandbox) -> None:
    server = server_of(local_sandbox)
    async with Client(server, mode="legacy") as client:
        for attempt in (
            (local_sandbox.outside / "secret.txt").as_uri(),
            uri(local_sandbox, "../outside/secret.txt"),
        ):
            with pytest.warns(MCPDeprecationWarning), pytest.raises(MCPError, match="ACCESS_DENIED"):
                await client.subscribe_resource(attempt)
        assert server.watches is not None and server.watches.uris == []


async def test_a_listen_stream_never_watches_outside_the_jail(local_sandbox: Sandbox) -> None:
    server = server_of(local_sandbox)
    secret = local_sandbox.outside / "secret.txt"
    async with subscribed(server, "auto", [secret.as_uri()]):
        assert server.watches is not None and server.watches.uris == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_server_advertises_subscriptions(local_sandbox: Sandbox, mode: str) -> None:
    async with Client(local_sandbox.server(), mode=mode) as client:
        resources = client.server_capabilities.resources
    assert resources is not None and resources.subscribe


async def test_one_client_may_watch_at_most_a_bounded_number_of_resources_legacy(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    for n in range(MAX_SUBSCRIPTIONS + 1):
        box.put(f"f{n}.txt", "x")
    async with Client(server_of(box), mode="legacy") as client:
        with pytest.warns(MCPDeprecationWarning):
            for n in range(MAX_SUBSCRIPTIONS):
                await client.subscribe_resource(uri(box, f"f{n}.txt"))
            with pytest.raises(MCPError, match=f"already watches {MAX_SUBSCRIPTIONS} resources"):
                await client.subscribe_resource(uri(box, f"f{MAX_SUBSCRIPTIONS}.txt"))
            await client.unsubscribe_resource(uri(box, "f0.txt"))
            await client.subscribe_resource(uri(box, f"f{MAX_SUBSCRIPTIONS}.txt"))
