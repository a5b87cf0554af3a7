"""Contract tests of search_files, directory_tree and the analytics tools (SPEC §4; the default profile's original,
§6.12-6.15, 6.17-6.18), through the MCP client on every backend.

One corpus per backend (module scope, uploaded once) holds three areas: ``proj/`` for name
search and trees, ``big/`` for large files and ``dups/`` for duplicates. Tests that change
the store (empty directories) or need symlinks (local) build their own.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import ALL_STORES, CANARY, Sandbox, every_store, make_sandbox
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from results import assert_error, ok

from vfs_mcp.ops.trees.directory_tree import directory_tree, tree_fields

pytestmark = [pytest.mark.anyio, every_store]

MiB = 1024 * 1024
KiB = 1024

PROJ: dict[str, bytes] = {
    "proj/README.md": b"# readme\n",
    "proj/src/main.py": b"def main():\n    pass\n",
    "proj/src/util.py": b"def helper():\n    return 1\n",
    "proj/src/Config.PY": b"CONFIG = 1\n",
    "proj/src/sub/deep.py": b"def main_deep():\n    pass\n",
    "proj/src/sub/data.json": b'{"k": 1}\n',
    "proj/docs/guide.md": b"guide\n",
    "proj/docs/api/ref.md": b"reference\n",
    "proj/config/settings.toml": b"x = 1\n",
    "proj/config/app_config.yaml": b"a: 1\n",
    "proj/node_modules/lib/index.js": b"module.exports = {}\n",
}
PROJ_DIRS = ["config", "docs", "docs/api", "node_modules", "node_modules/lib", "src", "src/sub"]

BIG: dict[str, bytes] = {
    "big/huge.bin": b"h" * (3 * MiB),
    "big/medium.bin": b"m" * (2 * MiB + 1),
    "big/b_tie.bin": b"t" * (3 * MiB // 2),
    "big/a_tie.bin": b"u" * (3 * MiB // 2),
    "big/small.bin": b"s" * (10 * KiB),
    "big/nested/deep.bin": b"d" * (MiB + 5),
}

SAME_HEAD = b"z" * 70_000
DUPS: dict[str, bytes] = {
    "dups/one.txt": b"A" * 1000,
    "dups/sub/two.txt": b"A" * 1000,
    "dups/other/three.txt": b"A" * 1000,
    "dups/p1.bin": b"B" * 3000,
    "dups/q/p2.bin": b"B" * 3000,
    # 5 MB and no other file of its size: it must never be read
    "dups/unique_big.bin": b"U" * 5_000_000,
    # same size, same first 64 KiB, different after: not duplicates
    "dups/tail1.bin": SAME_HEAD + b"1" * (100 * KiB - 70_000),
    "dups/tail2.bin": SAME_HEAD + b"2" * (100 * KiB - 70_000),
    # same size, different from the first byte
    "dups/head1.bin": b"x" + b"h" * 19_999,
    "dups/head2.bin": b"y" + b"h" * 19_999,
    "dups/single.txt": b"only one of these",
    "dups/empty1.txt": b"",
    "dups/empty2.txt": b"",
}

CORPUS = {**PROJ, **BIG, **DUPS}


def text(result: CallToolResult) -> str:
    assert result.content
    return result.content[0].text


def rel(sandbox: Sandbox, path: str, base: str = "") -> str:
    root = sandbox.path(base).rstrip("/") + "/"
    assert path.startswith(root), (path, root)
    return path[len(root) :]


@pytest.fixture(scope="module", params=ALL_STORES)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = make_sandbox(request.param, tmp_path_factory.mktemp(f"tree-{request.param}"), request)
    for path, data in CORPUS.items():
        sandbox.put(path, data)
    return sandbox


_servers: dict[str, MCPServer] = {}


async def call(sandbox: Sandbox, tool: str, **args: Any) -> CallToolResult:
    """One call through a fresh in-process client (the server, read-only here, is built once)."""
    # Keyed by the mount's URL (unique per sandbox), not id(): a torn-down sandbox's id is reused.
    if sandbox.mount.url not in _servers:
        _servers[sandbox.mount.url] = sandbox.server()
    server = _servers[sandbox.mount.url]
    async with Client(server) as client:  # type: ignore[arg-type]
        return await client.call_tool(tool, args)


# -- search_files ---------------------------------------------------------------------------


async def search(sandbox: Sandbox, pattern: str, **args: Any) -> tuple[list[str], dict[str, Any]]:
    result = ok(await call(sandbox, "search_files", path=sandbox.path("proj"), pattern=pattern, **args))
    return [rel(sandbox, r["path"], "proj") for r in result["results"]], result


async def test_search_files_glob_is_case_insensitive(loaded: Sandbox) -> None:
    found, result = await search(loaded, "*.py")
    assert found == ["src/Config.PY", "src/main.py", "src/sub/deep.py", "src/util.py"]
    assert all(r["type"] == "file" for r in result["results"])
    assert [r["size"] for r in result["results"]] == [len(PROJ[f"proj/{p}"]) for p in found]
    assert result["has_more"] is False
    upper, _ = await search(loaded, "*.PY")
    assert upper == found
    assert (await search(loaded, "MAIN.py"))[0] == ["src/main.py"]


async def test_search_files_plain_word_is_a_substring_and_finds_directories(loaded: Sandbox) -> None:
    found, result = await search(loaded, "config")
    assert found == ["config", "config/app_config.yaml", "src/Config.PY"]
    assert [r["type"] for r in result["results"]] == ["directory", "file", "file"]
    assert (await search(loaded, "ep"))[0] == ["src/sub/deep.py"]
    # a folder that holds only folders is still a folder (S3: a prefix with no object of its own);
    # asked twice, so a warm listing cache gives the same answer as a cold one
    for _ in range(2):
        found, result = await search(loaded, "node_modules")
        assert found == ["node_modules"]
        assert result["results"][0]["type"] == "directory"


async def test_search_files_pattern_with_a_slash_matches_the_relative_path(loaded: Sandbox) -> None:
    assert (await search(loaded, "src/sub/*"))[0] == ["src/sub/data.json", "src/sub/deep.py"]
    assert (await search(loaded, "SRC/SUB/D*"))[0] == ["src/sub/data.json", "src/sub/deep.py"]
    # '*' must not cross '/': docs/*.md is not docs/api/ref.md
    assert (await search(loaded, "docs/*.md"))[0] == ["docs/guide.md"]
    assert (await search(loaded, "src/*.py"))[0] == ["src/Config.PY", "src/main.py", "src/util.py"]


async def test_search_files_not_recursive(loaded: Sandbox) -> None:
    assert (await search(loaded, "*.md", recursive=False))[0] == ["README.md"]
    assert (await search(loaded, "*", recursive=False))[0] == [
        "README.md",
        "config",
        "docs",
        "node_modules",
        "src",
    ]


async def test_search_files_exclude_patterns(loaded: Sandbox) -> None:
    assert (await search(loaded, "*.js", exclude_patterns=["node_modules"]))[0] == []
    assert (await search(loaded, "*.md", exclude_patterns=["docs/api"]))[0] == ["README.md", "docs/guide.md"]
    assert (await search(loaded, "*.py", exclude_patterns=["sub/", "util.py"]))[0] == ["src/Config.PY", "src/main.py"]
    bad = await call(loaded, "search_files", path=loaded.path("proj"), pattern="*", exclude_patterns=["../*"])
    assert_error(bad, "INVALID_ARGUMENT")


async def test_search_files_content_match(loaded: Sandbox) -> None:
    assert (await search(loaded, "*.py", content_match="def main():"))[0] == ["src/main.py"]
    assert (await search(loaded, "*", content_match="def "))[0] == ["src/main.py", "src/sub/deep.py", "src/util.py"]
    assert (await search(loaded, "*", content_match="nowhere to be found"))[0] == []


async def test_search_files_max_results_and_has_more(loaded: Sandbox) -> None:
    found, result = await search(loaded, "*.py", max_results=2)
    assert found == ["src/Config.PY", "src/main.py"]
    assert result["has_more"] is True
    found, result = await search(loaded, "*.py", max_results=4)
    assert len(found) == 4 and result["has_more"] is False
    full = await call(loaded, "search_files", path=loaded.path("proj"), pattern="*.py", max_results=2)
    assert "more than 2" in text(full)


# -- directory_tree -------------------------------------------------------------------------


def names(node: dict[str, Any]) -> list[str]:
    return [c["name"] for c in node.get("children") or []]


def child(node: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in node["children"] if c["name"] == name)


def flatten(node: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for c in node.get("children") or []:
        out.append(prefix + c["name"] + ("/" if c["type"] == "directory" else ""))
        out += flatten(c, prefix + c["name"] + "/")
    return out


async def tree(sandbox: Sandbox, **args: Any) -> tuple[dict[str, Any], str]:
    result = await call(sandbox, "directory_tree", path=sandbox.path("proj"), **args)
    return ok(result), text(result)


async def test_a_text_tree_measures_no_file_and_its_fields_say_so(loaded: Sandbox) -> None:
    body, raw = await tree(loaded)
    main = child(child(body["tree"], "src"), "main.py")
    assert (main["type"], main["size"], main["children"]) == ("file", None, None)
    assert "main.py" in raw


async def test_directory_tree_json_nests_to_the_default_depth(loaded: Sandbox) -> None:
    body, raw = await tree(loaded, format="json")
    assert json.loads(raw) == body
    root = body["tree"]
    assert body["path"] == loaded.path("proj")
    assert names(root) == ["README.md", "config", "docs", "node_modules", "src"]
    src = child(root, "src")
    assert src["type"] == "directory"
    assert names(src) == ["Config.PY", "main.py", "sub", "util.py"]
    assert names(child(src, "sub")) == ["data.json", "deep.py"]
    main = child(src, "main.py")
    assert (main["type"], main["size"], main.get("children")) == ("file", len(PROJ["proj/src/main.py"]), None)
    # depth 3: node_modules/lib/index.js is level 3
    assert names(child(child(root, "node_modules"), "lib")) == ["index.js"]
    assert (body["directories"], body["files"]) == (len(PROJ_DIRS), len(PROJ))
    assert (body["truncated"], body["omitted"]) == (False, 0)


async def test_directory_tree_max_depth(loaded: Sandbox) -> None:
    one, _ = await tree(loaded, max_depth=1)
    assert flatten(one["tree"]) == ["README.md", "config/", "docs/", "node_modules/", "src/"]
    assert (one["directories"], one["files"]) == (4, 1)
    two, _ = await tree(loaded, max_depth=2)
    assert "src/sub/" in flatten(two["tree"]) and "src/sub/deep.py" not in flatten(two["tree"])
    assert "node_modules/lib/" in flatten(two["tree"]) and "node_modules/lib/index.js" not in flatten(two["tree"])


async def test_directory_tree_without_files(loaded: Sandbox) -> None:
    body, raw = await tree(loaded, include_files=False, max_depth=5)
    assert flatten(body["tree"]) == [d + "/" for d in PROJ_DIRS]
    assert body["files"] == 0 and body["directories"] == len(PROJ_DIRS)
    assert "README.md" not in raw


async def test_directory_tree_pattern_and_excludes(loaded: Sandbox) -> None:
    body, _ = await tree(loaded, pattern="*.py", max_depth=5)
    files = [p for p in flatten(body["tree"]) if not p.endswith("/")]
    assert files == ["src/Config.PY", "src/main.py", "src/sub/deep.py", "src/util.py"]
    body, raw = await tree(loaded, exclude_patterns=["node_modules", "*.md"], max_depth=5)
    flat = flatten(body["tree"])
    assert not any(p.startswith("node_modules") or p.endswith(".md") for p in flat)
    assert "node_modules" not in raw
    assert "src/sub/deep.py" in flat and "docs/api/" in flat


async def test_directory_tree_max_entries_cap_is_cut_breadth_first(loaded: Sandbox) -> None:
    full, _ = await tree(loaded, max_depth=5)
    total = full["directories"] + full["files"]
    assert total == len(PROJ) + len(PROJ_DIRS)
    body, raw = await tree(loaded, max_depth=5, max_entries=3)
    assert body["truncated"] is True
    # the first level's first entries in name order, not README.md and config/'s insides
    assert flatten(body["tree"]) == ["README.md", "config/", "docs/"]
    # every entry left out is counted, including those inside folders that were cut
    assert body["omitted"] == total - 3
    assert f"{total - 3} more entries not shown" in raw
    assert "3 of 5 entries at level 1 shown" in raw
    body, raw = await tree(loaded, max_depth=5, max_entries=7)
    level_one = ["README.md", "config/", "docs/", "node_modules/", "src/"]
    assert flatten(body["tree"]) == [*level_one[:2], "config/app_config.yaml", "config/settings.toml", *level_one[2:]]
    assert "level 1 complete, 2 of 9 entries at level 2 shown" in raw
    assert body["notes"][0].startswith("cut breadth-first at max_entries=7")


async def test_a_capped_tree_shows_every_top_level_name_before_any_deeper_one(sandbox: Sandbox) -> None:
    """The issue's case: many top-level folders, each full; a depth-first cut showed the first
    few folders' insides and none of the later names."""
    files = [f"top{i:02d}/f{j:02d}.txt" for i in range(30) for j in range(40)]
    # 1,200 requests to a store over a network: 16 in flight, not one (memory's dict is not for threads)
    with ThreadPoolExecutor(1 if sandbox.kind == "memory" else 16) as uploads:
        list(uploads.map(lambda rel: sandbox.put(rel, "x"), files))
    async with sandbox.client() as client:
        result = await client.call_tool("directory_tree", {"path": sandbox.path(""), "max_entries": 100})
    body, raw = ok(result), text(result)
    assert names(body["tree"]) == [f"top{i:02d}" for i in range(30)]
    # level 2 filled in name order: top00's 40 files, then top01's first 30
    assert [len(names(node)) for node in body["tree"]["children"]] == [40, 30] + [0] * 28
    assert names(body["tree"]["children"][1])[-1] == "f29.txt"
    assert "level 1 complete, " in raw and body["truncated"]


