"""A caller's pattern, edit or request size can neither freeze the server nor blow up its reply.

Issue 12's reproductions, through the real CLI (stdio and HTTP) and in-process: each hostile
call answers with a result or a clear error, its matching work as the server counts it
(``vfs://metrics``) within MAX_STEPS and no engine call handed more than MAX_PIECE characters
at once, and a ``list_allowed_directories`` sent while it is in flight answers too. On the old
code each of these ran for minutes with the interpreter lock held (a backtracking engine: a
call that never answers fails on HANG, a guard against stalling the suite, not a measure).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import BACKENDS, Sandbox, make_sandbox
from mcp import Client
from processes import mcp_client, stdio_params, vfs_mcp_http
from results import work_of

from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.search import ripgrep
from vfs_mcp.ops.search.grep import SCAN_WINDOW
from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio

MAX_STEPS = 64_000_000
"""Matching work one hostile call may do (``match_steps``): its engines' own budgets (a patch's
50,000,000 line comparisons) and a few passes over the tree's 2.5 MB."""
MAX_PIECE = 2_000_000 + SCAN_WINDOW
"""Characters one engine call may be handed (``largest_match``: work done in one piece, holding
the interpreter lock, while other clients wait): the tree's longest line (one-line.txt's
2,000,000 characters) and one window of a search."""
HANG = 120.0
"""Seconds after which a call that never answers fails the test instead of stalling the suite."""
EVIL_GLOB = "*a*a*a*a*a*a*a*a*a*a*a*a*c"
LONG_NAME = "a" * 60
EVIL_REGEX = "(a+)+$"


def hostile_tree(root: Path) -> None:
    (root / "evil.txt").write_text("a" * 36 + "!\n")
    (root / LONG_NAME).write_text("x\n")
    (root / "sub").mkdir()
    (root / "sub" / LONG_NAME).write_text("y\n")
    (root / ".gitignore").write_text(EVIL_GLOB + "\n")
    (root / "code.txt").write_text("".join(f"    line {i} = value({i}) + other({i * 7})\n" for i in range(400)))
    (root / "one-line.txt").write_text("a " * 1_000_000)
    (root / "same.txt").write_text("x\n" * 200_000)


OLD_TEXT_40 = "".join(f"        changed {i} = something_else({i}) - nothing({i})\n" for i in range(40))

# (tool, arguments, what the answer must be: "ok" or an error code)
CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("grep_files", {"path": ".", "pattern": EVIL_REGEX, "is_regex": True}, "ok"),
    ("grep_files", {"path": ".", "pattern": "(a+)+(?=b)", "is_regex": True}, "INVALID_ARGUMENT"),
    ("grep_files", {"path": ".", "pattern": "a", "exclude_patterns": [EVIL_GLOB]}, "ok"),
    ("grep_files", {"path": ".", "pattern": "x", "max_file_size_mb": 1e300}, "INVALID_ARGUMENT"),
    ("directory_tree", {"path": ".", "exclude_patterns": [EVIL_GLOB]}, "ok"),
    ("directory_tree", {"path": ".", "pattern": EVIL_GLOB}, "ok"),
    ("search_files", {"path": ".", "pattern": EVIL_GLOB, "exclude_patterns": [EVIL_GLOB]}, "ok"),
    ("list_directory", {"path": ".", "pattern": EVIL_GLOB}, "ok"),
    ("find_large_files", {"path": ".", "min_size_mb": 0, "exclude_patterns": [EVIL_GLOB]}, "ok"),
    ("find_duplicate_files", {"path": ".", "exclude_patterns": [EVIL_GLOB]}, "ok"),
    ("find_empty_directories", {"path": ".", "exclude_patterns": [EVIL_GLOB]}, "ok"),
    ("edit_file", {"path": "code.txt", "edits": [{"oldText": OLD_TEXT_40, "newText": "x"}]}, "CONFLICT"),
    ("edit_file", {"path": "one-line.txt", "edits": [{"oldText": "a " * 500 + "b", "newText": "x"}]}, "CONFLICT"),
    (
        "edit_file",
        {"path": "one-line.txt", "edits": [{"oldText": f"a{i}", "newText": "b"} for i in range(12_000)]},
        "INVALID_ARGUMENT",
    ),
    # The write path's tools: a patch whose context repeats everywhere, hunks by the thousand,
    # line edits by the thousand, a path as deep as a path may be long, an undo with nothing to undo.
    (
        "apply_patch",
        {"patch": "*** Begin Patch\n*** Update File: same.txt\n@@\n" + " x\n" * 100_000 + "-x\n+y\n*** End Patch\n"},
        "CONFLICT",
    ),
    (
        "apply_patch",
        {"patch": "*** Begin Patch\n*** Update File: same.txt\n" + "@@\n x\n-x\n+y\n" * 20_000 + "*** End Patch\n"},
        "CONFLICT",
    ),
    (
        "edit_file_at_line",
        {"path": "code.txt", "line_edits": [{"line_number": n, "action": "delete"} for n in range(1, 20_000)]},
        "INVALID_ARGUMENT",
    ),
    ("write_file", {"path": "d/" * 2000 + "f.txt", "content": "x", "create_dirs": True}, "INVALID_ARGUMENT"),
    ("undo", {}, "NOT_FOUND"),
]


