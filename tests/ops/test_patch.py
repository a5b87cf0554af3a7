"""apply_patch on every backend: both formats give the same files; a patch lands whole or
not at all; hunks are found by their text; every path is jailed."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Sandbox

from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio

FILES = {
    "src/app.py": "import os\n\n\ndef main():\n    print('hello')\n    return 0\n",
    "src/util.py": "def add(a, b):\n    return a + b\n",
    "README.md": "# App\n\nRun it.\n",
}

UNIFIED = """diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -3,4 +3,4 @@
·
 def main():
-    print('hello')
+    print('hello, world')
     return 0
--- a/src/util.py
+++ b/src/util.py
@@ -1,2 +1,3 @@
 def add(a, b):
     return a + b
+
--- a/README.md
+++ b/README.md
@@ -1,3 +1,3 @@
 # App
·
-Run it.
+Run it with python.
""".replace("·", " ")  # a blank context line is one space

OPENAI = """*** Begin Patch
*** Update File: src/app.py
@@ def main():
-    print('hello')
+    print('hello, world')
     return 0
*** Update File: src/util.py
 def add(a, b):
     return a + b
+
*** Update File: README.md
 # App
·
-Run it.
+Run it with python.
*** End Patch
""".replace("·", " ")

PATCHED = {
    "src/app.py": "import os\n\n\ndef main():\n    print('hello, world')\n    return 0\n",
    "src/util.py": "def add(a, b):\n    return a + b\n\n",
    "README.md": "# App\n\nRun it with python.\n",
}


def seed(box: Sandbox, files: dict[str, str] = FILES) -> None:
    for rel, text in files.items():
        box.put(rel, text)


def contents(box: Sandbox, names: list[str]) -> dict[str, Any]:
    return {name: box.get(name).decode() if box.exists(name) else None for name in names}


async def patch(box: Sandbox, text: str, **extra: Any) -> Any:
    async with box.client() as client:
        return await client.call_tool("apply_patch", {"patch": text, **extra})


@pytest.mark.parametrize("form", ["unified", "openai"])
async def test_a_three_file_patch_in_either_format_gives_the_same_files(sandbox: Sandbox, form: str) -> None:
    seed(sandbox)
    result = await patch(sandbox, UNIFIED if form == "unified" else OPENAI)
    assert error_of(result) is None, result.content[0].text
    assert contents(sandbox, list(PATCHED)) == PATCHED
    counts = {f["path"].rsplit("/", 1)[-1]: (f["added"], f["removed"]) for f in data_of(result)["files"]}
    assert counts == {"app.py": (1, 1), "util.py": (1, 0), "README.md": (1, 1)}
    assert "applied to 3 files" in result.content[0].text


async def test_a_patch_whose_third_file_does_not_match_changes_nothing(sandbox: Sandbox) -> None:
    seed(sandbox)
    broken = UNIFIED.replace("-Run it.", "-Run it slowly.")
    result = await patch(sandbox, broken)
    assert error_of(result)["code"] == "CONFLICT" and "hunk 1 does not match" in result.content[0].text
    assert contents(sandbox, list(FILES)) == FILES


async def test_add_delete_and_move_inside_one_patch(sandbox: Sandbox) -> None:
    seed(sandbox)
    text = """*** Begin Patch
*** Add File: docs/new.md
+# New
+text
*** Delete File: README.md
*** Update File: src/util.py
*** Move to: lib/util.py
 def add(a, b):
-    return a + b
+    return b + a
*** End Patch
"""
    result = await patch(sandbox, text)
    assert error_of(result) is None, result.content[0].text
    assert contents(sandbox, ["docs/new.md", "README.md", "src/util.py", "lib/util.py"]) == {
        "docs/new.md": "# New\ntext\n",
        "README.md": None,
        "src/util.py": None,
        "lib/util.py": "def add(a, b):\n    return b + a\n",
    }


async def test_a_context_that_matches_twice_is_a_conflict_naming_both_places(sandbox: Sandbox) -> None:
    sandbox.put("twice.txt", "x = 1\ny = 2\nx = 1\ny = 2\n")
    result = await patch(sandbox, "--- a/twice.txt\n+++ b/twice.txt\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n")
    assert error_of(result)["code"] == "CONFLICT"
    assert "matches at lines 1 and 3" in result.content[0].text
    assert sandbox.get("twice.txt") == b"x = 1\ny = 2\nx = 1\ny = 2\n"


async def test_a_path_outside_the_mount_anywhere_refuses_the_whole_patch(sandbox: Sandbox) -> None:
    seed(sandbox)
    evil = UNIFIED + "--- a/../outside/secret.txt\n+++ b/../outside/secret.txt\n@@ -1 +1 @@\n-a\n+b\n"
    result = await patch(sandbox, evil)
    assert error_of(result)["code"] == "ACCESS_DENIED"
    assert contents(sandbox, list(FILES)) == FILES


async def test_whitespace_differences_in_context_are_tolerated_and_crlf_is_kept(sandbox: Sandbox) -> None:
    # Found with whitespace ignored: the added line takes the indent of the line it replaces.
    sandbox.put("win.txt", "alpha\r\n  beta\r\ngamma\r\n")
    result = await patch(sandbox, "--- a/win.txt\n+++ b/win.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n")
    assert error_of(result) is None, result.content[0].text
    assert sandbox.get("win.txt") == b"alpha\r\n  BETA\r\ngamma\r\n"


async def test_a_dry_run_shows_the_diff_and_writes_nothing(sandbox: Sandbox) -> None:
    seed(sandbox)
    result = await patch(sandbox, UNIFIED, dry_run=True)
    assert "+Run it with python." in result.content[0].text and "dry run" in result.content[0].text
    assert contents(sandbox, list(FILES)) == FILES


async def test_a_failing_write_on_the_second_file_puts_the_first_back(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills on the second file: the store raises ENOSPC, as a full disk would."""
    seed(sandbox)
    calls: list[str] = []

    def full_on_second(real: Any) -> Any:
        def write(path: str, *args: Any, **kw: Any) -> Any:
            calls.append(path)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            return real(path, *args, **kw)

        return write

    # Updates of read files are conditional puts where the store has them (which put through pipe_file).
    if sandbox.mount.capabilities.conditional_writes:
        monkeypatch.setattr(sandbox.mount.backend, "put_if", full_on_second(sandbox.mount.backend.put_if))
    else:
        monkeypatch.setattr(sandbox.mount.fs, "pipe_file", full_on_second(sandbox.mount.fs.pipe_file))
    result = await patch(sandbox, UNIFIED)
    monkeypatch.undo()
    assert error_of(result) is not None
    assert "nothing was changed (every file is as it was)" in result.content[0].text
    assert contents(sandbox, list(FILES)) == FILES
