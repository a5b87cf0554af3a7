"""The stdio transport: the SDK's, but a reply goes to the wire as the bytes its serializer
made.

The SDK's writer dumps a message to ``str``, adds the newline to a copy and encodes it again
through a text layer: three more copies of every reply, each of them fresh memory the kernel
maps page by page (a third of a 10 MB read's time). Here the serializer's bytes are written
as they are, then the newline. Standard input and output are claimed as the SDK claims them
(``sdk.claimed_stdio``), so a handler's or a child's stray output still misses the wire.

A line the SDK's parser refuses is read again (``replies.reread``): a request whose JSON holds
a lone surrogate escape (``"\\udcc3"``, as a client names a file whose name is not valid
UTF-8) is served; a line that cannot be (a batch, too deep, a number too long, not JSON) is
answered with a JSON-RPC error, never left unanswered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import BinaryIO

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter
from pydantic import ValidationError

from vfs_mcp import replies, sdk


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """The messages read from standard input, and the stream whose messages are written to
    standard output, one line each."""
    with sdk.claimed_stdio() as (stdin, stdout):
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, anyio.wrap_file(stdin), read_in, write_in)
            tasks.start_soon(_write, write_out, stdout)
            yield read_out, write_in


async def _read(
    stdin: anyio.AsyncFile[bytes],
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    replies_out: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with messages:
        async for line in stdin:
            try:
                message = jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"), by_name=False)
            except ValidationError as error:
                served, refusal = replies.reread(error)
                if served is not None:
                    await messages.send(served)
                if refusal is not None:
                    await replies_out.send(refusal)
                continue
            await messages.send(SessionMessage(message))


async def _write(messages: MemoryObjectReceiveStream[SessionMessage], stdout: BinaryIO) -> None:
    def put(data: bytes) -> None:
        stdout.write(data)
        stdout.write(b"\n")
        stdout.flush()

    async with messages:
        async for session_message in messages:
            await anyio.to_thread.run_sync(put, _serialized(session_message.message))


def _serialized(message: JSONRPCMessage) -> bytes:
    if isinstance(message, JSONRPCResponse):
        try:
            return orjson.dumps({"jsonrpc": message.jsonrpc, "id": message.id, "result": message.result})
        except orjson.JSONEncodeError:
            pass
    return message.__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True)
