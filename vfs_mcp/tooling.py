"""What every MCP tool adapter shares: result building, error results, annotations."""

from __future__ import annotations

import functools
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, ParamSpec

import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from vfs_mcp.errors import VfsError
from vfs_mcp.filesystem import commit_scope

log = logging.getLogger("vfs_mcp")

Format = Literal["text", "json"]
P = ParamSpec("P")


def ok(model: BaseModel, text: str | list[str] | None = None, fmt: str = "text") -> CallToolResult:
    """A success: ``model`` as structured content; the text block(s) are ``text`` or its JSON."""
    structured = model.model_dump(mode="json", by_alias=True)
    if fmt == "json" or text is None:
        blocks = [json.dumps(structured, indent=1, ensure_ascii=False)]
    else:
        blocks = [text] if isinstance(text, str) else text
    return CallToolResult(content=[TextContent(type="text", text=t) for t in blocks], structured_content=structured)


def failed(err: VfsError) -> CallToolResult:
    """An error result: one actionable line for the model, the code in structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=str(err))],
        structured_content={"error": err.to_dict()},
        is_error=True,
    )


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
            if inspect.iscoroutinefunction(fn):
                result: CallToolResult = await fn(*args, **kwargs)
            else:
                with commit_scope():
                    call = functools.partial(fn, *args, **kwargs)
                    result = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
            return result
        except VfsError as err:
            log.info("%s failed: %s", fn.__name__, err.code)
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
    walk stops promptly.
    """
    last = 0.0

    def report(done: int, total: int | None, message: str) -> None:
        nonlocal last
        anyio.from_thread.check_cancelled()
        now = time.monotonic()
        if now - last < PROGRESS_INTERVAL and (total is None or done < total):
            return
        last = now
        anyio.from_thread.run(ctx.report_progress, done, total, message)

    return report
