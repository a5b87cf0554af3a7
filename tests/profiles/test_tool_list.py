"""What tools/list costs a model, what ``--tools`` keeps, and how an argument mistake is answered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from vfs_mcp import build_server
from vfs_mcp.cli.tool_docs import visible_bytes
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.profiles import PROFILES
from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp.server import sdk
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

REFERENCE_VISIBLE = 8001  # @modelcontextprotocol/server-filesystem 2026.8.31, measured the same way
DEFAULT_BUDGET = 10_098  # the default profile, all 29 tools (issue 41: 11,500 before; issue 48: + 600)
BEFORE_THE_TIMELINE = 9_498  # the default profile's 27 tools at a2fd646, before checkpoint and history
TIMELINE_GROWTH = 600  # what checkpoint, history and undo's redo may add (issue 48)


def server(profile: str = "default", **settings: Any):  # type: ignore[no-untyped-def]
    return build_server(open_mounts([MountSpec("memory://tools")]), Settings(profiles=(profile,), **settings))


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_the_default_tool_list_fits_its_budget_and_official_stays_under_the_reference() -> None:
    default = sdk.registered_tools(server())
    official = sdk.registered_tools(server("official"))
    assert len(default) == 29
    assert visible_bytes(default) <= DEFAULT_BUDGET
    assert visible_bytes(official) <= REFERENCE_VISIBLE


def test_the_timeline_tools_grow_the_default_list_by_at_most_600_bytes() -> None:
    default = sdk.registered_tools(server())
    assert {"checkpoint", "history"} <= {tool.name for tool in default}
    assert visible_bytes(default) - BEFORE_THE_TIMELINE <= TIMELINE_GROWTH


@pytest.mark.parametrize("profile", list(PROFILES))
async def test_input_schemas_carry_no_generated_noise(profile: str) -> None:
    for tool in await server(profile).list_tools():
        nodes = list(_walk(tool.input_schema))
        assert not any("title" in node and isinstance(node["title"], str) for node in nodes), tool.name
        assert not any({"type": "null"} in node.get("anyOf", []) for node in nodes), tool.name
        assert "$defs" not in tool.input_schema, tool.name


async def test_the_tools_option_lists_named_tools_and_sets() -> None:
    def names(*wanted: str) -> set[str]:
        return {tool.name for tool in sdk.registered_tools(server(tools=wanted))}

    every = names()
    read_only = names("read-only")
    assert read_only and "read_file" in read_only and not read_only & {"write_file", "edit_file", "delete_path"}
    assert names("read-only", "write") == every
    assert names("lines") == {"read_file_lines", "head_file", "tail_file", "edit_file_at_line"}
    assert names("search", "edit_file") == {"grep_files", "search_files", "directory_tree", "edit_file"}
    assert {tool.name for tool in sdk.registered_tools(server("fs", tools=("fs.read_file", "fs_stat")))} == {
        "fs_read_file",
        "fs_stat",
    }
    async with Client(server(tools=("read-only",))) as client:
        with pytest.raises(MCPError, match="--tools read-only leaves it out"):
            await client.call_tool("write_file", {"path": "a.txt", "content": "x"})


def test_an_unknown_tool_or_set_is_refused_at_start_with_the_closest_name() -> None:
    with pytest.raises(ValueError, match=r"no tool or set named 'reed-only'; did you mean 'read-only'\?"):
        server(tools=("reed-only",))
    with pytest.raises(ValueError, match="leaves no tool"):
        server("official", tools=("lines",))


async def test_an_unknown_argument_suggests_the_closest_one_and_says_what_the_tool_takes() -> None:
    async with Client(server()) as client:
        seed = await client.call_tool("read_file_lines", {"path": "a.txt", "start_line": 3})
        camel = await client.call_tool("edit_file", {"path": "a.txt", "edits": [], "dryRun": True})
        typo = await client.call_tool("grep_files", {"path": ".", "pattern": "x", "context": 2})
    assert error_of(seed)["message"] == (  # type: ignore[index]
        "read_file_lines has no argument 'start_line' (did you mean 'offset'?); it takes path, offset, limit "
        "(also accepted: encoding)"
    )
    assert "'dryRun' (did you mean 'dry_run'?)" in error_of(camel)["message"]  # type: ignore[index]
    message = error_of(typo)["message"]  # type: ignore[index]
    assert "'context' (did you mean 'context_lines'?)" in message
    assert "(also accepted: context_after, context_before, format, max_file_size_mb, max_results, recursive)" in message


async def test_the_seed_spellings_left_out_of_the_schema_are_still_accepted(tmp_path: Any) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\nfour\n")
    built = build_server(open_mounts([MountSpec(str(tmp_path))]))
    async with Client(built) as client:
        grep = await client.call_tool(
            "grep_files", {"path": ".", "pattern": "three", "context_before": 2, "context_after": 0, "recursive": False}
        )
        edit = await client.call_tool(
            "edit_file_at_line",
            {
                "path": "a.txt",
                "offset": 1,
                "relative_line_numbers": True,
                "line_edits": [{"line_number": 1, "action": "replace", "content": "THREE"}],
            },
        )
    lines = [m for m in data_of(grep)["matches"]]  # type: ignore[index]
    assert lines[0]["context_before"] == ["one", "two"] and lines[0]["context_after"] == []
    assert not edit.is_error, edit.content
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\nTHREE\nfour\n"
    schema = json.dumps([t.input_schema for t in await built.list_tools()])
    assert "context_before" not in schema and "relative_line_numbers" not in schema
