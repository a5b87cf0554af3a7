"""A loopback HTTP/1.1 proxy that adds latency to every request and records its request line.

It stands between an S3 client and moto's server so benchmarks see a network round trip
(moto on loopback answers in a few milliseconds, hiding what concurrency buys) and can
count requests by kind. Requests are parsed only as far as their head and ``Content-Length``
body, which is all the benchmark's reads send; responses are relayed as raw bytes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LatencyProxy:
    """Forwards ``127.0.0.1:<port>`` to ``upstream``, holding each request ``delay`` seconds first."""

    def __init__(self, upstream_host: str, upstream_port: int, delay: float) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.delay = delay
        self.request_lines: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="latency-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.url = ""

    def start(self) -> str:
        """Listen on a free loopback port; returns the proxy's URL."""
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._serve, "127.0.0.1", 0))
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def stop(self) -> None:
        async def shut_down() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()

        self._call(shut_down())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def reset(self) -> None:
        self.request_lines.clear()

    def count(self, kind: Callable[[str], bool] = lambda line: True) -> int:
        return sum(1 for line in list(self.request_lines) if kind(line))

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            upstream_in, upstream_out = await asyncio.open_connection(*self.upstream)
            replies = asyncio.create_task(_relay(upstream_in, client_out))
            try:
                while head := await _read_head(client_in):
                    body = await client_in.readexactly(_body_length(head))
                    self.request_lines.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
                    await asyncio.sleep(self.delay)
                    upstream_out.write(head + body)
                    await upstream_out.drain()
            finally:
                upstream_out.close()
                replies.cancel()
                await asyncio.gather(replies, return_exceptions=True)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client or the server hung up mid-request, or the proxy is stopping
        finally:
            client_out.close()
            self._connections.discard(task)


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    """The next request's line and headers, or b"" once the client has closed the connection."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise
        return b""


def _body_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"transfer-encoding":
            raise NotImplementedError("chunked request bodies are not relayed; upload around the proxy")
        if name == b"content-length":
            return int(value)
    return 0


async def _relay(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while chunk := await source.read(1 << 16):
        sink.write(chunk)
        await sink.drain()
    sink.close()
