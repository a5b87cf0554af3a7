"""Checkpoints and history: a named point of the timeline that an undo "and after" brings every
mount it covers back to (all or nothing, previewed by a dry run), and the timeline as lines and
data — newest first, with each change's relation to the others, filtered by path, paged."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import pytest
from conftest import Sandbox
from mcp import Client
from results import assert_error, changed, ok, text_of

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState, ObjectState, housekeeping, records
from vfs_mcp.changes.state.timeline import TRIM_LAG, Retention, Timeline, TimelineEntry
from vfs_mcp.changes.steps import Expect, FileImage, Restore
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.jail.entries import sha256
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.ops.edits.replace import TextEdit, edit_file
from vfs_mcp.ops.files.history import history
from vfs_mcp.ops.files.undo import undo
from vfs_mcp.profiles.results import META_RESULT
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

SEED = {"a.txt": b"a1\n", "src/b.txt": b"b1\n", "old.txt": b"old\n"}
REFACTOR = [
    ("edit_file", {"path": "a.txt", "edits": [{"oldText": "a1", "newText": "a2"}]}),
    ("move_file", {"source": "old.txt", "destination": "src/old.txt"}),
    ("write_file", {"path": "src/new.txt", "content": "new\n"}),
    ("delete_path", {"path": "src/b.txt"}),
]


def seeded(box: Sandbox) -> None:
    for rel, data in SEED.items():
        box.put(rel, data)


async def test_a_restore_to_a_checkpoints_name_brings_the_mount_back_and_its_undo_brings_the_work_back(
    sandbox: Sandbox,
) -> None:
    seeded(sandbox)
    async with sandbox.client() as client:
        point = await client.call_tool("checkpoint", {"name": "before-refactor"})
        for name, arguments in REFACTOR:
            changed(await client.call_tool(name, arguments))
        after = sandbox.snapshot(text=False)
        preview = ok(
            await client.call_tool("undo", {"change_id": "before-refactor", "and_after": True, "dry_run": True})
        )
        assert sandbox.snapshot(text=False) == after
        restored = ok(await client.call_tool("undo", {"change_id": "before-refactor", "and_after": True}))
        assert sandbox.snapshot(text=False) == SEED
        ok(await client.call_tool("undo", {"change_id": restored["change_id"]}))
        assert sandbox.snapshot(text=False) == after
        again = ok(await client.call_tool("undo", {"change_id": "before-refactor", "and_after": True}))
    assert ok(point)["change_id"] in text_of(point) and ok(point)["name"] == "before-refactor"
    assert preview["undone"] == restored["undone"] and len(restored["undone"]) == 4
    assert sandbox.path("a.txt") in preview["restored"] and sandbox.path("src/new.txt") in preview["removed"]
    assert sandbox.snapshot(text=False) == SEED and len(again["undone"]) == 1  # the redo, taken back


async def test_a_checkpoint_given_again_with_nothing_changed_is_the_same_point_and_after_a_change_moves(
    sandbox: Sandbox,
) -> None:
    seeded(sandbox)
    async with sandbox.client() as client:
        first = ok(await client.call_tool("checkpoint", {"name": "here"}))
        again = ok(await client.call_tool("checkpoint", {"name": "here"}))
        changed(await client.call_tool("write_file", {"path": "a.txt", "content": "a2\n"}))
        moved = ok(await client.call_tool("checkpoint", {"name": "here"}))
        lines = ok(await client.call_tool("history", {}))["changes"]
    assert again["change_id"] == first["change_id"] and moved["change_id"] != first["change_id"]
    assert [line["tool"] for line in lines] == ["checkpoint", "write_file", "checkpoint"]


async def test_a_checkpoint_covers_every_mount_and_a_restore_is_all_or_nothing(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "f.txt").write_text("start\n")
    server = build_server(open_mounts([MountSpec(str(one)), MountSpec(str(two))]), Settings(state=str(tmp_path / "s")))
    async with Client(server) as client:
        ok(await client.call_tool("checkpoint", {"name": "clean"}))
        for folder in (one, two):
            changed(await client.call_tool("write_file", {"path": str(folder / "f.txt"), "content": "agent\n"}))
            changed(await client.call_tool("write_file", {"path": str(folder / "g.txt"), "content": "agent\n"}))
        (two / "g.txt").write_text("a person's\n")
        refused = await client.call_tool("undo", {"change_id": "clean", "and_after": True})
        assert [(f / "f.txt").read_text() for f in (one, two)] == ["agent\n", "agent\n"]
        (two / "g.txt").write_text("agent\n")
        restored = ok(await client.call_tool("undo", {"change_id": "clean", "and_after": True}))
    assert "g.txt changed since" in assert_error(refused, "CONFLICT")
    assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in two.iterdir()) == ["f.txt"]
    assert (one / "f.txt").read_text() == (two / "f.txt").read_text() == "start\n" and len(restored["undone"]) == 4


async def test_a_checkpoint_alone_is_no_undo_and_a_bad_name_is_refused(sandbox: Sandbox) -> None:
    async with sandbox.client() as client:
        ok(await client.call_tool("checkpoint", {"name": "here"}))
        alone = await client.call_tool("undo", {"change_id": "here"})
        nothing = ok(await client.call_tool("undo", {"change_id": "here", "and_after": True}))
        bad = await client.call_tool("checkpoint", {"name": "../x"})
        unknown = await client.call_tool("undo", {"change_id": "nowhere", "and_after": True})
    assert "and_after=true" in assert_error(alone, "INVALID_ARGUMENT")
    assert nothing["undone"] == [] and nothing["change_id"] is None
    assert "not a checkpoint name" in assert_error(bad, "INVALID_ARGUMENT")
    assert "history lists both" in assert_error(unknown, "NOT_FOUND")


async def test_history_lists_the_changes_newest_first_with_how_they_relate(sandbox: Sandbox) -> None:
    seeded(sandbox)
    async with sandbox.client() as client:
        wrote = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "a2\n"}))
        point = ok(await client.call_tool("checkpoint", {"name": "mark"}))
        edited = ok(
            await client.call_tool("edit_file", {"path": "a.txt", "edits": [{"oldText": "a2", "newText": "a3"}]})
        )
        undone = ok(await client.call_tool("undo", {"change_id": edited["change_id"]}))
        shown = await client.call_tool("history", {})
    fields = ok(shown)["changes"]
    assert [f["change_id"] for f in fields] == [
        undone["change_id"],
        edited["change_id"],
        point["change_id"],
        wrote["change_id"],
    ]
    assert [f["tool"] for f in fields] == ["undo", "edit_file", "checkpoint", "write_file"]
    assert fields[0]["undoes"] == [edited["change_id"]] and fields[1]["undone_by"] == undone["change_id"]
    assert fields[2]["checkpoint"] == "mark" and fields[3]["paths"] == [sandbox.path("a.txt")]
    lines = text_of(shown).splitlines()
    assert lines[0].startswith(undone["change_id"]) and f"[undoes {edited['change_id']}]" in lines[0]
    assert f"[undone by {undone['change_id']}]" in lines[1] and "[checkpoint mark]" in lines[2]
    assert lines[-1] == "(end: the start of the timeline)" and ok(shown)["cursor"] is None


async def test_history_of_a_path_pages_back_with_a_cursor(sandbox: Sandbox) -> None:
    async with sandbox.client() as client:
        ids = []
        for n in range(5):
            ids.append(
                ok(
                    await client.call_tool(
                        "write_file", {"path": f"d/f{n}.txt", "content": f"{n}\n", "create_dirs": True}
                    )
                )["change_id"]
            )
            ok(await client.call_tool("write_file", {"path": f"other{n}.txt", "content": "x\n"}))
        first = ok(await client.call_tool("history", {"path": "d", "limit": 2}))
        second = ok(await client.call_tool("history", {"path": "d", "limit": 2, "cursor": first["cursor"]}))
        third = ok(await client.call_tool("history", {"path": "d", "limit": 2, "cursor": second["cursor"]}))
        one_file = ok(await client.call_tool("history", {"path": "d/f3.txt"}))
        bad = await client.call_tool("history", {"cursor": "x"})
    pages = [[f["change_id"] for f in page["changes"]] for page in (first, second, third)]
    assert pages == [ids[4:2:-1], ids[2:0:-1], ids[:1]] and third["cursor"] is None
    assert [f["change_id"] for f in one_file["changes"]] == [ids[3]]
    assert_error(bad, "INVALID_ARGUMENT")


async def test_the_history_resource_is_the_first_page_with_its_fields_in_meta(sandbox: Sandbox) -> None:
    async with sandbox.client() as client:
        wrote = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "a\n"}))
        read = await client.read_resource("vfs://history")
    content = read.contents[0]
    assert content.text.startswith(wrote["change_id"])  # type: ignore[union-attr]
    assert content.meta[META_RESULT]["changes"][0]["change_id"] == wrote["change_id"]  # type: ignore[index]


def test_retention_lets_the_oldest_changes_go_by_count_and_history_says_where_it_ends(sandbox: Sandbox) -> None:
    changelog = log.ChangeLog(ObjectState(f"memory://retention-{sandbox.kind}"), retention=Retention(10**9, changes=3))
    mount = sandbox.vfs().mounts[0]
    ids = []
    for n in range(5):
        ids.append(log.new_id())
        changelog.atomic(
            "write_file", [Restore(Target(mount, f"f{n}.txt"), FileImage(b"x" * 10))], None, change_id=ids[-1]
        )
    changelog.settle()  # retention runs once the calls have answered
    vfs = JailedFS(Jail([mount]))
    page = history(vfs, changelog)
    assert [line.change_id for line in page.changes] == ids[:1:-1] and changelog.timeline.extent() == (3, 30)
    assert [changelog.holds(change_id) for change_id in ids] == [False, False, True, True, True]
    assert page.end is not None and "older changes were let go (the timeline keeps 3 changes" in page.end


def test_retention_lets_changes_older_than_its_days_go() -> None:
    timeline = Timeline(ObjectState("memory://retention-days"), Retention(10**9, days=1))
    old = [
        timeline.append(TimelineEntry(f"old{n}".ljust(22, "x"), "write_file", time.time() - 2 * 86_400))
        for n in range(3)
    ]
    fresh = timeline.append(TimelineEntry("fresh".ljust(22, "x"), "write_file", time.time()))
    assert [entry.id for entry in timeline.newest_first()] == [fresh.id] and timeline.tail() == old[-1].seq + 1


BIG = b"a line of a file of about one megabyte, as the benchmark's edit has\n" * 15_000 + b"alpha\n"


def big_edits(folder: Path) -> tuple[JailedFS, log.ChangeLog, Callable[[str, str], str]]:
    """A local mount holding ``big.txt`` (about 1 MB), its change log in a local state store of
    room for two of its images (kept by a second name), and an edit of it: its change's id."""
    (folder / "app").mkdir()
    (folder / "app" / "big.txt").write_bytes(BIG)
    changelog = log.ChangeLog(LocalState(str(folder / "state")), budget=2 * len(BIG) + len(BIG) // 2)
    vfs = JailedFS(Jail(open_mounts([MountSpec(str(folder / "app"))])))
    changes.attach(vfs, changelog)

    def edit(old: str, new: str) -> str:
        recording = Recording("edit_file")
        edit_file(vfs.for_call(CallContext(recording=recording)), "big.txt", [TextEdit(old_text=old, new_text=new)])
        return recording.changes[0]

    return vfs, changelog, edit


def test_an_edit_past_the_undo_budget_deletes_nothing_before_it_answers_and_the_oldest_goes_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retention deletes a record, its image and its entry (a 1 MB unlink): after the call, on
    the housekeeping thread; once that ran the log is within its budget again and every change it
    still holds undoes byte for byte."""
    vfs, changelog, edit = big_edits(tmp_path)
    big, state = tmp_path / "app" / "big.txt", tmp_path / "state"
    deleted_by: list[str] = []
    delete = LocalState.delete

    def counted(store: LocalState, *names: str) -> None:
        deleted_by.extend(threading.current_thread().name for _ in names)
        delete(store, *names)

    monkeypatch.setattr(LocalState, "delete", counted)
    made, contents = [], [big.read_bytes()]
    for old, new in [("alpha", "beta"), ("beta", "gamma"), ("gamma", "delta")]:
        made.append(edit(old, new))
        contents.append(big.read_bytes())
    assert threading.current_thread().name not in deleted_by  # no call deleted a name
    changelog.settle()
    assert sorted(os.listdir(state / "images")) == [f"{one}.0" for one in sorted(made[1:])]
    assert [changelog.holds(one) for one in made] == [False, True, True]
    assert changelog.timeline.extent() == (2, len(contents[1]) + len(contents[2]))
    assert len(deleted_by) >= 3  # its record (its image with it), its "undone by" mark, its entry
    for change_id, before in zip(made[:0:-1], contents[-2:0:-1], strict=True):
        undo(vfs, changelog, None, change_id=change_id)
        assert big.read_bytes() == before


def test_an_undo_of_an_edit_kept_by_a_second_name_frees_its_images_bytes_and_the_one_before_stays(
    tmp_path: Path,
) -> None:
    """The timeline counts an image kept by a second name as the bytes it is; the undo that takes
    its record back frees as many (the record itself holds none of them)."""
    vfs, changelog, edit = big_edits(tmp_path)
    first, second = edit("alpha", "beta"), edit("beta", "gamma")
    undo(vfs, changelog, None, change_id=second)
    changelog.settle()
    assert changelog.holds(first)  # the undo's own image and the first's fit the budget
    undo(vfs, changelog, None, change_id=first)
    assert (tmp_path / "app" / "big.txt").read_bytes() == BIG


def test_a_timeline_whose_housekeeping_lags_trims_in_the_appending_call_past_its_lag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queued: list[Callable[[], None]] = []

    def never_run(job: Callable[[], None], what: str) -> Future[None]:
        queued.append(job)
        return Future()

    monkeypatch.setattr(housekeeping, "later", never_run)
    lagging = Timeline(ObjectState("memory://lagging-housekeeping"), Retention(10**9, changes=2), deferred=True)
    for n in range(TRIM_LAG):
        lagging.append(TimelineEntry(f"c{n}".ljust(22, "x"), "write_file", time.time()))
    assert lagging.extent()[0] == TRIM_LAG and len(queued) == 1  # one trim queued, none run
    lagging.append(TimelineEntry("past".ljust(22, "x"), "write_file", time.time()))
    assert lagging.extent()[0] == 2 and len(queued) == 1  # trimmed by the call, nothing queued again


class Writes(ObjectState):
    """A store that counts the names it is asked to write."""

    written: list[str]

    def write(self, name: str, data: bytes, *, durable: bool = False, create: bool = True) -> None:
        self.written.append(name)
        super().write(name, data, durable=durable, create=create)


def test_a_first_change_after_others_writes_its_entry_once_without_trying_the_numbers_taken() -> None:
    """The head hint is written every ``HINT_EVERY`` entries: a new instance's first change finds
    the newest entry by reading forward from it, and writes its own entry at the first try."""
    store = Writes("memory://first-append")
    store.written = []
    first = Timeline(store, Retention(10**9))
    for n in range(12):
        first.append(TimelineEntry(f"c{n}".ljust(22, "x"), "write_file", time.time()))
    store.written.clear()
    later = Timeline(store, Retention(10**9)).append(TimelineEntry("later".ljust(22, "x"), "write_file", time.time()))
    assert later.seq == 13 and store.written == ["timeline/e-000000000013"]


async def test_a_sessions_limit_bounds_only_its_bare_undo_and_the_id_still_takes_the_change_back(
    sandbox: Sandbox,
) -> None:
    async with sandbox.client(undo_limit=1) as client:
        first = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "1\n"}))
        ok(await client.call_tool("write_file", {"path": "b.txt", "content": "2\n"}))
        ok(await client.call_tool("undo", {}))
        bare = await client.call_tool("undo", {})
        by_id = ok(await client.call_tool("undo", {"change_id": first["change_id"]}))
    assert "older changes were dropped" in assert_error(bare, "NOT_FOUND")
    assert by_id["undid"] == first["change_id"] and not sandbox.exists("a.txt")


async def test_history_says_which_changes_a_review_mount_holds_pending(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(review=True, state=str(tmp_path / "s")))
    async with Client(server) as client:
        wrote = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "pending\n"}))
        shown = await client.call_tool("history", {})
    line = ok(shown)["changes"][0]
    assert line["change_id"] == wrote["change_id"] and line["pending_review"] is True
    assert "[pending under review]" in text_of(shown) and not (folder / "a.txt").exists()


def test_a_change_a_dead_server_made_whole_gets_its_line_when_recovery_keeps_it(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"after\n")
    mount = open_mounts([MountSpec(str(folder))])[0]
    state = tmp_path / "state"
    LocalState(str(state)).close()
    back = [Restore(Target(mount, "a.txt"), FileImage(b"before\n"), Expect("file", digest=sha256(b"after\n")))]
    record = records.Record("k" * 22, "0123456789abcdef", "apply_patch", time.time(), back, atomic=False)
    (state / "pending" / f"{record.id}.0123456789abcdef.rec").write_bytes(records.encode(record))
    vfs = JailedFS(Jail([mount]))
    changes.attach(vfs, log.ChangeLog(LocalState(str(state))))
    page = history(vfs, changes.log_of(vfs))
    assert [(line.change_id, line.tool) for line in page.changes] == [(record.id, "apply_patch")]
    assert (folder / "a.txt").read_bytes() == b"after\n"


def test_an_append_within_retention_queues_no_trim_once_the_tail_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trim wakes the housekeeping thread beside the call that appended; within its bounds,
    with the tail known from the trim before, there is nothing for it to let go."""
    queued: list[str] = []
    later = housekeeping.later

    def counted(job: Callable[[], None], what: str) -> Future[None] | None:
        if what.startswith("trimming"):
            queued.append(what)
        return later(job, what)

    monkeypatch.setattr(housekeeping, "later", counted)
    kept = Timeline(ObjectState("memory://kept-timeline"), Retention(10**9, changes=5), deferred=True)
    kept.append(TimelineEntry("first".ljust(22, "x"), "write_file", time.time()))
    housekeeping.settle()  # the first finds the tail
    for n in range(3):
        kept.append(TimelineEntry(f"c{n}".ljust(22, "x"), "write_file", time.time()))
        housekeeping.settle()
    assert len(queued) == 1  # the first append's
    for n in range(3):  # past its bounds: the oldest go, on the housekeeping thread
        kept.append(TimelineEntry(f"d{n}".ljust(22, "x"), "write_file", time.time()))
    housekeeping.settle()
    assert len(queued) > 1 and kept.extent()[0] == 5
