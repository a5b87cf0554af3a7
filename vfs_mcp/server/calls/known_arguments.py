"""Arguments the tool does not take are INVALID_ARGUMENT (the SDK would drop them silently),
naming the closest one it takes, what it takes, and other spellings it accepts."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.server import toolset
from vfs_mcp.server.calls.call import Call, Next, Result


async def step(call: Call, next_step: Next) -> Result:
    unknown = unknown_arguments(call.tool, call.arguments) if call.tool is not None else ""
    if unknown:
        raise InvalidArgument(f"{call.name} has no argument {unknown}")
    return await next_step(call)


def unknown_arguments(tool: Tool, arguments: dict[str, Any]) -> str:
    """Describe the arguments ``tool`` does not take ("" when it takes them all)."""
    listed = list(tool.parameters.get("properties") or {})
    fields = tool.fn_metadata.arg_model.model_fields
    accepted = {field.alias or key for key, field in fields.items()} - {tool.context_kwarg}
    unknown = [key for key in arguments if key not in accepted]
    if not unknown:
        return ""
    problems = []
    for key in unknown:
        close = toolset.closest_argument(key, accepted)
        problems.append(f"{key!r}" + (f" (did you mean {close!r}?)" if close else ""))
    message = f"{', '.join(problems)}; it takes {', '.join(listed) or 'no arguments'}"
    others = sorted(accepted - set(listed))
    return message + (f" (also accepted: {', '.join(others)})" if others else "")
