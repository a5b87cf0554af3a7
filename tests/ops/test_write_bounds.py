"""Every writing tool's cost is bounded by its input and its limits: patches placed in linear
time (or refused as too costly), their size, their files and their replies bounded as the other
writing tools' are; a lock another program holds is waited for a bounded time; a deep new path
on an object store is not one request a level; the undo log is one budget for the server."""

from __future__ import annotations

import collections
import dataclasses
import fcntl
import os
from typing import Any

import anyio
import pytest
from conftest import Sandbox
from mcp import Client
from results import ok

from vfs_mcp.changes import FileImage, Restore, log
from vfs_mcp.changes.kept import SessionJournal
from vfs_mcp.changes.state import ObjectState
from vfs_mcp.jail.context import Recording
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.edits import hunk_placing
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.testing.faults import FaultyMount
from vfs_mcp_backends import folder_locks

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Cost:
    """What a call cost, counted: the line comparisons its patch's hunks took to place, and its
    calls to the store by operation (no clock: a busy machine cannot fail these, a runaway can)."""

    comparisons: int = 0
    store: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)


async def call(box: Sandbox, tool: str, args: dict[str, Any], **settings: Any) -> tuple[Any, Cost]:
    budgets: list[hunk_placing.Comparisons] = []

    class Counted(hunk_placing.Comparisons):
        def __post_init__(self) -> None:
            budgets.append(self)

    counted = FaultyMount(box.mount.backend, [])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hunk_placing, "Comparisons", Counted)
        mounts = [dataclasses.replace(box.mount, backend=counted), *box.extra_mounts]
        async with Client(build_server(mounts, Settings(**settings))) as client:
            with anyio.fail_after(HANG):
                result = await client.call_tool(tool, args)
    spent = sum(hunk_placing.PLACING_BUDGET - budget.left for budget in budgets)
    return result, Cost(spent, collections.Counter(counted.calls))


HANG = 300
"""Seconds after which a call is taken to hang (a guard, never a measure: the bounds are counts)."""


def openai(*body: str) -> str:
    return "*** Begin Patch\n" + "".join(body) + "*** End Patch\n"


async def test_a_hundred_thousand_one_line_hunks_on_a_hundred_thousand_line_file_apply_in_linear_time(
    local_sandbox: Sandbox,
) -> None:
    lines = 100_000
    local_sandbox.put("big.txt", "".join(f"line {n}\n" for n in range(lines)))
    hunks = "".join(f"@@\n-line {n}\n+LINE {n}\n" for n in range(lines))
    result, cost = await call(local_sandbox, "apply_patch", {"patch": openai("*** Update File: big.txt\n", hunks)})
    ok(result)
    assert cost.comparisons <= 2 * lines, cost  # one (or two) a hunk: linear, not a scan of the file a hunk
    assert local_sandbox.get("big.txt") == "".join(f"LINE {n}\n" for n in range(lines)).encode()


async def test_a_hunk_of_a_million_context_lines_in_a_file_of_identical_lines_is_refused_quickly(
    local_sandbox: Sandbox,
) -> None:
    local_sandbox.put("same.txt", "x\n" * 2_000_000)
    patch = openai("*** Update File: same.txt\n@@\n", " x\n" * 1_000_000, "-x\n+y\n")
    result, cost = await call(local_sandbox, "apply_patch", {"patch": patch})
    assert error_of(result)["code"] in ("CONFLICT", "INVALID_ARGUMENT"), result.content[0].text
    assert cost.comparisons <= hunk_placing.PLACING_BUDGET + 1_000_001, cost  # refused once over its budget
    assert local_sandbox.get("same.txt") == b"x\n" * 2_000_000


async def test_a_small_patch_changing_the_first_and_last_line_of_a_file_of_identical_lines_answers_quickly(
    local_sandbox: Sandbox,
) -> None:
    local_sandbox.put("same.txt", "first\n" + "x\n" * 40_000 + "last\n")
    patch = openai("*** Update File: same.txt\n@@\n-first\n+FIRST\n@@\n-last\n+LAST\n")
    assert len(patch) < 100
    result, cost = await call(local_sandbox, "apply_patch", {"patch": patch})
    ok(result)
    assert cost.comparisons <= 4, cost  # each hunk's one line is found by its rarity, not by a scan
    assert len(result.content[0].text) < 2_000
    assert local_sandbox.get("same.txt") == b"FIRST\n" + b"x\n" * 40_000 + b"LAST\n"


async def test_a_patch_larger_than_one_write_may_be_is_too_large(sandbox: Sandbox) -> None:
    body = "+" + "y" * 1023 + "\n"
    patch = openai("*** Add File: huge.txt\n", body * (17 * 1024))
    result, _ = await call(sandbox, "apply_patch", {"patch": patch})
    assert error_of(result)["code"] == "TOO_LARGE"
    assert not sandbox.exists("huge.txt")