async def test_a_bound_asked_past_is_used_and_said_not_refused(loaded: Sandbox) -> None:
    """A model asking for "everything" gets the most there is and a note, not INVALID_ARGUMENT
    (bounds the published schemas do not state: no bytes spent on them)."""
    body, raw = await tree(loaded, max_depth=1000, max_entries=10**6)
    assert body["files"] == len(PROJ)
    assert "max_depth=1,000 is over its bound: used 100" in raw
    assert "max_entries=1,000,000 is over its bound: used 100,000" in body["notes"]
    found = await call(loaded, "search_files", path=loaded.path("proj"), pattern="*.py", max_results=10**6)
    assert len(ok(found)["results"]) == 4 and "max_results=1,000,000 is over its bound: used 10,000" in text(found)
    grep = await call(loaded, "grep_files", path=loaded.path("proj"), pattern="main", context_lines=500)
    assert ok(grep)["returned"] == 2 and "context_lines=500 is over its bound: used 100" in text(grep)


async def test_directory_tree_text_format(loaded: Sandbox) -> None:
    _, raw = await tree(loaded, max_depth=2)
    lines = raw.splitlines()
    assert lines[0] == loaded.path("proj")
    assert "├── README.md" in lines
    assert "└── src/" in lines
    assert any(line.endswith("├── sub/") for line in lines)
    assert any(line.endswith("└── lib/") for line in lines)
    bad = await call(loaded, "directory_tree", path=loaded.path("proj/README.md"))
    assert bad.is_error


