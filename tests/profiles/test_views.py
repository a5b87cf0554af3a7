"""Every tool of every profile, as each kind of client shows it to the model.

Structured-first clients (Claude Code, Codex, OpenCode) forward ``structuredContent`` when
it is present, else the text; content-first clients (Claude Desktop, claude.ai, ChatGPT)
forward the text blocks (``vfs_mcp.profiles.results.views`` applies both rules). The answer of every
call (file text, matched line, names listed, error code) must be in both views, and
reading a 10 kB source file must cost at most 1.3x its size in either.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import png
from mcp import Client
from mcp_types import CallToolResult, ImageContent

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.profiles import PROFILES
from vfs_mcp.profiles.results import views
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

MARKER = 'MARKER = "views-table"'


def source(size: int = 10_240) -> str:
    """Python-like source of ``size`` bytes: quotes, indentation, a tab, non-ASCII, MARKER halfway."""
    parts: list[str] = []
    i = 0
    while sum(len(p.encode()) for p in parts) < size:
        parts.append(
            f"def handler_{i}(request, *, limit: int = {i}) -> dict[str, str]:\n"
            f'    """Answer request {i}: "quoted", \'single\' and\ta tab (naïve café)."""\n'
            f'    return {{"id": "{i}", "path": f"/api/v1/items/{{request.id}}"}}\n\n'
        )
        if i == 20:
            parts.append(MARKER + "\n\n")
        i += 1
    return "".join(parts)[:size]


