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
fs and ide profiles         ``record``                  the seeds' result JSON: ``structuredContent``
                                                        and the same compact JSON (or the seed's text)
images and audio            ``media``                   the image/audio block and a one-line note
errors                      ``failed``                  ``isError`` and "CODE: message"; the code,
                                                        status and JSON-RPC code in ``_meta`` only
==========================  ==========================  ==============================================

``_meta`` is never shown to a model, so it costs no tokens.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, ParamSpec

import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp_types import AudioContent, CallToolResult, ContentBlock, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel

from vfs_mcp.errors import VfsError
from vfs_mcp.jail.filesystem import commit_scope
from vfs_mcp.jail.resolve import as_written

log = logging.getLogger("vfs_mcp")
calls = logging.getLogger("vfs_mcp.calls")
"""Each call's outcome, a tool error being an answer, not a fault: quiet (WARNING) until a
client asks for log messages (``client_logs`` lowers it) or the command-line server logs at
INFO (``cli``). In an agent's own tests, where errors are what the tests check, it would be
noise in their output."""
calls.setLevel(logging.WARNING)

Format = Literal["text", "json"]
P = ParamSpec("P")

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
    """A result whose contract is JSON (the fs and ide seeds): structured content, and as text
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


# -- running tools -------------------------------------------------------------------------


def catching(fn: Callable[P, Any]) -> Callable[P, Awaitable[CallToolResult]]:
    """Run a tool in a worker thread and turn our errors into error results.

    The SDK would prefix and flatten a raised error; and it waits for a sync tool's thread
    even after the call was cancelled or timed out. Here the thread is abandoned on
    cancellation (it finishes in the background), so a slow mount cannot hang the caller;
    ``commit_scope`` makes sure the abandoned thread commits no change after that.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            with as_written():
                if inspect.iscoroutinefunction(fn):
                    result: CallToolResult = await fn(*args, **kwargs)
                else:
                    with commit_scope():
                        call = functools.partial(fn, *args, **kwargs)
                        result = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
            return result
        except VfsError as err:
            calls.info("%s failed: %s", fn.__name__, err.code)
            return failed(err)

    return wrapper


def hints(title: str, *, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive if not read_only else False,
        idempotent_hint=True if read_only else idempotent,
        open_world_hint=False,
    )


def read_hints(title: str) -> ToolAnnotations:
    return hints(title, read_only=True)


def human_size(size: int | float) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


PROGRESS_INTERVAL = 0.1


def reporter(ctx: Context) -> Callable[[int, int | None, str], None]:
    """A progress callback for operations running in a worker thread.

    It sends MCP progress notifications (at most every 100 ms; the SDK drops them when the
    client gave no progress token) and raises when the request was cancelled, so a long
    walk stops within 100 ms (asking the event loop costs more than a step of a walk).
    """
    last = 0.0

    def report(done: int, total: int | None, message: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < PROGRESS_INTERVAL and (total is None or done < total):
            return
        last = now
        anyio.from_thread.check_cancelled()
        anyio.from_thread.run(ctx.report_progress, done, total, encodable(message))

    return report


# -- the encoding guard --------------------------------------------------------------------

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with every lone surrogate (an undecodable byte of a name or file, or a bad
    ``\\ud800`` escape) replaced by U+FFFD: JSON on the wire must be valid UTF-8, and one such
    character would make the transport fail and take the server down."""
    if text.isascii():  # known to the string itself: no scan (the search takes 4 ms a MB)
        return text
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def encodable_value(value: Any) -> Any:
    """``value`` (a pydantic model, dict, list or string, nested) with ``encodable`` strings;
    the same object when nothing needed replacing."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, BaseModel):
        changed = {}
        for name, item in value.__dict__.items():
            fixed = encodable_value(item)
            if fixed is not item:
                changed[name] = fixed
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, dict):
        pairs = [(encodable_value(k), encodable_value(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [encodable_value(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value