# -- calculate_directory_size ---------------------------------------------------------------


async def test_calculate_directory_size_formats_and_counts(loaded: Sandbox) -> None:
    total = sum(len(v) for v in PROJ.values())
    as_bytes = await call(loaded, "calculate_directory_size", path=loaded.path("proj"), format="bytes")
    body = ok(as_bytes)
    assert body == {
        "path": loaded.path("proj"),
        "total_bytes": total,
        "files": len(PROJ),
        "directories": len(PROJ_DIRS),
        "skipped": [],
    }
    assert f"{total} bytes" in text(as_bytes)
    human = await call(loaded, "calculate_directory_size", path=loaded.path("proj"))
    assert ok(human) == body, "the same question twice gave two answers"
    assert "B" in text(human) and f"{total} bytes" not in text(human)
    as_json = await call(loaded, "calculate_directory_size", path=loaded.path("proj"), format="json")
    assert json.loads(text(as_json)) == body
    big = ok(await call(loaded, "calculate_directory_size", path=loaded.path("big"), format="json"))
    assert big["total_bytes"] == sum(len(v) for v in BIG.values())
    assert (big["files"], big["directories"]) == (len(BIG), 1)
    human_big = await call(loaded, "calculate_directory_size", path=loaded.path("big"))
    assert "MiB" in text(human_big)
    everything = ok(await call(loaded, "calculate_directory_size", path=loaded.path("")))
    assert everything["total_bytes"] == sum(len(v) for v in CORPUS.values())
    assert everything["files"] == len(CORPUS)


