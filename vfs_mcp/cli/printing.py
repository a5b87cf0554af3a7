"""How a tool's result and a server's tools read on a terminal or in a pipe (``vfs-mcp call``,
``vfs-mcp tools``): long content previewed with a note of what was cut, errors as one line,
colour only on a terminal."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_types import CallToolResult, EmbeddedResource, TextContent, Tool

from vfs_mcp.profiles.results import error_of

PREVIEW_LINES = 40
PREVIEW_CHARS = 4000


class Style:
    """ANSI colours when ``color`` is true, plain text otherwise."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def note(self, text: str) -> str:
        return self._wrap("2;33", text)


def preview(text: str, max_lines: int = PREVIEW_LINES, max_chars: int = PREVIEW_CHARS) -> tuple[str, str | None]:
    """The head of ``text`` and a note of what was cut (None when nothing was)."""
    lines = text.splitlines(keepends=True)
    head = "".join(lines[:max_lines])[:max_chars]
    if len(head) == len(text):
        return text, None
    rest = text[len(head) :]
    more_lines = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    note = f"[cut: {more_lines:,} more lines, {len(rest):,} more characters; --full shows everything]"
    return head if head.endswith("\n") else head + "\n", note


def _block_text(block: Any) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, EmbeddedResource) and hasattr(block.resource, "text"):
        return str(block.resource.text)
    kind = getattr(block, "mime_type", None) or getattr(block, "type", "content")
    size = len(getattr(block, "data", "") or "")
    return f"[{kind}, {size:,} characters of base64; --json-out shows it]"


def render(result: CallToolResult, style: Style, full: bool = False) -> str:
    """How a result reads on a terminal or in a pipe: the content, or the error line."""
    if result.is_error:
        error = error_of(result) or {}
        text = "\n".join(_block_text(b) for b in result.content)
        if error:
            text = f"{error.get('code')} ({error.get('status')}): {error.get('message')}"
        return style.red(f"error: {text}") + "\n"
    text = "\n".join(_block_text(b) for b in result.content)
    if text and not text.endswith("\n"):
        text += "\n"
    if full:
        return text
    head, note = preview(text)
    return head + (style.note(note) + "\n" if note else "")


def to_json(result: CallToolResult) -> str:
    """The result as the MCP wire shows it (content, structuredContent, isError)."""
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    ours = {k: v for k, v in data.pop("_meta", {}).items() if k.startswith("vfs-mcp/")}  # the result's fields
    if ours:
        data["_meta"] = ours
    data.setdefault("isError", False)
    return json.dumps(data, indent=1, ensure_ascii=False)


def one_line(tool: Tool) -> str:
    """The first sentence of a tool's description."""
    text = " ".join((tool.description or tool.title or "").split())
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text


def render_tools(tools: Sequence[Tool], style: Style) -> str:
    width = max((len(t.name) for t in tools), default=0)
    return "".join(f"{style.bold(t.name.ljust(width))}  {one_line(t)}\n" for t in tools)


def render_tool(tool: Tool, style: Style) -> str:
    """One tool in full: its description, then each argument with its type, default and use."""
    schema = tool.input_schema or {}
    required = set(schema.get("required") or [])
    lines = [style.bold(tool.name), "  " + " ".join((tool.description or "").split())]
    for name, spec in (schema.get("properties") or {}).items():
        kind = _type_of(spec)
        default = (
            "required"
            if name in required
            else f"default {json.dumps(spec['default'])}"
            if "default" in spec
            else "optional"  # left out: off, zero, none, UTF-8 or the working directory
        )
        about = " ".join(str(spec.get("description", "")).split())
        lines.append(f"  {style.bold(name)} ({kind}, {default})" + (f": {about}" if about else ""))
    return "\n".join(lines) + "\n"


def _type_of(spec: Mapping[str, Any]) -> str:
    if "enum" in spec:
        return " | ".join(json.dumps(v) for v in spec["enum"])
    if "anyOf" in spec:
        return " | ".join(_type_of(s) for s in spec["anyOf"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type_of(spec.get('items') or {})}"
    return str(kind)


def use_color(plain: bool) -> bool:
    """Colour only on a terminal, and never with --plain (or NO_COLOR set)."""
    return not plain and "NO_COLOR" not in os.environ and sys.stdout.isatty()
