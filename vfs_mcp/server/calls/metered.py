"""Step 3: each call counted in the server's metrics (and audit log): its tool (or
``UNKNOWN_TOOL``), arguments, outcome, time and the bytes it moved. A call refused with a
protocol error (a tool the server does not serve) counts as INVALID_ARGUMENT."""

from __future__ import annotations

import time

from mcp.shared.exceptions import MCPError
from mcp_types import InputRequiredResult

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.profiles.results import failed
from vfs_mcp.server import sdk
from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.server.metrics import UNKNOWN_TOOL


async def step(call: Call, next_step: Next) -> Result:
    started = time.perf_counter()
    try:
        result = await next_step(call)
    except MCPError as exc:  # refused before it ran (a tool not served): counted as the error it is
        _record(call, failed(InvalidArgument(exc.message)), started)
        raise
    _record(call, result, started)
    return result


def _record(call: Call, result: Result, started: float) -> None:
    metrics = call.server.metrics
    if metrics is not None and not isinstance(result, InputRequiredResult):
        known = call.name if sdk.registered_tool(call.server, call.name) is not None else UNKNOWN_TOOL  # type: ignore[arg-type]
        metrics.record(known, call.arguments, result, time.perf_counter() - started, call.tally)
