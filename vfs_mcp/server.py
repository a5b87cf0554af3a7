"""``build_server``: the one factory for an MCP server over a set of mounts (no module-level server)."""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent
from pydantic import ValidationError

from vfs_mcp import profiles, resources
from vfs_mcp.errors import Internal, InvalidArgument
from vfs_mcp.filesystem import JailedFS
from vfs_mcp.jail import Jail
from vfs_mcp.metrics import Metrics
from vfs_mcp.mounts import Mount
from vfs_mcp.settings import Settings
from vfs_mcp.tooling import failed, log

INSTRUCTIONS = (
    "Filesystem tools over the mounts listed by list_allowed_directories. Paths may be absolute inside a mount, "
    "mount URLs (s3://bucket/key, memory://name/x), or relative to the working directory. Errors start with a "
    "stable code (NOT_FOUND, ACCESS_DENIED, CONFLICT, ...) and say what to do instead."
)


def _version() -> str:
    try:
        return version("vfs-mcp")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


def cap_text(result: CallToolResult, limit: int) -> CallToolResult:
    """Cut a reply's text to ``limit`` characters, saying what was cut and how to get the rest."""
    total = sum(len(block.text) for block in result.content if isinstance(block, TextContent))
    if total <= limit:
        return result
    room, blocks = limit, []
    for block in result.content:
        if isinstance(block, TextContent):
            block = TextContent(type="text", text=block.text[: max(room, 0)])
            room -= len(block.text)
        blocks.append(block)
    note = (
        f"[cut: the reply was {total} characters, over the server's {limit}-character limit; "
        "ask for less: ranged reads (read_file offset_bytes/max_bytes, read_file_lines), paging "
        "(results_offset, offset/limit) or a narrower path or pattern]"
    )
    blocks.append(TextContent(type="text", text=note))
    return result.model_copy(update={"content": blocks})


def describe(error: ValidationError) -> str:
    """One line naming each rejected argument and why (never the rejected value)."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


class VfsServer(MCPServer):
    """MCPServer whose every failure carries a stable code (arguments rejected by the schema
    included), and whose every call is counted in its metrics (and audit log, if any).
    """

    metrics: Metrics | None = None
    vfs_settings: Settings | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        started = time.perf_counter()
        limit = self.vfs_settings.call_timeout if self.vfs_settings else None
        result: CallToolResult | InputRequiredResult
        try:
            with anyio.fail_after(limit):
                result = await self._call(name, arguments, context)
        except TimeoutError:
            result = failed(
                Internal(f"{name} timed out after {limit:g} s; the mount is slow or unreachable, try again")
            )
        if isinstance(result, CallToolResult) and self.vfs_settings and self.vfs_settings.max_response_chars:
            result = cap_text(result, self.vfs_settings.max_response_chars)
        if self.metrics is not None:
            self.metrics.record(name, arguments, result, time.perf_counter() - started)
        return result

    async def _call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None:
            known = difflib.get_close_matches(name, [tool.name for tool in self._tool_manager.list_tools()], n=1)
            hint = f"; did you mean {known[0]!r}?" if known else "; list the tools to see what this server offers"
            return failed(InvalidArgument(f"there is no tool named {name!r}{hint}"))
        unknown = self._unknown_arguments(name, arguments)
        if unknown:
            return failed(InvalidArgument(f"{name} has no argument {unknown}"))
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            log.exception("tool %s crashed", name)
            return failed(Internal(f"{name} failed unexpectedly; the detail is in the server log"))
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return failed(InvalidArgument(f"invalid arguments for {name}: {describe(exc.__cause__)}"))
            raise

    def _unknown_arguments(self, name: str, arguments: dict[str, Any]) -> str:
        """Describe arguments the tool does not take (the SDK would drop them silently)."""
        tool = self._tool_manager.get_tool(name)
        known = set((tool.parameters.get("properties") or {}) if tool else ())
        problems = []
        for key in arguments:
            if tool is None or key in known:
                continue
            snake = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
            close = [snake] if snake in known else difflib.get_close_matches(key, sorted(known), n=1)
            problems.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return ", ".join(problems)


def build_server(mounts: Sequence[Mount], settings: Settings | None = None) -> MCPServer:
    """A new server with its own jail and working directory over ``mounts``."""
    settings = settings or Settings()
    profiles.check(settings.profiles)
    vfs = JailedFS(Jail(mounts, deny=settings.deny))
    server = VfsServer("vfs-mcp", version=_version(), instructions=INSTRUCTIONS)
    server.metrics = Metrics(vfs, settings.audit_log)
    server.vfs_settings = settings
    profiles.register(server, vfs, settings)
    resources.register(server, vfs, server.metrics)
    return server
