"""A bounded load test over streamable HTTP: 8 concurrent clients x N mixed calls on a local mount.

Asserts correctness only (zero errors, every written file read back intact); throughput
and latency percentiles are printed and recorded in benchmarks/README.md. Quick mode: 25
calls a client instead of 200.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import SCALE
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.server.build import build_server
from vfs_mcp.transports.http import http_app, serving_in_thread

pytestmark = pytest.mark.anyio
CLIENTS = 8
CALLS = 25 if SCALE.quick else 200


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def client_run(url: str, name: str, latencies: list[float], errors: list[str]) -> dict[str, str]:
    """Mixed calls: write, read back, list, grep, info, append; returns what it wrote."""
    written: dict[str, str] = {}
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,  # type: ignore[arg-type]
    ):
        for i in range(CALLS):
            kind = i % 5
            path = f"{name}/f{i // 5}.txt"
            if kind == 0:
                content = f"{name}-{i}\n" * (1 + i % 7)
                call = ("write_file", {"path": path, "content": content, "create_dirs": True})
                written[path] = content
            elif kind == 1:
                call = ("read_file", {"path": path})
            elif kind == 2:
                call = ("list_directory", {"path": name})
            elif kind == 3:
                call = ("grep_files", {"path": name, "pattern": f"{name}-", "results_limit": 5})
            else:
                call = ("write_file", {"path": path, "content": "appended\n", "append": True})
                written[path] += "appended\n"
            started = time.perf_counter()
            result = await client.call_tool(*call)
            latencies.append(time.perf_counter() - started)
            if result.is_error:
                errors.append(f"{call[0]} {call[1].get('path')}: {result.content[0].text}")  # type: ignore[union-attr]
            elif call[0] == "read_file":
                expected = f"{name}-{i - 1}\n" * (1 + (i - 1) % 7)
                if result.content[0].text != expected:  # type: ignore[union-attr]
                    errors.append(f"read back {path}: wrong content")
    return written


async def test_eight_clients_of_mixed_calls_over_http_lose_nothing(tmp_path: Path) -> None:
    app = http_app(build_server(open_mounts([MountSpec(str(tmp_path))])))
    latencies: list[float] = []
    errors: list[str] = []
    written: dict[str, str] = {}
    with serving_in_thread(app) as url:
        started = time.perf_counter()

        async def one(name: str) -> None:
            written.update(await client_run(url, name, latencies, errors))

        async with anyio.create_task_group() as group:
            for n in range(CLIENTS):
                group.start_soon(one, f"c{n}")
        wall = time.perf_counter() - started
    assert errors == []
    lost = [p for p, content in written.items() if (tmp_path / p).read_text() != content]
    assert lost == [], "writes were lost or torn"
    ordered = sorted(latencies)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    print(
        f"\nHTTP load: {CLIENTS} clients x {CALLS} calls = {len(latencies)} calls in {wall:.2f} s "
        f"({len(latencies) / wall:.0f} calls/s); latency ms p50 {pct(0.5):.1f}, p90 {pct(0.9):.1f}, "
        f"p99 {pct(0.99):.1f}, max {ordered[-1] * 1000:.1f}, mean {statistics.mean(latencies) * 1000:.1f}; "
        f"0 errors, {len(written)} files written and read back intact"
    )
