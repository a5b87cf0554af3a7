"""The stdio transport: the SDK's, but a reply goes to the wire as the bytes its serializer
made.

The SDK's writer dumps a message to ``str``, adds the newline to a copy and encodes it again
through a text layer: three more copies of every reply, each of them fresh memory the kernel
maps page by page (a third of a 10 MB read's time). Here the serializer's bytes are written
as they are, then the newline. Standard input and output are claimed as the SDK claims them
(``sdk.claimed_stdio``), so a handler's or a child's stray output still misses the wire.

Where they are pipes or sockets (as an MCP client starts a server) the event loop waits on
them, non-blocking: no worker thread hands over each line read and each reply written, a
third of a millisecond of every call. Terminals and files (and Windows) are read and written
by worker threads, as the SDK does, and keep their blocking mode.

A line the SDK's parser refuses is read again (``replies.reread``): a request whose JSON holds
a lone surrogate escape (``"\\udcc3"``, as a client names a file whose name is not valid
UTF-8) is served; a line that cannot be (a batch, too deep, a number too long, not JSON) is
answered with a JSON-RPC error, never left unanswered.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import BinaryIO, Protocol

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter
from pydantic import ValidationError

from vfs_mcp.server import replies, sdk
from vfs_mcp.server.client_logs import log

READ_CHUNK = 1 << 16


async def serve(server: MCPServer) -> None:
    """Serve ``server`` to the one client on standard input and output until it hangs up."""
    async with stdio_streams() as (read_stream, write_stream):
        lowlevel = sdk.lowlevel(server)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """The messages read from standard input, and the stream whose messages are written to
    standard output, one line each."""
    with sdk.claimed_stdio() as (stdin, stdout), _wire(stdin, stdout) as wire:
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, wire, read_in, write_in)
            tasks.start_soon(_write, write_out, wire)
            yield read_out, write_in


class _Wire(Protocol):
    def lines(self) -> AsyncIterator[bytes]: ...

    async def put(self, data: bytes) -> None: ...


@contextmanager
def _wire(stdin: BinaryIO, stdout: BinaryIO) -> Iterator[_Wire]:
    if not (_pollable(stdin) and _pollable(stdout)):
        yield _Threads(stdin, stdout)
        return
    fds = stdin.fileno(), stdout.fileno()
    blocking = [os.get_blocking(fd) for fd in fds]
    try:
        for fd in fds:
            os.set_blocking(fd, False)
        yield _Pipes(*fds)
    finally:
        for fd, mode in zip(fds, blocking, strict=True):
            with suppress(OSError):
                os.set_blocking(fd, mode)


def _pollable(stream: BinaryIO) -> bool:
    """A pipe or a socket, outside Windows: what the event loop can wait on."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Pipes:
    """Non-blocking descriptors the event loop waits on."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in, self.fd_out = fd_in, fd_out

    async def lines(self) -> AsyncIterator[bytes]:
        pending, scanned = bytearray(), 0
        while True:
            await anyio.wait_readable(self.fd_in)
            try:
                chunk = os.read(self.fd_in, READ_CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                break
            pending += chunk
            while (end := pending.find(b"\n", scanned)) >= 0:
                yield bytes(pending[: end + 1])
                del pending[: end + 1]
                scanned = 0
            scanned = len(pending)  # a long line is searched once, not again with every chunk
        if pending:
            yield bytes(pending)

    async def put(self, data: bytes) -> None:
        for part in (data, b"\n"):
            view = memoryview(part)
            while view:
                try:
                    view = view[os.write(self.fd_out, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(self.fd_out)


class _Threads:
    """Blocking streams, read and written by worker threads."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self.stdin, self.stdout = stdin, stdout

    async def lines(self) -> AsyncIterator[bytes]:
        async for line in anyio.wrap_file(self.stdin):
            yield line

    async def put(self, data: bytes) -> None:
        await anyio.to_thread.run_sync(self._put, data)

    def _put(self, data: bytes) -> None:
        self.stdout.write(data)
        self.stdout.write(b"\n")
        self.stdout.flush()


async def _read(
    wire: _Wire,
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    replies_out: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with messages:
        async for line in wire.lines():
            try:
                message = jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"), by_name=False)
            except ValidationError as error:
                served, refusals = replies.reread(error)
                if served is not None:
                    await messages.send(served)
                for refusal in refusals:
                    await replies_out.send(refusal)
                continue
            await messages.send(SessionMessage(message))


async def _write(messages: MemoryObjectReceiveStream[SessionMessage], wire: _Wire) -> None:
    async with messages:
        async for session_message in messages:
            try:
                await wire.put(_serialized(session_message.message))
            except (BrokenPipeError, ConnectionResetError):
                log.info("the client stopped reading replies; the server ends when its input does")
                break
        async for _ in messages:  # nothing waits on a reply that cannot be sent
            pass


def _serialized(message: JSONRPCMessage) -> bytes:
    if isinstance(message, JSONRPCResponse):
        try:
            return orjson.dumps({"jsonrpc": message.jsonrpc, "id": message.id, "result": message.result})
        except orjson.JSONEncodeError:
            pass
    return message.__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True)
