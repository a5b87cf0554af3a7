"""The tool reference in Markdown, generated from the live tool schemas (docs/tools.md)."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp_types import Tool

from vfs_mcp.mounts import MountSpec, open_mounts
from vfs_mcp.profiles import PROFILES
from vfs_mcp.server import build_server
from vfs_mcp.settings import Settings

HEADER = """# Tool reference

Generated from the tool schemas by `python scripts/gen_tool_reference.py`; a test fails when
this file and the code disagree. Every tool also returns structured content matching its
output schema; errors are `isError` results starting with a code (see the README).
"""


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " | ".join(_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if schema.get("type") == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return str(schema.get("type", "object"))


def _tool(tool: Tool) -> str:
    hints = tool.annotations
    flags = []
    if hints is not None:
        flags.append("read-only" if hints.read_only_hint else "writes")
        if hints.destructive_hint:
            flags.append("destructive")
        if hints.idempotent_hint:
            flags.append("idempotent")
    lines = [
        f"### `{tool.name}`",
        "",
        f"*{tool.title or tool.name}* — {', '.join(flags)}",
        "",
        tool.description or "",
        "",
    ]
    properties: dict[str, Any] = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    if properties:
        lines += ["| argument | type | default | description |", "|---|---|---|---|"]
        for name, schema in properties.items():
            default = "required" if name in required else json.dumps(schema.get("default"))
            description = str(schema.get("description", "")).replace("|", "\\|")
            kind = _type(schema).replace("|", "\\|")
            lines.append(f"| `{name}` | {kind} | {default} | {description} |")
        lines.append("")
    for name, definition in tool.input_schema.get("$defs", {}).items():
        needed = set(definition.get("required", []))
        fields = [
            f"`{field}` ({_type(spec)}{', required' if field in needed else ''})"
            for field, spec in definition.get("properties", {}).items()
        ]
        lines += [f"`{name}`: {', '.join(fields)}", ""]
    if tool.output_schema:
        outputs = ", ".join(f"`{name}`" for name in tool.output_schema.get("properties", {}))
        lines += [f"Structured result: {outputs}", ""]
    return "\n".join(lines)


async def _tools(profile: str) -> list[Tool]:
    server = build_server(open_mounts([MountSpec("memory://reference")]), Settings(profiles=(profile,)))
    return await server.list_tools()


def render() -> str:
    """The whole reference: every profile's tools in listing order."""
    parts = [HEADER]
    for profile in PROFILES:
        tools = anyio.run(_tools, profile)
        parts.append(f"## Profile `{profile}` ({len(tools)} tools)\n")
        parts += [_tool(tool) for tool in tools]
    return "\n".join(parts).rstrip() + "\n"