# -- find_large_files -----------------------------------------------------------------------


async def large(sandbox: Sandbox, **args: Any) -> tuple[list[str], dict[str, Any]]:
    result = ok(await call(sandbox, "find_large_files", path=sandbox.path("big"), **args))
    return [rel(sandbox, f["path"], "big") for f in result["files"]], result


async def test_find_large_files_largest_first(loaded: Sandbox) -> None:
    found, result = await large(loaded, min_size_mb=1)
    assert found == ["huge.bin", "medium.bin", "a_tie.bin", "b_tie.bin", "nested/deep.bin"]
    assert [f["size"] for f in result["files"]] == [len(BIG[f"big/{p}"]) for p in found]
    assert result["min_size_bytes"] == MiB
    assert result["has_more"] is False
    assert (await large(loaded, min_size_mb=2))[0] == ["huge.bin", "medium.bin"]
    assert (await large(loaded, min_size_mb=2.5))[0] == ["huge.bin"]
    assert (await large(loaded, min_size_mb=10))[0] == []
    assert (await large(loaded, min_size_mb=0))[0][-1] == "small.bin"
    # the default threshold is 100 MB
    assert (await large(loaded))[0] == []


async def test_find_large_files_max_results_recursive_and_excludes(loaded: Sandbox) -> None:
    found, result = await large(loaded, min_size_mb=1, max_results=2)
    assert found == ["huge.bin", "medium.bin"]
    assert result["has_more"] is True
    assert (await large(loaded, min_size_mb=1, recursive=False))[0] == [
        "huge.bin",
        "medium.bin",
        "a_tie.bin",
        "b_tie.bin",
    ]
    assert (await large(loaded, min_size_mb=1, exclude_patterns=["*tie*", "nested"]))[0] == ["huge.bin", "medium.bin"]
    raw = await call(loaded, "find_large_files", path=loaded.path("big"), min_size_mb=1, max_results=2)
    assert "more than 2" in text(raw) and "huge.bin" in text(raw)


