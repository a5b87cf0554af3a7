"""A patch changes the lines it removes and adds, and nothing else: context lines keep their
bytes (indent, tabs, line endings) however the hunk was found, renamed files keep their mode,
and a patch that fails part-way puts every file back with its mode."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
from conftest import Sandbox
from mcp import Client
from results import ok

from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.testing.faults import Fault, FaultyMount

pytestmark = pytest.mark.anyio


async def patch(box: Sandbox, text: str, **extra: Any) -> Any:
    async with box.client() as client:
        return await client.call_tool("apply_patch", {"patch": text, **extra})


def begin(*body: str) -> str:
    return "*** Begin Patch\n" + "".join(body) + "*** End Patch\n"


async def test_a_hunk_found_by_its_trimmed_text_keeps_the_indent_of_its_context_and_reindents_its_new_lines(
    sandbox: Sandbox,
) -> None:
    sandbox.put("code.py", "def f():\n    x = 1\n    return x\n")
    ok(await patch(sandbox, begin("*** Update File: code.py\n@@\n def f():\n-x = 1\n+x = 2\n return x\n")))
    assert sandbox.get("code.py") == b"def f():\n    x = 2\n    return x\n"


async def test_tabs_in_context_lines_stay_tabs(sandbox: Sandbox) -> None:
    sandbox.put("code.py", "def f():\n\tx = 1\n\treturn x\n")
    ok(await patch(sandbox, begin("*** Update File: code.py\n@@\n def f():\n-    x = 1\n+    x = 2\n     return x\n")))
    assert sandbox.get("code.py") == b"def f():\n\tx = 2\n\treturn x\n"


async def test_a_mixed_ending_file_keeps_each_lines_ending(sandbox: Sandbox) -> None:
    sandbox.put("mixed.txt", b"a\r\nb\nc\r\n")
    ok(await patch(sandbox, begin("*** Update File: mixed.txt\n@@\n a\n-b\n+B\n c\n")))
    assert sandbox.get("mixed.txt") == b"a\r\nB\nc\r\n"


async def test_a_unified_hunk_on_a_crlf_file_keeps_crlf_and_the_final_line_without_newline(sandbox: Sandbox) -> None:
    sandbox.put("w.txt", b"one\r\ntwo\r\nthree")
    text = "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n\\ No newline at end of file\n"
    ok(await patch(sandbox, text))
    assert sandbox.get("w.txt") == b"one\r\nTWO\r\nthree"


async def test_an_added_line_replacing_its_removed_line_takes_that_lines_indent(sandbox: Sandbox) -> None:
    sandbox.put("code.py", "if a:\n    b = 1\n\tc = 2\n")
    ok(await patch(sandbox, begin("*** Update File: code.py\n@@\n if a:\n  b = 1\n- c = 2\n+ c = 3\n")))
    assert sandbox.get("code.py") == b"if a:\n    b = 1\n\tc = 3\n"


async def test_a_hunk_whose_indentation_cannot_be_mapped_is_refused_and_changes_nothing(sandbox: Sandbox) -> None:
    # The added line steps back out to the patch's depth "none", which the file indents two
    # ways (two spaces, a tab): its indent would be a guess.
    sandbox.put("code.py", "  a = 1\n\tb = 2\n    c = 3\n")
    result = await patch(sandbox, begin("*** Update File: code.py\n@@\n a = 1\n b = 2\n-    c = 3\n+c = 4\n"))
    assert error_of(result)["code"] == "CONFLICT" and "indentation" in result.content[0].text
    assert sandbox.get("code.py") == b"  a = 1\n\tb = 2\n    c = 3\n"


@pytest.mark.parametrize(
    "text",
    [
        begin("*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo old\n+echo new\n"),
        "diff --git a/run.sh b/bin/run.sh\n--- a/run.sh\n+++ b/bin/run.sh\n@@ -1 +1 @@\n-echo old\n+echo new\n",
    ],
    ids=["openai-move", "unified-rename"],
)
async def test_a_renaming_patch_keeps_the_mode(local_sandbox: Sandbox, text: str) -> None:
    local_sandbox.put("run.sh", "echo old\n")
    os.chmod(local_sandbox.mount.fs_path("run.sh"), 0o750)
    ok(await patch(local_sandbox, text))
    assert local_sandbox.get("bin/run.sh") == b"echo new\n" and not local_sandbox.exists("run.sh")
    assert os.stat(local_sandbox.mount.fs_path("bin/run.sh")).st_mode & 0o777 == 0o750


async def test_a_patch_that_fails_at_write_time_puts_deleted_and_moved_files_back_with_their_modes(
    sandbox: Sandbox,
) -> None:
    box = sandbox
    box.put("gone.sh", "echo gone\n")
    box.put("move.sh", "echo move\n")
    modes = box.mount.capabilities.modes
    if modes:
        for name in ("gone.sh", "move.sh"):
            os.chmod(box.mount.fs_path(name), 0o750)
    text = begin(
        "*** Delete File: gone.sh\n",
        "*** Update File: move.sh\n*** Move to: moved.sh\n@@\n-echo move\n+echo moved\n",
        "*** Add File: full/new.txt\n+new\n",
    )
    # The disk fills on the last file only, after the others were written.
    faulty = dataclasses.replace(box.mount, backend=FaultyMount(box.mount.backend, [Fault.on("write", "full/**", 28)]))
    async with Client(build_server([faulty], Settings())) as client:
        result = await client.call_tool("apply_patch", {"patch": text})
    assert error_of(result) is not None
    assert not box.exists("moved.sh") and not box.exists("full/new.txt")
    for name, content in (("gone.sh", b"echo gone\n"), ("move.sh", b"echo move\n")):
        assert box.get(name) == content
        if modes:
            assert os.stat(box.mount.fs_path(name)).st_mode & 0o777 == 0o750


async def test_a_hunk_placed_before_a_context_free_insertion_is_refused_not_applied_twice(sandbox: Sandbox) -> None:
    # A -U0 insertion after line 2, then a hunk on lines 1-2: out of order. Placed anyway, the
    # file's first lines were copied twice ("a b X a B c").
    sandbox.put("f.txt", "a\nb\nc\n")
    result = await patch(sandbox, "--- a/f.txt\n+++ b/f.txt\n@@ -2,0 +3 @@\n+X\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n")
    assert error_of(result)["code"] == "CONFLICT" and "hunk 2 does not match" in result.content[0].text
    assert sandbox.get("f.txt") == b"a\nb\nc\n"


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
async def test_a_hunk_is_cut_where_its_lines_stand_whole_not_where_its_text_first_shows(
    sandbox: Sandbox, ending: str
) -> None:
    # "bar\nbaz" first shows inside "xbar", and the anchored hunk's lines stand above its anchor too.
    lines = ["foo", "xbar", "baz", "bar", "baz", "bar", "qux", "def g():", "bar", "qux", "end"]
    sandbox.put("t.txt", ending.join(lines) + ending)
    unified = "--- a/t.txt\n+++ b/t.txt\n@@ -4,2 +4,2 @@\n bar\n-baz\n+BAZ\n"
    anchored = begin("*** Update File: t.txt\n@@ def g():\n bar\n-qux\n+QUX\n")

    ok(await patch(sandbox, unified))
    ok(await patch(sandbox, anchored))

    expected = ["foo", "xbar", "baz", "bar", "BAZ", "bar", "qux", "def g():", "bar", "QUX", "end"]
    assert sandbox.get("t.txt") == (ending.join(expected) + ending).encode()
