"""Per-tool metrics (the ``vfs://metrics`` resource, docs/protocol.md) and the optional audit log.

Metrics: calls, errors by code, latency percentiles over the most recent calls, the
bytes each tool read and wrote through the jail, and its matching work (``match_steps``; the
most one engine call was handed, ``largest_match``: ``vfs_mcp.jail.tally``). A client sees its own session's calls
only (``vfs_mcp.sessions``; over stdio, the server's). Calls to names that are not tools
count under one ``UNKNOWN_TOOL`` entry, so made-up names cannot grow the table. Audit log:
one JSON line per call with the tool, the paths it named (mount-relative where they
resolve), the outcome code and the duration — never file contents, never tokens.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from vfs_mcp.errors import VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.tally import Tally
from vfs_mcp.profiles.results import error_of
from vfs_mcp.sessions import SessionState, Slot

LATENCY_WINDOW = 1000
PATH_ARGUMENTS = ("path", "paths", "source", "destination", "file1", "file2", "uri", "root", "from", "to")


UNKNOWN_TOOL = "(unknown tool)"


@dataclass
class ToolStats:
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    bytes_read: int = 0
    bytes_written: int = 0
    match_steps: int = 0
    largest_match: int = 0

    def add(self, code: str, seconds: float, tally: Tally | None) -> None:
        self.calls += 1
        self.latencies.append(seconds)
        if code != "OK":
            self.errors[code] += 1
        if tally is not None:
            self.bytes_read += tally.read
            self.bytes_written += tally.written
            self.match_steps += tally.steps
            self.largest_match = max(self.largest_match, tally.largest)

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def pct(q: float) -> float | None:
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3) if ordered else None

        return {
            "calls": self.calls,
            "errors": dict(self.errors),
            "latency_ms": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": pct(1.0)},
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "match_steps": self.match_steps,
            "largest_match": self.largest_match,
        }


def outcome(result: CallToolResult | Any) -> str:
    """OK, or the error code of a failed call."""
    if not isinstance(result, CallToolResult) or not result.is_error:
        return "OK"
    error = error_of(result) or {}
    return str(error.get("code", "INTERNAL"))


SESSION_TOOLS: Slot[dict[str, ToolStats]] = Slot("the session's figures by tool")


class Metrics:
    """Counters for one server, safe to update from worker threads."""

    def __init__(self, vfs: JailedFS, audit_log: str | None = None) -> None:
        self.vfs = vfs
        self.tools: dict[str, ToolStats] = {}
        self.started = time.time()
        self.lock = threading.Lock()
        self.audit = Path(audit_log) if audit_log else None

    def record(
        self,
        tool: str,
        arguments: dict[str, Any],
        code: str,
        seconds: float,
        tally: Tally | None = None,
        session: SessionState | None = None,
    ) -> None:
        """Count one call of ``tool`` (``UNKNOWN_TOOL`` for a name the server does not have)
        and its outcome, ``OK`` or an error code, in the server's table and ``session``'s."""
        with self.lock:
            for table in self._tables(session):
                stats = table.get(tool)
                if stats is None:  # not setdefault: a ToolStats made for every call costs more than the count
                    stats = table[tool] = ToolStats()
                stats.add(code, seconds, tally)
        if self.audit is not None:
            line = {
                "ts": round(time.time(), 3),
                "tool": tool,
                "paths": self._paths(arguments) if tool != UNKNOWN_TOOL else [],
                "outcome": code,
                "ms": round(seconds * 1000, 3),
            }
            with self.lock, self.audit.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")

    def _paths(self, arguments: dict[str, Any]) -> list[str]:
        named: list[str] = []
        for key in PATH_ARGUMENTS:
            value = arguments.get(key)
            for raw in value if isinstance(value, list) else [value]:
                if isinstance(raw, str):
                    named.append(self._relative(raw))
        return named

    def _relative(self, raw: str) -> str:
        try:
            target = self.vfs.jail.resolve(raw)
        except VfsError as err:
            return f"<{err.code}>"  # never echo a refused path: it may name the host
        return f"{target.mount.url}::{target.rel}"

    def _tables(self, session: SessionState | None) -> list[dict[str, ToolStats]]:
        """The server's table, and ``session``'s when there is one."""
        if session is None:
            return [self.tools]
        return [self.tools, session.kept.made(SESSION_TOOLS, dict)]

    def snapshot(self, session: SessionState | None = None) -> dict[str, Any]:
        """``session``'s figures (the server's outside sessions, as over stdio)."""
        with self.lock:
            table = self._tables(session)[-1]
            tools = {name: stats.summary() for name, stats in sorted(table.items())}
        figures = {
            "uptime_s": round(time.time() - self.started, 3),
            "bytes_read": sum(stats["bytes_read"] for stats in tools.values()),
            "bytes_written": sum(stats["bytes_written"] for stats in tools.values()),
            "tools": tools,
        }
        index = sys.modules.get("vfs_mcp.ops.search.index")  # loaded by the first grep that uses it
        if index is not None:
            found = index.stats_of(self.vfs)
            if found is not None:
                figures["search_index"] = found
        return figures
