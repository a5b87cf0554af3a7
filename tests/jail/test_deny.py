"""Deny patterns make files invisible to every tool that reads, lists or searches (and refuse writes)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp.server.resources import base_uri

pytestmark = pytest.mark.anyio
DENY = (".env", "*.pem")
SECRET = "TOPSECRET-VALUE"


def seed(sandbox: Sandbox) -> None:
    sandbox.put("app/.env", f"KEY={SECRET}\n")
    sandbox.put("app/cert.pem", SECRET)
    sandbox.put("app/main.py", "print('hello')\n")
    sandbox.put("app/copy.py", "print('hello')\n")


READS = [
    ("read_file", {"path": "app/.env"}),
    ("read_file_lines", {"path": "app/.env"}),
    ("head_file", {"path": "app/cert.pem"}),
    ("tail_file", {"path": "app/cert.pem"}),
    ("get_file_info", {"path": "app/.env"}),
    ("compare_files", {"file1": "app/.env", "file2": "app/main.py"}),
    ("copy_file", {"source": "app/.env", "destination": "app/leak.txt"}),
    ("move_file", {"source": "app/cert.pem", "destination": "app/leak.pem.txt"}),
    ("edit_file", {"path": "app/.env", "edits": [{"oldText": "KEY", "newText": "X"}]}),
    ("write_file", {"path": "app/new.pem", "content": "x"}),
    ("delete_path", {"path": "app/.env"}),
]


async def test_denied_files_cannot_be_read_changed_or_named(sandbox: Sandbox) -> None:
    seed(sandbox)
    async with sandbox.client(deny=DENY) as client:
        for tool, args in READS:
            args = {k: sandbox.path(v) if isinstance(v, str) and k != "content" else v for k, v in args.items()}
            result = await client.call_tool(tool, args)
            assert result.is_error, tool
            assert error_of(result)["code"] == "NOT_FOUND", tool
            assert SECRET not in str(result.content), tool
        multi = await client.call_tool(
            "read_multiple_files", {"paths": [sandbox.path("app/.env"), sandbox.path("app/main.py")]}
        )
        with pytest.raises(MCPError):
            await client.read_resource(f"{base_uri(sandbox.mount).rstrip('/')}/app/.env")
    codes = [f["error"]["code"] if f["error"] else "OK" for f in data_of(multi)["files"]]
    assert codes == ["NOT_FOUND", "OK"]
    assert SECRET not in str(multi.content)
    assert sandbox.get("app/.env") == f"KEY={SECRET}\n".encode()
    assert sandbox.exists("app/cert.pem")
    assert not sandbox.exists("app/new.pem")


LISTINGS = [
    ("list_directory", {"path": "app", "include_hidden": True}),
    ("directory_tree", {"path": "."}),
    ("search_files", {"path": ".", "pattern": "*"}),
    ("grep_files", {"path": ".", "pattern": "TOPSECRET"}),
    ("grep_files", {"path": ".", "pattern": "KEY", "count_only": True}),
    ("find_large_files", {"path": ".", "min_size_mb": 0}),
    ("find_duplicate_files", {"path": "."}),
    ("calculate_directory_size", {"path": ".", "format": "json"}),
]


async def test_denied_files_are_absent_from_every_listing_and_search(sandbox: Sandbox) -> None:
    seed(sandbox)
    async with sandbox.client(deny=DENY) as client:
        for tool, args in LISTINGS:
            args = {k: sandbox.path(v) if k == "path" else v for k, v in args.items()}
            result = await client.call_tool(tool, args)
            if result.is_error:  # the folder searched is itself hidden
                assert error_of(result)["code"] == "NOT_FOUND", (tool, result.content)
            shown = str(result.content) + str(data_of(result))
            for name in (".env", "cert.pem", SECRET):
                assert name not in shown, (tool, name)
        size = await client.call_tool("calculate_directory_size", {"path": sandbox.path("."), "format": "json"})
    assert data_of(size)["files"] == 2  # main.py and copy.py only


# -- gitignore semantics on the mount-relative path (issue 13, item 2) -------------------------

KEY = "KEY-FILE-CONTENT"
# (deny pattern, the file it must hide, a file it must leave visible)
GITIGNORE_DENY = [
    ("private/*", "private/key.txt", "public/key.txt"),
    ("private/", "private/key.txt", "public/key.txt"),
    ("private/key.txt", "private/key.txt", "private/other.txt"),
    ("/private/key.txt", "private/key.txt", "nested/private/key.txt"),
    ("private/**", "private/key.txt", "public/key.txt"),
    ("**/deep.txt", "a/b/deep.txt", "a/b/shallow.txt"),
    ("key.txt", "private/key.txt", "private/other.txt"),
]

SEES = [
    ("read_file", lambda p: {"path": p}),
    ("get_file_info", lambda p: {"path": p}),
    ("grep_files", lambda p: {"path": p, "pattern": "needle"}),
]
SEARCHES = [
    ("list_directory", {"path": "private", "include_hidden": True}),
    ("directory_tree", {"path": ".", "max_depth": 5, "format": "json"}),
    ("search_files", {"path": ".", "pattern": "*.txt"}),
    ("grep_files", {"path": ".", "pattern": "needle"}),
    ("grep_files", {"path": ".", "pattern": "ne+dle", "is_regex": True}),
    ("grep_files", {"path": "private", "pattern": "needle"}),
    ("grep_files", {"path": "a", "pattern": "needle"}),
    ("find_large_files", {"path": ".", "min_size_mb": 0}),
    ("find_duplicate_files", {"path": ".", "min_size": 0}),
]


@pytest.mark.parametrize(("pattern", "hidden", "visible"), GITIGNORE_DENY)
async def test_deny_patterns_take_gitignore_semantics_on_the_mount_relative_path(
    sandbox: Sandbox, pattern: str, hidden: str, visible: str
) -> None:
    for rel in {hidden, visible, "private/key.txt", "a/b/deep.txt"}:
        sandbox.put(rel, f"needle {KEY} in {rel}\n")
    async with sandbox.client(deny=(pattern,)) as client:
        for tool, args in SEES:
            denied = await client.call_tool(tool, args(sandbox.path(hidden)))
            assert denied.is_error and error_of(denied)["code"] == "NOT_FOUND", (tool, pattern)
            allowed = await client.call_tool(tool, args(sandbox.path(visible)))
            assert not allowed.is_error, (tool, pattern, allowed.content)
        for tool, args in SEARCHES:
            args = {k: sandbox.path(v) if k == "path" else v for k, v in args.items()}
            result = await client.call_tool(tool, args)
            if result.is_error:  # the folder searched is itself hidden
                assert error_of(result)["code"] == "NOT_FOUND", (tool, result.content)
            shown = str(result.content) + str(data_of(result))
            if tool == "directory_tree":
                shown = " ".join(sandbox.path(rel) for rel in tree_paths(data_of(result)["tree"]))
            assert f"in {hidden}" not in shown and sandbox.path(hidden) not in shown, (tool, args, pattern)
        everything = await client.call_tool("grep_files", {"path": sandbox.path(""), "pattern": "needle"})
    assert f"in {visible}" in str(everything.content), pattern


def tree_paths(node: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for child in node.get("children") or []:
        rel = f"{prefix}{child['name']}"
        out += [rel, *tree_paths(child, rel + "/")]
    return out


@pytest.mark.parametrize(
    "pattern", ["", "#private", ".", "../x", "private/../key.txt", "s3://bucket/x", "~/secret", "!key.txt"]
)
def test_a_deny_pattern_that_can_never_match_is_refused_at_start(local_sandbox: Sandbox, pattern: str) -> None:
    with pytest.raises(ValueError, match="deny pattern"):
        local_sandbox.server(deny=(pattern,))


def test_a_deny_pattern_written_as_a_host_path_is_refused_with_the_relative_spelling(local_sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match=re.escape("write '/private/key.txt'")):
        local_sandbox.server(deny=(f"{local_sandbox.root}/private/key.txt",))


def test_the_cli_refuses_a_deny_pattern_that_can_never_match(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vfs_mcp", str(tmp_path), "--deny", f"{tmp_path}/private/key.txt"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "deny pattern" in done.stderr and "'/private/key.txt'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("pattern", ["private/*", "private/", "private/key.txt", "private/**"])
async def test_deny_patterns_hide_over_the_real_cli(tmp_path: Path, pattern: str) -> None:
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key.txt").write_text(f"needle {KEY}\n")
    (tmp_path / "open.txt").write_text("needle open\n")
    params = StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", str(tmp_path), "--deny", pattern])
    async with Client(params) as client:
        read = await client.call_tool("read_file", {"path": "private/key.txt"})
        grep = await client.call_tool("grep_files", {"path": ".", "pattern": "needle"})
        tree = await client.call_tool("directory_tree", {"path": ".", "max_depth": 4})
    assert read.is_error and error_of(read)["code"] == "NOT_FOUND"
    assert KEY not in str(grep.content) and "open.txt" in str(grep.content)
    assert "key.txt" not in str(tree.content)


# -- Unicode spellings and the size of a deny list (issue 28) -----------------------------------

NFC, NFD = "priv\u00e9", "prive\u0301"
"""One folder name in its two Unicode spellings: composed (as typed on Linux and Windows) and
decomposed (as macOS clients upload names)."""


@pytest.mark.parametrize(("pattern", "stored"), [(f"{NFC}/", NFD), (f"{NFD}/", NFC), (f"{NFC}/*.txt", NFD)])
async def test_a_deny_pattern_hides_every_unicode_spelling_of_a_name(
    sandbox: Sandbox, pattern: str, stored: str
) -> None:
    sandbox.put(f"{stored}/key.txt", f"needle {SECRET}\n")
    sandbox.put("open.txt", "needle open\n")
    async with sandbox.client(deny=(pattern,)) as client:
        read = await client.call_tool("read_file", {"path": sandbox.path(f"{stored}/key.txt")})
        shown = []
        for tool, args in [
            *LISTINGS,
            ("list_directory", {"path": "."}),
            ("search_files", {"path": ".", "pattern": "*.txt"}),
        ]:
            args = {k: sandbox.path(v) if k == "path" else v for k, v in args.items()}
            args = {**args, "pattern": "needle"} if tool == "grep_files" and "count_only" not in args else args
            result = await client.call_tool(tool, args)
            shown.append((tool, str(result.content) + str(data_of(result))))
        grep = await client.call_tool("grep_files", {"path": sandbox.path("."), "pattern": "needle"})
    assert read.is_error and error_of(read)["code"] == "NOT_FOUND"
    for tool, text in shown:
        assert SECRET not in text and "key.txt" not in text, tool
        if pattern.endswith("/"):  # the folder itself is hidden, not only what is in it
            assert NFC not in text and NFD not in text, tool
    assert "open.txt" in str(grep.content)


@pytest.mark.parametrize(("pattern", "stored"), [(f"{NFC}/", NFD), (f"{NFD}/", NFC)])
async def test_an_ignore_file_ignores_every_unicode_spelling_of_a_name(
    sandbox: Sandbox, pattern: str, stored: str
) -> None:
    sandbox.put(".gitignore", f"{pattern}\n")
    sandbox.put(f"{stored}/key.txt", "needle\n")
    sandbox.put("open.txt", "needle\n")
    async with sandbox.client(profiles=("fs",)) as client:
        listed = await client.call_tool("fs_list_files", {"root": sandbox.path(".")})
    shown = str(data_of(listed))
    assert "open.txt" in shown and "key.txt" not in shown, shown


def test_a_deny_list_longer_than_the_limit_is_refused_at_once_naming_the_limit(local_sandbox: Sandbox) -> None:
    patterns = tuple(f"secret-{n}.txt" for n in range(200_000))
    with pytest.raises(ValueError, match=r"200000 deny patterns; give at most 1000"):
        local_sandbox.server(deny=patterns)


def test_deny_patterns_too_complex_to_match_together_are_refused_with_what_to_do(local_sandbox: Sandbox) -> None:
    patterns = tuple(f"dir{n}/**/sub*/x?y[abc]-{'q' * 30}*.pem" for n in range(1000))
    with pytest.raises(ValueError, match=r"1000 deny patterns are too many or too complex to match together"):
        local_sandbox.server(deny=patterns)