# -- find_duplicate_files -------------------------------------------------------------------


async def dups(sandbox: Sandbox, **args: Any) -> dict[str, Any]:
    return ok(await call(sandbox, "find_duplicate_files", path=sandbox.path("dups"), format="json", **args))


def groups(sandbox: Sandbox, body: dict[str, Any]) -> list[list[str]]:
    return [[rel(sandbox, p, "dups") for p in g["paths"]] for g in body["groups"]]


async def test_find_duplicate_files_groups(loaded: Sandbox) -> None:
    body = await dups(loaded)
    assert groups(loaded, body) == [["p1.bin", "q/p2.bin"], ["one.txt", "other/three.txt", "sub/two.txt"]]
    assert [g["size"] for g in body["groups"]] == [3000, 1000]
    assert body["wasted_bytes"] == 3000 + 2 * 1000
    assert body["groups"][0]["sha256"] == hashlib.sha256(b"B" * 3000).hexdigest()
    assert body["files_scanned"] == len([v for v in DUPS.values() if len(v) >= 1])
    assert body["truncated"] is False


async def test_find_duplicate_files_never_reads_unique_sizes(loaded: Sandbox) -> None:
    body = await dups(loaded)
    # everything that had to be read at least once: the candidates of shared sizes
    must_read = 3 * 1000 + 2 * 3000 + 2 * 100 * KiB + 2
    assert must_read <= body["bytes_read"] < MiB, body["bytes_read"]
    assert body["bytes_read"] < len(DUPS["dups/unique_big.bin"]) // 5


async def test_find_duplicate_files_tail_difference_is_not_a_duplicate(loaded: Sandbox) -> None:
    body = await dups(loaded)
    grouped = {p for g in groups(loaded, body) for p in g}
    assert {"tail1.bin", "tail2.bin", "head1.bin", "head2.bin", "unique_big.bin", "single.txt"}.isdisjoint(grouped)


