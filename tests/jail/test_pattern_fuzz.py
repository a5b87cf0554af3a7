"""Random regexes and globs sent to every tool that takes one: each call answers, with a result
or a coded error, in bounded matching work (as the server counts it, ``vfs://metrics``), and
the server answers a trivial call right after.

The alphabets lean on what makes backtracking engines explode (nested quantifiers, many stars,
alternations of overlapping words) and on syntax edges (unclosed groups and classes, escapes,
braces, look-around). The tree holds long runs of the same letter for them to chew on.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import anyio
import pytest
from conftest import Sandbox, make_sandbox
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server.mcpserver import MCPServer
from results import work

from vfs_mcp.jail.globs import name_glob
from vfs_mcp.profiles.results import error_of

MAX_STEPS = 100_000
"""Matching work one call may do, on average over an example's calls of one tool (``match_steps``): the tree holds about 300 characters of text
and names, each handed to an engine a few times at most, whatever the pattern."""
MAX_PIECE = 200
"""Characters one engine call may be handed (``largest_match``): the longest line or path."""
HANG = 60.0
"""Seconds after which a call that never answers fails the test instead of stalling the suite."""

REGEX_PIECES = [
    "a",
    "a",
    "b",
    "(",
    ")",
    "+",
    "*",
    "?",
    "|",
    "[",
    "]",
    "^",
    "$",
    ".",
    "\\",
    "\\w",
    "{2,}",
    "(?=",
    "(?<!",
    "\\1",
    "é",
]
regexes = st.lists(st.sampled_from(REGEX_PIECES), min_size=1, max_size=16).map("".join)
GLOB_PIECES = ["*", "*", "a", "a", "?", "[", "]", "!", "/", "**", "{", ",", "}", "\\", "c", "."]
globs = st.lists(st.sampled_from(GLOB_PIECES), min_size=1, max_size=20).map("".join)


def seed(box: Sandbox) -> None:
    box.put("runs.txt", "a" * 40 + "!\n" + "ab" * 30 + "\n" + "a a a a a a a a a b\n")
    box.put("a" * 50 + "c", "x\n")
    box.put("dir/" + "a" * 60, "needle\n")
    box.put("dir/.gitignore", "*a*a*a*a*a*a*a*a*c\n")


def default_calls(box: Sandbox, regex: str, glob: str) -> list[tuple[str, dict[str, Any]]]:
    root = box.path("")
    return [
        ("grep_files", {"path": root, "pattern": regex, "is_regex": True}),
        ("grep_files", {"path": root, "pattern": regex, "is_regex": True, "whole_word": True, "case_sensitive": False}),
        ("grep_files", {"path": root, "pattern": "a", "include_patterns": [glob], "exclude_patterns": [glob]}),
        ("search_files", {"path": root, "pattern": glob, "exclude_patterns": [glob]}),
        ("directory_tree", {"path": root, "pattern": glob, "exclude_patterns": [glob]}),
        ("list_directory", {"path": root, "pattern": glob}),
        ("find_large_files", {"path": root, "min_size_mb": 0, "exclude_patterns": [glob]}),
        ("find_empty_directories", {"path": root, "exclude_patterns": [glob]}),
        ("find_duplicate_files", {"path": root, "exclude_patterns": [glob]}),
        ("fs_search_text", {"root": root, "query": regex, "mode": "regex", "exclude_globs": [glob]}),
        ("fs_list_files", {"root": root, "include_globs": [glob], "exclude_globs": [glob]}),
    ]


def official_calls(box: Sandbox, regex: str, glob: str) -> list[tuple[str, dict[str, Any]]]:
    root = box.path("")
    return [
        ("search_files", {"path": root, "pattern": glob, "excludePatterns": [glob]}),
        ("directory_tree", {"path": root, "excludePatterns": [glob]}),
    ]


async def exercise(server: MCPServer, calls: list[tuple[str, dict[str, Any]]]) -> None:
    async with Client(server) as client:
        before = await work(client)
        for tool, args in calls:
            with anyio.fail_after(HANG):
                result = await client.call_tool(tool, args)
            if result.is_error:
                code = (error_of(result) or {}).get("code")
                if code is None:  # the official profile answers in text, its code first
                    code = result.content[0].text.split(":", 1)[0]
                assert code in ("INVALID_ARGUMENT", "NOT_FOUND"), (tool, args, result.content[0].text[:300])
        with anyio.fail_after(HANG):
            alive = await client.call_tool("list_allowed_directories", {})
        assert not alive.is_error
        for tool, (steps, largest) in (await work(client)).items():
            made = sum(called == tool for called, _ in calls)
            assert steps - before.get(tool, (0, 0))[0] <= MAX_STEPS * made and largest <= MAX_PIECE, (tool, calls)


@pytest.fixture(scope="module", params=["memory", "local"])
def boxes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Sandbox, MCPServer, MCPServer]:
    box = make_sandbox(request.param, tmp_path_factory.mktemp(f"fuzz-{request.param}"), request)
    seed(box)
    return box, box.server(profiles=("default", "fs")), box.server(profiles=("official",))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(regex=regexes, glob=globs)
def test_random_regexes_and_globs_answer_in_bounded_work_on_every_tool(
    boxes: tuple[Sandbox, MCPServer, MCPServer], regex: str, glob: str
) -> None:
    box, default, official = boxes
    anyio.run(exercise, default, default_calls(box, regex, glob))
    anyio.run(exercise, official, official_calls(box, regex, glob))


@settings(max_examples=400, deadline=None)
@given(
    pattern=st.text(alphabet="aAbB.*?_é", min_size=1, max_size=6),
    names=st.lists(st.text(alphabet="aAbB._é", max_size=7), max_size=8),
    case_sensitive=st.booleans(),
)
def test_a_name_glob_answers_as_fnmatch_whatever_its_quick_refusal_skips(
    pattern: str, names: list[str], case_sensitive: bool
) -> None:
    matches = name_glob(pattern, case_sensitive=case_sensitive)
    for name in names:
        expected = fnmatch.fnmatchcase(*((name, pattern) if case_sensitive else (name.lower(), pattern.lower())))
        assert matches(name) == expected, (pattern, name)
