"""What ``tools/list`` shows: compact input schemas, and only the tools ``--tools`` names.

A model pays for every tool's name, description and input schema on every turn, and the
schemas pydantic generates carry what no model needs: a ``title`` on every property
("Is Regex"), ``anyOf [T, null]`` for every optional argument, ``$defs`` indirection. They
are published without it; arguments are still validated by the full pydantic model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mcp.server.mcpserver import MCPServer

from vfs_mcp.server import sdk

BASIC = (
    "read_file read_multiple_files write_file create_directory list_directory move_file copy_file delete_path "
    "get_file_info list_allowed_directories edit_file change_directory get_working_directory"
)
FAMILIES: dict[str, frozenset[str]] = {
    # The sets docs/deployment.md names (`--tools`), for the default profile's names.
    "basic": frozenset(BASIC.split()),
    "lines": frozenset({"read_file_lines", "head_file", "tail_file", "edit_file_at_line"}),
    "search": frozenset({"grep_files", "search_files", "directory_tree"}),
    "analytics": frozenset(
        {
            "calculate_directory_size",
            "find_duplicate_files",
            "compare_files",
            "find_large_files",
            "find_empty_directories",
        }
    ),
}
SETS = ("all", "read-only", "write", *FAMILIES)
"""Names ``--tools`` takes besides tool names: every tool, by annotation, or by a set of docs/deployment.md's table."""
TOOLS_HELP = f"list only these tools: names and sets ({', '.join(SETS)}), comma-separated (default: all)"


IMPLIED = (False, 0, "utf-8", ".")
"""Defaults a model assumes of an argument it leaves out: off, zero, text in UTF-8, the working directory."""


def compact_schema(schema: dict[str, Any], *, implied_defaults: bool = True) -> dict[str, Any]:
    """``schema`` without titles, ``$defs`` (inlined), null unions, maximums and null defaults:
    the same arguments in fewer bytes. With ``implied_defaults`` (what a model assumes anyway)
    the ``IMPLIED`` defaults and ``additionalProperties: false`` go too; without, they stay as a
    original states them."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        name = ref.rsplit("/", 1)[-1]
        if ref.startswith("#/$defs/") and name in defs and name not in seen:
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**defs[name], **rest}, (*seen, name))
        options = node.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
            (kept,) = [option for option in options if option != {"type": "null"}]
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return walk({**kept, **rest}, seen)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("title", "$defs", "maximum"):
                continue  # a value over a maximum is still refused, with the bound in the message
            if key == "additionalProperties" and value is False and implied_defaults:
                continue
            if key == "default" and (value is None or (implied_defaults and value in IMPLIED and value is not True)):
                continue  # an argument left out is absent, off, zero, UTF-8 or here: no need to say so
            if key == "properties":
                out[key] = {prop: walk(spec, seen) for prop, spec in value.items()}
            else:
                out[key] = walk(value, seen)
        return out

    return walk(schema, ())  # type: ignore[no-any-return]


def _key(name: str) -> str:
    """``fs.read_file`` and ``fs_read_file``, ``file/open`` and ``file_open`` are one tool."""
    return name.replace(".", "_").replace("/", "_")


def parse_tool_list(text: str) -> tuple[str, ...]:
    """``--tools`` as given: comma-separated names and sets."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def selected(wanted: Iterable[str], tools: dict[str, bool]) -> set[str]:
    """The names of ``tools`` (name -> read-only) that ``wanted`` names or whose set it names;
    ValueError for a name that is neither, with the closest one."""
    by_key = {_key(name): name for name in tools}
    chosen: set[str] = set()
    for item in wanted:
        if item == "all":
            chosen |= set(tools)
        elif item in ("read-only", "write"):
            chosen |= {name for name, read_only in tools.items() if read_only == (item == "read-only")}
        elif item in FAMILIES:
            chosen |= {name for name in tools if _key(name) in FAMILIES[item]}
        elif _key(item) in by_key:
            chosen.add(by_key[_key(item)])
        else:
            known = [*SETS, *tools]
            import difflib  # here: only a name that is not known needs it

            close = difflib.get_close_matches(item, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"--tools: no tool or set named {item!r}; {hint}sets: {', '.join(SETS)}; tools: {', '.join(tools)}"
            )
    return chosen


def publish(server: MCPServer, wanted: tuple[str, ...], exact: set[str] | None = None) -> None:
    """Compact every registered tool's input schema (keeping the stated defaults of the
    ``exact`` ones); with ``wanted``, keep only those tools."""
    tools = {tool.name: tool for tool in sdk.registered_tools(server)}
    if wanted:
        read_only = {name: bool(t.annotations and t.annotations.read_only_hint) for name, t in tools.items()}
        keep = selected(wanted, read_only)
        if not keep:
            raise ValueError(f"--tools {','.join(wanted)} leaves no tool in the chosen profiles")
        for name in set(tools) - keep:
            server.remove_tool(name)
    for tool in sdk.registered_tools(server):
        tool.parameters = compact_schema(tool.parameters, implied_defaults=tool.name not in (exact or set()))


SYNONYMS = {
    # What other servers (and the originals' other tools) call the arguments ours take.
    "start_line": ("offset", "line"),
    "from_line": ("offset", "line"),
    "line": ("offset", "line_number"),
    "end_line": ("limit",),
    "max_lines": ("limit", "lines"),
    "num_lines": ("lines", "limit"),
    "count": ("lines", "limit"),
    "n": ("lines", "limit"),
    "head": ("lines",),
    "tail": ("lines",),
    "file": ("path",),
    "file_path": ("path",),
    "filename": ("path",),
    "uri": ("path",),
    "directory": ("path",),
    "dir": ("path",),
    "query": ("pattern",),
    "regex": ("pattern",),
    "text": ("content", "pattern"),
    "data": ("content",),
    "src": ("source",),
    "dest": ("destination",),
    "target": ("destination",),
    "to": ("destination",),
    "from": ("source",),
}


def closest_argument(key: str, accepted: set[str]) -> str | None:
    """The accepted argument ``key`` most likely meant: camelCase spelt snake_case, a known
    synonym, or the closest spelling."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
    if snake in accepted:
        return snake
    for meant in SYNONYMS.get(snake, ()):
        if meant in accepted:
            return meant
    import difflib  # here: only a name that is not known needs it

    close = difflib.get_close_matches(snake, sorted(accepted), n=1)
    return close[0] if close else None
