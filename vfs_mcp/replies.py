"""What leaves the server, whatever an operation returned: encodable, and bounded.

Every request's reply passes ``encodable_replies`` (server middleware): no string in it may
hold a lone surrogate, which the transport cannot encode. ``cap_reply`` cuts a reply to the
server's character limit in each view. ``lenient`` reads a request line that pydantic's JSON
parser refused because it holds a lone surrogate escape.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR, CallToolResult, TextContent, jsonrpc_message_adapter
from pydantic import ValidationError

from vfs_mcp.tooling import META_CUT, META_RESULT, compact_json, encodable, encodable_value


async def encodable_replies(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The one place every reply passes (tool results, resources, listings, errors): no string
    in it may hold a lone surrogate, which the transport cannot encode (the server would exit
    with the client waiting forever). See ``tooling.encodable``."""
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
    return encodable_value(result)  # type: ignore[no-any-return]


def lenient(error: ValidationError) -> SessionMessage | Exception:
    """The message of a line pydantic's JSON parser refused, parsed by ``json`` instead (which
    takes a lone surrogate escape: on a local disk it names the undecodable byte, as listings
    show it); ``error`` if that fails too. Replies are made encodable on the way out."""
    line = next((e.get("input") for e in error.errors() if e.get("type") == "json_invalid"), None)
    try:
        data = json.loads(line) if isinstance(line, str | bytes) else None
        return SessionMessage(jsonrpc_message_adapter.validate_python(data, by_name=False))
    except (ValueError, ValidationError):
        return error


def _json_size(value: Any) -> int:
    return len(compact_json(value))


def _fit(value: Any, room: int) -> Any:
    """``value`` cut to at most ``room`` characters of compact JSON, keeping its shape (strings
    shortened, lists ended early), so a cut structured result still fits its output schema."""
    size = _json_size(value)
    if size <= room:
        return value
    if isinstance(value, str):
        keep = len(value)
        while keep > 0 and (size := _json_size(value[:keep])) > room:
            keep = min(keep - 1, keep * room // size)  # escapes make the JSON longer than the text
        return value[:keep]
    if isinstance(value, list):
        kept: list[Any] = []
        used = 2
        for item in value:
            used += _json_size(item) + 1
            if used > room:
                break
            kept.append(item)
        return kept
    if isinstance(value, dict):
        fitted = dict(value)
        while (size := _json_size(fitted)) > room:
            key = max(fitted, key=lambda k: _json_size(fitted[k]))
            smaller = _fit(fitted[key], _json_size(fitted[key]) - (size - room))
            if _json_size(smaller) >= _json_size(fitted[key]):
                break  # nothing left to cut
            fitted[key] = smaller
        return fitted
    return value


def cap_reply(result: CallToolResult, limit: int) -> CallToolResult:
    """Cut a reply to ``limit`` characters in each view, saying what was cut and how to get the rest.

    The text blocks are cut to ``limit`` characters in all, the structured content to
    ``limit`` characters of JSON keeping its shape; the note is added when either was cut.
    The result fields in ``_meta`` (never shown to a model) are cut the same way, marked
    with ``META_CUT``.
    """
    total = sum(len(block.text) for block in result.content if isinstance(block, TextContent))
    structured = result.structured_content
    data = (result.meta or {}).get(META_RESULT)
    update: dict[str, Any] = {}
    if data is not None and _json_size(data) > limit:
        update["meta"] = {**(result.meta or {}), META_RESULT: _fit(data, limit), META_CUT: limit}
    if structured is not None and _json_size(structured) > limit:
        update["structured_content"] = _fit(structured, limit)
    if total > limit or "structured_content" in update:
        room, blocks = limit, []
        for block in result.content:
            if isinstance(block, TextContent):
                block = TextContent(type="text", text=block.text[: max(room, 0)])
                room -= len(block.text)
            blocks.append(block)
        size = max(total, _json_size(structured) if structured is not None else 0)
        note = (
            f"[cut: the reply was {size} characters, over the server's {limit}-character limit; "
            "ask for less: ranged reads (read_file offset_bytes/max_bytes, read_file_lines), paging "
            "(results_offset, offset/limit) or a narrower path or pattern]"
        )
        update["content"] = [*blocks, TextContent(type="text", text=note)]
    return result.model_copy(update=update) if update else result
