"""Arguments the tool does not take are INVALID_ARGUMENT (the SDK would drop them silently),
naming the closest one it takes, what it takes, and other spellings it accepts."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool

from vfs_mcp.errors import InvalidArgument, echoed
from vfs_mcp.server import toolset
from vfs_mcp.server.calls.call import Call, Next, Result


async def stage(call: Call, next_stage: Next) -> Result:
    unknown = unknown_arguments(call.tool, call.arguments) if call.tool is not None else ""
    if unknown:
        raise InvalidArgument(f"{call.name} has no argument {unknown}")
    return await next_stage(call)


def unknown_arguments(tool: Tool, arguments: dict[str, Any]) -> str:
    """Describe the arguments ``tool`` does not take ("" when it takes them all)."""
    accepted = _accepted(tool)
    unknown = [key for key in arguments if key not in accepted]
    if not unknown:
        return ""
    listed = list(tool.parameters.get("properties") or {})
    problems = []
    for key in unknown:
        close = toolset.closest_argument(key, set(accepted))
        problems.append(echoed(key) + (f" (did you mean {close!r}?)" if close else ""))
    message = f"{', '.join(problems)}; it takes {', '.join(listed) or 'no arguments'}"
    others = sorted(accepted - set(listed))
    return message + (f" (also accepted: {', '.join(others)})" if others else "")


_ACCEPTED: dict[str, tuple[Tool, frozenset[str]]] = {}
"""What each registered tool takes, by name, made on its first call (not again on every call)."""


def _accepted(tool: Tool) -> frozenset[str]:
    """The names ``tool``'s arguments are taken by (aliases where they have one)."""
    known = _ACCEPTED.get(tool.name)
    if known is not None and known[0] is tool:
        return known[1]
    fields = tool.fn_metadata.arg_model.model_fields
    accepted = frozenset({field.alias or key for key, field in fields.items()} - {tool.context_kwarg})
    _ACCEPTED[tool.name] = (tool, accepted)
    return accepted
