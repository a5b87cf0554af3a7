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

A line is parsed by ``json`` (its strings made once; pydantic's JSON parse held a request three
times over) and checked by the SDK's models; one that fails is read again by the SDK's parser,
then ``replies.reread``: a request whose JSON holds a lone surrogate escape (``"\\udcc3"``, as a
client names a file whose name is not valid UTF-8) is served; a line that cannot be (a batch,
too deep, a number too long, not JSON) is answered with a JSON-RPC error, never left unanswered.
A line longer than any request needs (``line_limit``: twice the largest write, and 1 MiB) is
never held: it is let go as it comes, but for its ends, and answered with an error under its id
(``replies.refused_line``).
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import BinaryIO, Protocol, cast

try:
    import fcntl
except ImportError:  # Windows: served by threads, never widened
    fcntl = None  # type: ignore[assignment]

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter
from pydantic import ValidationError

from vfs_mcp.server import replies, sdk
from vfs_mcp.server.client_logs import log
from vfs_mcp.settings import Settings

READ_CHUNK = 1 << 16
LINE_SLACK = 1 << 20
"""Bytes of a request line beside what it carries to write."""
ENDS = 4096
"""Bytes kept of each end of a line too long to hold: where a client writes the request's id."""


def line_limit(settings: Settings | None) -> int:
    """Bytes of one request line: twice the largest write (its text, JSON-escaped) and ``LINE_SLACK``."""
    return 2 * (settings or Settings()).max_write_bytes + LINE_SLACK


async def serve(server: MCPServer) -> None:
    """Serve ``server`` to the one client on standard input and output until it hangs up."""
    async with stdio_streams(line_limit(getattr(server, "vfs_settings", None))) as (read_stream, write_stream):
        lowlevel = sdk.lowlevel(server)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


@asynccontextmanager
async def stdio_streams(
    limit: int,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """The messages read from standard input (lines of at most ``limit`` bytes), and the stream
    whose messages are written to standard output, one line each."""
    with sdk.claimed_stdio() as (stdin, stdout), _wire(stdin, stdout) as wire:
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, wire, _Lines(limit), read_in, write_in)
            tasks.start_soon(_write, write_out, wire)
            yield read_out, write_in


class _Wire(Protocol):
    def chunks(self) -> AsyncIterator[bytes]: ...

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
        _widen(fds[1])
        yield _Pipes(*fds)
    finally:
        for fd, mode in zip(fds, blocking, strict=True):
            with suppress(OSError):
                os.set_blocking(fd, mode)


PIPE_BYTES = 1 << 20
"""What the reply pipe is asked to hold (Linux gives 64 KiB; an unprivileged process may ask for
up to ``/proc/sys/fs/pipe-max-size``, 1 MiB by default): a 10 MB reply in 10 writes, not 160,
each waiting for the client to read."""


def _widen(fd: int) -> None:
    """Ask the pipe ``fd`` writes to for ``PIPE_BYTES`` (where there is such a request, and a pipe)."""
    widen = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if widen is not None and stat.S_ISFIFO(os.fstat(fd).st_mode):
        with suppress(OSError):
            fcntl.fcntl(fd, widen, PIPE_BYTES)


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

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            await anyio.wait_readable(self.fd_in)
            try:
                chunk = os.read(self.fd_in, READ_CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                break
            yield chunk

    async def put(self, data: bytes) -> None:
        # The line and its end in one write (not copied together): the client wakes once, to a whole line.
        try:
            done = os.writev(self.fd_out, (data, b"\n"))
        except BlockingIOError:
            done = 0
        if done > len(data):
            return
        for part in (memoryview(data)[done:], b"\n"):
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

    async def chunks(self) -> AsyncIterator[bytes]:
        read = cast(io.BufferedIOBase, self.stdin).read1  # what has come, up to a chunk: a terminal's line
        while chunk := await anyio.to_thread.run_sync(read, READ_CHUNK):
            yield chunk

    async def put(self, data: bytes) -> None:
        await anyio.to_thread.run_sync(self._put, data)

    def _put(self, data: bytes) -> None:
        self.stdout.write(data)
        self.stdout.write(b"\n")
        self.stdout.flush()


@dataclass
class _LongLine:
    """A line too long to hold: its first and last bytes, and its size."""

    head: bytes
    tail: bytes = b""
    size: int = 0

    def add(self, data: bytes | bytearray) -> None:
        self.size += len(data)
        self.tail = (self.tail + data[-ENDS:])[-ENDS:]


class _Lines:
    """Lines cut from what standard input gives, none of more than ``limit`` bytes held: a
    longer one is let go as it comes, but for its ends (``_LongLine``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending = bytearray()
        self.scanned = 0  # bytes at the start of ``pending`` known to hold no newline
        self.dropped: _LongLine | None = None

    def cut(self, chunk: bytes) -> Iterator[bytearray | _LongLine]:
        """The lines ``chunk`` ends."""
        if self.dropped is not None:  # the rest of a line too long to hold
            end = chunk.find(b"\n")
            self.dropped.add(chunk if end < 0 else chunk[: end + 1])
            if end < 0:
                return
            yield self.dropped
            self.dropped, chunk = None, chunk[end + 1 :]
        self.pending += chunk
        while (end := self.pending.find(b"\n", self.scanned)) >= 0:
            if end + 1 == len(self.pending):  # the usual case: the line is all there is
                line, self.pending = self.pending, bytearray()
            else:
                line = self.pending[: end + 1]
                del self.pending[: end + 1]
            self.scanned = 0
            yield line if len(line) <= self.limit else self._long(line)
        self.scanned = len(self.pending)  # a long line is searched once, not again with every chunk
        if len(self.pending) > self.limit:
            self.dropped, self.pending, self.scanned = self._long(self.pending), bytearray(), 0

    def end(self) -> Iterator[bytearray | _LongLine]:
        """The last line, when the input ends without a newline."""
        if self.dropped is not None:
            yield self.dropped
        elif self.pending:
            yield self.pending

    @staticmethod
    def _long(data: bytearray) -> _LongLine:
        line = _LongLine(bytes(data[:ENDS]))
        line.add(data)
        return line


async def _read(
    wire: _Wire,
    lines: _Lines,
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    replies_out: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with messages:
        async for chunk in wire.chunks():
            for line in lines.cut(chunk):
                await _take(line, lines.limit, messages, replies_out)
                del line  # not held while the request is served
        for line in lines.end():
            await _take(line, lines.limit, messages, replies_out)


async def _take(
    line: bytearray | _LongLine,
    limit: int,
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    replies_out: MemoryObjectSendStream[SessionMessage],
) -> None:
    """One line read: its message to serve, or the errors that answer it."""
    if isinstance(line, _LongLine):
        await replies_out.send(replies.refused_line(line.head, line.tail, line.size, limit))
        return
    try:
        text = line.decode()
    except UnicodeDecodeError:
        text = line.decode("utf-8", "replace")
    else:
        line.clear()  # the request is held once, as text, while it is read
        try:  # json makes each string once: pydantic's own JSON parse held a request twice more
            message = jsonrpc_message_adapter.validate_python(json.loads(text, parse_constant=_refused), by_name=False)
        except (ValueError, RecursionError):  # ValidationError too
            pass
        else:
            await messages.send(SessionMessage(message))
            return
    try:  # the SDK's parse, whose errors ``reread`` knows: lone surrogates, not a message, not JSON
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as error:
        served, refusals = replies.reread(error)
        if served is not None:
            await messages.send(served)
        for refusal in refusals:
            await replies_out.send(refusal)
        return
    await messages.send(SessionMessage(message))


def _refused(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


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
