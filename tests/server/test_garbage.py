"""A call leaves no reference cycle that holds a file's bytes, whether it changed the file or failed.

The server collects young garbage only every ``GC_FIRST_GENERATION`` (20,000) new objects, so a
cycle freed by the collector alone outlives many calls: one that held a 1 MB file's old bytes
after each edit grew a server by 1 MB a call (600 MB after 600 edits), and each edit's new
buffers landed on fresh pages (0.5 ms a MB here); one that held a failed edit's frames kept its
file and lines (3 MB a call). A file's bytes must go when their last reference does.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest
from mcp import Client

from tests.conftest import Sandbox
from vfs_mcp import build_server
from vfs_mcp.changes import log_of
from vfs_mcp.changes.state.records import Record, encode
from vfs_mcp.changes.steps import Expect, FileImage, Restore
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.edits.patch import apply_patch
from vfs_mcp.ops.edits.replace import TextEdit, edit_file
from vfs_mcp.ops.files.write import write_file

BIG = 256 * 1024
"""Bytes from which a cycle's contents count as a file's (no object of the path is near it)."""


@pytest.fixture
def collected() -> Iterator[Callable[[], list[int]]]:
    """Sizes of the big texts and bytes that only the cycle collector would have freed since the fixture began."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)

    def big_bytes_in_cycles() -> list[int]:
        gc.collect()
        held = [
            len(inner)
            for container in gc.garbage
            for inner in gc.get_referents(container)
            if isinstance(inner, bytes | bytearray | str) and len(inner) >= BIG
        ]
        gc.garbage.clear()
        return held

    try:
        yield big_bytes_in_cycles
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def big_text(line: str = "retries = 3") -> str:
    return "".join(f"{n:08d} a log line of the file\n" for n in range(BIG // 16)) + line + "\n"


def as_a_call(vfs: JailedFS, change: Callable[[JailedFS], object]) -> None:
    """``change`` made as a tool call makes it: recorded, then kept for undo."""
    record = Recording("a tool")
    change(vfs.for_call(CallContext(recording=record)))
    changelog = log_of(vfs)
    changelog.sessions.keep(record, changelog.sessions.sessionless)


def test_an_encoded_record_is_freed_with_its_last_reference(
    local_sandbox: Sandbox, collected: Callable[[], list[int]]
) -> None:
    image = FileImage(b"x" * (2 * BIG))
    record = Record("an-id", "me", "edit_file", 0.0, [Restore(local_sandbox.vfs().resolve("a"), image, Expect("file"))])
    encode(record)
    del record, image
    assert collected() == []


def test_an_edit_of_a_big_file_leaves_no_cycle_holding_its_bytes(
    local_sandbox: Sandbox, collected: Callable[[], list[int]]
) -> None:
    local_sandbox.put("big.txt", big_text())
    vfs = local_sandbox.vfs()
    as_a_call(vfs, lambda call: edit_file(call, "big.txt", [TextEdit(old_text="retries = 3", new_text="retries = 5")]))
    assert collected() == []


# Not on S3 here: its moto server runs in the test's process, and werkzeug's requests hold a body in cycles.
@pytest.mark.parametrize("sandbox", ["memory", "local"], indirect=True)
def test_a_write_and_a_patch_of_a_big_file_leave_no_cycle_holding_its_bytes(
    sandbox: Sandbox, collected: Callable[[], list[int]]
) -> None:
    sandbox.put("big.txt", big_text())
    vfs = sandbox.vfs()
    as_a_call(vfs, lambda call: write_file(call, "big.txt", big_text("retries = 4")))
    last = big_text().count("\n")
    patch = f"--- a/big.txt\n+++ b/big.txt\n@@ -{last} +{last} @@\n-retries = 4\n+retries = 5\n"
    as_a_call(vfs, lambda call: apply_patch(call, patch))
    assert sandbox.get("big.txt").endswith(b"retries = 5\n")
    assert collected() == []


@pytest.mark.anyio
async def test_a_failed_edit_of_a_big_file_leaves_no_cycle_holding_it(
    local_sandbox: Sandbox, collected: Callable[[], list[int]]
) -> None:
    local_sandbox.put("big.txt", big_text())
    async with Client(build_server([local_sandbox.mount])) as client:
        edit = {"oldText": "retries = 3, not in the file", "newText": "x"}
        result = await client.call_tool("edit_file", {"path": "big.txt", "edits": [edit]})
        assert result.is_error
        assert collected() == []
