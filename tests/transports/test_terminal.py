"""A person at a terminal: `vfs-mcp` says what it is doing and how to stop it, and stops
quietly on Ctrl-C and SIGTERM; HTTP mode says its URL and whether a token is needed."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vfs_mcp.http import free_port

pytestmark = pytest.mark.slow


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


def stop_on_a_terminal(folder: Path, how: str) -> tuple[int, str]:
    """Start `vfs-mcp FOLDER` on a pseudo-terminal, stop it ``how``; its exit status and all it printed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the server, its stdin a terminal
        os.execv(sys.executable, [sys.executable, "-m", "vfs_mcp", str(folder)])
    try:
        out = read_until(fd, b"Ctrl-C stops")
        if how == "ctrl-c":
            os.write(fd, b"\x03")
        else:
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status), (out + read_until(fd, b"\0", 0.5)).decode(errors="replace")
            out += read_until(fd, b"\0", 0.2)
        os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"vfs-mcp did not stop on {how}: {out!r}")
    finally:
        os.close(fd)


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_on_a_terminal_it_says_what_it_serves_and_stops_quietly(tmp_path: Path, how: str) -> None:
    status, printed = stop_on_a_terminal(tmp_path, how)
    assert status == 0
    assert f"serving {tmp_path}" in printed and "MCP client on stdin/stdout" in printed
    assert "Traceback" not in printed and "KeyboardInterrupt" not in printed


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
