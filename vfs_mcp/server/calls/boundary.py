"""The error boundary: the one module where our errors become MCP replies.

Everything below raises: the jail, the write path, the operations and the profiles' adapters
raise ``VfsError``; the stages of a request raise one too when they refuse it (a tool not
served, an argument it does not take, roots that leave no mount, a time limit). Here, and
nowhere else, they become what the protocol carries (docs/protocol.md, "Errors"):

=====================  ==============================================================
request                a ``VfsError`` becomes
=====================  ==============================================================
``tools/call``         an ``isError`` result, "CODE: message" (``results.failed``);
                       a tool the server does not serve (``NotServed``): JSON-RPC -32602
``resources/read``     JSON-RPC -32602 for NOT_FOUND, else -32603, naming the URI
``resources/subscribe``  JSON-RPC -32603 for INTERNAL, else -32602, "cannot subscribe to URI: ..."
``subscriptions/listen``  JSON-RPC -32603 for INTERNAL, else -32602
=====================  ==============================================================

``stage`` is the outermost stage that can fail, of every request (``calls.AROUND``);
``replies`` is the server's outermost middleware, for every message it answers: no string in a
reply or an error may hold a lone surrogate, and what the SDK's own handlers raise is a
JSON-RPC error whose text the transport can encode.
"""

from __future__ import annotations

import traceback
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from vfs_mcp.errors import Internal, InvalidArgument, NotFound, VfsError
from vfs_mcp.profiles.results import failed
from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.server.client_logs import calls
from vfs_mcp.server.replies import encodable, encodable_reply, encodable_value


class NotServed(InvalidArgument):
    """A tool call naming a tool this server does not serve: a protocol error (-32602), as the
    spec's tools page has it for an unknown tool, not a tool result."""


async def stage(call: Call, next_stage: Next) -> Result:
    try:
        return await next_stage(call)
    except Exception as exc:
        ours = raised(exc)
        if ours is None:
            raise
        calls.info("%s failed: %s", call.name or call.kind, ours.code)
        let_go(exc)
        if call.kind == "tool" and not isinstance(ours, NotServed):
            return failed(ours)
        raise protocol_error(call, ours) from exc


def let_go(exc: BaseException) -> None:
    """Clear the locals of the frames ``exc`` (and the errors it wraps) passed through, all
    finished by now: the SDK's frame that wraps a tool's error holds it while the error's
    traceback holds that frame, a cycle only the collector frees (rarely, in the server:
    ``GC_FIRST_GENERATION``), and with it a failed edit's file and its lines (3 MB a call for a
    1 MB file). Tracebacks keep their lines; this frame, still running, keeps its own."""
    seen: BaseException | None = exc
    while seen is not None:
        traceback.clear_frames(seen.__traceback__)
        seen = seen.__cause__


def raised(exc: BaseException) -> VfsError | None:
    """Our error that ``exc`` is, or that the SDK wrapped (a tool's raise in ``UnexpectedToolError``,
    a resource template's in ``UnexpectedResourceError``); None for anything else."""
    seen: BaseException | None = exc
    while isinstance(seen, ToolError | ResourceError):
        seen = seen.__cause__
    return seen if isinstance(seen, VfsError) else None


def protocol_error(call: Call, err: VfsError) -> MCPError:
    """The JSON-RPC error a request other than a tool's result answers with."""
    if call.kind == "resource":
        code = INVALID_PARAMS if isinstance(err, NotFound) else INTERNAL_ERROR
        return MCPError(code, str(err), {"uri": call.name})
    code = INTERNAL_ERROR if isinstance(err, Internal) else INVALID_PARAMS
    if call.kind == "subscribe":
        return MCPError(code, f"cannot subscribe to {call.name}: {err}")
    return MCPError(code, err.message)


async def replies(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The one place every reply passes (tool results, resources, listings, errors): no string
    in it may hold a lone surrogate, which the transport cannot encode (the server would exit
    with the client waiting forever). See ``replies.encodable``."""
    try:
        result = await call_next(ctx)
    except MCPError as exc:
        error = encodable_value(exc.error)
        if error is exc.error:
            raise
        raise MCPError(error.code, error.message, error.data) from exc
    except Exception as exc:
        if encodable(str(exc)) == str(exc):
            raise
        raise MCPError(INTERNAL_ERROR, encodable(str(exc))) from exc
    reply: HandlerResult = encodable_reply(result)
    return reply
