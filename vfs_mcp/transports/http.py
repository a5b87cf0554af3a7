"""Streamable HTTP transport: loopback by default, bearer token required anywhere else.

``http_app`` wraps the SDK's Starlette app in one small ASGI guard that checks, before
anything else runs:
- the bearer token (constant-time comparison; never logged) → 401 with ``WWW-Authenticate``;
- the ``Origin`` header, when a browser sends one, against an allow-list → 403 (DNS
  rebinding: a web page must not reach a server on the user's loopback);
- the body's size (``BodyLimit``): over ``MAX_BODY_BYTES`` → 413, from ``Content-Length``
  before a byte of it is read, or (a chunked body) as soon as the bytes read pass it.
``stateless=True`` serves each request without a session, for replicas behind a load
balancer.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE

from vfs_mcp.server import sdk
from vfs_mcp.server.build import VfsServer
from vfs_mcp.server.replies import MAX_REQUEST_DEPTH, nesting, refused_batch
from vfs_mcp.transports.http_sessions import Admission, SessionLimits
from vfs_mcp.transports.resumption import RETRY_MS, StreamIds

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
"""Bytes of one request's body (the SDK's own limit, 4 MiB): past them, 413."""
LOOPBACK_ORIGINS = ("http://127.0.0.1", "http://localhost", "http://[::1]", "https://127.0.0.1", "https://localhost")
TOKEN_ENV = "VFS_MCP_TOKEN"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_token(token_file: str | None) -> str | None:
    """The bearer token from a file (first line) or the VFS_MCP_TOKEN environment variable."""
    if token_file:
        token = Path(token_file).read_text(encoding="utf-8").strip()
        if not token:
            raise ValueError(f"token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token (ValueError)."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"refusing to serve on {host} without a bearer token: pass --auth-token-file FILE or set {TOKEN_ENV}"
        )


def origin_allowed(origin: str, extra: Sequence[str]) -> bool:
    return any(origin == allowed or origin.startswith(allowed + ":") for allowed in (*LOOPBACK_ORIGINS, *extra))


class Guard:
    """ASGI middleware: bearer token and Origin checks in front of the MCP app."""

    def __init__(self, app: ASGIApp, token: str | None, origins: Sequence[str]) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.origins = tuple(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan events pass through
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        origin = headers.get("origin", b"").decode("latin-1")
        if origin and not origin_allowed(origin, self.origins):
            await _reply(send, 403, "403 Forbidden: origin not allowed (--allowed-origin adds one)")
            return
        if self.expected is not None:
            given = headers.get("authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await _reply(
                    send,
                    401,
                    "401 Unauthorized: missing or invalid bearer token; send the server's token "
                    "(vfs-mcp call: --auth-token-file FILE)",
                    [(b"www-authenticate", b'Bearer realm="vfs-mcp"')],
                )
                return
        await _ended(self.app, scope, receive, send)


async def _ended(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app``; a streamed response it leaves open is ended. The SDK returns from an event
    stream without its last chunk when the server stops (Ctrl-C): the client then sees the
    stream end, not a broken connection, and the server logs no error."""
    started = ended = False

    async def watched(message: Message) -> None:
        nonlocal started, ended
        if message["type"] == "http.response.start":
            started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            ended = True
        await send(message)

    await app(scope, receive, watched)
    if started and not ended:
        with contextlib.suppress(OSError, RuntimeError):  # the client may be gone already
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 before it is held:
    refused from its ``Content-Length`` unread, or counted as it arrives (a chunked body) and
    refused once the count passes the limit. The app behind then reads that the client is gone,
    and what it would answer is dropped. Behind it, nothing can hold more than ``limit`` bytes
    of a body (the SDK's own check comes after the middleware that looks at a body's start)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        received, refused, started = 0, False, False

        async def counted() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                received += len(message.get("body", b""))
                if received > self.limit:
                    refused = True
                    if not started:
                        await self._refuse(send)
            return {"type": "http.disconnect"} if refused else message

        async def answered(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 was the answer
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted, answered)

    async def _refuse(self, send: Send) -> None:
        await _reply(send, 413, f"413: a request body is at most {self.limit} bytes")


class BatchRefusal:
    """ASGI middleware: a JSON-RPC batch (a POST whose body is a JSON array) is answered before
    the SDK sees it, with an error for each request in it under its id, as a JSON array
    (``replies.refused_batch``). The SDK would answer one error without an id, and a client
    would wait for the others forever. Other requests pass on, their body as it came. It
    stands behind ``BodyLimit``: a body it reads is at most that many bytes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, more, blank = bytearray(), True, 0
        while more and blank == len(body):  # as far as the first byte that is not blank
            message = await receive()
            if message["type"] != "http.request":
                return  # the client is gone, or its body was too big (``BodyLimit`` answered)
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
            fresh = body[blank:]  # all before it is blank: only what came is looked at
            blank += len(fresh) - len(fresh.lstrip())
        if not body[blank:].startswith(b"["):
            await self.app(scope, _replaying(bytes(body), more, receive), send)
            return
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
        try:  # a batch too deep or not JSON at all is answered as one holding no request
            items = json.loads(body) if nesting(bytes(body)) <= MAX_REQUEST_DEPTH else []
        except ValueError:
            items = []
        refusals = refused_batch(items, "per POST")
        payload = b"[" + b",".join(r.model_dump_json(by_alias=True).encode() for r in refusals) + b"]"
        await _send_json(send, 200, payload)


def _replaying(body: bytes, more: bool, receive: Receive) -> Receive:
    """``receive`` with what was read of the body handed over again first."""
    first: Message | None = {"type": "http.request", "body": body, "more_body": more}

    async def again() -> Message:
        nonlocal first
        if first is None:
            return await receive()
        message, first = first, None
        return message

    return again


async def _reply(send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """A refusal as a JSON-RPC error, which MCP clients show as it is (a bare status they cannot)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
    await _send_json(send, status, json.dumps(body).encode(), headers)


async def _send_json(send: Send, status: int, payload: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": payload})


def http_app(
    server: MCPServer,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    origins: Sequence[str] = (),
    stateless: bool = False,
    sessions: SessionLimits | None = None,
) -> ASGIApp:
    """The guarded streamable-HTTP app serving ``server`` at ``/mcp``; ``sessions`` bounds the
    sessions it holds (``vfs_mcp.transports.http_sessions``; the defaults when None)."""
    check_bind(host, token)
    if isinstance(server, VfsServer):
        server.many_clients = True  # no session state shared between HTTP clients (vfs_mcp.sessions)
        server.stateless = stateless
    # Event ids prime each stream, so a client reconnects a broken one (vfs_mcp.transports.resumption);
    # a stateless server has no session to carry a stream over to.
    app: ASGIApp = server.streamable_http_app(
        stateless_http=stateless,
        host=host,
        max_sessions=None,
        event_store=None if stateless else StreamIds(),
        retry_interval=None if stateless else RETRY_MS,
    )
    if not stateless:
        app = Admission(app, sdk.lowlevel(server).session_manager, sessions or SessionLimits(), _busy)
    return Guard(BodyLimit(BatchRefusal(app)), token, origins)


async def _busy(send: Send, message: str) -> None:
    await _reply(send, 503, message, [(b"retry-after", b"1")])


def serve(app: ASGIApp, host: str, port: int) -> None:
    """Run ``app`` with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving_in_thread(app: ASGIApp, host: str = "127.0.0.1", port: int | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a background thread; yields the MCP endpoint URL.

    For tests, benchmarks and embedding: the server stops when the block ends.
    """
    import uvicorn

    port = port or free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, name="vfs-mcp-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the HTTP server did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