async def test_find_duplicate_files_min_size_exclude_and_recursive(loaded: Sandbox) -> None:
    assert groups(loaded, await dups(loaded, min_size=2000)) == [["p1.bin", "q/p2.bin"]]
    assert groups(loaded, await dups(loaded, exclude_patterns=["other", "q/"])) == [["one.txt", "sub/two.txt"]]
    assert groups(loaded, await dups(loaded, recursive=False)) == []
    with_empty = groups(loaded, await dups(loaded, min_size=0))
    assert ["empty1.txt", "empty2.txt"] in with_empty


async def test_find_duplicate_files_max_files_truncates(loaded: Sandbox) -> None:
    body = await dups(loaded, max_files=3)
    assert body["truncated"] is True
    assert body["files_scanned"] == 3
    raw = await call(loaded, "find_duplicate_files", path=loaded.path("dups"), max_files=3)
    assert "max_files=3" in text(raw)


async def test_find_duplicate_files_text_format(loaded: Sandbox) -> None:
    raw = await call(loaded, "find_duplicate_files", path=loaded.path("dups"))
    ok(raw)
    assert "2 groups" in text(raw)
    assert loaded.path("dups/q/p2.bin") in text(raw)


# -- find_empty_directories (changes the store: its own sandbox) ------------------------------


async def test_find_empty_directories_on_every_backend(sandbox: Sandbox) -> None:
    sandbox.put("full/file.txt", b"x")
    sandbox.put("deep/er/file.txt", b"x")
    async with sandbox.client() as client:
        for d in ("empty1", "nested/empty2", "full/empty3"):
            ok(await client.call_tool("create_directory", {"path": sandbox.path(d)}))
        body = ok(await client.call_tool("find_empty_directories", {"path": sandbox.path(""), "format": "json"}))
        flat = ok(await client.call_tool("find_empty_directories", {"path": sandbox.path(""), "recursive": False}))
        excluded = ok(
            await client.call_tool(
                "find_empty_directories", {"path": sandbox.path(""), "exclude_patterns": ["empty1", "full"]}
            )
        )
        raw = await client.call_tool("find_empty_directories", {"path": sandbox.path("")})
        ok(await client.call_tool("write_file", {"path": sandbox.path("empty1/now.txt"), "content": "x"}))
        after = ok(await client.call_tool("find_empty_directories", {"path": sandbox.path("")}))
        inside = ok(await client.call_tool("find_empty_directories", {"path": sandbox.path("full")}))
    found = [rel(sandbox, p) for p in body["directories"]]
    assert found == ["empty1", "full/empty3", "nested/empty2"]
    assert [rel(sandbox, p) for p in flat["directories"]] == ["empty1"]
    assert [rel(sandbox, p) for p in excluded["directories"]] == ["nested/empty2"]
    assert sandbox.path("nested/empty2") in text(raw)
    assert [rel(sandbox, p) for p in after["directories"]] == ["full/empty3", "nested/empty2"]
    assert [rel(sandbox, p) for p in inside["directories"]] == ["full/empty3"]


async def test_find_empty_directories_when_there_are_none(sandbox: Sandbox) -> None:
    sandbox.put("a/b.txt", b"x")
    async with sandbox.client() as client:
        result = await client.call_tool("find_empty_directories", {"path": sandbox.path("")})
    assert ok(result)["directories"] == []
    assert "No empty directories" in text(result)


# -- progress ---------------------------------------------------------------------------------


async def test_find_duplicate_files_reports_progress(loaded: Sandbox) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with loaded.client() as client:
        result = await client.call_tool(
            "find_duplicate_files", {"path": loaded.path("dups")}, progress_callback=on_progress
        )
    ok(result)
    assert seen and seen == sorted(seen)


# -- local: walks never follow a link out -------------------------------------------------------


@pytest.fixture
def linked(local_sandbox: Sandbox) -> Sandbox:
    sandbox = local_sandbox
    for path, data in {**PROJ, "dups/one.txt": b"A" * 1000}.items():
        sandbox.put(path, data)
    outside = sandbox.outside
    (outside / "huge_outside.bin").write_bytes(b"o" * (2 * MiB))
    (outside / "copy_of_one.txt").write_bytes(b"A" * 1000)
    (outside / "config_outside.md").write_bytes(CANARY)
    (outside / "emptydir").mkdir()
    os.symlink(outside, sandbox.mount.fs_path("proj/link_out"))
    os.symlink(outside, sandbox.mount.fs_path("dups/link_out"))
    os.symlink(outside / "huge_outside.bin", sandbox.mount.fs_path("proj/huge_link.bin"))
    os.symlink(outside / "copy_of_one.txt", sandbox.mount.fs_path("dups/one_link.txt"))
    return sandbox


