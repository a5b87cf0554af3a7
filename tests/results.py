"""Reading a tool result in a test: its fields on success, its stable code on failure; and the
matching work the server counted for a tool (``work_of``)."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from mcp_types import CallToolResult

from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp.server.resources import METRICS_URI


def ok(result: CallToolResult) -> dict[str, Any]:
    """The fields of a successful call (fails with the error text otherwise)."""
    assert not result.is_error, result.content[0].text if result.content else result
    data = data_of(result)
    assert data is not None, result.content
    return data


def code(result: CallToolResult) -> str | None:
    """The stable error code of a failed call; None for a success."""
    error = error_of(result)
    return str(error["code"]) if error is not None else None


def assert_error(result: CallToolResult, expected: str) -> str:
    """A failed call with the code ``expected``; returns the text the model saw."""
    assert result.is_error, f"expected {expected}, got success: {data_of(result)}"
    shown = result.content[0].text if result.content else ""
    assert code(result) == expected, shown
    return shown


def changed(result: CallToolResult) -> dict[str, Any]:
    """The fields of a successful call that changed files, without its change id, which the
    text names too (fails otherwise)."""
    data = dict(ok(result))
    change_id = data.pop("change_id", None)
    assert isinstance(change_id, str) and len(change_id) == 22, data
    assert f"change {change_id}" in "\n".join(getattr(block, "text", "") for block in result.content)
    return data


def text_of(result: CallToolResult) -> str:
    """The text a content-first client shows the model: the result's text blocks, joined."""
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def work(client: Client) -> dict[str, tuple[int, int]]:
    """The matching work the server counted for each tool's calls in this session (``vfs://metrics``):
    its steps, and the most characters one engine call was handed."""
    metrics = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    return {tool: (figures["match_steps"], figures["largest_match"]) for tool, figures in metrics["tools"].items()}


async def work_of(client: Client, tool: str) -> tuple[int, int]:
    """``work`` of one tool."""
    return (await work(client)).get(tool, (0, 0))
