"""Each call counted in the server's metrics (and audit log): its tool (or ``UNKNOWN_TOOL``),
arguments, outcome, time and the bytes it moved. A call refused before it ran (a tool not
served) counts as INVALID_ARGUMENT."""

from __future__ import annotations

import time

from mcp_types import InputRequiredResult

from vfs_mcp.errors import VfsError
from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.server.metrics import UNKNOWN_TOOL, outcome


async def stage(call: Call, next_stage: Next) -> Result:
    started = time.perf_counter()
    try:
        result = await next_stage(call)
    except VfsError as err:
        _record(call, err.code, started)
        raise
    if not isinstance(result, InputRequiredResult):
        _record(call, outcome(result), started)
    return result


def _record(call: Call, code: str, started: float) -> None:
    metrics = call.server.metrics
    if metrics is not None:
        known = call.name if call.tool is not None else UNKNOWN_TOOL
        metrics.record(known, call.arguments, code, time.perf_counter() - started, call.tally, call.session)
