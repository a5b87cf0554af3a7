"""The ``fs`` profile (SPEC §5) checked against its original, the `fs` tools guide, through MCP clients.

The seed is the reference for names, arguments, defaults and result JSON, so the golden
tests compare whole results (every key, no extra) rather than picking fields. Most tests
run on memory, local and s3 in their own folder of a shared mount (``scoped_sandbox``),
which puts that folder's name (``box.prefix``) in front of every path relative to the
server root.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult
from results import assert_error, ok

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
REQUIRED = object()
DOCUMENTED = object()  # optional, with the original's default applied by the tool (null in the schema)

# The original, argument by argument: REQUIRED, or the default the schema announces.
SEED: dict[str, dict[str, Any]] = {
    "list_files": {
        "root": ".",
        "recursive": True,
        "include_globs": None,
        "exclude_globs": None,
        "max_results": 500,
        "include_dirs": False,
        "include_metadata": False,
        "skip": 0,
    },
    "read_file": {
        "path": REQUIRED,
        "range_type": None,
        "offset_bytes": ("Default: 0",),
        "max_bytes": ("Default: 65536",),
        "start_line": ("Default: 1",),
        "max_lines": ("Default: 200",),
    },
    "search_text": {
        "query": REQUIRED,
        "mode": "literal",
        "case_sensitive": False,
        "root": ".",
        "include_globs": None,
        "exclude_globs": None,
        "max_results": 200,
        "context_lines": 2,
        "skip": 0,
    },
    "stat": {"path": REQUIRED},
    "path_info": {"path": "."},
    "create_file": {"path": REQUIRED, "content": "", "overwrite": False, "create_parents": False},
    "overwrite_file": {"path": REQUIRED, "content": REQUIRED},
    "delete_path": {"path": REQUIRED, "recursive": False, "force": False},
    "copy_path": {"from": REQUIRED, "to": REQUIRED, "overwrite": False, "recursive": False, "create_parents": True},
    "move_path": {"from": REQUIRED, "to": REQUIRED, "overwrite": False, "recursive": False, "create_parents": True},
}
READ_TOOLS = {"list_files", "read_file", "search_text", "stat", "path_info"}
WRITE_TOOLS = set(SEED) - READ_TOOLS


# -- helpers ----------------------------------------------------------------------------


async def call(client: Client, tool: str, **args: Any) -> CallToolResult:
    return await client.call_tool(f"fs_{tool}", args)


def fs_client(box: Any, **settings: Any) -> Any:
    return box.client(profiles=("fs",), **settings)


def seed_tree(box: Any) -> None:
    """A small project: ignore files at two depths, ignored files and folders beside kept ones."""
    box.put(".gitignore", "*.log\nbuild/\n")
    box.put("README.md", "# demo\n")
    box.put("debug.log", "serve_server in a log\n")
    box.put("build/out.txt", "serve_server in build\n")
    box.put("src/.ignore", "secret.rs\n")
    box.put("src/a.rs", "fn a() {}\n// serve_server here\nfn b() {}\nfn c() {}\n")
    box.put("src/b.py", "SERVE_SERVER = 1\n")
    box.put("src/secret.rs", "serve_server secret\n")
    box.put("src/sub/c.rs", "x\ny\nlet s = serve_server();\n")


KEPT_FILES = [".gitignore", "README.md", "src/.ignore", "src/a.rs", "src/b.py", "src/sub/c.rs"]


# -- the tool list ----------------------------------------------------------------------


@pytest.mark.parametrize("style", ["safe", "seed"])
async def test_stdio_server_lists_the_seed_tools_with_their_arguments_and_defaults(tmp_path: Path, style: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "vfs_mcp", str(tmp_path), "--profile", "fs", "--tool-names", style]
    )
    async with Client(params) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    expected = {f"fs_{name}" if style == "safe" else f"fs.{name}" for name in SEED}
    assert set(tools) == expected
    if style == "safe":
        assert all(SAFE_NAME.match(name) for name in tools)
    for name, arguments in SEED.items():
        tool = tools[f"fs_{name}" if style == "safe" else f"fs.{name}"]
        schema = tool.input_schema
        assert set(schema["properties"]) == set(arguments), name
        required = {arg for arg, default in arguments.items() if default is REQUIRED}
        assert set(schema.get("required", [])) == required, name
        for arg, default in arguments.items():
            prop = schema["properties"][arg]
            if default is REQUIRED:
                assert "default" not in prop, (name, arg)
            elif isinstance(default, tuple):
                # Set only when given, so mixing byte and line fields can be refused.
                assert "default" not in prop and default[0] in prop["description"], (name, arg)
            else:
                assert prop.get("default") == default, (name, arg)  # a default of None is not spelt out
        assert tool.description and tool.output_schema, name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_TOOLS), name
        assert tool.annotations.open_world_hint is False
    read = tools["fs_read_file" if style == "safe" else "fs.read_file"].input_schema["properties"]
    assert read["range_type"]["enum"] == ["bytes", "lines"]
    search = tools["fs_search_text" if style == "safe" else "fs.search_text"].input_schema["properties"]
    assert search["mode"]["enum"] == ["literal", "regex"]


async def test_a_read_only_server_lists_only_the_read_tools() -> None:
    server = build_server(open_mounts([MountSpec("memory://fs-ro", read_only=True)]), Settings(profiles=("fs",)))
    names = {tool.name for tool in await server.list_tools()}
    assert names == {f"fs_{name}" for name in READ_TOOLS}


async def test_fs_and_default_profiles_share_one_server() -> None:
    server = build_server(open_mounts([MountSpec("memory://fs-both")]), Settings(profiles=("default", "fs")))
    names = {tool.name for tool in await server.list_tools()}
    assert {"read_file", "fs_read_file", "fs_move_path", "grep_files"} <= names


# -- list_files -------------------------------------------------------------------------


async def test_list_files_golden_results_respect_ignore_files_by_default(sandbox):
    seed_tree(sandbox)
    before = int(time.time()) - 5
    async with fs_client(sandbox) as client:
        default = ok(await call(client, "list_files"))
        meta = ok(await call(client, "list_files", root="src", recursive=False, include_metadata=True))
        dirs = ok(await call(client, "list_files", recursive=False, include_dirs=True))
        rust = ok(await call(client, "list_files", root="src", include_globs=["**/*.rs"]))
        rust_dirs = ok(await call(client, "list_files", include_globs=["*.rs"], include_dirs=True))
        excluded = ok(await call(client, "list_files", exclude_globs=["sub", "*.md"]))
    assert default == {"entries": [{"path": p, "is_dir": False} for p in KEPT_FILES], "has_more": False}
    assert [set(e) for e in meta["entries"]] == [{"path", "is_dir", "size", "modified"}] * 3
    assert [(e["path"], e["is_dir"], e["size"]) for e in meta["entries"]] == [
        ("src/.ignore", False, len(sandbox.get("src/.ignore"))),
        ("src/a.rs", False, len(sandbox.get("src/a.rs"))),
        ("src/b.py", False, len(sandbox.get("src/b.py"))),
    ]
    assert all(isinstance(e["modified"], int) and e["modified"] >= before for e in meta["entries"])
    assert dirs["entries"] == [
        {"path": ".gitignore", "is_dir": False},
        {"path": "README.md", "is_dir": False},
        {"path": "src", "is_dir": True},
    ]
    assert [e["path"] for e in rust["entries"]] == ["src/a.rs", "src/sub/c.rs"]
    assert [e["path"] for e in rust_dirs["entries"]] == ["src/a.rs", "src/sub/c.rs"], "globs choose directories too"
    assert [e["path"] for e in excluded["entries"]] == [".gitignore", "src/.ignore", "src/a.rs", "src/b.py"]


async def test_list_files_pages_with_skip(scoped_sandbox):
    box = scoped_sandbox
    for i in range(7):
        box.put(f"f{i}.txt", "x")
    box.put("d/inner.txt", "x")
    async with fs_client(box) as client:
        pages = [
            ok(await call(client, "list_files", root=box.prefix, max_results=3, skip=skip, include_dirs=True))
            for skip in (0, 3, 6, 9)
        ]
        past = ok(await call(client, "list_files", root=box.prefix, skip=100))
        bad = await call(client, "list_files", root=box.prefix, skip=-1)
    names = [e["path"] for page in pages for e in page["entries"]]
    expected = ["d", "d/inner.txt", *[f"f{i}.txt" for i in range(7)]]
    assert names == [f"{box.prefix}/{n}" for n in expected]
    assert [page["has_more"] for page in pages] == [True, True, False, False]
    assert past == {"entries": [], "has_more": False}
    assert_error(bad, "INVALID_ARGUMENT")


async def test_list_files_of_a_missing_or_file_root_fails_with_its_code(scoped_sandbox):
    box = scoped_sandbox
    box.put("f.txt", "x")
    async with fs_client(box) as client:
        missing = await call(client, "list_files", root=f"{box.prefix}/nope")
        file_root = await call(client, "list_files", root=f"{box.prefix}/f.txt")
    assert_error(missing, "NOT_FOUND")
    assert_error(file_root, "NOT_A_DIRECTORY")


# -- read_file --------------------------------------------------------------------------


async def test_read_file_golden_bytes_and_lines_results(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    body = "".join(f"line {i}\n" for i in range(1, 251))
    box.put("log.txt", body)
    box.put("big.txt", "x" * 70000)
    async with fs_client(box) as client:
        whole = ok(await call(client, "read_file", path=f"{p}/log.txt"))
        config = ok(await call(client, "read_file", path=f"{p}/log.txt", range_type="bytes", max_bytes=14))
        page2 = ok(await call(client, "read_file", path=f"{p}/log.txt", offset_bytes=7, max_bytes=7))
        implicit = ok(await call(client, "read_file", path=f"{p}/log.txt", start_line=1, max_lines=40))
        nxt = ok(await call(client, "read_file", path=f"{p}/log.txt", range_type="lines", start_line=41, max_lines=2))
        lines_default = ok(await call(client, "read_file", path=f"{p}/log.txt", range_type="lines"))
        last = ok(await call(client, "read_file", path=f"{p}/log.txt", start_line=250))
        past = ok(await call(client, "read_file", path=f"{p}/log.txt", start_line=999))
        big = ok(await call(client, "read_file", path=f"{p}/big.txt"))
        big2 = ok(await call(client, "read_file", path=f"{p}/big.txt", offset_bytes=65536))
    assert whole == {
        "path": f"{p}/log.txt",
        "content": body,
        "is_truncated": False,
        "range": {"range_type": "bytes", "offset_bytes": 0, "max_bytes": 65536, "start_line": None, "max_lines": None},
    }
    assert config["content"] == "line 1\nline 2\n" and config["is_truncated"] is True
    assert config["range"] == {
        "range_type": "bytes",
        "offset_bytes": 0,
        "max_bytes": 14,
        "start_line": None,
        "max_lines": None,
    }
    assert page2["content"] == "line 2\n"
    assert implicit == {
        "path": f"{p}/log.txt",
        "content": "".join(f"line {i}\n" for i in range(1, 41)),
        "is_truncated": True,
        "range": {"range_type": "lines", "offset_bytes": None, "max_bytes": None, "start_line": 1, "max_lines": 40},
    }
    assert nxt["content"] == "line 41\nline 42\n"
    assert lines_default["content"] == "".join(f"line {i}\n" for i in range(1, 201))
    assert lines_default["range"]["start_line"] == 1 and lines_default["range"]["max_lines"] == 200
    assert last["content"] == "line 250\n" and last["is_truncated"] is False
    assert past["content"] == "" and past["is_truncated"] is False
    assert len(big["content"]) == 65536 and big["is_truncated"] is True
    assert len(big2["content"]) == 70000 - 65536 and big2["is_truncated"] is False


@pytest.mark.parametrize(
    "args",
    [
        {"range_type": "bytes", "start_line": 1},
        {"range_type": "bytes", "max_lines": 3},
        {"range_type": "lines", "offset_bytes": 0},
        {"range_type": "lines", "max_bytes": 10},
        {"start_line": 2, "max_bytes": 10},
        {"offset_bytes": 0, "max_lines": 3},
        {"range_type": "words"},
        {"start_line": 0},
        {"max_bytes": 0},
        {"offset_bytes": -1},
    ],
)
async def test_read_file_refuses_mixed_or_bad_ranges(args):
    server = build_server(open_mounts([MountSpec("memory://fs-ranges")]), Settings(profiles=("fs",)))
    async with Client(server) as client:
        await client.call_tool("fs_create_file", {"path": "a.txt", "content": "one\ntwo\n"})
        result = await call(client, "read_file", path="a.txt", **args)
    assert_error(result, "INVALID_ARGUMENT")


async def test_read_file_byte_pages_never_split_lose_or_repeat_a_character(scoped_sandbox):
    box = scoped_sandbox
    text = "añb€c😀d — ü✓\n"
    size = len(text.encode())
    box.put("multi.txt", text)
    async with fs_client(box) as client:
        for window in (1, 2, 3, 5):
            pages = [
                ok(await call(client, "read_file", path=f"{box.prefix}/multi.txt", offset_bytes=o, max_bytes=window))
                for o in range(0, size, window)
            ]
            assert "".join(page["content"] for page in pages) == text, window
            assert [page["is_truncated"] for page in pages] == [True] * (len(pages) - 1) + [False]


async def test_read_file_errors_name_their_cause(scoped_sandbox):
    box = scoped_sandbox
    box.put("bin.dat", b"\x00\x01\x02binary")
    box.put("latin.txt", "café".encode("latin-1"))
    box.mkdir("folder")
    async with fs_client(box) as client:
        missing = await call(client, "read_file", path=f"{box.prefix}/missing.txt")
        folder = await call(client, "read_file", path=f"{box.prefix}/folder")
        binary = await call(client, "read_file", path=f"{box.prefix}/bin.dat")
        latin = await call(client, "read_file", path=f"{box.prefix}/latin.txt", start_line=1)
    assert_error(missing, "NOT_FOUND")
    assert_error(folder, "IS_A_DIRECTORY")
    assert_error(binary, "BINARY_CONTENT")
    assert_error(latin, "BINARY_CONTENT")


# -- search_text ------------------------------------------------------------------------


async def test_search_text_golden_hits_respect_ignore_files_and_are_case_insensitive(sandbox):
    seed_tree(sandbox)
    async with fs_client(sandbox) as client:
        found = ok(await call(client, "search_text", query="serve_server"))
        sensitive = ok(await call(client, "search_text", query="SERVE_SERVER", case_sensitive=True))
        in_src = ok(
            await call(
                client, "search_text", query="serve_server", root="src", include_globs=["**/*.rs"], context_lines=0
            )
        )
        excluded = ok(await call(client, "search_text", query="serve_server", exclude_globs=["sub"]))
    assert found == {
        "hits": [
            {
                "path": "src/a.rs",
                "line": 2,
                "column": 4,
                "line_text": "// serve_server here",
                "context_before": ["fn a() {}"],
                "context_after": ["fn b() {}", "fn c() {}"],
            },
            {
                "path": "src/b.py",
                "line": 1,
                "column": 1,
                "line_text": "SERVE_SERVER = 1",
                "context_before": [],
                "context_after": [],
            },
            {
                "path": "src/sub/c.rs",
                "line": 3,
                "column": 9,
                "line_text": "let s = serve_server();",
                "context_before": ["x", "y"],
                "context_after": [],
            },
        ],
        "has_more": False,
    }
    assert [h["path"] for h in sensitive["hits"]] == ["src/b.py"]
    assert [(h["path"], h["context_before"], h["context_after"]) for h in in_src["hits"]] == [
        ("src/a.rs", [], []),
        ("src/sub/c.rs", [], []),
    ]
    assert [h["path"] for h in excluded["hits"]] == ["src/a.rs", "src/b.py"]


async def test_search_text_regex_is_line_based_and_pages_with_skip(scoped_sandbox):
    box = scoped_sandbox
    box.put("consts.rs", "const DEFAULT_MAX_A: usize = 1;\nconst DEFAULT_MAX_B: u8 = 2;\nlet a\nb = 3;\n")
    box.put("many.txt", "".join(f"hit {i}\n" for i in range(7)))
    async with fs_client(box) as client:
        consts = ok(
            await call(
                client, "search_text", query=r"const DEFAULT_MAX_[A-Z_]+: \w+ = \d+", mode="regex", root=box.prefix
            )
        )
        across = ok(await call(client, "search_text", query=r"a\s*b", mode="regex", root=box.prefix))
        literal = ok(await call(client, "search_text", query="[A-Z_]+", root=box.prefix))
        pages = [
            ok(
                await call(
                    client,
                    "search_text",
                    query="hit",
                    root=f"{box.prefix}/many.txt",
                    max_results=3,
                    skip=skip,
                    context_lines=0,
                )
            )
            for skip in (0, 3, 6)
        ]
        bad_regex = await call(client, "search_text", query="(", mode="regex", root=box.prefix)
        bad_mode = await call(client, "search_text", query="x", mode="fuzzy", root=box.prefix)
        empty = await call(client, "search_text", query="", root=box.prefix)
    assert [h["line"] for h in consts["hits"]] == [1, 2]
    assert across["hits"] == [], "a regex never matches across a line break"
    assert literal["hits"] == []
    assert [h["line_text"] for page in pages for h in page["hits"]] == [f"hit {i}" for i in range(7)]
    assert [page["has_more"] for page in pages] == [True, True, False]
    for failed in (bad_regex, bad_mode, empty):
        assert_error(failed, "INVALID_ARGUMENT")


# -- stat and path_info -----------------------------------------------------------------


async def test_stat_golden_results(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.put("src/a.rs", "12345")
    before = int(time.time()) - 5
    async with fs_client(box) as client:
        file = ok(await call(client, "stat", path=f"./{p}/src/../src/a.rs"))
        folder = ok(await call(client, "stat", path=f"{p}/src"))
        missing = ok(await call(client, "stat", path=f"{p}/nope.rs"))
        under_file = ok(await call(client, "stat", path=f"{p}/src/a.rs/x"))
        absolute = ok(await call(client, "stat", path=box.path("src/a.rs")))
    assert set(file) == {"path", "exists", "is_file", "is_dir", "size", "modified"}
    assert file["modified"] >= before
    assert {k: v for k, v in file.items() if k != "modified"} == {
        "path": f"{p}/src/a.rs",
        "exists": True,
        "is_file": True,
        "is_dir": False,
        "size": 5,
    }
    assert folder["is_dir"] is True and folder["is_file"] is False and folder["path"] == f"{p}/src"
    assert missing == {"path": f"{p}/nope.rs", "exists": False, "is_file": False, "is_dir": False}
    assert under_file["exists"] is False
    assert absolute["path"] == box.path("src/a.rs"), "an absolute path is answered in full"


async def test_path_info_golden_results_with_repo_root(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.put("proj/.git/HEAD", "ref: refs/heads/main\n")
    box.put("proj/src/a.rs", "x")
    box.put("plain/b.txt", "x")
    async with fs_client(box) as client:
        rel = ok(await call(client, "path_info", path=f"{p}/proj/src"))
        absolute = ok(await call(client, "path_info", path=box.path("proj")))
        missing = ok(await call(client, "path_info", path=f"{p}/proj/new/file.rs"))
        plain = ok(await call(client, "path_info", path=f"{p}/plain/b.txt"))
        root = ok(await call(client, "path_info"))
        empty = ok(await call(client, "path_info", path=""))
    assert rel == {
        "input_path": f"{p}/proj/src",
        "resolved_path": box.path("proj/src"),
        "exists": True,
        "is_file": False,
        "is_dir": True,
        "is_absolute": False,
        "canonical_path": box.path("proj/src"),
        "repo_root": box.path("proj"),
    }
    assert absolute["is_absolute"] is True and absolute["repo_root"] == box.path("proj")
    assert missing["exists"] is False and missing["canonical_path"] is None
    assert missing["repo_root"] == box.path("proj")
    assert plain["is_file"] is True and plain["repo_root"] is None
    assert root["input_path"] == "." and root["resolved_path"] == box.root and root["is_dir"] is True
    assert empty == root


async def test_path_info_canonical_path_resolves_links_on_local_disks(local_sandbox):
    box = local_sandbox
    box.put("real/a.txt", "x")
    os.symlink(box.mount.fs_path("real"), box.mount.fs_path("link"))
    async with fs_client(box) as client:
        info = ok(await call(client, "path_info", path="link/a.txt"))
    assert info["resolved_path"] == box.path("link/a.txt")
    assert info["canonical_path"] == box.path("real/a.txt")


# -- writing ----------------------------------------------------------------------------


async def test_create_file_golden_results_and_defaults(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.mkdir("dir")
    async with fs_client(box) as client:
        created = ok(await call(client, "create_file", path=f"{p}/new.rs", content="fn main() {}\n"))
        empty = ok(await call(client, "create_file", path=f"{p}/empty.txt"))
        again = await call(client, "create_file", path=f"{p}/new.rs", content="other")
        replaced = ok(await call(client, "create_file", path=f"{p}/new.rs", content="v2", overwrite=True))
        no_parent = await call(client, "create_file", path=f"{p}/deep/er/x.rs")
        parents = ok(await call(client, "create_file", path=f"{p}/deep/er/x.rs", create_parents=True))
        on_dir = await call(client, "create_file", path=f"{p}/dir", overwrite=True)
    assert created == {"path": f"{p}/new.rs", "created": True, "overwritten": False}
    assert empty == {"path": f"{p}/empty.txt", "created": True, "overwritten": False}
    assert box.get("empty.txt") == b""
    assert_error(again, "ALREADY_EXISTS")
    assert replaced == {"path": f"{p}/new.rs", "created": False, "overwritten": True}
    assert box.get("new.rs") == b"v2"
    assert_error(no_parent, "NOT_FOUND")
    assert parents["created"] is True and box.get("deep/er/x.rs") == b""
    assert_error(on_dir, "IS_A_DIRECTORY")


async def test_overwrite_file_needs_an_existing_regular_file(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.put("config/local.json", '{ "debug": true }\n')
    box.mkdir("folder")
    async with fs_client(box) as client:
        done = ok(await call(client, "overwrite_file", path=f"{p}/config/local.json", content='{ "debug": false }\n'))
        missing = await call(client, "overwrite_file", path=f"{p}/config/other.json", content="x")
        folder = await call(client, "overwrite_file", path=f"{p}/folder", content="x")
        no_content = await call(client, "overwrite_file", path=f"{p}/config/local.json")
    assert done == {"path": f"{p}/config/local.json"}
    assert box.get("config/local.json") == b'{ "debug": false }\n'
    assert_error(missing, "NOT_FOUND")
    assert not box.exists("config/other.json")
    assert_error(folder, "IS_A_DIRECTORY")
    assert_error(no_content, "INVALID_ARGUMENT")


async def test_delete_path_golden_results(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.put("old.rs", "x")
    box.put("target/tmp/a.o", "x")
    async with fs_client(box) as client:
        deleted = ok(await call(client, "delete_path", path=f"{p}/old.rs"))
        not_empty = await call(client, "delete_path", path=f"{p}/target/tmp")
        tree = ok(await call(client, "delete_path", path=f"{p}/target/tmp", recursive=True))
        missing = await call(client, "delete_path", path=f"{p}/old.rs")
        forced = ok(await call(client, "delete_path", path=f"{p}/old.rs", force=True))
    assert deleted == {"path": f"{p}/old.rs", "existed": True, "is_dir": False, "removed": True, "recursive": False}
    assert not box.exists("old.rs")
    assert not_empty.is_error
    assert tree == {"path": f"{p}/target/tmp", "existed": True, "is_dir": True, "removed": True, "recursive": True}
    assert not box.exists("target/tmp/a.o")
    assert_error(missing, "NOT_FOUND")
    assert forced == {"path": f"{p}/old.rs", "existed": False, "is_dir": False, "removed": False, "recursive": False}


async def test_copy_path_golden_results_and_defaults(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.put("src/backend.rs", "0123456789")
    box.put("src/dir/x.rs", "xx")
    async with fs_client(box) as client:
        copied = ok(await call(client, "copy_path", **{"from": f"{p}/src/backend.rs", "to": f"{p}/backup/backend.rs"}))
        exists = await call(client, "copy_path", **{"from": f"{p}/src/backend.rs", "to": f"{p}/backup/backend.rs"})
        replaced = ok(
            await call(
                client,
                "copy_path",
                **{"from": f"{p}/src/backend.rs", "to": f"{p}/backup/backend.rs", "overwrite": True},
            )
        )
        no_parent = await call(
            client, "copy_path", **{"from": f"{p}/src/backend.rs", "to": f"{p}/none/x.rs", "create_parents": False}
        )
        folder = await call(client, "copy_path", **{"from": f"{p}/src/dir", "to": f"{p}/dir2"})
        tree = ok(await call(client, "copy_path", **{"from": f"{p}/src/dir", "to": f"{p}/dir2", "recursive": True}))
        missing = await call(client, "copy_path", **{"from": f"{p}/nope", "to": f"{p}/nope2"})
    assert copied == {
        "from": f"{p}/src/backend.rs",
        "to": f"{p}/backup/backend.rs",
        "bytes_copied": 10,
        "overwritten": False,
    }
    assert box.get("backup/backend.rs") == b"0123456789"
    assert_error(exists, "ALREADY_EXISTS")
    assert replaced["overwritten"] is True
    assert_error(no_parent, "NOT_FOUND")
    assert not box.exists("none")
    assert_error(folder, "IS_A_DIRECTORY")
    assert tree["bytes_copied"] == 2 and box.get("dir2/x.rs") == b"xx"
    assert_error(missing, "NOT_FOUND")


async def test_move_path_golden_results_and_defaults(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.put("src/tmp.rs", "new")
    box.put("src/main.rs", "old")
    box.put("src/other.rs", "other")
    async with fs_client(box) as client:
        renamed = ok(
            await call(client, "move_path", **{"from": f"{p}/src/tmp.rs", "to": f"{p}/src/main.rs", "overwrite": True})
        )
        refused = await call(client, "move_path", **{"from": f"{p}/src/other.rs", "to": f"{p}/src/main.rs"})
        no_parent = await call(
            client, "move_path", **{"from": f"{p}/src/other.rs", "to": f"{p}/a/b.rs", "create_parents": False}
        )
        parents = ok(await call(client, "move_path", **{"from": f"{p}/src/other.rs", "to": f"{p}/a/b.rs"}))
    assert renamed == {
        "from": f"{p}/src/tmp.rs",
        "to": f"{p}/src/main.rs",
        "existed": True,
        "overwritten": True,
        "recursive": False,
    }
    assert box.get("src/main.rs") == b"new" and not box.exists("src/tmp.rs")
    assert_error(refused, "ALREADY_EXISTS")
    assert_error(no_parent, "NOT_FOUND")
    assert parents == {
        "from": f"{p}/src/other.rs",
        "to": f"{p}/a/b.rs",
        "existed": False,
        "overwritten": False,
        "recursive": False,
    }
    assert box.get("a/b.rs") == b"other" and not box.exists("src/other.rs")


# -- the git repository rule ------------------------------------------------------------


async def test_writes_to_absolute_paths_must_be_inside_a_git_repository(scoped_sandbox):
    box = scoped_sandbox
    p = box.prefix
    box.put("repo/.git/HEAD", "ref: refs/heads/main\n")
    box.put("repo/a.txt", "a")
    box.put("plain/a.txt", "a")
    async with fs_client(box) as client:
        inside = await call(client, "create_file", path=box.path("repo/new.txt"), content="x")
        outside = await call(client, "create_file", path=box.path("plain/new.txt"), content="x")
        relative = await call(client, "create_file", path=f"{p}/plain/new.txt", content="x")
        refused = [
            await call(client, "overwrite_file", path=box.path("plain/a.txt"), content="y"),
            await call(client, "delete_path", path=box.path("plain/a.txt")),
            await call(client, "copy_path", **{"from": f"{p}/repo/a.txt", "to": box.path("plain/b.txt")}),
            await call(client, "move_path", **{"from": box.path("plain/a.txt"), "to": f"{p}/repo/b.txt"}),
            await call(client, "move_path", **{"from": f"{p}/repo/a.txt", "to": box.path("plain/b.txt")}),
        ]
        copy_out = await call(client, "copy_path", **{"from": box.path("plain/a.txt"), "to": f"{p}/repo/c.txt"})
    assert ok(inside) == {"path": box.path("repo/new.txt"), "created": True, "overwritten": False}
    assert_error(outside, "ACCESS_DENIED")
    assert ok(relative)["path"] == f"{p}/plain/new.txt", "relative paths need no repository"
    for result in refused:
        assert_error(result, "ACCESS_DENIED")
    assert box.get("plain/a.txt") == b"a" and not box.exists("plain/b.txt") and box.exists("repo/a.txt")
    assert ok(copy_out)["to"] == f"{p}/repo/c.txt", "reading from an absolute path needs no repository"


async def test_a_real_git_repository_admits_absolute_writes(local_sandbox):
    box = local_sandbox
    repo = Path(box.mount.fs_path("work"))
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "sub").mkdir()
    Path(box.mount.fs_path("loose")).mkdir()
    async with fs_client(box) as client:
        info = ok(await call(client, "path_info", path=str(repo / "sub")))
        written = await call(client, "create_file", path=str(repo / "sub" / "x.py"), content="x = 1\n")
        loose = await call(client, "create_file", path=box.mount.fs_path("loose/x.py"), content="x = 1\n")
    assert info["repo_root"] == str(repo)
    assert ok(written)["created"] is True
    assert (repo / "sub" / "x.py").read_text() == "x = 1\n"
    assert_error(loose, "ACCESS_DENIED")
    assert not Path(box.mount.fs_path("loose/x.py")).exists()


# -- the jail ---------------------------------------------------------------------------

ESCAPES = [
    ("list_files", {"root": ".."}),
    ("read_file", {"path": "../outside/secret.txt"}),
    ("search_text", {"query": "canary", "root": "../outside"}),
    ("stat", {"path": "../outside/secret.txt"}),
    ("path_info", {"path": "src/../../outside"}),
    ("create_file", {"path": "../evil.txt", "content": "x"}),
    ("overwrite_file", {"path": "../outside/secret.txt", "content": "x"}),
    ("delete_path", {"path": "../outside/secret.txt", "force": True}),
    ("copy_path", {"from": "../outside/secret.txt", "to": "stolen.txt"}),
    ("copy_path", {"from": "a.txt", "to": "../outside/planted.txt"}),
    ("move_path", {"from": "a.txt", "to": "../moved.txt"}),
]


async def test_jail_escapes_are_access_denied_through_every_fs_tool(sandbox):
    sandbox.put("a.txt", "a")
    async with fs_client(sandbox) as client:
        results = [(tool, await call(client, tool, **args)) for tool, args in ESCAPES]
    for tool, result in results:
        assert result.is_error, tool
        assert_error(result, "ACCESS_DENIED")
        assert "canary" not in result.content[0].text
    assert sandbox.get("a.txt") == b"a" and not sandbox.exists("stolen.txt")
    assert (sandbox.outside / "secret.txt").read_bytes().startswith(b"canary")


async def test_local_escapes_by_absolute_path_sibling_prefix_and_symlink_are_denied(local_sandbox):
    box = local_sandbox
    evil = str(Path(box.root).parent / "app_evil" / "secret.txt")
    outside = str(box.outside / "secret.txt")
    os.symlink(box.outside, box.mount.fs_path("out"))
    async with fs_client(box) as client:
        results = [
            await call(client, "read_file", path=evil),
            await call(client, "stat", path=outside),
            await call(client, "read_file", path="out/secret.txt"),
            await call(client, "search_text", query="canary", root="out"),
            await call(client, "path_info", path="out"),
            await call(client, "overwrite_file", path="out/secret.txt", content="x"),
            await call(client, "create_file", path=evil, content="x", overwrite=True),
        ]
        listed = ok(await call(client, "list_files", include_dirs=True))
        searched = ok(await call(client, "search_text", query="canary"))
    for result in results:
        assert_error(result, "ACCESS_DENIED")
    assert listed["entries"] == [{"path": "out", "is_dir": False}], "the link is listed, never followed"
    assert searched["hits"] == []
    assert (box.outside / "secret.txt").read_bytes().startswith(b"canary")
