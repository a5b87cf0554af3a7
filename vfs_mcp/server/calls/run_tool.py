"""Step 11, the last: the SDK validates the arguments and runs the tool; arguments its schema
rejects are INVALID_ARGUMENT naming each one and why, a crash is INTERNAL (logged)."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from vfs_mcp.errors import Internal, InvalidArgument
from vfs_mcp.profiles.results import failed
from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.server.client_logs import log


async def step(call: Call, next_step: Next) -> Result:
    try:
        result: Result = await call.server.call_registered(call.name, call.arguments, call.context)
        return result
    except UnexpectedToolError:
        log.exception("tool %s crashed", call.name)
        return failed(Internal(f"{call.name} failed unexpectedly; the detail is in the server log"))
    except ToolError as exc:
        if isinstance(exc.__cause__, ValidationError):
            return failed(InvalidArgument(f"invalid arguments for {call.name}: {describe(exc.__cause__)}"))
        raise


def describe(error: ValidationError) -> str:
    """One line naming each rejected argument and why (never the rejected value)."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)
