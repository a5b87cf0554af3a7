"""The input and output schemas of every profile's tools, as the MCP SDK generates them from the
adapters' signatures, kept in ``schemas.json`` beside this module.

With them a server lists its tools without building a pydantic argument model and JSON schema
per tool at start (about half of building a server); each tool's model is built on its first
call (``sdk.add_planned_tool``). The table is written by ``python scripts/gen_tool_reference.py``
and a test fails when it differs from what the SDK generates now
(``tests/server/test_schemas.py``); a tool missing from it is registered the SDK's way.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson

TABLE = Path(__file__).with_name("schemas.json")


@functools.cache
def known() -> dict[str, dict[str, Any]]:
    """The table: where an adapter is (``Tool.where``) -> its tool's ``parameters`` (input
    schema), ``output`` (output schema or None) and ``context`` (the argument that takes the
    call's Context, or None)."""
    try:
        table: dict[str, dict[str, Any]] = orjson.loads(TABLE.read_bytes())
    except FileNotFoundError:
        return {}
    return table


def written(table: dict[str, dict[str, Any]]) -> bytes:
    """The table as the file holds it: indented, one newline at the end (keys in their order: a
    schema's properties are listed as the adapter takes them)."""
    return orjson.dumps(table, option=orjson.OPT_INDENT_2) + b"\n"