def check(tool: str, result: Any, expected: str) -> None:
    if expected == "ok":
        assert not result.is_error, (tool, result.content[0].text[:300])
    else:
        assert result.is_error, (tool, str(result.content)[:300])
        assert error_of(result)["code"] == expected, (tool, result.content[0].text[:300])


async def answer(client: Client, tool: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(HANG):
        return await client.call_tool(tool, args)


async def bounded(client: Client, tool: str, args: dict[str, Any], expected: str, piece: int = MAX_PIECE) -> None:
    """One hostile call: its answer, and its work within MAX_STEPS, in pieces of at most ``piece``."""
    steps_before, _ = await work_of(client, tool)
    check(tool, await answer(client, tool, args), expected)
    steps, largest = await work_of(client, tool)
    assert steps - steps_before <= MAX_STEPS, f"{tool} did {steps - steps_before:,} matching steps"
    assert largest <= piece, f"{tool} handed one engine call {largest:,} characters"


async def hostile_while_other_answers(
    hostile: Client, other: Client, tool: str, args: dict[str, Any], expected: str
) -> None:
    """One hostile call (``bounded``); meanwhile ``other`` asks for the mounts and is answered."""
    async with anyio.create_task_group() as group:
        group.start_soon(bounded, hostile, tool, args, expected)
        assert not (await answer(other, "list_allowed_directories", {})).is_error


async def test_every_hostile_call_answers_over_stdio_and_the_server_keeps_answering(tmp_path: Path) -> None:
    hostile_tree(tmp_path)
    async with Client(stdio_params(str(tmp_path))) as client:  # one server: none of the calls changes the tree
        for tool, args, expected in CALLS:
            await hostile_while_other_answers(client, client, tool, args, expected)


@pytest.mark.parametrize("kind", BACKENDS)
async def test_catastrophic_regexes_and_globs_answer_on_every_backend(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    box = make_sandbox(kind, tmp_path, request)
    box.put("evil.txt", "a" * 36 + "!\n")
    box.put("runs.txt", ("a" * 36 + "!\n") * 30_000)  # 1.1 MB: searched a window at a time
    box.put(f"sub/{LONG_NAME}", "y\n")
    box.put(".gitignore", EVIL_GLOB + "\n")
    async with box.client(profiles=("default", "fs")) as client:
        for tool, args, expected in [
            ("grep_files", {"path": box.path(""), "pattern": EVIL_REGEX, "is_regex": True}, "ok"),
            ("grep_files", {"path": box.path(""), "pattern": "(a|aa)*c", "is_regex": True}, "ok"),
            ("grep_files", {"path": box.path(""), "pattern": "(a+)+(?=b)", "is_regex": True}, "INVALID_ARGUMENT"),
            ("directory_tree", {"path": box.path(""), "exclude_patterns": [EVIL_GLOB]}, "ok"),
            ("search_files", {"path": box.path(""), "pattern": EVIL_GLOB}, "ok"),
            ("fs_list_files", {"root": box.path(""), "recursive": True, "exclude_globs": [EVIL_GLOB]}, "ok"),
            ("fs_search_text", {"root": box.path(""), "query": EVIL_REGEX, "mode": "regex"}, "ok"),
        ]:
            await bounded(client, tool, args, expected, piece=SCAN_WINDOW + 38)


async def test_one_http_clients_catastrophic_regex_leaves_other_clients_answered(tmp_path: Path) -> None:
    hostile_tree(tmp_path)
    memory_like = [c for c in CALLS if c[0] in ("grep_files", "directory_tree", "edit_file")]
    with vfs_mcp_http(str(tmp_path), {"VFS_MCP_TOKEN": ""}) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with mcp_client(url, mode="auto") as attacker, mcp_client(url, mode="auto") as bystander:
            for tool, args, expected in memory_like:
                await hostile_while_other_answers(attacker, bystander, tool, args, expected)


# -- output bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_grep_context_counts_against_the_reply_size_budget(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    box = make_sandbox(kind, tmp_path, request)
    box.put("big.txt", "m" * 30 + "\n" + ("line with an m in it, " * 4 + "\n") * 45_000)  # about 4 MB
    args = {"path": box.path("big.txt"), "pattern": "m", "context_lines": 100, "max_results": 100_000}
    async with box.client(max_response_chars=100_000) as client:
        result = await answer(client, "grep_files", {**args, "format": "json"})
        text_view = await client.call_tool("grep_files", args)
    body = data_of(result)
    assert body["has_more"] is True and body["next_offset"] == body["returned"] > 0
    assert "size budget" in body["notes"][0] and "results_offset=" in body["notes"][0]
    assert len(json.dumps(body)) < 250_000, "the reply must stay near the budget, not 765 MiB"
    assert "size budget" in text_view.content[0].text


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_huge_matching_line_is_cut_around_the_match_in_both_engines(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    box = make_sandbox(kind, tmp_path, request)
    line = "x" * 3_000_000 + "NEEDLE" + "y" * 2_000_000
    box.put("huge.txt", f"before\n{line}\nafter\n")
    async with box.client() as client:
        result = await answer(
            client, "grep_files", {"path": box.path(""), "pattern": "NEEDLE", "context_lines": 1, "format": "json"}
        )
    match = data_of(result)["matches"][0]
    assert match["column"] == 3_000_001 and match["line_number"] == 2
    assert "NEEDLE" in match["line"] and len(match["line"]) < 1100
    assert match["line"].startswith("…[cut 2,999,750 characters]…")
    assert match["line"].endswith("…[cut 1,999,256 characters]…")
    assert match["context_before"] == ["before"] and match["context_after"] == ["after"]


def test_ripgrep_errors_about_files_become_notes_naming_them(local_sandbox: Sandbox) -> None:
    # As root (the test machine) nothing is unreadable, so the parser is given ripgrep's own words.
    vfs = local_sandbox.vfs(deny=("secret*",))
    stderr = (
        "rg: ./sub/locked.txt: Permission denied (os error 13)\n"
        "rg: ./secret.txt: Permission denied (os error 13)\n"
        "rg: ./gone: No such file or directory (os error 2)\n"
    )
    root = Target(local_sandbox.mount, "")
    found = ripgrep._unreadable(vfs, root, stderr, is_file=False)
    assert found == [
        f"{local_sandbox.path('sub/locked.txt')} (Permission denied)",
        f"{local_sandbox.path('gone')} (No such file or directory)",
    ]
