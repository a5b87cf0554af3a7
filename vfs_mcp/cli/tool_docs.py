"""The tool reference in Markdown, generated from the live tool schemas (docs/tools.md)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver.tools import Tool
from pydantic import TypeAdapter
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.profiles import PROFILES
from vfs_mcp.profiles.results import compact_json
from vfs_mcp.server import sdk
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

HEADER = """# Tool reference

Generated from the tool schemas by `python scripts/gen_tool_reference.py`; a test fails when
this file and the code disagree. "Model-visible" is what a model is sent on every turn for a
profile's tools (name, description and input schema as compact JSON). What each tool answers,
and how each client shows it, is in [clients.md](clients.md); errors are `isError` results
whose text starts with a code (see the README). `include_patterns` and `exclude_patterns` are
gitignore globs.
"""


DETAILS = {
    "apply_patch": (
        "How hunks land: each is found by its old lines (context and removed), at or after the hunk "
        "before it, exactly, else with each line's surrounding whitespace ignored, in one place only "
        "(two places are CONFLICT naming both lines). Lines the hunk does not remove keep their bytes "
        "whatever found it: indentation, tabs, each line's own ending (CRLF stays CRLF in a mixed "
        "file), a byte-order mark, a missing final newline. An added line takes the ending of the line "
        "it replaces. In a hunk found only with whitespace ignored, an added line is **re-indented**: "
        "it takes the file's indentation of the old line above it, plus its own extra depth (in tabs "
        "where the file indents with tabs); a line that steps back out takes the depth the file gives "
        "the hunk's other lines at that depth, and where those disagree the hunk is **refused** "
        "(CONFLICT: give it with the file's own indentation). A renamed file keeps its mode; a link "
        "given to delete or rename goes itself, its file stays; an update through a link writes the "
        "file. Placing costs at most 50 million line comparisons (then INVALID_ARGUMENT); the patch and "
        "each file written are within `write_file`'s limit, each file read within the edit limit, and "
        "the reply's diff within the read cap (then its line counts)."
    ),
    "undo": (
        "Every change's reply names its id (`change ID` in the text, `change_id` in "
        '`_meta["vfs-mcp/result"]`); `undo(change_id=ID)` takes that change back from any connection, '
        "either protocol era, any process or replica that shares the state store (`--state URL`, or "
        '`state = "…"` in the config; by default a private folder per user and set of mounts). With no '
        "id it takes back the session's newest change (to `path`, if given); a request without a session "
        "(the 2026-07-28 era over HTTP, `--stateless`) must name one (INVALID_ARGUMENT). "
        "Undo is a change like any other, made of the steps the change's record keeps: each "
        "checks that its path is still as the change left it (else CONFLICT naming what changed, and "
        "nothing is undone), all commit under the same locks, and a failed undo changes nothing. It "
        "restores bytes, modes, links (as links), empty folders and files the deny list hides; it "
        "deletes only what the change created, never what was added since; a moved folder moves back "
        "whole. It never writes where a write would be refused (read-only, deny list, a link out). "
        "The log keeps `--undo-bytes` of before-images (the oldest change goes first) and each session "
        "`--undo-limit` changes for `undo()` with no id."
    ),
    "review_ready": (
        "On a server with mounts under review, every change the tools make stays pending in the state "
        "store: the tools show the mount with the changes, nothing else on the machine or in the bucket "
        "does. This lists what is pending (each path, how it changed, the ids of the changes that made "
        "it) and says how the person applies it (`vfs-mcp review --apply`). `apply=true` applies it "
        "all, as `--apply` does, only on a server started with `--agent-may-apply` (else "
        "ACCESS_DENIED)."
    ),
}
"""What a tool does in more words than its description spends on every turn."""


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " | ".join(_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if schema.get("type") == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    if schema.get("type") == "object" and "properties" in schema:
        return "object"
    return str(schema.get("type", "object"))


def _accepted(field: FieldInfo) -> str:
    """An argument that is accepted but not listed: its type and default."""
    kind = _type(TypeAdapter(field.annotation).json_schema()) if field.annotation is not None else "any"
    return f"({kind}, default {json.dumps(field.default, default=str)})"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _objects(name: str, schema: dict[str, Any]) -> list[str]:
    """A line per object argument (or list of objects) naming its fields."""
    item = schema.get("items", schema)
    fields = item.get("properties")
    if not isinstance(fields, dict):
        return []
    needed = set(item.get("required", []))
    parts = [
        f"`{field}` ({_type(spec)}{', required' if field in needed else ''})"
        + (f": {spec['description']}" if spec.get("description") else "")
        for field, spec in fields.items()
    ]
    return [f"`{name}` items: {', '.join(parts)}" if "items" in schema else f"`{name}`: {', '.join(parts)}", ""]


def _tool(tool: Tool) -> str:
    hints = tool.annotations
    flags = []
    if hints is not None:
        flags.append("read-only" if hints.read_only_hint else "writes")
        if hints.destructive_hint:
            flags.append("destructive")
        if hints.idempotent_hint:
            flags.append("idempotent")
    lines = [f"### `{tool.name}`", "", f"*{tool.title or tool.name}* — {', '.join(flags)}", "", tool.description, ""]
    if tool.name in DETAILS:
        lines += [DETAILS[tool.name], ""]
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    fields = {field.alias or key: field for key, field in tool.fn_metadata.arg_model.model_fields.items()}
    if properties:
        lines += ["| argument | type | default | description |", "|---|---|---|---|"]
        for name, schema in properties.items():
            default = fields[name].default if name in fields else PydanticUndefined
            shown = "required" if name in required else json.dumps(None if default is PydanticUndefined else default)
            description = _cell(str(schema.get("description", "")))
            lines.append(f"| `{name}` | {_cell(_type(schema))} | {shown} | {description} |")
        lines.append("")
    for name, schema in properties.items():
        lines += _objects(name, schema)
    hidden = sorted(set(fields) - set(properties) - {tool.context_kwarg})
    if hidden:
        accepted = ", ".join(f"`{h}` {_accepted(fields[h])}" for h in hidden)
        lines += [f"Also accepted, not listed (the originals' spellings, options a model rarely needs): {accepted}", ""]
    if tool.output_schema:
        outputs = ", ".join(f"`{name}`" for name in tool.output_schema.get("properties", {}))
        lines += [f"Structured result: {outputs}", ""]
    return "\n".join(lines)


def visible_bytes(tools: list[Tool]) -> int:
    """What a model pays for on every turn: name, description and input schema, compact JSON."""
    listed = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
    return len(compact_json(listed).encode())


def _tools(profile: str, review: bool = False) -> list[Tool]:
    settings = Settings(profiles=(profile,), review=review)
    server = build_server(open_mounts([MountSpec("memory://reference")]), settings)
    return sdk.registered_tools(server)


def render() -> str:
    """The whole reference: every profile's tools in listing order, then those listed only
    when a mount is under review."""
    parts = [HEADER]
    for profile in PROFILES:
        tools = _tools(profile)
        parts.append(f"## Profile `{profile}` ({len(tools)} tools, {visible_bytes(tools):,} bytes model-visible)\n")
        parts += [_tool(tool) for tool in tools]
        listed = {tool.name for tool in tools}
        more = [tool for tool in _tools(profile, review=True) if tool.name not in listed]
        if more:
            parts.append(
                f"Listed only when a mount is under review (`--review`, [review.md](review.md)): "
                f"{visible_bytes(more):,} bytes more.\n"
            )
            parts += [_tool(tool) for tool in more]
    return "\n".join(parts).rstrip() + "\n"