def no_outside(body: Any, sandbox: Sandbox) -> None:
    dumped = json.dumps(body)
    for name in ("secret.txt", "huge_outside", "copy_of_one", "config_outside", "emptydir", str(sandbox.outside)):
        assert name not in dumped, (name, dumped[:2000])
    assert "canary" not in dumped


async def test_local_walks_never_follow_a_symlinked_dir_out(linked: Sandbox) -> None:
    sandbox = linked
    proj = sandbox.path("proj")
    async with sandbox.client() as client:
        tree_res = await client.call_tool("directory_tree", {"path": proj, "max_depth": 10, "format": "json"})
        size = ok(await client.call_tool("calculate_directory_size", {"path": proj}))
        search_res = ok(await client.call_tool("search_files", {"path": proj, "pattern": "*"}))
        content = ok(await client.call_tool("search_files", {"path": proj, "pattern": "*", "content_match": "canary"}))
        large_res = ok(await client.call_tool("find_large_files", {"path": proj, "min_size_mb": 0}))
        dup_res = ok(await client.call_tool("find_duplicate_files", {"path": sandbox.path(""), "min_size": 0}))
        empty = ok(await client.call_tool("find_empty_directories", {"path": proj}))
    body = ok(tree_res)
    for result in (body, text(tree_res), size, search_res, content, large_res, dup_res, empty):
        no_outside(result, sandbox)
    flat = flatten(body["tree"])
    assert not any(p.startswith(("link_out/", "huge_link.bin/")) for p in flat)
    assert "link_out/" not in flat, "a link out is not shown as a directory to descend"
    assert (body["files"], body["directories"]) == (len(PROJ), len(PROJ_DIRS))
    assert size["total_bytes"] == sum(len(v) for v in PROJ.values())
    assert (size["files"], size["directories"]) == (len(PROJ), len(PROJ_DIRS))
    assert all(not r["path"].startswith(sandbox.path("proj/link_out") + "/") for r in search_res["results"])
    assert content["results"] == []
    assert all(f["size"] < MiB for f in large_res["files"])
    assert len(large_res["files"]) == len(PROJ)
    assert dup_res["groups"] == []
    assert empty["directories"] == []


async def test_directory_tree_sends_progress_notifications_on_a_large_walk(sandbox: Sandbox) -> None:
    for i in range(400):
        sandbox.put(f"d{i % 8}/f{i}.txt", "x")
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with sandbox.client() as client:
        result = await client.call_tool(
            "directory_tree", {"path": sandbox.path(""), "max_depth": 2}, progress_callback=on_progress
        )
    assert not result.is_error
    assert seen, "no progress notification reached the client"
    assert seen[-1] == (408, 408)
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)


@pytest.mark.parametrize("tool", ["directory_tree", "search_files"])
async def test_a_walk_kept_in_tuples_answers_as_the_filtered_walk_does(loaded: Sandbox, tool: str) -> None:
    """Without exclude globs a tree or a name search lists paths as tuples (JailedFS.names);
    with one that prunes nothing they go through ``select``: both answer alike."""
    args: dict[str, Any] = {"path": loaded.path("")}
    args |= (
        {"max_depth": 10, "max_entries": 5000} if tool == "directory_tree" else {"pattern": "*", "max_results": 5000}
    )
    plain = await call(loaded, tool, **args, format="json")
    pruned = await call(loaded, tool, **args, exclude_patterns=["no-such-name-*"], format="json")
    assert ok(plain) == ok(pruned)
    assert text(plain) == text(pruned)


def test_a_tree_s_fields_are_its_model_dump_with_the_tree_not_copied(loaded: Sandbox) -> None:
    result = directory_tree(loaded.vfs(), loaded.path(""), max_depth=10, max_entries=5000)
    fields = tree_fields(result)
    assert fields == result.model_dump(mode="json")
    assert list(fields) == list(result.model_dump(mode="json"))
    assert fields["tree"] is result.tree
