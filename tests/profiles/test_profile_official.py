"""The ``official`` profile: a drop-in for ``@modelcontextprotocol/server-filesystem``.

Three kinds of test. The tool contract (names, required and optional arguments, defaults,
hints) is checked over a real stdio subprocess against the reference server's schemas,
written out below. Golden tests pin each tool's result text on memory, local and s3. The
rest re-express, as our tests, the behaviour cases the reference server's own test suite
describes (path validation, edits with whitespace and CRLF, head/tail, tree excludes,
search globs, sizes, diffs) — with our deliberate differences asserted where we differ.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from conftest import CANARY, Sandbox, make_sandbox
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from vfs_mcp import build_server
from vfs_mcp.errors import Conflict, InvalidArgument
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.dialects import official as dialect
from vfs_mcp.profiles.official import edit as official_edit
from vfs_mcp.profiles.official import render
from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

# The reference server's tools as its index.ts declares them (2026.8.31): required arguments,
# and optional ones with their defaults (None: optional without a default).
REFERENCE: dict[str, tuple[list[str], dict[str, Any]]] = {
    "read_file": (["path"], {"tail": None, "head": None}),
    "read_text_file": (["path"], {"tail": None, "head": None}),
    "read_media_file": (["path"], {}),
    "read_multiple_files": (["paths"], {}),
    "write_file": (["path", "content"], {}),
    "edit_file": (["path", "edits"], {"dryRun": False}),
    "create_directory": (["path"], {}),
    "list_directory": (["path"], {}),
    "list_directory_with_sizes": (["path"], {"sortBy": "name"}),
    "directory_tree": (["path"], {"excludePatterns": []}),
    "move_file": (["source", "destination"], {}),
    "search_files": (["path", "pattern"], {"excludePatterns": []}),
    "get_file_info": (["path"], {}),
    "list_allowed_directories": ([], {}),
}
WRITE_TOOLS = {"write_file", "edit_file", "create_directory", "move_file"}
# readOnlyHint / destructiveHint / idempotentHint of the reference's write tools.
WRITE_HINTS = {
    "write_file": (False, True, True),
    "edit_file": (False, True, False),
    "create_directory": (False, False, True),
    "move_file": (False, True, False),
}
RULE = "=" * 67


@asynccontextmanager
async def official(box: Sandbox, **settings: Any) -> AsyncIterator[Client]:
    async with box.client(profiles=("official",), **settings) as client:
        yield client


def text(result: CallToolResult) -> str:
    """The one text block of a success, as the reference answers: what only we add is in ``_meta``."""
    assert not result.is_error, result.content[0].text
    assert result.structured_content is None, "the official profile carries content once"
    assert len(result.content) == 1, [block.text for block in result.content]  # type: ignore[union-attr]
    return str(result.content[0].text)


def error(result: CallToolResult, code: str) -> str:
    assert result.is_error, f"expected {code}, got {result.content}"
    line = str(result.content[0].text)
    assert error_of(result)["code"] == code, line
    assert line.startswith(f"{code}: "), line
    return line


def memory_vfs(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Sandbox, JailedFS]:
    box = make_sandbox("memory", tmp_path, request)
    return box, box.vfs()


# -- the contract, over stdio -------------------------------------------------------------


def _type(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    if "anyOf" in schema:
        return {_type(s, defs) for s in schema["anyOf"]} - {"null"}
    if "$ref" in schema:
        return _type(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if schema.get("type") == "array":
        return ("array", _type(schema["items"], defs))
    if schema.get("type") == "object":
        return ("object", tuple(sorted(schema["required"])), schema.get("additionalProperties"))
    if "enum" in schema:
        return tuple(schema["enum"])
    return schema["type"]


async def test_stdio_server_lists_the_reference_tools_with_its_arguments_and_defaults(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "vfs_mcp", str(tmp_path), "--profile", "official"]
    )
    async with Client(params) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        head = await client.call_tool("read_text_file", {"path": str(tmp_path / "notes.txt"), "head": 2})
        denied = await client.call_tool("read_text_file", {"path": "/etc/passwd"})
    assert set(tools) == set(REFERENCE)
    for name, (required, optional) in REFERENCE.items():
        schema = tools[name].input_schema
        properties = schema.get("properties", {})
        assert set(properties) == {*required, *optional}, name
        assert sorted(schema.get("required", [])) == sorted(required), name
        for argument, default in optional.items():
            assert properties[argument].get("default") == default, (name, argument)
        hints = tools[name].annotations
        assert hints is not None and hints.open_world_hint is False
        if name in WRITE_TOOLS:
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == WRITE_HINTS[name], name
        else:
            assert hints.read_only_hint is True, name
    defs = tools["edit_file"].input_schema.get("$defs", {})
    types = {n: {a: _type(s, defs) for a, s in t.input_schema["properties"].items()} for n, t in tools.items()}
    assert types["edit_file"] == {
        "path": "string",
        "edits": ("array", ("object", ("newText", "oldText"), False)),
        "dryRun": "boolean",
    }
    assert types["read_text_file"] == {"path": "string", "tail": "integer", "head": "integer"}
    assert types["list_directory_with_sizes"]["sortBy"] == ("name", "size")
    assert types["search_files"] == {"path": "string", "pattern": "string", "excludePatterns": ("array", "string")}
    assert types["read_multiple_files"] == {"paths": ("array", "string")}
    assert text(head) == "one\ntwo"
    error(denied, "ACCESS_DENIED")


async def test_a_read_only_server_does_not_list_the_write_tools(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    box = make_sandbox("memory", tmp_path, request, read_only=True)
    names = {tool.name for tool in await box.server(profiles=("official",)).list_tools()}
    assert names == set(REFERENCE) - WRITE_TOOLS


def test_official_cannot_be_combined_with_default(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    box = make_sandbox("memory", tmp_path, request)
    with pytest.raises(ValueError, match="choose one"):
        build_server([box.mount], Settings(profiles=("default", "official")))


# -- golden results on every backend ------------------------------------------------------


def seed(box: Sandbox) -> None:
    box.put("a.txt", "x" * 2048)
    box.put("b.txt", "hello")
    box.put(".env", "K=v")
    box.put("docs/guide.md", "# Guide\n")
    box.put("src/main.py", "print(1)\n")
    box.put("src/lib/util.py", "")


async def test_listings_and_tree_read_as_the_reference_writes_them(scoped_sandbox: Sandbox) -> None:
    box = scoped_sandbox
    seed(box)
    root = box.path()
    async with official(box) as client:
        listed = await client.call_tool("list_directory", {"path": root})
        by_name = await client.call_tool("list_directory_with_sizes", {"path": root})
        by_size = await client.call_tool("list_directory_with_sizes", {"path": root, "sortBy": "size"})
        tree = await client.call_tool("directory_tree", {"path": root})
        pruned = await client.call_tool("directory_tree", {"path": root, "excludePatterns": ["lib", "*.md", ".env"]})
    assert text(listed) == "[FILE] .env\n[FILE] a.txt\n[FILE] b.txt\n[DIR] docs\n[DIR] src"
    assert text(by_name) == (
        "[FILE] .env                                  3 B\n"
        "[FILE] a.txt                             2.00 KB\n"
        "[FILE] b.txt                                 5 B\n"
        "[DIR] docs                           \n"
        "[DIR] src                            \n"
        "\n"
        "Total: 3 files, 2 directories\n"
        "Combined size: 2.01 KB"
    )
    # As the reference sorts: by size, largest first, a directory by its own inode's size (4096
    # on ext4, a few dozen bytes on tmpfs) where there are host paths, else 0; ties by name.
    lines = {
        "a.txt": "[FILE] a.txt                             2.00 KB",
        "b.txt": "[FILE] b.txt                                 5 B",
        ".env": "[FILE] .env                                  3 B",
        "docs": "[DIR] docs                           ",
        "src": "[DIR] src                            ",
    }
    sizes = {"a.txt": 2048, "b.txt": 5, ".env": 3, "docs": 0, "src": 0}
    if box.mount.capabilities.host_paths:
        vfs = box.vfs()
        for name in ("docs", "src"):
            sizes[name] = os.stat(str(vfs.host_path(vfs.resolve(f"{root}/{name}")))).st_size
    by_name_order = [".env", "a.txt", "b.txt", "docs", "src"]
    expected_order = sorted(by_name_order, key=lambda name: -sizes[name])
    assert text(by_size).splitlines()[:5] == [lines[name] for name in expected_order]
    expected = [
        {"name": ".env", "type": "file"},
        {"name": "a.txt", "type": "file"},
        {"name": "b.txt", "type": "file"},
        {"name": "docs", "type": "directory", "children": [{"name": "guide.md", "type": "file"}]},
        {
            "name": "src",
            "type": "directory",
            "children": [
                {"name": "lib", "type": "directory", "children": [{"name": "util.py", "type": "file"}]},
                {"name": "main.py", "type": "file"},
            ],
        },
    ]
    assert text(tree) == json.dumps(expected, indent=2)
    assert json.loads(text(pruned)) == [
        {"name": "a.txt", "type": "file"},
        {"name": "b.txt", "type": "file"},
        {"name": "docs", "type": "directory", "children": []},
        {"name": "src", "type": "directory", "children": [{"name": "main.py", "type": "file"}]},
    ]


async def test_reads_return_text_lines_and_media_blocks_as_the_reference_does(scoped_sandbox: Sandbox) -> None:
    box = scoped_sandbox
    box.put("lines.txt", "l1\nl2\nl3\nl4\n")
    box.put("pixel.png", b"\x89PNG\r\n\x1a\n")
    box.put("clip.mp3", b"ID3\x04")
    box.put("data.bin", b"\x00\x01\x02\xff")
    path = box.path("lines.txt")
    async with official(box) as client:
        whole = await client.call_tool("read_text_file", {"path": path})
        alias = await client.call_tool("read_file", {"path": path})
        head = await client.call_tool("read_text_file", {"path": path, "head": 2})
        tail = await client.call_tool("read_text_file", {"path": path, "tail": 2})
        both = await client.call_tool("read_text_file", {"path": path, "head": 1, "tail": 1})
        many = await client.call_tool("read_multiple_files", {"paths": [path, box.path("missing.txt")]})
        png = await client.call_tool("read_media_file", {"path": box.path("pixel.png")})
        mp3 = await client.call_tool("read_media_file", {"path": box.path("clip.mp3")})
        blob = await client.call_tool("read_media_file", {"path": box.path("data.bin")})
        binary = await client.call_tool("read_text_file", {"path": box.path("data.bin")})
    assert text(whole) == text(alias) == "l1\nl2\nl3\nl4\n"
    assert text(head) == "l1\nl2"
    assert text(tail) == "l3\nl4"
    assert "Cannot specify both head and tail" in error(both, "INVALID_ARGUMENT")
    first, second = text(many).split("\n---\n")
    assert first == f"{path}:\nl1\nl2\nl3\nl4\n\n"
    assert second.startswith(f"{box.path('missing.txt')}: Error - NOT_FOUND: ")
    for result, kind, mime, data in (
        (png, "image", "image/png", b"\x89PNG\r\n\x1a\n"),
        (mp3, "audio", "audio/mpeg", b"ID3\x04"),
    ):
        assert not result.is_error and result.structured_content is None
        [block] = result.content
        assert (block.type, block.mime_type, base64.b64decode(block.data)) == (kind, mime, data)
    [resource] = blob.content
    assert resource.type == "resource"
    assert resource.resource.mime_type == "application/octet-stream"
    assert base64.b64decode(resource.resource.blob) == b"\x00\x01\x02\xff"
    expected_uri = Path(box.path("data.bin")).as_uri() if box.kind == "local" else box.path("data.bin")
    assert resource.resource.uri == expected_uri
    assert "read_media_file" in error(binary, "BINARY_CONTENT")


async def test_writes_and_edits_answer_in_the_reference_words(scoped_sandbox: Sandbox) -> None:
    box = scoped_sandbox
    box.put("file.txt", "line1\nline2\nline3\n")
    path = box.path("file.txt")
    async with official(box) as client:
        preview = await client.call_tool(
            "edit_file", {"path": path, "edits": [{"oldText": "line2", "newText": "changed"}], "dryRun": True}
        )
        unchanged = box.get("file.txt")
        edited = await client.call_tool(
            "edit_file", {"path": path, "edits": [{"oldText": "line2", "newText": "changed"}]}
        )
        wrote = await client.call_tool("write_file", {"path": box.path("new.txt"), "content": "fresh"})
        made = await client.call_tool("create_directory", {"path": box.path("made/deep")})
        again = await client.call_tool("create_directory", {"path": box.path("made/deep")})
        moved = await client.call_tool(
            "move_file", {"source": box.path("new.txt"), "destination": box.path("made/n.txt")}
        )
        orphan = await client.call_tool("write_file", {"path": box.path("nowhere/x.txt"), "content": "x"})
    diff = (
        f"```diff\nIndex: {path}\n{RULE}\n--- {path}\toriginal\n+++ {path}\tmodified\n"
        "@@ -1,3 +1,3 @@\n line1\n-line2\n+changed\n line3\n```\n\n"
    )
    assert text(preview) == diff
    assert unchanged == b"line1\nline2\nline3\n"
    assert text(edited) == diff
    assert box.get("file.txt") == b"line1\nchanged\nline3\n"
    assert text(wrote) == f"Successfully wrote to {box.path('new.txt')}"
    changes = [(data_of(r) or {}).get("change_id") for r in (edited, wrote, made, moved)]
    assert None not in changes and len(set(changes)) == 4, (
        "each change's id is in _meta, where the reference's text has no place for it"
    )
    assert text(made) == text(again) == f"Successfully created directory {box.path('made/deep')}"
    assert text(moved) == f"Successfully moved {box.path('new.txt')} to {box.path('made/n.txt')}"
    assert box.get("made/n.txt") == b"fresh"
    assert not box.exists("new.txt")
    assert "Parent directory does not exist" in error(orphan, "NOT_FOUND")


async def test_search_info_and_allowed_directories_read_as_the_reference_writes_them(scoped_sandbox: Sandbox) -> None:
    box = scoped_sandbox
    seed(box)
    root = box.path()
    async with official(box) as client:

        async def search(pattern: str, *exclude: str) -> str:
            args = {"path": root, "pattern": pattern, "excludePatterns": list(exclude)}
            return text(await client.call_tool("search_files", args))

        deep = await search("**/*.py")
        top = await search("*.txt")
        directory = await search("src")
        excluded = await search("**/*.py", "src/lib")
        nothing = await search("*.md")
        info = text(await client.call_tool("get_file_info", {"path": box.path("b.txt")}))
        folder = text(await client.call_tool("get_file_info", {"path": box.path("src")}))
        allowed = text(await client.call_tool("list_allowed_directories", {}))
    assert deep == f"{box.path('src/lib/util.py')}\n{box.path('src/main.py')}"
    assert top == f"{box.path('a.txt')}\n{box.path('b.txt')}"
    assert directory == box.path("src")
    assert excluded == box.path("src/main.py")
    assert nothing == "No matches found"
    fields = dict(line.split(": ", 1) for line in info.splitlines())
    expected_keys = {
        "local": ["size", "created", "modified", "accessed", "isDirectory", "isFile", "permissions"],
        "memory": ["size", "created", "isDirectory", "isFile"],
        "s3": ["size", "modified", "isDirectory", "isFile"],
    }[box.kind]
    assert list(fields) == expected_keys
    assert (fields["size"], fields["isDirectory"], fields["isFile"]) == ("5", "false", "true")
    assert "isDirectory: true\nisFile: false" in folder
    assert allowed == f"Allowed directories:\n{box.root}"


# -- path validation (the reference's path-validation and lib tests) ----------------------


async def test_paths_are_checked_by_whole_components_after_resolving_dots(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    for name in ("plain.txt", "..test", "test..", "...", "%2e%2e", "report_50%.pdf", "my café (v2).txt"):
        box.put(name, name)
    root = Path(box.root)
    async with official(box) as client:
        own = [await client.call_tool("read_text_file", {"path": str(root / n)}) for n in ("..test", "test..", "...")]
        odd = [
            await client.call_tool("read_text_file", {"path": str(root / n)}) for n in ("%2e%2e", "my café (v2).txt")
        ]
        relative = await client.call_tool("read_text_file", {"path": "report_50%.pdf"})
        dotted = await client.call_tool("read_text_file", {"path": f"{root}/./sub/../plain.txt"})
        slashes = await client.call_tool("read_text_file", {"path": f"{root}//plain.txt"})
        root_listing = await client.call_tool("list_directory", {"path": f"{root}/"})
        sibling = await client.call_tool("read_text_file", {"path": f"{root}_evil/secret.txt"})
        traversal = await client.call_tool("read_text_file", {"path": f"{root}/../app_evil/secret.txt"})
        parent = await client.call_tool("list_directory", {"path": f"{root}/.."})
        nul = await client.call_tool("read_text_file", {"path": f"{root}/plain.txt\x00.png"})
        outside = await client.call_tool("read_text_file", {"path": "/etc/passwd"})
    assert [text(r) for r in own] == ["..test", "test..", "..."]
    assert [text(r) for r in odd] == ["%2e%2e", "my café (v2).txt"]
    assert text(relative) == "report_50%.pdf"
    assert text(dotted) == text(slashes) == "plain.txt"
    assert "[FILE] plain.txt" in text(root_listing)
    for result in (sibling, traversal, parent, outside):
        assert "canary" not in error(result, "ACCESS_DENIED")
    error(nul, "INVALID_ARGUMENT")


async def test_symlinks_inside_are_followed_and_symlinks_out_are_refused(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    root = Path(box.root)
    box.put("target.txt", "inside")
    (root / "inner-link.txt").symlink_to(root / "target.txt")
    (root / "out-link.txt").symlink_to(box.outside / "secret.txt")
    (root / "out-dir").symlink_to(box.outside)
    async with official(box) as client:
        inner = await client.call_tool("read_text_file", {"path": str(root / "inner-link.txt")})
        read_out = await client.call_tool("read_text_file", {"path": str(root / "out-link.txt")})
        write_out = await client.call_tool("write_file", {"path": str(root / "out-link.txt"), "content": "pwned"})
        through_dir = await client.call_tool("write_file", {"path": str(root / "out-dir/new.txt"), "content": "x"})
        edit_out = await client.call_tool(
            "edit_file", {"path": str(root / "out-link.txt"), "edits": [{"oldText": "canary", "newText": "x"}]}
        )
        tree = await client.call_tool("directory_tree", {"path": str(root)})
    assert text(inner) == "inside"
    for result in (read_out, write_out, through_dir, edit_out):
        error(result, "ACCESS_DENIED")
    assert (box.outside / "secret.txt").read_bytes() == CANARY
    assert not (box.outside / "new.txt").exists()
    names = {entry["name"]: entry for entry in json.loads(text(tree))}
    assert names["out-dir"]["type"] == "file", "a link is never walked, as the reference's isDirectory() says"


async def test_move_refuses_an_existing_destination_and_keeps_both_files(scoped_sandbox: Sandbox) -> None:
    box = scoped_sandbox
    box.put("a.txt", "a")
    box.put("b.txt", "b")
    async with official(box) as client:
        result = await client.call_tool("move_file", {"source": box.path("a.txt"), "destination": box.path("b.txt")})
        missing = await client.call_tool("move_file", {"source": box.path("zz.txt"), "destination": box.path("y")})
    assert "already exists" in error(result, "ALREADY_EXISTS")
    error(missing, "NOT_FOUND")
    assert (box.get("a.txt"), box.get("b.txt")) == (b"a", b"b")


# -- edit_file (the reference's applyFileEdits cases) --------------------------------------


EDIT_CASES = [
    # (file, edits, result): the reference's cases first, then where our matching is stricter or kinder
    ("line1\nline2\nline3\n", [("line2", "modified line2")], "line1\nmodified line2\nline3\n"),
    ("line1\nline2\nline3\n", [("line2", "price=$$; match=$&; before=$`; after=$'")], None),
    ("line1\nline2\nline3\n", [("line1", "first line"), ("line3", "third line")], "first line\nline2\nthird line\n"),
    ("  line1\n    line2\n  line3\n", [("line2", "modified line2")], "  line1\n    modified line2\n  line3\n"),
    (
        'function test() {\n  console.log("hello");\n  return true;\n}',
        [
            (
                '  console.log("hello");\n  return true;',
                '  console.log("world");\n  console.log("test");\n  return false;',
            )
        ],
        'function test() {\n  console.log("world");\n  console.log("test");\n  return false;\n}',
    ),
    (
        "    if (condition) {\n        doSomething();\n    }",
        [("doSomething();", "doSomethingElse();\n        doAnotherThing();")],
        "    if (condition) {\n        doSomethingElse();\n        doAnotherThing();\n    }",
    ),
    # Whitespace fallback: lines equal once trimmed; newText keeps its relative indentation.
    (
        "def f():\n    if x:\n        y = 1\n",
        [("if x:\n    y = 1", "if x:\n    y = 2\n    z = 3")],
        "def f():\n    if x:\n        y = 2\n        z = 3\n",
    ),
    ("\tkey:\n\t\tvalue\n", [("key:\n  value", "key:\n  other")], "\tkey:\n\t\tother\n"),
]


@pytest.mark.parametrize(("content", "edits", "expected"), EDIT_CASES)
def test_edit_matches_as_the_reference_does(
    tmp_path: Path, request: pytest.FixtureRequest, content: str, edits: list[tuple[str, str]], expected: str | None
) -> None:
    box, vfs = memory_vfs(tmp_path, request)
    box.put("f.txt", content)
    diff = official_edit.edit_text(
        vfs, "f.txt", [official_edit.Edit(oldText=o, newText=n) for o, n in edits], False, 1 << 20
    )
    if expected is None:  # replacement text is literal: no $-patterns
        expected = content.replace(edits[0][0], edits[0][1])
    assert box.get("f.txt").decode() == expected
    assert diff.startswith("```diff\nIndex: ")


def test_edit_of_a_crlf_file_matches_lf_text_and_keeps_crlf(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # The reference rewrites the whole file with LF; we keep the file's line endings (SPEC §4).
    box, vfs = memory_vfs(tmp_path, request)
    box.put("win.txt", b"line1\r\nline2\r\nline3\r\n")
    diff = official_edit.edit_text(
        vfs, "win.txt", [official_edit.Edit(oldText="line1\nline2", newText="one\r\ntwo")], False, 1 << 20
    )
    assert box.get("win.txt") == b"one\r\ntwo\r\nline3\r\n"
    assert "-line1\n-line2\n+one\n+two\n line3\n" in diff
    assert "\r" not in diff


def test_edit_refuses_missing_or_ambiguous_text_and_changes_nothing(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    box, vfs = memory_vfs(tmp_path, request)
    box.put("f.txt", "a = 1\nb = 2\na = 1\n  c\nc  \n")
    cases = {
        "missing": [official_edit.Edit(oldText="nonexistent line", newText="x")],
        "twice": [official_edit.Edit(oldText="a = 1", newText="x")],
        "twice trimmed": [
            official_edit.Edit(oldText="c", newText="x"),
            official_edit.Edit(oldText="b = 2\n c", newText="x"),
        ],
        "second fails": [
            official_edit.Edit(oldText="b = 2", newText="B"),
            official_edit.Edit(oldText="nope", newText="x"),
        ],
    }
    messages = {}
    for name, edits in cases.items():
        with pytest.raises(Conflict) as caught:
            official_edit.edit_text(vfs, "f.txt", edits, False, 1 << 20)
        messages[name] = caught.value.message
    assert "Could not find exact match for edit" in messages["missing"]
    assert "more than once (lines 1 and 3)" in messages["twice"]
    assert box.get("f.txt") == b"a = 1\nb = 2\na = 1\n  c\nc  \n", "a failed edit list changes nothing"
    with pytest.raises(InvalidArgument):
        official_edit.edit_text(vfs, "f.txt", [official_edit.Edit(oldText="", newText="x")], False, 1 << 20)


def test_diffs_are_jsdiff_two_file_patches_in_a_fence() -> None:
    simple = official_edit.patch("line1\nline2\nline3", "line1\nmodified line2\nline3", "test.txt")
    assert simple == (
        f"Index: test.txt\n{RULE}\n--- test.txt\toriginal\n+++ test.txt\tmodified\n"
        "@@ -1,3 +1,3 @@\n line1\n-line2\n+modified line2\n line3\n\\ No newline at end of file\n"
    )
    assert official_edit.patch("same\n", "same\n", "f") == f"Index: f\n{RULE}\n--- f\toriginal\n+++ f\tmodified\n"
    assert official_edit.patch("", "new\n", "f").endswith("@@ -0,0 +1,1 @@\n+new\n")
    long_old = "".join(f"{i}\n" for i in range(20))
    context = official_edit.patch(long_old, long_old.replace("10\n", "ten\n"), "f")
    assert "@@ -7,9 +7,9 @@\n 6\n 7\n 8\n 9\n-10\n+ten\n 11\n" in context, "4 lines of context, as jsdiff"
    assert official_edit.fenced_diff("a ``` b\n").startswith("````diff\n")
    assert official_edit.fenced_diff("x\n") == "```diff\nx\n```\n\n"


# -- head and tail (the reference's headFile/tailFile cases) -------------------------------


HEAD_TAIL_CASES = [
    ("", {"tail": 5}, ""),
    ("", {"head": 5}, ""),
    ("line3\nline4\nline5\n", {"tail": 2}, "line4\nline5"),
    ("line1\nline2\nline3\n", {"head": 2}, "line1\nline2"),
    ("line1\nline2\nend", {"head": 5}, "line1\nline2\nend"),
    ("line1\nline2\n", {"head": 2}, "line1\nline2"),
    ("line1\nline2\nend", {"tail": 1}, "end"),
    ("a\r\nb\r\nc\r\n", {"tail": 2}, "b\nc"),
    ("a\r\nb\r\nc\r\n", {"head": 2}, "a\nb"),
    ("whole\nfile\n", {"head": 0, "tail": 0}, "whole\nfile\n"),
    ("a\nb\nc\n", {"head": 0, "tail": 1}, "c"),
]


@pytest.mark.parametrize(("content", "args", "expected"), HEAD_TAIL_CASES)
def test_head_and_tail_return_lines_joined_without_a_final_newline(
    tmp_path: Path, request: pytest.FixtureRequest, content: str, args: dict[str, int], expected: str
) -> None:
    box, vfs = memory_vfs(tmp_path, request)
    box.put("f.txt", content)
    assert dialect.read_text(vfs, "f.txt", args.get("head"), args.get("tail"), 1 << 20) == expected


def test_tail_of_a_large_file_keeps_multibyte_characters_whole(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # The reference decodes 1 KiB chunks one by one and can split a character at their seams.
    box, vfs = memory_vfs(tmp_path, request)
    lines = [f"{i} " + "é€😀" * 300 for i in range(50)]
    box.put("big.txt", "\n".join(lines) + "\n")
    assert dialect.read_text(vfs, "big.txt", None, 3, 1 << 20) == "\n".join(lines[-3:])


async def test_whole_reads_over_the_limit_point_to_head_and_tail(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    box = make_sandbox("memory", tmp_path, request)
    box.put("big.txt", "line\n" * 100)
    async with official(box, max_read_bytes=64) as client:
        whole = await client.call_tool("read_text_file", {"path": "big.txt"})
        tail = await client.call_tool("read_text_file", {"path": "big.txt", "tail": 2})
        media = await client.call_tool("read_media_file", {"path": "big.txt"})
    assert "head or tail" in error(whole, "TOO_LARGE")
    assert text(tail) == "line\nline"
    error(media, "TOO_LARGE")


# -- directory_tree excludes (the reference's directory-tree tests) -----------------------


TREE_EXCLUDES = [
    (".env", {"src", "package.json", ".env.local"}, {".env"}),
    ("node_modules", {"src", ".git"}, {"node_modules"}),
    ("*.env", {".env.local", "src"}, {".env"}),
    (".git", {".env"}, {".git"}),
]


@pytest.fixture
def tree_box(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Sandbox, JailedFS]:
    box, vfs = memory_vfs(tmp_path, request)
    for name in (".env", ".env.local", "src/index.js", "package.json", "node_modules/module.js"):
        box.put(name, "x")
    box.put("nested/node_modules/deep.js", "x")
    box.put(".git/HEAD", "ref")
    return box, vfs


@pytest.mark.parametrize(("pattern", "kept", "gone"), TREE_EXCLUDES)
def test_tree_excludes_names_at_any_depth(
    tree_box: tuple[Sandbox, JailedFS], pattern: str, kept: set[str], gone: set[str]
) -> None:
    _, vfs = tree_box
    top = {
        entry["name"]: entry
        for entry in json.loads(render.directory_tree(dialect.directory_tree(vfs, ".", [pattern])).text)
    }
    assert kept <= set(top)
    assert not gone & set(top)


def test_tree_excludes_nested_directories_and_several_patterns(tree_box: tuple[Sandbox, JailedFS]) -> None:
    _, vfs = tree_box
    everything = {e["name"]: e for e in json.loads(render.directory_tree(dialect.directory_tree(vfs, ".")).text)}
    assert {".env", ".git", "node_modules", "src", "nested"} <= set(everything)
    trimmed = {
        e["name"]: e
        for e in json.loads(
            render.directory_tree(dialect.directory_tree(vfs, ".", ["node_modules", ".env", ".git"])).text
        )
    }
    assert set(trimmed) == {".env.local", "src", "package.json", "nested"}
    assert trimmed["nested"]["children"] == [], "nested/node_modules is excluded too; the directory keeps children: []"


def test_a_cut_tree_stays_valid_json_keeps_its_top_level_and_says_what_was_left_out(
    tree_box: tuple[Sandbox, JailedFS],
) -> None:
    _, vfs = tree_box
    reply = render.directory_tree(dialect.directory_tree(vfs, ".", limit=3))
    assert len(json.loads(reply.text)) == 3
    assert reply.note is not None and "more entries not shown" in reply.note
    cut = render.directory_tree(
        dialect.directory_tree(vfs, ".", limit=9)
    )  # 7 names at the top: all of them, then the first 2 below
    top = json.loads(cut.text)
    assert [e["name"] for e in top] == [".env", ".env.local", ".git", "nested", "node_modules", "package.json", "src"]
    assert [len(e.get("children", [])) for e in top] == [0, 0, 1, 1, 0, 0, 0]
    listed = render.list_directory(dialect.list_directory(vfs, ".", limit=2))
    assert len(listed.text.splitlines()) == 2
    assert listed.note is not None and listed.note.startswith("(5 more entries")


# -- search_files (the reference's searchFilesWithValidation cases) -----------------------


SEARCHES = [
    ("*test*", ["*.log", "node_modules"], ["important_test.js", "test.backup", "test.txt"]),
    ("*test*", ["*.backup"], ["important_test.js", "test.log", "test.txt"]),
    ("*.txt", [], ["test.txt"]),
    ("**/*.txt", [], ["deep/inner/notes.txt", "test.txt"]),
    ("**/*.{js,txt}", ["deep"], ["important_test.js", "node_modules/test.js", "test.txt"]),
    # minimatch's trailing ** needs one more component: deep/** is what is inside deep, not deep
    ("deep/**", [], ["deep/inner", "deep/inner/notes.txt"]),
    (
        "**/*",
        ["deep/**"],
        ["deep", "important_test.js", "node_modules", "node_modules/test.js", "test.backup", "test.log", "test.txt"],
    ),
    (
        "**",
        ["deep/*"],
        ["deep", "important_test.js", "node_modules", "node_modules/test.js", "test.backup", "test.log", "test.txt"],
    ),
    ("*a*a*a*a*a*a*a*a*a*a*a*a*c", ["*a*a*a*a*a*a*a*a*a*a*a*a*c/**"], []),
    ("?est.[lt]??", [], ["test.log", "test.txt"]),
    ("!**/*.{txt,log,js}", ["deep", "node_modules"], ["test.backup"]),
    ("TEST.TXT", [], []),
]


@pytest.mark.parametrize(("pattern", "exclude", "expected"), SEARCHES)
def test_search_matches_minimatch_globs_on_relative_paths(
    tmp_path: Path, request: pytest.FixtureRequest, pattern: str, exclude: list[str], expected: list[str]
) -> None:
    box, vfs = memory_vfs(tmp_path, request)
    for name in ("test.txt", "test.log", "test.backup", "important_test.js", "node_modules/test.js"):
        box.put(name, "x")
    box.put("deep/inner/notes.txt", "x")
    found = render.search_files(dialect.search_files(vfs, ".", pattern, exclude)).text
    assert found == ("\n".join(box.path(p) for p in sorted(expected)) or "No matches found")


def test_a_glob_with_a_reversed_bracket_range_is_invalid_argument_not_a_crash(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    box, vfs = memory_vfs(tmp_path, request)
    box.put("a.txt", "x")
    with pytest.raises(InvalidArgument, match=r"invalid glob '\[z-a\]'"):
        render.search_files(dialect.search_files(vfs, ".", "[z-a]", []))


# -- sizes (the reference's formatSize cases) ---------------------------------------------


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (512, "512 B"),
        (1023, "1023 B"),
        (1024, "1.00 KB"),
        (1025, "1.00 KB"),
        (1536, "1.50 KB"),
        (1048575, "1024.00 KB"),
        (1048576, "1.00 MB"),
        (1073741824, "1.00 GB"),
        (1099511627776, "1.00 TB"),
        (1024**5, "1024.00 TB"),
    ],
)
def test_sizes_read_as_the_reference_formats_them(size: int, shown: str) -> None:
    assert render.format_size(size) == shown


# -- media on a local disk ----------------------------------------------------------------


async def test_a_resource_uri_is_a_percent_encoded_file_url_of_the_file_read(local_sandbox: Sandbox) -> None:
    box = local_sandbox
    box.put("my café.bin", b"\x10\x20\x30")
    async with official(box) as client:
        result = await client.call_tool("read_media_file", {"path": box.path("my café.bin")})
    [block] = result.content
    uri = block.resource.uri
    assert uri.startswith("file://") and "%20" in uri and "%C3%A9" in uri and " " not in uri
    assert unquote(urlsplit(uri).path) == os.path.join(box.root, "my café.bin")
    assert base64.b64decode(block.resource.blob) == b"\x10\x20\x30"


def test_the_renderer_is_given_what_it_shows_and_reads_nothing() -> None:
    """``render`` writes the text of what an operation gathered: none of its functions takes
    the filesystem, and it imports nothing that reads (``os``, the jailed filesystem)."""
    tree = ast.parse(Path(render.__file__).read_text())
    taking = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any(arg.annotation is not None and "JailedFS" in ast.unparse(arg.annotation) for arg in node.args.args)
    ]
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert taking == [], f"these read for themselves; give them what the operation gathered: {taking}"
    assert not imported & {"os", "vfs_mcp.jail.filesystem"}
