"""Every request the server answers for a client's files, as an ordered chain of small stages,
each a module of its own.

``AROUND`` are the stages of every such request (a tool call, a resource read, a subscription):
its client's log records, its session, and the error boundary, the one place our errors
become MCP replies. ``STAGES`` are a tool call's, outermost first (docs/architecture.md, "The
call pipeline", names each with its test); ``serve`` runs a resource read or a subscription
through ``AROUND`` and the client's roots. A stage is ``async (call, next) -> result``: it may
act before and after the stages inside it (``await next(call)``), or answer without them; the
last one answers. A stage that refuses raises our error, never a reply. Adding a concern is
adding a stage here. An ``InputRequiredResult`` (a round asking the client for its roots)
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
from vfs_mcp.server.calls.call import Call, Kind, Next, Result, Stage

AROUND: tuple[Stage, ...] = (logs.stage, session.stage, boundary.stage)
"""The stages of every request, outermost first."""

STAGES: tuple[Stage, ...] = (
    *AROUND,
    metered.stage,
    capped.stage,
    timeout.stage,
    counted.stage,
    journaled.stage,
    rooted.stage,
    known_tool.stage,
    known_arguments.stage,
    confirmed.stage,
    run_tool.stage,
)
"""A tool call's stages, outermost first."""


async def run(call: Call, stages: Sequence[Stage] = STAGES) -> Result:
    """``call`` through ``stages``, outermost first; the last stage must answer."""
    first = _CHAINED[1] if stages is _CHAINED[0] else _chained(stages)
    return await first(call)


def _chained(stages: Sequence[Stage]) -> Next:
    """The outermost of ``stages``, each given the next as its ``next_stage``. A link returns its
    stage's coroutine itself: no frame of its own between two stages, which every resumption of
    the call (each await of its worker thread) would pass through."""

    def link(stage: Stage, after: Next) -> Next:
        return lambda current: stage(current, after)

    chain: Next = _unanswered
    for stage in reversed(stages):
        chain = link(stage, chain)
    return chain


async def _unanswered(call: Call) -> Result:
    raise AssertionError("the last stage of a tool call must answer it")


_CHAINED: tuple[Sequence[Stage], Next] = (STAGES, _chained(STAGES))
"""A tool call's stages, linked once."""


async def serve(call: Call, answer: Callable[[], Awaitable[Result]]) -> Result:
    """A resource read or a subscription (``call.kind``) through ``AROUND`` and the client's
    roots, answered by ``answer``."""

    async def answering(_call: Call, _next: Next) -> Result:
        return await answer()

    return await run(call, (*AROUND, rooted.stage, answering))


__all__ = ["AROUND", "STAGES", "Call", "Kind", "Next", "Result", "Stage", "run", "serve"]