async def test_an_added_file_of_millions_of_empty_lines_counts_against_the_write_limit(sandbox: Sandbox) -> None:
    patch = openai("*** Add File: empty-lines.txt\n", "+\n" * 3_000_000)
    result, _ = await call(sandbox, "apply_patch", {"patch": patch}, max_write_bytes=1024 * 1024)
    assert error_of(result)["code"] == "TOO_LARGE"
    assert not sandbox.exists("empty-lines.txt")


async def test_a_dry_run_deleting_a_big_file_answers_within_the_read_cap(local_sandbox: Sandbox) -> None:
    local_sandbox.put("big.log", "".join(f"log line {n:08d}\n" for n in range(1_500_000)))  # 27 MiB
    patch = openai("*** Delete File: big.log\n")
    result, _ = await call(local_sandbox, "apply_patch", {"patch": patch, "dry_run": True}, max_read_bytes=1 << 20)
    text = "".join(block.text for block in result.content)
    assert len(text) < 2 * (1 << 20), len(text)
    assert "diff cut at" in text and local_sandbox.exists("big.log")


async def test_a_lock_another_program_holds_is_waited_for_a_bounded_time_then_conflict_naming_it(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folder_locks, "LOCK_WAIT", 0.5)
    local_sandbox.put("busy/a.txt", "before\n")
    held = os.open(local_sandbox.mount.fs_path("busy"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # another program's lock on the folder
        result, _ = await call(local_sandbox, "write_file", {"path": "busy/a.txt", "content": "after\n"})
    finally:
        os.close(held)
    assert error_of(result)["code"] == "CONFLICT" and "busy" in result.content[0].text
    assert "lock" in result.content[0].text  # answered, not waiting on: ``call`` fails a hang
    assert local_sandbox.get("busy/a.txt") == b"before\n"


@pytest.mark.parametrize("tool", ["apply_patch", "copy_file", "write_file"])
async def test_a_file_five_hundred_folders_deep_is_written_without_a_request_or_a_walk_a_level(
    sandbox: Sandbox, tool: str
) -> None:
    deep = "/".join(["d"] * 500) + "/f.txt"
    sandbox.put("src.txt", "x\n")
    args = {
        "apply_patch": {"patch": openai(f"*** Add File: {deep}\n+x\n")},
        "copy_file": {"source": "src.txt", "destination": deep},
        "write_file": {"path": deep, "content": "x\n", "create_dirs": True},
    }[tool]
    result, cost = await call(sandbox, tool, args)
    ok(result)
    looks = sum(count for op, count in cost.store.items() if op != "write")
    assert looks < 50, cost  # no look (a stat, a listing, a request) a level: 500 of them
    folders = 0 if sandbox.kind == "s3" else 500  # where folders exist, one made a level; none on S3
    assert cost.store["write"] <= folders + 2, cost
    assert sandbox.get(deep) == b"x\n"


@pytest.mark.parametrize("tool", ["apply_patch", "copy_file", "write_file"])
async def test_a_path_two_thousand_folders_deep_is_refused_at_once(sandbox: Sandbox, tool: str) -> None:
    deep = "/".join(["d"] * 2000) + "/f.txt"
    sandbox.put("src.txt", "x\n")
    args = {
        "apply_patch": {"patch": openai(f"*** Add File: {deep}\n+x\n")},
        "copy_file": {"source": "src.txt", "destination": deep},
        "write_file": {"path": deep, "content": "x\n", "create_dirs": True},
    }[tool]
    result, cost = await call(sandbox, tool, args)
    assert error_of(result)["code"] == "INVALID_ARGUMENT" and "512" in result.content[0].text
    assert cost.store["write"] == 0 and len(result.content[0].text) < 200, cost


def test_the_undo_budget_is_one_for_the_whole_log_and_lets_the_oldest_go_first(sandbox: Sandbox) -> None:
    changelog = log.ChangeLog(ObjectState("memory://budget-test"), budget=100)
    first, second = SessionJournal(), SessionJournal()
    mount = sandbox.vfs().mounts[0]

    def change(size: int, journal: SessionJournal) -> None:
        record, change_id = Recording("write_file"), log.new_id()
        steps = [Restore(Target(mount, "f.txt"), FileImage(b"x" * size))]
        record.made(change_id, changelog.atomic("write_file", steps, None, change_id=change_id))
        changelog.sessions.keep(record, journal)

    change(60, first)
    change(30, second)
    change(30, second)  # 120 > 100: the oldest of any session goes
    changelog.settle()  # once the change's call has answered
    assert (len(first.changes), first.dropped, first.unnoted_drops(), first.unnoted_drops()) == (0, 1, 1, 0)
    assert changelog.timeline.extent() == (2, 60) and len(second.changes) == 2
    assert len(changelog.store.listing("changes")) == 2  # the dropped record left the store


async def test_a_change_larger_than_the_undo_journal_says_it_cannot_be_undone(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "x" * 4096)
    result, _ = await call(sandbox, "write_file", {"path": "a.txt", "content": "y"}, undo_bytes=1024)
    ok(result)
    assert "cannot be undone" in "".join(block.text for block in result.content)
