"""A tool call's handling: an ordered chain of small steps, each a module of its own.

``STEPS`` lists them outermost first (docs/architecture.md, "The call pipeline", names each
with its test). A step is ``async (call, next) -> result``: it may act before and after the
steps inside it (``await next(call)``), or answer without them; the last one calls the
tool. Adding a concern is adding a step here. An ``InputRequiredResult`` (a round asking the
client for its roots) passes back out untouched: the call comes again.
"""

from __future__ import annotations

from collections.abc import Sequence

from vfs_mcp.server.calls import (
    capped,
    counted,
    journaled,
    known_arguments,
    known_tool,
    logs,
    metered,
    roots,
    run_tool,
    session,
    timeout,
)
from vfs_mcp.server.calls.call import Call, Next, Result, Step

STEPS: tuple[Step, ...] = (
    logs.step,
    session.step,
    metered.step,
    capped.step,
    timeout.step,
    counted.step,
    journaled.step,
    roots.step,
    known_tool.step,
    known_arguments.step,
    run_tool.step,
)


async def run(call: Call, steps: Sequence[Step] = STEPS) -> Result:
    """``call`` through ``steps``, outermost first; the last step must answer."""

    def at(index: int) -> Next:
        async def next_step(current: Call) -> Result:
            if index == len(steps):
                raise AssertionError("the last step of a tool call must answer it")
            return await steps[index](current, at(index + 1))

        return next_step

    return await at(0)(call)


__all__ = ["STEPS", "Call", "Next", "Result", "Step", "run"]
