"""Contract tests for compare_files (SPEC §4 "Analytics"; the default profile's original, §6.16).

A unified diff as text; with format="json" the hunks and added/removed counts, which must
describe the same changes the text diff shows. The two files may live on different mounts.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import ScopedSandbox

from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio


# One mount per backend for the whole module, one folder per test inside it: creating an
# S3 bucket on moto costs about a second, and building a server tens of milliseconds.
@pytest.fixture
def sandbox(scoped_sandbox: ScopedSandbox) -> ScopedSandbox:
    """A folder of its own in a mount and server shared by this module: fast on s3."""
    return scoped_sandbox


HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


async def compare(sandbox: Any, file1: str, file2: str, **args: Any) -> Any:
    async with sandbox.client() as client:
        return await client.call_tool("compare_files", {"file1": file1, "file2": file2, **args})


def succeeded(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    structured: dict[str, Any] = data_of(result)
    return structured


def failed_with(result: Any, code: str) -> None:
    assert result.is_error, f"expected {code}, got success: {result.content[0].text}"
    text = result.content[0].text
    assert error_of(result), f"expected {code}, got an error without a code: {text!r}"
    assert error_of(result)["code"] == code, text
    assert text.startswith(f"{code}: ")


def changed_lines(diff: str) -> tuple[int, int]:
    """(added, removed) lines of a unified diff, headers aside."""
    lines = diff.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++ "))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("--- "))
    return added, removed


def headers(diff: str) -> list[tuple[int, int, int, int]]:
    return [
        (int(a), int(b) if b is not None else 1, int(c), int(d) if d is not None else 1)
        for a, b, c, d in HUNK_HEADER.findall(diff)
        for b, d in [(b or None, d or None)]
    ]


async def test_text_format_is_a_unified_diff_naming_both_files(sandbox):
    sandbox.put("a.txt", "one\ntwo\nthree\n")
    sandbox.put("b.txt", "one\n2\nthree\nfour\n")
    result = await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"))
    body = succeeded(result)
    assert result.content[0].text == (
        f"--- {sandbox.path('a.txt')}\n+++ {sandbox.path('b.txt')}\n@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n"
    )
    assert body["diff"] == result.content[0].text
    assert (body["file1"], body["file2"]) == (sandbox.path("a.txt"), sandbox.path("b.txt"))
    assert (body["identical"], body["added"], body["removed"]) == (False, 2, 1)


async def test_json_format_gives_hunks_and_added_and_removed_counts(sandbox):
    sandbox.put("a.txt", "one\ntwo\nthree\n")
    sandbox.put("b.txt", "one\n2\nthree\nfour\n")
    result = await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"), format="json")
    body = succeeded(result)
    assert json.loads(result.content[0].text) == body
    assert body["identical"] is False
    assert (body["added"], body["removed"]) == (2, 1)
    assert body["hunks"] == [
        {
            "old_start": 1,
            "old_lines": 3,
            "new_start": 1,
            "new_lines": 4,
            "lines": [" one", "-two", "+2", " three", "+four"],
        }
    ]


async def test_distant_changes_make_separate_hunks_that_match_the_text_diff(sandbox):
    old = [f"line {i}" for i in range(1, 41)]
    new = list(old)
    new[2] = "changed 3"
    del new[14]  # line 15
    new.insert(34, "inserted")  # after line 35
    sandbox.put("a.txt", "\n".join(old) + "\n")
    sandbox.put("b.txt", "\n".join(new) + "\n")
    body = succeeded(await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"), format="json"))
    assert len(body["hunks"]) == 3
    assert [(h["old_start"], h["old_lines"], h["new_start"], h["new_lines"]) for h in body["hunks"]] == headers(
        body["diff"]
    )
    assert (body["added"], body["removed"]) == changed_lines(body["diff"]) == (2, 2)
    assert body["hunks"][0]["lines"] == [" line 1", " line 2", "-line 3", "+changed 3", " line 4", " line 5", " line 6"]


async def test_identical_files_are_reported_identical_with_no_hunks(sandbox):
    sandbox.put("a.txt", "same\ncontent\n")
    sandbox.put("b.txt", "same\ncontent\n")
    text_result = await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"))
    body = succeeded(text_result)
    assert (body["identical"], body["added"], body["removed"], body["hunks"], body["diff"]) == (True, 0, 0, [], "")
    assert "identical" in text_result.content[0].text
    json_result = await compare(sandbox, sandbox.path("a.txt"), sandbox.path("a.txt"), format="json")
    assert json.loads(json_result.content[0].text)["identical"] is True


async def test_files_on_two_different_mounts_can_be_compared(sandbox):
    name = f"second-{sandbox.prefix}"
    second = open_mount(MountSpec(f"memory://{name}", options={"files": {"b.txt": "alpha\nBETA\n"}}))
    sandbox.extra_mounts.append(second)
    sandbox.put("a.txt", "alpha\nbeta\n")
    result = await compare(sandbox, sandbox.path("a.txt"), f"memory://{name}/b.txt", format="json")
    body = succeeded(result)
    assert (body["file1"], body["file2"]) == (sandbox.path("a.txt"), f"memory://{name}/b.txt")
    assert (body["identical"], body["added"], body["removed"]) == (False, 1, 1)
    assert body["diff"].startswith(f"--- {sandbox.path('a.txt')}\n+++ memory://{name}/b.txt\n")
    assert body["hunks"][0]["lines"] == [" alpha", "-beta", "+BETA"]


async def test_comparing_with_an_empty_file_counts_every_line(sandbox):
    sandbox.put("empty.txt", b"")
    sandbox.put("b.txt", "x\ny\nz\n")
    body = succeeded(await compare(sandbox, sandbox.path("empty.txt"), sandbox.path("b.txt"), format="json"))
    assert (body["identical"], body["added"], body["removed"]) == (False, 3, 0)
    assert body["hunks"][0]["lines"] == ["+x", "+y", "+z"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (b"a\nb", b"a\nb\n"),
        (b"a\nb\n", b"a\nc"),
        (b"keep\n", b"keep\nmore\n"),
    ],
    ids=["final-newline-added", "last-line-changed-and-newline-dropped", "line-appended"],
)
async def test_json_hunks_and_counts_describe_the_same_changes_as_the_text_diff(sandbox, first, second):
    sandbox.put("a.txt", first)
    sandbox.put("b.txt", second)
    body = succeeded(await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"), format="json"))
    assert body["identical"] is False
    assert body["hunks"], "the text diff has a hunk but the json has none"
    assert (body["added"], body["removed"]) == changed_lines(body["diff"])
    assert [(h["old_start"], h["old_lines"], h["new_start"], h["new_lines"]) for h in body["hunks"]] == headers(
        body["diff"]
    )


async def test_files_that_differ_only_in_line_endings_are_not_identical(sandbox):
    sandbox.put("crlf.txt", b"one\r\ntwo\r\n")
    sandbox.put("lf.txt", b"one\ntwo\n")
    result = await compare(sandbox, sandbox.path("crlf.txt"), sandbox.path("lf.txt"))
    body = succeeded(result)
    assert body["identical"] is False
    assert "identical" not in result.content[0].text


async def test_crlf_files_are_compared_line_by_line(sandbox):
    sandbox.put("a.txt", b"one\r\ntwo\r\nthree\r\n")
    sandbox.put("b.txt", b"one\r\n2\r\nthree\r\n")
    body = succeeded(await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"), format="json"))
    assert (body["added"], body["removed"]) == (1, 1)
    assert [line.rstrip("\r") for line in body["hunks"][0]["lines"]] == [" one", "-two", "+2", " three"]


@pytest.mark.parametrize("separator", ["\x0c", "\u2028", "\r"], ids=["form-feed", "u2028", "lone-cr"])
async def test_only_newlines_end_lines_in_hunks_and_diff(sandbox, separator):
    """A form feed (Emacs page break), U+2028 or a lone CR is part of its line, as in git diff."""
    sandbox.put("a.txt", f"x\ny\nform{separator}feed\nz\nf\n".encode())
    sandbox.put("b.txt", f"x\ny\nform{separator}feed\nz\nF\n".encode())
    body = succeeded(await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"), format="json"))
    assert body["hunks"] == [
        {
            "old_start": 2,
            "old_lines": 4,
            "new_start": 2,
            "new_lines": 4,
            "lines": [" y", f" form{separator}feed", " z", "-f", "+F"],
        }
    ]
    assert "No newline at end of file" not in body["diff"]
    assert "@@ -2,4 +2,4 @@\n" in body["diff"]


async def test_compare_decodes_the_given_encoding(sandbox):
    sandbox.put("a.txt", "café\n".encode("latin-1"))
    sandbox.put("b.txt", "thé\n".encode("latin-1"))
    result = await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.txt"), encoding="latin-1")
    succeeded(result)
    assert "-café\n+thé\n" in result.content[0].text


async def test_comparing_a_missing_file_is_not_found(sandbox):
    sandbox.put("a.txt", "x\n")
    failed_with(await compare(sandbox, sandbox.path("a.txt"), sandbox.path("nope.txt")), "NOT_FOUND")


async def test_comparing_a_binary_file_is_binary_content(sandbox):
    sandbox.put("a.txt", "x\n")
    sandbox.put("b.bin", b"\x00\x01\x02")
    failed_with(await compare(sandbox, sandbox.path("a.txt"), sandbox.path("b.bin")), "BINARY_CONTENT")
