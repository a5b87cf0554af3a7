"""undo takes back this session's newest change (or the one its id names), on every backend,
only where the files are still as the change left them; the log is bounded and says what it
dropped."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest
from conftest import Sandbox
from results import ok

from vfs_mcp import changes
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.ops.files import write
from vfs_mcp.ops.files.undo import undo
from vfs_mcp.profiles.results import error_of

pytestmark = pytest.mark.anyio


async def calls(box: Sandbox, *steps: tuple[str, dict[str, Any]], **settings: Any) -> list[Any]:
    async with box.client(**settings) as client:
        return [await client.call_tool(name, args) for name, args in steps]


async def test_undo_of_a_write_restores_the_bytes_and_the_mode(sandbox: Sandbox) -> None:
    sandbox.put("notes.txt", "version one\n")
    if sandbox.mount.capabilities.modes:
        os.chmod(sandbox.mount.fs_path("notes.txt"), 0o750)
    *_, undone = await calls(sandbox, ("write_file", {"path": "notes.txt", "content": "version two\n"}), ("undo", {}))
    assert ok(undone)["restored"] == [sandbox.path("notes.txt")]
    assert sandbox.get("notes.txt") == b"version one\n"
    if sandbox.mount.capabilities.modes:
        assert os.stat(sandbox.mount.fs_path("notes.txt")).st_mode & 0o777 == 0o750


async def test_big_writes_and_edits_report_the_hash_of_what_they_left_and_undo_takes_them_back(
    sandbox: Sandbox,
) -> None:
    # Over half a megabyte: the hash is made on another thread while the bytes are written.
    one = "".join(f"row {n}\n" for n in range(100_000))
    two = one.replace("row 500\n", "row five hundred\n")
    sandbox.put("big.txt", "before\n")
    written, edited, *undone = await calls(
        sandbox,
        ("write_file", {"path": "big.txt", "content": one}),
        ("edit_file", {"path": "big.txt", "edits": [{"oldText": "row 500\n", "newText": "row five hundred\n"}]}),
        ("undo", {}),
        ("undo", {}),
    )
    assert ok(written)["sha256"] == hashlib.sha256(one.encode()).hexdigest()
    assert ok(edited)["sha256"] == hashlib.sha256(two.encode()).hexdigest()
    assert [ok(result)["restored"] for result in undone] == [[sandbox.path("big.txt")]] * 2
    assert sandbox.get("big.txt") == b"before\n"


async def test_undo_of_an_edit_and_of_a_created_file(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "alpha\n")
    results = await calls(
        sandbox,
        ("edit_file", {"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}),
        ("write_file", {"path": "new.txt", "content": "fresh"}),
        ("undo", {}),
        ("undo", {}),
    )
    assert ok(results[2])["removed"] == [sandbox.path("new.txt")]
    assert ok(results[3])["tool"] == "edit_file"
    assert sandbox.get("a.txt") == b"alpha\n" and not sandbox.exists("new.txt")


async def test_one_undo_takes_back_a_whole_patch(sandbox: Sandbox) -> None:
    sandbox.put("one.txt", "1\n")
    sandbox.put("two.txt", "2\n")
    text = "*** Begin Patch\n*** Update File: one.txt\n-1\n+one\n*** Update File: two.txt\n-2\n+two\n"
    text += "*** Add File: three.txt\n+3\n*** End Patch\n"
    *_, undone = await calls(sandbox, ("apply_patch", {"patch": text}), ("undo", {}))
    assert ok(undone)["tool"] == "apply_patch"
    assert (sandbox.get("one.txt"), sandbox.get("two.txt"), sandbox.exists("three.txt")) == (b"1\n", b"2\n", False)


async def test_undo_of_a_delete_and_of_a_move_brings_the_files_back(sandbox: Sandbox) -> None:
    sandbox.put("gone.txt", "keep me")
    sandbox.put("from.txt", "moving")
    await calls(
        sandbox,
        ("delete_path", {"path": "gone.txt"}),
        ("move_file", {"source": "from.txt", "destination": "to.txt"}),
        ("undo", {}),
        ("undo", {}),
    )
    assert sandbox.get("gone.txt") == b"keep me" and sandbox.get("from.txt") == b"moving"
    assert not sandbox.exists("to.txt")


async def test_a_file_changed_by_someone_else_since_is_a_conflict_and_is_not_touched(sandbox: Sandbox) -> None:
    sandbox.put("shared.txt", "mine\n")
    async with sandbox.client() as client:
        await client.call_tool("write_file", {"path": "shared.txt", "content": "server wrote\n"})
        sandbox.put("shared.txt", "someone else wrote\n")
        result = await client.call_tool("undo", {})
    assert error_of(result)["code"] == "CONFLICT" and "changed since write_file wrote it" in result.content[0].text
    assert sandbox.get("shared.txt") == b"someone else wrote\n"


async def test_undo_of_one_path_skips_newer_changes_to_others(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "a1")
    sandbox.put("b.txt", "b1")
    *_, undone = await calls(
        sandbox,
        ("write_file", {"path": "a.txt", "content": "a2"}),
        ("write_file", {"path": "b.txt", "content": "b2"}),
        ("undo", {"path": "a.txt"}),
    )
    assert ok(undone)["restored"] == [sandbox.path("a.txt")]
    assert (sandbox.get("a.txt"), sandbox.get("b.txt")) == (b"a1", b"b2")


async def test_the_journal_limit_drops_the_oldest_and_says_so(sandbox: Sandbox) -> None:
    sandbox.put("f.txt", "0")
    steps = [("write_file", {"path": "f.txt", "content": str(n)}) for n in range(1, 5)]
    results = await calls(sandbox, *steps, ("undo", {}), ("undo", {}), ("undo", {}), undo_limit=2)
    assert "2 older ones were dropped" in results[4].content[0].text
    assert error_of(results[6])["code"] == "NOT_FOUND" and "2 older changes were dropped" in results[6].content[0].text
    assert "older change(s) can no longer be undone" in results[2].content[-1].text
    assert sandbox.get("f.txt") == b"2"


async def test_a_dry_run_shows_what_would_be_undone_and_changes_nothing(sandbox: Sandbox) -> None:
    sandbox.put("d.txt", "before")
    *_, preview, again = await calls(
        sandbox,
        ("write_file", {"path": "d.txt", "content": "after"}),
        ("undo", {"dry_run": True}),
        ("undo", {}),
    )
    assert "would undo write_file" in preview.content[0].text
    assert ok(again)["tool"] == "write_file" and sandbox.get("d.txt") == b"before"


def test_a_write_is_recorded_as_the_bytes_it_wrote_not_as_what_is_there_when_the_call_ends(
    sandbox: Sandbox,
) -> None:
    """A change made between the write and the end of the call is someone else's: undo must
    find the file differs from what the call left, so the step that takes the write back
    expects the written bytes' hash, taken when they were written, and not a read-back."""
    sandbox.put("a.txt", "before\n")
    vfs = sandbox.vfs()
    record = Recording("write_file")
    write.write_file(vfs.for_call(CallContext(recording=record)), "a.txt", "mine\n")
    sandbox.put("a.txt", "theirs\n")
    (change_id,) = record.changes
    (step,) = changes.log_of(vfs).load(change_id, lambda url: vfs.mounts[0]).steps
    assert isinstance(step, changes.Restore) and isinstance(step.image, changes.Stored)
    assert step.image.read() == b"before\n"
    assert step.expect.digest == hashlib.sha256(b"mine\n").hexdigest()


def test_a_file_written_then_deleted_in_one_call_comes_back_as_it_was_before_the_call(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "before\n")
    vfs = sandbox.vfs()
    record = Recording("both")
    call = vfs.for_call(CallContext(recording=record))
    write.write_file(call, "a.txt", "mine\n")
    write.delete_path(call, "a.txt")
    changelog = changes.log_of(vfs)
    deleted, written = (undo(vfs, changelog, None, change_id=change_id) for change_id in reversed(record.changes))
    assert deleted.restored == written.restored == [sandbox.path("a.txt")]
    assert sandbox.get("a.txt") == b"before\n"
