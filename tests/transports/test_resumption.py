"""Event streams over HTTP can be resumed: each POST stream starts with an event id and a
``retry`` hint, and a client whose connection broke during a call reconnects with
``Last-Event-ID`` and gets the reply there (vfs_mcp.transports.resumption). Nothing sent is kept for replay:
the SDK shares one store among sessions whose stream ids repeat."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp.server.streamable_http import EventMessage
from mcp_types import JSONRPCResponse
from processes import INITIALIZE

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.transports.http import http_app, serving_in_thread
from vfs_mcp.transports.resumption import RETRY_MS, StreamIds

WAIT = 60.0
"""Seconds any step may take: it proves the step happens, nothing more."""
JSON_AND_SSE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def served() -> Iterator[tuple[str, threading.Event]]:
    """A server whose tool ``held`` answers once the test lets it; its URL and that switch."""
    server = build_server(open_mounts([MountSpec("memory://resumption")]))
    release = threading.Event()

    @server.tool()
    def held() -> str:
        release.wait(WAIT)
        return "released"

    with serving_in_thread(http_app(server)) as url:
        yield url, release
    release.set()


def session(http: httpx2.Client, url: str) -> dict[str, str]:
    """Initialize a session; the headers its requests carry."""
    started = http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}, headers=JSON_AND_SSE
    )
    headers = JSON_AND_SSE | {
        "mcp-session-id": started.headers["mcp-session-id"],
        "mcp-protocol-version": INITIALIZE["protocolVersion"],
    }
    http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def events(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """Server-sent events, as field -> value, from a stream's lines."""
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
            continue
        field, _, value = line.partition(":")
        event[field] = value.removeprefix(" ")


def call(request_id: int, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments or {}},
    }


def test_a_call_stream_starts_with_an_event_id_and_a_retry_hint(served: tuple[str, threading.Event]) -> None:
    url, _ = served
    with httpx2.Client(timeout=WAIT) as http:
        headers = session(http, url)
        with http.stream("POST", url, json=call(1, "list_allowed_directories"), headers=headers) as answer:
            stream = list(events(answer.iter_lines()))
    assert stream[0] == {"id": stream[0]["id"], "retry": str(RETRY_MS), "data": ""} and stream[0]["id"]
    assert '"id":1' in stream[-1]["data"] and "memory://resumption" in stream[-1]["data"]


def test_a_broken_call_stream_is_resumed_and_the_reply_comes_on_the_new_connection(
    served: tuple[str, threading.Event],
) -> None:
    url, release = served
    with httpx2.Client(timeout=WAIT) as http:
        headers = session(http, url)
        with http.stream("POST", url, json=call(7, "held"), headers=headers) as answer:
            primed = next(events(answer.iter_lines()))["id"]
        # The connection is gone, the call goes on. Reconnect until the server has seen the old
        # stream end: till then it has no stream to hand over, and ends the new one at once.
        deadline = time.monotonic() + WAIT
        while True:
            with http.stream("GET", url, headers=headers | {"Last-Event-ID": primed}) as resumed:
                assert resumed.status_code == 200
                lines = resumed.iter_lines()
                first = next(events(lines), None)
                if first is not None:
                    assert first.get("data") == "" and first.get("id")  # primed again
                    release.set()
                    reply = json.loads(next(events(lines))["data"])
                    break
            assert time.monotonic() < deadline, "the server never handed the call's stream over"
    assert reply["id"] == 7 and reply["result"]["content"][0]["text"] == "released"


@pytest.mark.anyio
async def test_nothing_sent_is_kept_so_a_stream_id_another_session_repeats_replays_nothing() -> None:
    store, replayed = StreamIds(), []
    primed = await store.store_event("1", None)  # session A's call 1
    await store.store_event("1", JSONRPCResponse(jsonrpc="2.0", id=1, result={"secret": "A's"}))
    await store.store_event("1", JSONRPCResponse(jsonrpc="2.0", id=1, result={"secret": "B's"}))  # B's call 1

    async def send(event: EventMessage) -> None:
        replayed.append(event)

    assert await store.replay_events_after(primed, send) == "1"
    assert replayed == []
    assert await store.replay_events_after("not ours", send) is None
