"""A raw MCP client over streamable HTTP, one session per object: what a script (or a flood)
sends, without the SDK client's background GET stream."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from processes import INITIALIZE

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def answer_of(response: httpx2.Response) -> dict[str, Any] | None:
    """The JSON-RPC answer a response carries, as JSON or as a server-sent event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                found: dict[str, Any] = json.loads(line[5:])
                return found
        return None
    return response.json() if response.content else None


class RawSession:
    """One MCP session over ``http`` at ``url``: ``open`` it, then ``call`` tools."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http, self.url = http, url
        self.headers = dict(HEADERS)
        self.next_id = 0

    async def open(self, *, initialized: bool = True) -> int:
        """Initialize (and say so, unless not ``initialized``); the HTTP status of the initialize."""
        response = await self._post("initialize", INITIALIZE)
        if response.status_code == 200:
            self.headers |= {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            if initialized:
                await self.http.post(
                    self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers
                )
        return response.status_code

    async def call(self, tool: str, **arguments: Any) -> tuple[int, dict[str, Any] | None]:
        """The HTTP status of a ``tools/call`` and the tool result (None when there is none)."""
        response = await self._post("tools/call", {"name": tool, "arguments": arguments})
        answer = answer_of(response) if response.status_code == 200 else None
        return response.status_code, (answer or {}).get("result")

    async def _post(self, method: str, params: dict[str, Any]) -> httpx2.Response:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return await self.http.post(self.url, json=message, headers=self.headers)


def text_of(result: dict[str, Any] | None) -> str:
    """A tool result's first text block."""
    assert result is not None
    return str(result["content"][0]["text"])
