"""A ``vfs-mcp`` process over stdio and the smallest JSON-RPC client that drives it: one
request line out, one answer line back, nothing else in between (no SDK on our side, so the
time measured is the server's and the pipe's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}


class StdioServer:
    """``vfs-mcp ROOT [OPTIONS]`` started and initialized; ``tools`` is its tools/list answer.
    ``env``: variables set for the server besides this process's (an S3 endpoint); ``python``:
    the interpreter that runs ``-m vfs_mcp`` (another build's); ``command``: any other stdio MCP
    server instead; ``cwd``: where it runs (``-m`` puts that folder first on the import path).
    ``elapsed``: seconds from the last request's line sent to its answer's line read."""

    def __init__(
        self,
        root: Path | str,
        *options: str,
        env: dict[str, str] | None = None,
        python: str = sys.executable,
        command: list[str] | None = None,
        cwd: Path | str | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            command or [python, "-m", "vfs_mcp", str(root), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        self.next_id = 0
        self.elapsed = 0.0
        try:
            self.request("initialize", INITIALIZE)
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            self.tools: list[dict[str, Any]] = self.request("tools/list", {})["tools"]
        except BaseException:
            self.close()  # a server that would not start leaves no process or pipe behind
            raise

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def write(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The ``result`` of one request; AssertionError on a JSON-RPC error."""
        assert self.proc.stdout is not None
        self.next_id += 1
        request = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        started = time.perf_counter()
        self.write(request.encode() + b"\n")
        line = self.proc.stdout.readline()
        self.elapsed = time.perf_counter() - started
        # A server that refused to start (an option or a config key its build does not take) says so.
        assert line, f"{' '.join(map(str, self.proc.args))} exited ({self.proc.wait()}) before answering {method}"
        answer = json.loads(line)
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """A tool's result; AssertionError when it is an error result."""
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not result.get("isError"), result["content"][0]["text"]
        return result

    def text(self, tool: str, **arguments: Any) -> str:
        """The text the model sees: the result's text blocks, joined."""
        return "\n".join(b["text"] for b in self.call(tool, **arguments)["content"] if b["type"] == "text")

    def peak_rss(self) -> int:
        """The process's peak resident memory so far, in bytes (Linux ``VmHWM``)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmHWM in /proc/PID/status")

    def close(self) -> None:
        self.proc.kill()
        with self.proc:
            pass

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
