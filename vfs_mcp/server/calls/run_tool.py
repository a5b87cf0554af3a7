"""The last stage: the SDK validates the arguments and runs the tool, its operations handed the
call's context with the filesystem (``Call.for_tool``, ``tools.calling``); arguments its schema
rejects are INVALID_ARGUMENT naming each one and what it must be, our error raised by the tool
is raised on, a crash is INTERNAL (logged)."""

from __future__ import annotations

import re

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from vfs_mcp.errors import Internal, InvalidArgument, VfsError
from vfs_mcp.server import tools
from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.server.calls.confirmed import AskFirst
from vfs_mcp.server.client_logs import log


async def stage(call: Call, next_stage: Next) -> Result:
    assert isinstance(call.server, MCPServer)
    try:
        with tools.calling(call.for_tool()):  # the tool's operations are handed it with the filesystem
            return await MCPServer.call_tool(call.server, call.name, call.arguments, call.context)
    except UnexpectedToolError as exc:
        if isinstance(exc.__cause__, VfsError | AskFirst):
            raise exc.__cause__ from None
        log.exception("tool %s crashed", call.name)
        raise Internal(f"{call.name} failed unexpectedly; the detail is in the server log") from exc
    except ToolError as exc:
        if isinstance(exc.__cause__, ValidationError):
            raise InvalidArgument(f"{call.name}: {describe(exc.__cause__)}") from exc
        raise


_TYPES = {"integer": "an integer", "dictionary": "an object", "list": "an array"}


def describe(error: ValidationError) -> str:
    """One line naming each rejected argument and what it must be (never the rejected value):
    ``lines must be greater than or equal to 1; path is required``."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        message = item["msg"]
        if item["type"] == "missing":
            problems.append(f"{where} is required")
        elif item["type"] == "too_short":
            problems.append(f"{where} must have at least {item.get('ctx', {}).get('min_length', 1)} item(s)")
        elif message.startswith("Input should be a valid "):
            kind = re.split(r"[ ,]", message.removeprefix("Input should be a valid "))[0]
            problems.append(f"{where} must be {_TYPES.get(kind, f'a {kind}')}")
        elif message.startswith("Input should be "):
            problems.append(f"{where} must be {message.removeprefix('Input should be ')}")
        else:
            problems.append(f"{where}: {message}")
    return "; ".join(problems)