def tree(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(source(), encoding="utf-8")
    (root / "notes.txt").write_text("alpha\nbeta marker-line gamma\n", encoding="utf-8")
    (root / "notes2.txt").write_text("alpha\nbeta marker-line gamma\ndelta\n", encoding="utf-8")
    (root / "dup1.txt").write_text("same content\n", encoding="utf-8")
    (root / "dup2.txt").write_text("same content\n", encoding="utf-8")
    (root / "big.bin").write_bytes(zlib.compress(bytes(range(256)) * 64) * 8)
    (root / "empty").mkdir()
    (root / "pic.png").write_bytes(png())


# (arguments, what must be in both views); paths relative to the mount root ("ROOT" is replaced).
CALLS: dict[str, dict[str, tuple[dict[str, Any], list[str]]]] = {
    "default": {
        "read_file": ({"path": "src/app.py"}, [MARKER]),
        "read_multiple_files": ({"paths": ["notes.txt", "src/app.py"]}, ["beta marker-line gamma", MARKER]),
        "list_directory": ({"path": "."}, ["notes.txt", "src", "pic.png"]),
        "get_file_info": ({"path": "notes.txt"}, ["notes.txt", "29"]),
        "list_allowed_directories": ({}, ["ROOT"]),
        "change_directory": ({"path": "src"}, ["ROOT/src"]),
        "get_working_directory": ({}, ["ROOT"]),
        "read_file_lines": ({"path": "notes.txt", "offset": 1}, ["beta marker-line gamma"]),
        "head_file": ({"path": "notes.txt", "lines": 1}, ["alpha"]),
        "tail_file": ({"path": "notes.txt", "lines": 1}, ["beta marker-line gamma"]),
        "compare_files": ({"file1": "notes.txt", "file2": "notes2.txt"}, ["+delta"]),
        "grep_files": ({"path": ".", "pattern": "marker-line"}, ["notes.txt:2:", "beta marker-line gamma"]),
        "search_files": ({"path": ".", "pattern": "app"}, ["app.py"]),
        "directory_tree": ({"path": "."}, ["app.py", "notes.txt", "empty"]),
        "calculate_directory_size": ({"path": ".", "format": "bytes"}, ["SIZE"]),
        "find_large_files": ({"path": ".", "min_size_mb": 0.001}, ["big.bin"]),
        "find_empty_directories": ({"path": "."}, ["empty"]),
        "find_duplicate_files": ({"path": "."}, ["dup1.txt", "dup2.txt"]),
        "write_file": ({"path": "new.txt", "content": "fresh"}, ["new.txt", "5 bytes"]),
        "create_directory": ({"path": "made"}, ["made"]),
        "move_file": ({"source": "notes.txt", "destination": "moved.txt"}, ["moved.txt"]),
        "copy_file": ({"source": "notes.txt", "destination": "copied.txt"}, ["copied.txt"]),
        "delete_path": ({"path": "notes.txt"}, ["notes.txt"]),
        "edit_file": ({"path": "notes.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}, ["+ALPHA"]),
        "apply_patch": (
            {"patch": "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-alpha\n+PATCHED\n"},
            ["+PATCHED", "updated"],
        ),
        "undo": ({}, ["undid write_file", "notes.txt", "this undo is change"]),
        "checkpoint": ({"name": "before"}, ["checkpoint before is change"]),
        "history": ({}, ["write_file", "notes.txt"]),
        "edit_file_at_line": (
            {"path": "notes.txt", "line_edits": [{"line_number": 1, "action": "replace", "content": "FIRST"}]},
            ["+FIRST"],
        ),
    },
    "official": {
        "read_file": ({"path": "notes.txt"}, ["beta marker-line gamma"]),
        "read_text_file": ({"path": "src/app.py"}, [MARKER]),
        "read_media_file": ({"path": "pic.png"}, ["[image image/png]"]),
        "read_multiple_files": ({"paths": ["notes.txt", "src/app.py"]}, ["beta marker-line gamma", MARKER]),
        "list_directory": ({"path": "."}, ["[FILE] notes.txt", "[DIR] src"]),
        "list_directory_with_sizes": ({"path": "."}, ["notes.txt", "src"]),
        "directory_tree": ({"path": "."}, ["app.py", "notes.txt"]),
        "search_files": ({"path": ".", "pattern": "**/*.py"}, ["app.py"]),
        "get_file_info": ({"path": "notes.txt"}, ["size: 29"]),
        "list_allowed_directories": ({}, ["ROOT"]),
        "write_file": ({"path": "new.txt", "content": "fresh"}, ["new.txt"]),
        "edit_file": ({"path": "notes.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}, ["+ALPHA"]),
        "create_directory": ({"path": "made"}, ["made"]),
        "move_file": ({"source": "notes.txt", "destination": "moved.txt"}, ["moved.txt"]),
    },
    "fs": {
        "fs_list_files": ({"root": "."}, ["notes.txt", "src/app.py"]),
        "fs_read_file": ({"path": "notes.txt"}, ["beta marker-line gamma"]),
        "fs_search_text": ({"query": "marker-line"}, ["notes.txt", "beta marker-line gamma"]),
        "fs_stat": ({"path": "notes.txt"}, ["29"]),
        "fs_path_info": ({"path": "notes.txt"}, ["notes.txt"]),
        "fs_create_file": ({"path": "new.txt", "content": "fresh"}, ["new.txt"]),
        "fs_overwrite_file": ({"path": "notes.txt", "content": "fresh"}, ["notes.txt"]),
        "fs_delete_path": ({"path": "notes.txt"}, ["notes.txt"]),
        "fs_copy_path": ({"from": "notes.txt", "to": "copied.txt"}, ["copied.txt"]),
        "fs_move_path": ({"from": "notes.txt", "to": "moved.txt"}, ["moved.txt"]),
    },
    "ide": {
        "file_open": ({"uri": "FILE_URI/notes.txt", "line": 2}, ["notes.txt"]),
        "file_read": ({"uri": "FILE_URI/notes.txt"}, ["beta marker-line gamma"]),
        "file_save": ({"uri": "FILE_URI/notes.txt", "content": "saved text\n"}, ["11"]),
        "file_close": ({"uri": "FILE_URI/notes.txt"}, ["notes.txt"]),
    },
}

# A call that fails, and the code both views must show (every tool that takes a path).
FAILURES: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
    "default": {
        "read_file": ({"path": "nope.txt"}, "NOT_FOUND"),
        "read_multiple_files": ({"paths": ["nope.txt"]}, "NOT_FOUND"),
        "list_directory": ({"path": "notes.txt"}, "NOT_A_DIRECTORY"),
        "get_file_info": ({"path": "/elsewhere/x"}, "ACCESS_DENIED"),
        "change_directory": ({"path": "notes.txt"}, "NOT_A_DIRECTORY"),
        "read_file_lines": ({"path": "nope.txt"}, "NOT_FOUND"),
        "head_file": ({"path": "nope.txt"}, "NOT_FOUND"),
        "tail_file": ({"path": "nope.txt"}, "NOT_FOUND"),
        "compare_files": ({"file1": "notes.txt", "file2": "nope.txt"}, "NOT_FOUND"),
        "grep_files": ({"path": ".", "pattern": "(", "is_regex": True}, "INVALID_ARGUMENT"),
        "search_files": ({"path": "nope", "pattern": "x"}, "NOT_FOUND"),
        "directory_tree": ({"path": "nope"}, "NOT_FOUND"),
        "calculate_directory_size": ({"path": "nope"}, "NOT_FOUND"),
        "find_large_files": ({"path": "nope"}, "NOT_FOUND"),
        "find_empty_directories": ({"path": "nope"}, "NOT_FOUND"),
        "find_duplicate_files": ({"path": "nope"}, "NOT_FOUND"),
        "write_file": ({"path": "/elsewhere/x", "content": "x"}, "ACCESS_DENIED"),
        "create_directory": ({"path": "/elsewhere/x"}, "ACCESS_DENIED"),
        "move_file": ({"source": "nope.txt", "destination": "x.txt"}, "NOT_FOUND"),
        "copy_file": ({"source": "notes.txt", "destination": "dup1.txt"}, "ALREADY_EXISTS"),
        "delete_path": ({"path": "src"}, "ALREADY_EXISTS"),
        "edit_file": ({"path": "notes.txt", "edits": [{"oldText": "zzz", "newText": "y"}]}, "CONFLICT"),
        "apply_patch": ({"patch": "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-zzz\n+y\n"}, "CONFLICT"),
        "undo": ({"path": "src/app.py"}, "NOT_FOUND"),
        "checkpoint": ({"name": "../x"}, "INVALID_ARGUMENT"),
        "history": ({"cursor": "x"}, "INVALID_ARGUMENT"),
        "edit_file_at_line": (
            {"path": "notes.txt", "line_edits": [{"line_number": 99, "action": "delete"}]},
            "INVALID_ARGUMENT",
        ),
    },
    "official": {
        "read_file": ({"path": "nope.txt"}, "NOT_FOUND"),
        "read_text_file": ({"path": "nope.txt"}, "NOT_FOUND"),
        "read_media_file": ({"path": "nope.png"}, "NOT_FOUND"),
        "read_multiple_files": ({"paths": ["nope.txt"]}, "NOT_FOUND"),
        "list_directory": ({"path": "notes.txt"}, "NOT_A_DIRECTORY"),
        "list_directory_with_sizes": ({"path": "nope"}, "NOT_FOUND"),
        "directory_tree": ({"path": "/elsewhere"}, "ACCESS_DENIED"),
        "search_files": ({"path": "nope", "pattern": "*"}, "NOT_FOUND"),
        "get_file_info": ({"path": "nope"}, "NOT_FOUND"),
        "write_file": ({"path": "/elsewhere/x", "content": "x"}, "ACCESS_DENIED"),
        "edit_file": ({"path": "notes.txt", "edits": [{"oldText": "zzz", "newText": "y"}]}, "CONFLICT"),
        "create_directory": ({"path": "/elsewhere/x"}, "ACCESS_DENIED"),
        "move_file": ({"source": "nope.txt", "destination": "x.txt"}, "NOT_FOUND"),
    },
    "fs": {
        "fs_list_files": ({"root": "nope"}, "NOT_FOUND"),
        "fs_read_file": ({"path": "nope.txt"}, "NOT_FOUND"),
        "fs_search_text": ({"query": "(", "mode": "regex"}, "INVALID_ARGUMENT"),
        "fs_stat": ({"path": "/elsewhere/x"}, "ACCESS_DENIED"),
        "fs_path_info": ({"path": "/elsewhere/x"}, "ACCESS_DENIED"),
        "fs_create_file": ({"path": "notes.txt"}, "ALREADY_EXISTS"),
        "fs_overwrite_file": ({"path": "nope.txt", "content": "x"}, "NOT_FOUND"),
        "fs_delete_path": ({"path": "nope.txt"}, "NOT_FOUND"),
        "fs_copy_path": ({"from": "nope.txt", "to": "x.txt"}, "NOT_FOUND"),
        "fs_move_path": ({"from": "nope.txt", "to": "x.txt"}, "NOT_FOUND"),
    },
    "ide": {
        "file_open": ({"uri": "FILE_URI/nope.txt"}, "NOT_FOUND"),
        "file_read": ({"uri": "file:///elsewhere/x"}, "ACCESS_DENIED"),
        "file_save": ({"uri": "FILE_URI/nope.txt", "content": "x"}, "NOT_FOUND"),
        "file_close": ({"uri": "file:///elsewhere/x"}, "ACCESS_DENIED"),
    },
}

READS = {  # each profile's whole-file text read, for the size bound
    "default": ("read_file", {"path": "src/app.py"}),
    "official": ("read_text_file", {"path": "src/app.py"}),
    "fs": ("fs_read_file", {"path": "src/app.py", "max_bytes": 65536}),
    "ide": ("file_read", {"uri": "FILE_URI/src/app.py"}),
}


def _filled(value: Any, root: Path) -> Any:
    if isinstance(value, str):
        return value.replace("FILE_URI", root.as_uri()).replace("ROOT", str(root))
    if isinstance(value, list):
        return [_filled(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, root) for k, v in value.items()}
    return value


BEFORE = {
    "undo": ("write_file", {"path": "notes.txt", "content": "changed"}),
    "history": ("write_file", {"path": "notes.txt", "content": "changed"}),
}
"""A call a tool needs made first in the same session (undo takes back a change)."""


async def call(tmp_path: Path, profile: str, tool: str, arguments: dict[str, Any]) -> tuple[CallToolResult, Path]:
    """``tool`` called on a fresh copy of the tree, from an in-process client; its structured
    content checked against its output schema, as a TypeScript-SDK client checks it."""
    root = tmp_path / f"{profile}-{tool}"
    root.mkdir()
    tree(root)
    server = build_server(open_mounts([MountSpec(str(root))]), Settings(profiles=(profile,)))
    async with Client(server) as client:
        schema = next(t.output_schema for t in (await client.list_tools()).tools if t.name == tool)
        if tool in BEFORE:
            await client.call_tool(*BEFORE[tool])
        result = await client.call_tool(tool, _filled(arguments, root))
    if schema is not None and not result.is_error:
        jsonschema.validate(result.structured_content, schema)
    return result, root


def cases(table: dict[str, dict[str, Any]]) -> Iterator[Any]:
    for profile, tools in table.items():
        for tool, spec in tools.items():
            yield pytest.param(profile, tool, spec, id=f"{profile}-{tool}")


def holds(view: str, text: str) -> bool:
    """Whether a view shows ``text``: as is, or JSON-escaped inside structured content."""
    return text in view or json.dumps(text, ensure_ascii=False)[1:-1] in view


def _size(root: Path) -> str:
    return str(sum(p.stat().st_size for p in root.rglob("*") if p.is_file()))


@pytest.mark.parametrize(("profile", "tool", "spec"), list(cases(CALLS)))
async def test_every_answer_is_whole_in_both_views(tmp_path: Path, profile: str, tool: str, spec: Any) -> None:
    arguments, expected = spec
    result, root = await call(tmp_path, profile, tool, arguments)
    assert not result.is_error, views(result)[1]
    structured_first, content_first = views(result)
    for part in expected:
        wanted = _size(root) if part == "SIZE" else _filled(part, root)
        assert holds(structured_first, wanted), f"{tool}: {wanted!r} missing from what Claude Code shows"
        assert holds(content_first, wanted), f"{tool}: {wanted!r} missing from what Claude Desktop shows"


@pytest.mark.parametrize(("profile", "tool", "spec"), list(cases(FAILURES)))
async def test_every_error_reaches_both_views_as_text_starting_with_its_code(
    tmp_path: Path, profile: str, tool: str, spec: Any
) -> None:
    arguments, code = spec
    result, _ = await call(tmp_path, profile, tool, arguments)
    structured_first, content_first = views(result)
    if tool == "read_multiple_files":  # one failed file fails no call: its own line says why
        assert not result.is_error
        assert f"{code}" in structured_first and f"{code}" in content_first
        return
    assert result.is_error
    assert result.structured_content is None, "a TypeScript client would check it against the success schema"
    assert content_first.startswith(code) and structured_first.startswith(code), content_first


async def test_the_tables_cover_every_tool_of_every_profile(tmp_path: Path) -> None:
    assert set(CALLS) == set(PROFILES)
    for profile in PROFILES:
        server = build_server(open_mounts([MountSpec(str(tmp_path))]), Settings(profiles=(profile,)))
        names = {tool.name for tool in await server.list_tools()}
        assert set(CALLS[profile]) == names, profile
        pathless = {"list_allowed_directories", "get_working_directory"}
        assert set(FAILURES[profile]) == names - pathless, profile


@pytest.mark.parametrize("profile", list(READS))
async def test_reading_a_10_kb_source_file_costs_at_most_1_3_times_its_size_in_either_view(
    tmp_path: Path, profile: str
) -> None:
    tool, arguments = READS[profile]
    result, root = await call(tmp_path, profile, tool, arguments)
    size = (root / "src" / "app.py").stat().st_size
    structured_first, content_first = views(result)
    for view in (structured_first, content_first):
        assert holds(view, MARKER)
        assert len(view) <= 1.3 * size, f"{profile}: {len(view)} characters for a {size}-byte file"


async def test_an_image_read_is_an_image_block_with_nothing_structured_to_hide_it(tmp_path: Path) -> None:
    result, _ = await call(tmp_path, "default", "read_file", {"path": "pic.png"})
    assert result.structured_content is None
    assert isinstance(result.content[0], ImageContent) and result.content[0].mime_type == "image/png"
    assert views(result)[0].startswith("[image image/png]")
