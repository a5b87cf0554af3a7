"""A person at a terminal: `vfs-mcp` says what it is doing and how to stop it, and stops
quietly on Ctrl-C and SIGTERM, over stdio and HTTP, once it has answered (the signal comes
as soon as the answer does, wherever the server then is: writing, or back waiting on the
terminal); HTTP mode says its URL and whether a token is needed."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import INITIALIZE, wait_for_port

from vfs_mcp.transports.http import free_port

pytestmark = pytest.mark.slow

STOP_SECONDS = 30.0
"""From the key press (or signal) to the process gone, at most: a deadline for a server that never
stops (waiting for the thread blocked on its input), not a measure of how fast it stops (a
fraction of a second; a loaded machine stretches it)."""
INITIALIZE_LINE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}).encode()
PING_LINE = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
"""Answered once the server serves: after it, the server waits for the client's next message."""


def read_until(fd: int, marker: bytes, seconds: float = 30.0) -> bytes:
    out = b""
    deadline = time.monotonic() + seconds
    while marker not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out


def stopped_within(pid: int, seconds: float) -> int | None:
    """The exit status of ``pid`` if it ends within ``seconds``, else None."""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)  # polling for an exit: os.waitpid has no timeout


def stop_on_a_terminal(folder: Path, how: str) -> tuple[int | None, str]:
    """Start `vfs-mcp FOLDER` on a pseudo-terminal, have it answer a request and a ping (its
    reader then waits on the terminal for the next line), then stop it ``how``: its exit status
    (None if still running after STOP_SECONDS) and all it printed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the server, its stdin a terminal
        os.execv(sys.executable, [sys.executable, "-m", "vfs_mcp", str(folder)])
    try:
        out = read_until(fd, b"Ctrl-C stops")
        os.write(fd, INITIALIZE_LINE + b"\n")
        out += read_until(fd, b'"serverInfo"')
        assert b'"serverInfo"' in out, f"vfs-mcp did not answer on the terminal: {out!r}"
        os.write(fd, PING_LINE + b"\n")
        out += read_until(fd, b'"id":2')
        assert b'"id":2' in out, f"vfs-mcp did not answer the ping: {out!r}"
        if how == "ctrl-c":
            os.write(fd, b"\x03")  # the terminal turns it into SIGINT for the server
        else:
            os.kill(pid, signal.SIGTERM)
        status = stopped_within(pid, STOP_SECONDS)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        return status, (out + read_until(fd, b"\0", 0.2)).decode(errors="replace")
    finally:
        os.close(fd)


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_on_a_terminal_it_says_what_it_serves_and_stops_quietly_once_serving(tmp_path: Path, how: str) -> None:
    status, printed = stop_on_a_terminal(tmp_path, how)
    assert status == 0, f"vfs-mcp did not exit 0 within {STOP_SECONDS:g} s of {how} (status {status}): {printed}"
    assert f"serving {tmp_path}" in printed and "MCP client on stdin/stdout" in printed
    assert "Traceback" not in printed and "KeyboardInterrupt" not in printed


def http_exchange(port: int, request: bytes, marker: bytes) -> tuple[socket.socket, bytes]:
    """Send a raw HTTP request on a new connection; the connection and what came back up to ``marker``."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn.sendall(request)
    answer = b""
    while marker not in answer:
        chunk = conn.recv(65536)
        assert chunk, f"the connection closed before {marker!r}: {answer!r}"
        answer += chunk
    return conn, answer


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_over_http_it_stops_quietly_once_serving_with_a_stream_open(tmp_path: Path, how: signal.Signals) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vfs_mcp", str(tmp_path), "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    host = b"Host: 127.0.0.1:%d\r\n" % port
    status: int | None = None
    try:
        wait_for_port(port, proc, "vfs-mcp")
        post, answer = http_exchange(
            port,
            b"POST /mcp HTTP/1.1\r\n%sContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
            % (host, len(INITIALIZE_LINE), INITIALIZE_LINE),
            b'"serverInfo"',
        )
        session = answer.split(b"mcp-session-id: ", 1)[1].split(b"\r\n", 1)[0]
        # The event stream a client keeps open for the server's notifications.
        stream, _ = http_exchange(
            port,
            b"GET /mcp HTTP/1.1\r\n%sAccept: text/event-stream\r\nmcp-session-id: %s\r\n"
            b"mcp-protocol-version: %s\r\n\r\n" % (host, session, INITIALIZE["protocolVersion"].encode()),
            b"200 OK",
        )
        # Another request answered while the stream is open: serving, the stream held by the server.
        ping, _ = http_exchange(
            port,
            b"POST /mcp HTTP/1.1\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            b"mcp-session-id: %s\r\nmcp-protocol-version: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (host, session, INITIALIZE["protocolVersion"].encode(), len(PING_LINE), PING_LINE),
            b'"id":2',
        )
        with post, stream, ping:
            proc.send_signal(how)
            try:
                status = proc.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                status = None
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        with proc.stderr:
            printed = proc.stderr.read().decode(errors="replace")
    assert status == 0, f"vfs-mcp --transport http did not exit 0 within {STOP_SECONDS:g} s of {how.name}: {printed}"
    assert "Traceback" not in printed and "ERROR" not in printed, printed


def test_http_mode_logs_its_url_and_whether_a_token_is_needed(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vfs_mcp", str(tmp_path), "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    with proc.stderr:
        try:
            line = proc.stderr.readline().decode()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert f"http://127.0.0.1:{port}/mcp" in line and "no token (loopback only)" in line
