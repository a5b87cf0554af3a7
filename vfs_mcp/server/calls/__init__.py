"""Every request the server answers for a client's files, as an ordered chain of small steps,
each a module of its own.

``AROUND`` are the steps of every such request (a tool call, a resource read, a subscription):
its client's log records, its session, and the error boundary, the one place our errors
become MCP replies. ``STEPS`` are a tool call's, outermost first (docs/architecture.md, "The
call pipeline", names each with its test); ``serve`` runs a resource read or a subscription
through ``AROUND`` and the client's roots. A step is ``async (call, next) -> result``: it may
act before and after the steps inside it (``await next(call)``), or answer without them; the
last one answers. A step that refuses raises our error, never a reply. Adding a concern is
adding a step here. An ``InputRequiredResult`` (a round asking the client for its roots)
passes back out untouched: the request comes again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from vfs_mcp.server.calls import (
    boundary,
    capped,
    confirmed,
    counted,
    journaled,
    known_arguments,
    known_tool,
    logs,
    metered,
    rooted,
    run_tool,
    session,
    timeout,
)
from vfs_mcp.server.calls.call import Call, Kind, Next, Result, Step

AROUND: tuple[Step, ...] = (logs.step, session.step, boundary.step)
"""The steps of every request, outermost first."""

STEPS: tuple[Step, ...] = (
    *AROUND,
    metered.step,
    capped.step,
    timeout.step,
    counted.step,
    journaled.step,
    rooted.step,
    known_tool.step,
    known_arguments.step,
    confirmed.step,
    run_tool.step,
)
"""A tool call's steps, outermost first."""


async def run(call: Call, steps: Sequence[Step] = STEPS) -> Result:
    """``call`` through ``steps``, outermost first; the last step must answer."""
    first = _CHAINED[1] if steps is _CHAINED[0] else _chained(steps)
    return await first(call)


def _chained(steps: Sequence[Step]) -> Next:
    """The outermost of ``steps``, each given the next as its ``next_step``. A link returns its
    step's coroutine itself: no frame of its own between two steps, which every resumption of
    the call (each await of its worker thread) would pass through."""

    def link(step: Step, after: Next) -> Next:
        return lambda current: step(current, after)

    chain: Next = _unanswered
    for step in reversed(steps):
        chain = link(step, chain)
    return chain


async def _unanswered(call: Call) -> Result:
    raise AssertionError("the last step of a tool call must answer it")


_CHAINED: tuple[Sequence[Step], Next] = (STEPS, _chained(STEPS))
"""A tool call's steps, linked once."""


async def serve(call: Call, answer: Callable[[], Awaitable[Result]]) -> Result:
    """A resource read or a subscription (``call.kind``) through ``AROUND`` and the client's
    roots, answered by ``answer``."""

    async def answering(_call: Call, _next: Next) -> Result:
        return await answer()

    return await run(call, (*AROUND, rooted.step, answering))


__all__ = ["AROUND", "STEPS", "Call", "Kind", "Next", "Result", "Step", "run", "serve"]
