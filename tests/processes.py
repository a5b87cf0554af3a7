"""Real processes for the tests that need them: `vfs-mcp` over stdio, `vfs-mcp --transport http`
replicas, and HAProxy in front of them.

HAProxy comes from Debian's packages, unpacked (not installed) into the test cache
(``~/.cache/vfs-mcp-tests/haproxy``): ``apt-get download`` of it and the libraries a
minimal Debian lacks, then ``dpkg -x``. No root, nothing outside the cache. Where apt or
dpkg cannot be had, ``emulators.Unavailable`` says why and the tests skip with that reason.
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from emulators import Unavailable, _locked, cache_dir
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from vfs_mcp.transports.http import free_port

HAPROXY_PACKAGES = ("haproxy", "liblua5.3-0", "libopentracing-c-wrapper0", "libopentracing1")
START_TIMEOUT = 60.0
INITIALIZE: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}
"""The params of a raw client's ``initialize`` request."""


def stdio_params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """``vfs-mcp ARGS`` over stdio, as a client starts it (the SDK passes only HOME, PATH and a
    few more of this process's variables), recording its changes where this run's servers do."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "vfs_mcp", *args],
        env={"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"], **(env or {})},
    )


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert proc.poll() is None, f"{what} exited at start"
            assert time.monotonic() < deadline, f"{what} did not start in {START_TIMEOUT:.0f} s"
            time.sleep(0.1)


@contextmanager
def vfs_mcp_http(root: str, env: dict[str, str], *flags: str) -> Iterator[int]:
    """One `vfs-mcp ROOT --transport http` process on a free loopback port; its port."""
    with vfs_mcp_http_process(root, env, *flags) as (port, _):
        yield port


@contextmanager
def vfs_mcp_http_process(root: str, env: dict[str, str], *flags: str) -> Iterator[tuple[int, int]]:
    """``vfs_mcp_http``: its port and its process id."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vfs_mcp", root, "--transport", "http", "--port", str(port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    try:
        wait_for_port(port, proc, "vfs-mcp")
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def peak_rss_mb(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far (``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


@dataclass(frozen=True)
class Limited:
    """How a child process of ``run_limited`` ended, and what it cost."""

    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float


def run_limited(
    args: list[str], cpu_seconds: int = 30, wall_seconds: float = 600, env: dict[str, str] | None = None
) -> Limited:
    """``python ARGS`` in a child process that the kernel stops after ``cpu_seconds`` of CPU
    (``RLIMIT_CPU``: a call that would run for minutes fails the test, never hangs it; killed
    after ``wall_seconds`` too); its output and its CPU time (``wait4``)."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))

    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            [sys.executable, *args], stdout=subprocess.PIPE, stderr=errors, preexec_fn=limited, env=env
        )
        timer = threading.Timer(wall_seconds, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            out = proc.stdout.read()
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        errors.seek(0)
        err = errors.read()
    return Limited(
        proc.returncode,
        out.decode(errors="replace"),
        err.decode(errors="replace"),
        usage.ru_utime + usage.ru_stime,
    )


class RawStdio:
    """`vfs-mcp FOLDER [ARGS]` over stdio, driven line by line with raw JSON-RPC (what an SDK
    client would refuse to send), initialized; ``proc`` is the server process."""

    def __init__(self, folder: Path | str, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vfs_mcp", str(folder), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        self.next_id = 0
        self.request("initialize", INITIALIZE)
        self.exchange(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', answered=False)

    def exchange(self, line: bytes, seconds: float = 120.0, answered: bool = True) -> dict[str, Any]:
        """Send one line; the answer (within ``seconds``) when one is due."""
        return self.stream([line], seconds, answered)

    def stream(self, pieces: Iterable[bytes], seconds: float = 120.0, answered: bool = True) -> dict[str, Any]:
        """Send one line written a piece at a time (never held whole here); the answer (within
        ``seconds``) when one is due."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        first = b""
        for piece in pieces:
            first = first or piece
            self.proc.stdin.write(piece)
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()
        if not answered:
            return {}
        ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
        assert ready, f"no answer within {seconds:g} s to {first[:80]!r}"
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return self.exchange(json.dumps(message).encode())

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def start_call(self, tool: str, **arguments: Any) -> None:
        """Send a call and go on without its answer."""
        self.next_id += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        self.exchange(json.dumps(message).encode(), answered=False)

    def __enter__(self) -> RawStdio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        with self.proc:
            pass


@asynccontextmanager
async def mcp_client(url: str, token: str | None = None, mode: str = "legacy") -> AsyncIterator[Client]:
    """An MCP client of the server at ``url``; with ``token``, every request carries it."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


def haproxy() -> tuple[Path, dict[str, str]]:
    """The haproxy binary and the environment it runs in, unpacked once into the cache."""
    folder = cache_dir() / "haproxy"
    binary = folder / "root" / "usr" / "sbin" / "haproxy"
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise Unavailable("HAProxy comes from Debian's packages, and apt-get or dpkg is missing")
    with _locked(folder.parent / ".haproxy.lock"):
        if not binary.exists():
            folder.mkdir(parents=True, exist_ok=True)
            got = subprocess.run(
                ["apt-get", "download", *HAPROXY_PACKAGES], cwd=folder, capture_output=True, text=True, timeout=300
            )
            debs = sorted(folder.glob("*.deb"))
            if got.returncode != 0 or len(debs) < len(HAPROXY_PACKAGES):
                raise Unavailable(f"apt-get download haproxy failed: {got.stderr.strip()[-300:]}")
            for deb in debs:
                subprocess.run(["dpkg", "-x", str(deb), str(folder / "root")], check=True, timeout=120)
                deb.unlink()
    libraries = sorted({str(p.parent) for p in (folder / "root").rglob("*.so*")})
    env = {**os.environ, "LD_LIBRARY_PATH": ":".join([*libraries, os.environ.get("LD_LIBRARY_PATH", "")])}
    done = subprocess.run([str(binary), "-v"], capture_output=True, text=True, env=env, timeout=30)
    if done.returncode != 0:
        raise Unavailable(f"the unpacked haproxy does not run: {done.stderr.strip()[-300:]}")
    return binary, env


def haproxy_config(port: int, replicas: list[int], sticky: bool) -> str:
    """Round robin over ``replicas``; ``sticky``: a session stays on the replica that created it."""
    stick = (
        "  stick-table type string len 64 size 10k expire 1h\n"
        "  stick match req.hdr(mcp-session-id)\n"
        "  stick store-response res.hdr(mcp-session-id)\n"
        if sticky
        else ""
    )
    servers = "".join(f"  server r{i} 127.0.0.1:{p}\n" for i, p in enumerate(replicas))
    return (
        "defaults\n  mode http\n  timeout connect 5s\n  timeout client 300s\n  timeout server 300s\n"
        f"frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n"
        f"backend replicas\n  balance roundrobin\n{stick}{servers}"
    )


@contextmanager
def load_balancer(replicas: list[int], sticky: bool, folder: Path) -> Iterator[int]:
    """HAProxy on a free loopback port in front of ``replicas``; its port."""
    binary, env = haproxy()
    port = free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(port, replicas, sticky))
    proc = subprocess.Popen(
        [str(binary), "-f", str(config), "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        wait_for_port(port, proc, "haproxy")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
