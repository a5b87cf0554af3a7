"""Searches and walks leave out what ignore files ignore and every ``.git`` by default, as
ripgrep does, and say so; ``respect_gitignore=false`` shows everything (SPEC §7). The tools
that answer disk-space questions count everything (a size, the largest files, duplicates).
Through the MCP client, on every backend.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Sandbox, every_store
from results import ok

from vfs_mcp.jail.context import CallContext
from vfs_mcp.jail.tally import Tally
from vfs_mcp.ops.trees.directory_tree import directory_tree

pytestmark = [pytest.mark.anyio, every_store]

TREE = {
    ".gitignore": ".venv/\n*.log\n",
    "src/app.py": "def needle(): pass\n",
    "src/copy.txt": "the same bytes\n",
    "src/debug.log": "needle in a log\n",
    ".venv/.gitignore": "*\n",  # what a venv holds: inside an ignored folder, never read
    ".venv/lib/site.py": "def needle(): pass\nonly_in_the_venv = 1\n",
    ".venv/lib/copy.txt": "the same bytes\n",
    ".git/HEAD": "ref: refs/heads/needle\n",
}
EMPTY = ["docs/empty", ".venv/empty", ".git/refs/tags"]


@pytest.fixture
async def repo(sandbox: Sandbox) -> Sandbox:
    for rel, text in TREE.items():
        sandbox.put(rel, text)
    async with sandbox.client() as client:
        for folder in EMPTY:
            ok(await client.call_tool("create_directory", {"path": sandbox.path(folder)}))
    return sandbox


async def call(sandbox: Sandbox, tool: str, **args: Any) -> tuple[dict[str, Any], str]:
    async with sandbox.client() as client:
        result = await client.call_tool(tool, {"path": sandbox.path(""), **args})
    assert result.content
    return ok(result), result.content[0].text


def below(sandbox: Sandbox, paths: list[str]) -> list[str]:
    root = sandbox.path("").rstrip("/") + "/"
    return [path.removeprefix(root) for path in paths]


async def test_grep_skips_ignored_paths_and_git_unless_asked(repo: Sandbox) -> None:
    body, raw = await call(repo, "grep_files", pattern="needle")
    assert below(repo, [m["path"] for m in body["matches"]]) == ["src/app.py"]
    assert ".venv" not in raw and ".git/" not in raw
    body, _ = await call(repo, "grep_files", pattern="needle", respect_gitignore=False)
    found = below(repo, [m["path"] for m in body["matches"]])
    assert found == [".git/HEAD", ".venv/lib/site.py", "src/app.py", "src/debug.log"]


async def test_a_grep_that_finds_nothing_says_ignored_paths_were_not_searched(repo: Sandbox) -> None:
    _, raw = await call(repo, "grep_files", pattern="only_in_the_venv")
    assert raw.splitlines()[0] == "No matches"
    assert "respect_gitignore=false" in raw
    body, raw = await call(repo, "grep_files", pattern="only_in_the_venv", respect_gitignore=False)
    assert body["returned"] == 1 and "respect_gitignore" not in raw


async def test_search_files_skips_ignored_paths_and_counts_the_matches_left_out(repo: Sandbox) -> None:
    body, raw = await call(repo, "search_files", pattern="*.py")
    assert below(repo, [r["path"] for r in body["results"]]) == ["src/app.py"]
    assert "1 ignored matches" in raw and "respect_gitignore=false" in raw
    body, raw = await call(repo, "search_files", pattern="*.py", respect_gitignore=False)
    assert below(repo, [r["path"] for r in body["results"]]) == [".venv/lib/site.py", "src/app.py"]
    assert "ignored" not in raw
    body, _ = await call(repo, "search_files", pattern="HEAD")
    assert body["results"] == []


async def test_directory_tree_leaves_out_ignored_folders_and_names_them(repo: Sandbox) -> None:
    body, raw = await call(repo, "directory_tree", max_depth=5)
    names = [child["name"] for child in body["tree"]["children"]]
    assert names == [".gitignore", "docs", "src"]
    assert [child["name"] for child in body["tree"]["children"][2]["children"]] == ["app.py", "copy.txt"]
    assert "left out as ignored (.gitignore/.ignore, .git): .git/, .venv/, src/debug.log" in raw
    body, raw = await call(repo, "directory_tree", max_depth=5, respect_gitignore=False)
    assert [child["name"] for child in body["tree"]["children"]] == [".git", ".gitignore", ".venv", "docs", "src"]
    assert "ignored" not in raw


async def test_find_empty_directories_skips_ignored_folders_and_git(repo: Sandbox) -> None:
    body, _ = await call(repo, "find_empty_directories")
    assert below(repo, body["directories"]) == ["docs/empty"]
    body, _ = await call(repo, "find_empty_directories", respect_gitignore=False)
    assert below(repo, body["directories"]) == sorted(EMPTY)


async def test_disk_space_tools_count_ignored_paths_unless_asked_not_to(repo: Sandbox) -> None:
    size, _ = await call(repo, "calculate_directory_size", format="json")
    assert size["files"] == len(TREE)
    large, _ = await call(repo, "find_large_files", min_size_mb=0, max_results=100)
    assert ".venv/lib/site.py" in below(repo, [f["path"] for f in large["files"]])
    large, _ = await call(repo, "find_large_files", min_size_mb=0, respect_gitignore=True)
    assert below(repo, sorted(f["path"] for f in large["files"])) == [".gitignore", "src/app.py", "src/copy.txt"]
    dups, _ = await call(repo, "find_duplicate_files")
    assert [below(repo, g["paths"]) for g in dups["groups"]] == [[".venv/lib/copy.txt", "src/copy.txt"]]
    dups, _ = await call(repo, "find_duplicate_files", respect_gitignore=True)
    assert dups["groups"] == []


async def test_an_ignore_file_inside_an_ignored_folder_is_never_read(repo: Sandbox) -> None:
    tally = Tally()
    directory_tree(repo.vfs().for_call(CallContext(tally=tally)), repo.path(""), max_depth=5)
    assert tally.read == len(TREE[".gitignore"])


async def test_a_search_rooted_inside_git_sees_its_contents(repo: Sandbox) -> None:
    body, _ = await call(repo, "search_files", path=repo.path(".git"), pattern="HEAD")
    assert below(repo, [r["path"] for r in body["results"]]) == [".git/HEAD"]
