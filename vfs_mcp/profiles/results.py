"""What every MCP tool adapter shares: the shape of results, error results, annotations.

The result boundary. What reaches a model depends on its client (docs/clients.md):
structured-first clients (Claude Code, Codex, OpenCode) forward ``structuredContent`` when
it is present and drop the text; content-first clients (Claude Desktop, claude.ai, ChatGPT)
forward the text blocks; TypeScript-SDK clients reject a ``structuredContent`` that does not
fit the tool's output schema, error results included. So every result here is complete in
both views, and the shape per tool family is the cheapest complete one, as measured by
``views`` (tests/profiles/test_views.py, benchmarks/test_bench_tool_list.py):

==========================  ==========================  ==============================================
family                      builder                     both views hold
==========================  ==========================  ==============================================
default profile             ``answer`` / ``report``     the text blocks (no output schema, no
                                                        ``structuredContent``): file text once, not
                                                        JSON-escaped; listings as lines, or compact
                                                        JSON with ``format='json'``. The result's
                                                        fields ride in ``_meta`` for programs.
official profile            ``profiles.official``       the reference server's text, nothing else
fs and ide profiles         ``record``                  the originals' result JSON: ``structuredContent``
                                                        and the same compact JSON (or the original's text)
images and audio            ``media``                   the image/audio block and a one-line note
errors                      ``failed``                  ``isError`` and "CODE: message"; the code,
                                                        status and JSON-RPC code in ``_meta`` only
==========================  ==========================  ==============================================

``_meta`` is never shown to a model, so it costs no tokens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from mcp_types import AudioContent, CallToolResult, ContentBlock, ImageContent, TextContent
from pydantic import BaseModel

from vfs_mcp.errors import VfsError

Format = Literal["text", "json"]

META_RESULT = "vfs-mcp/result"
"""``_meta`` key of a text-first result's fields (what ``structuredContent`` would have held)."""
META_ERROR = "vfs-mcp/error"
"""``_meta`` key of an error's code, HTTP-like status, JSON-RPC code and message."""
META_CUT = "vfs-mcp/cut"
"""``_meta`` key present (the limit) when the server's reply cap shortened the result fields."""


def compact_json(value: Any) -> str:
    """JSON as a structured-first client forwards it (``JSON.stringify``): no spaces."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _dump(data: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    return data.model_dump(mode="json", by_alias=True) if isinstance(data, BaseModel) else dict(data)


def answer(*texts: str, data: BaseModel | Mapping[str, Any] | None = None) -> CallToolResult:
    """A text-first success: the text blocks are the whole answer; ``data`` goes to ``_meta``."""
    meta = {META_RESULT: _dump(data)} if data is not None else None
    return CallToolResult(content=[TextContent(type="text", text=t) for t in texts], _meta=meta)


def report(model: BaseModel | Mapping[str, Any], text: str, fmt: str = "text") -> CallToolResult:
    """A listing or report: ``text``, or the fields as compact JSON with ``format='json'``."""
    return answer(compact_json(_dump(model)) if fmt == "json" else text, data=model)


def record(model: BaseModel, *texts: str) -> CallToolResult:
    """A result whose contract is JSON (the fs and ide originals): structured content, and as text
    the same compact JSON (what a structured-first client forwards) unless ``texts`` are given."""
    structured = _dump(model)
    blocks = texts or (compact_json(structured),)
    return CallToolResult(content=[TextContent(type="text", text=t) for t in blocks], structured_content=structured)


def media(
    kind: Literal["image", "audio"], data: str, mime_type: str, note: str, fields: BaseModel | None = None
) -> CallToolResult:
    """An image or audio block a model can look at, and a one-line note; nothing structured,
    which a structured-first client would forward in place of the block. ``fields`` go to ``_meta``."""
    block: ImageContent | AudioContent = (
        ImageContent(data=data, mime_type=mime_type)
        if kind == "image"
        else AudioContent(data=data, mime_type=mime_type)
    )
    meta = {META_RESULT: _dump(fields)} if fields is not None else None
    return CallToolResult(content=[block, TextContent(type="text", text=note)], _meta=meta)


def failed(err: VfsError) -> CallToolResult:
    """An error result: one actionable line starting with the code; the detail in ``_meta``.

    Never structured content: a TypeScript-SDK client checks it against the success schema
    and would replace the whole answer with a validation failure.
    """
    return CallToolResult(
        content=[TextContent(type="text", text=str(err))], is_error=True, _meta={META_ERROR: err.to_dict()}
    )


def error_of(result: CallToolResult) -> dict[str, Any] | None:
    """The code, status, JSON-RPC code and message of a failed call (None for a success)."""
    if not result.is_error:
        return None
    error = (result.meta or {}).get(META_ERROR)
    return dict(error) if isinstance(error, dict) else None


def data_of(result: CallToolResult) -> dict[str, Any] | None:
    """A successful result's fields: its structured content, or what ``answer`` put in ``_meta``."""
    if result.is_error:
        return None
    if isinstance(result.structured_content, dict):
        return result.structured_content
    data = (result.meta or {}).get(META_RESULT)
    return dict(data) if isinstance(data, dict) else None


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    mime = getattr(block, "mime_type", None)
    return f"[{block.type}{' ' + mime if mime else ''}]"


def views(result: CallToolResult) -> tuple[str, str]:
    """What a model is given: (structured-first view, content-first view).

    Structured-first clients forward ``JSON.stringify(structuredContent)`` when present and
    the content blocks otherwise (error results always as text); content-first clients the
    content blocks. A non-text block is shown as ``[image image/png]``.
    """
    content = "\n".join(_block_text(block) for block in result.content)
    if result.structured_content is not None and not result.is_error:
        return compact_json(result.structured_content), content
    return content, content


def human_size(size: int | float) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
