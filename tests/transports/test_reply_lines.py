"""Each reply leaves the stdio transport as one whole line, however much of it the pipe takes
at a time: a reply written with its newline in one ``writev``, and the rest (of the reply or
of its newline) as the pipe drains."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from vfs_mcp.transports import stdio
from vfs_mcp.transports.stdio import _Pipes

F_GETPIPE_SZ = 1032  # Linux


@pytest.mark.skipif(sys.platform != "linux", reason="F_GETPIPE_SZ is Linux's")
@pytest.mark.parametrize("extra", [-1, 0, 1, 100_000])
def test_a_reply_arrives_whole_with_its_newline_wherever_the_pipe_cuts_it(extra: int) -> None:
    read_end, write_end = os.pipe()
    capacity = fcntl.fcntl(write_end, F_GETPIPE_SZ)
    reply = bytes(range(97, 123)) * ((capacity + extra) // 26 + 1)
    reply = reply[: capacity + extra]  # -1: the newline fits; 0: the pipe is full before it; more: drained
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 1 << 16):
            received.extend(chunk)

    os.set_blocking(write_end, False)
    reader = threading.Thread(target=drain)

    async def write_twice() -> None:
        pipes = _Pipes(-1, write_end)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pipes.put, reply)
            await anyio.wait_all_tasks_blocked()  # the reply has filled the pipe (or all of it is in)
            reader.start()
        await pipes.put(b"second")

    try:
        anyio.run(write_twice)
    finally:
        os.close(write_end)
    reader.join()
    os.close(read_end)

    assert bytes(received) == reply + b"\n" + b"second\n"


@pytest.mark.skipif(sys.platform != "linux", reason="F_GETPIPE_SZ is Linux's")
def test_a_server_over_pipes_widens_its_reply_pipe(tmp_path: Path) -> None:
    # 64 KiB a write: a 10 MB reply waited 160 times for the client to read.
    most = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}
    with subprocess.Popen(
        [sys.executable, "-m", "vfs_mcp", str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        try:
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            assert b'"id":1' in server.stdout.readline()
            widened = fcntl.fcntl(server.stdout.fileno(), F_GETPIPE_SZ)
        finally:
            server.kill()

    assert widened == min(stdio.PIPE_BYTES, most)
