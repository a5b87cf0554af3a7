"""A reply longer than ``--max-response-chars`` is cut, saying so (``replies.cap_reply``)."""

from __future__ import annotations

from mcp_types import InputRequiredResult

from vfs_mcp.server import replies
from vfs_mcp.server.calls.call import Call, Next, Result


async def stage(call: Call, next_stage: Next) -> Result:
    result = await next_stage(call)
    settings = call.server.vfs_settings
    if isinstance(result, InputRequiredResult) or not (settings and settings.max_response_chars):
        return result
    return replies.cap_reply(result, settings.max_response_chars)
