"""Per-call context is passed, not ambient (docs/architecture.md, "Per-call context"): each
call works through its own view of the shared filesystem (``JailedFS.for_call``), whose
``CallContext`` the jail, the tally, the noted reads and the write path read; two calls at
once each see only their own, and a change made through an operation called directly is
named in the recording it was given."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from conftest import Sandbox
from results import ok

from vfs_mcp.changes import log_of
from vfs_mcp.errors import NotFound
from vfs_mcp.jail.context import NO_CALL, CallContext, Recording
from vfs_mcp.jail.tally import Tally
from vfs_mcp.jail.versions import Reads
from vfs_mcp.ops.edits.replace import TextEdit, edit_file
from vfs_mcp.ops.files.read import read_file
from vfs_mcp.ops.files.undo import undo
from vfs_mcp.ops.files.write import write_file
from vfs_mcp.profiles.results import META_RESULT

pytestmark = pytest.mark.anyio

FILES = {"one/a.txt": "alpha\n", "two/bb.txt": "bravo, and more text\n"}
"""In two folders: a change locks the folder it writes in, and these two run at once."""


def held_together(sandbox: Sandbox, calls: int = 2) -> None:
    """Each of the first ``calls`` reads of a whole file waits until all of them are inside
    one: the calls run at once, whatever the threads' order."""
    backend = sandbox.mount.backend
    real = backend.read_whole
    meeting = threading.Barrier(calls, timeout=30)
    entered = iter(range(calls))

    def read_whole(*args: Any, **kwargs: Any) -> Any:
        if next(entered, None) is not None:
            meeting.wait()
        return real(*args, **kwargs)

    backend.read_whole = read_whole  # type: ignore[method-assign]


def in_threads(*work: Callable[[], object]) -> None:
    failures: list[BaseException] = []

    def run(one: Callable[[], object]) -> None:
        try:
            one()
        except BaseException as exc:  # reported below, on the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(one,)) for one in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures


def test_two_calls_at_once_each_count_note_record_and_spell_only_their_own(sandbox: Sandbox) -> None:
    for name, text in FILES.items():
        sandbox.put(name, text)
    shared = sandbox.vfs()
    views = {name: shared.for_call(CallContext(Tally(), Reads(), {}, Recording("edit_file"))) for name in FILES}
    held_together(sandbox)
    in_threads(
        *(
            lambda name=name: edit_file(views[name], name, [TextEdit(old_text=FILES[name][:5], new_text="zulu")])
            for name in FILES
        )
    )
    for name, view in views.items():
        context = view.context
        assert context.tally is not None and context.reads is not None and context.recording is not None
        # Only its own file: read whole (planned, then planned again under its lock), then written.
        assert context.tally.read % len(FILES[name]) == 0 < context.tally.read
        assert context.tally.written == len(FILES[name].replace(FILES[name][:5], "zulu"))
        assert list(context.reads.seen) == [sandbox.path(name)]
        assert context.written == {sandbox.path(name): name}  # spelt relative, named in full
        (change_id,) = context.recording.changes
        (step,) = log_of(shared).load(change_id, shared.served).steps
        assert step.target.display == sandbox.path(name)


async def test_two_tool_calls_at_once_in_one_event_loop_each_name_only_their_own_change(sandbox: Sandbox) -> None:
    for name, text in FILES.items():
        sandbox.put(name, text)
    held_together(sandbox)
    replies: dict[str, Any] = {}
    async with sandbox.client() as client:

        async def edit(name: str) -> None:
            edits = [{"oldText": FILES[name][:5], "newText": "zulu"}]
            replies[name] = await client.call_tool("edit_file", {"path": sandbox.path(name), "edits": edits})

        async with anyio.create_task_group() as group:
            for name in FILES:
                group.start_soon(edit, name)
        for name in FILES:
            change_id = (replies[name].meta or {})[META_RESULT]["change_id"]
            undone = ok(await client.call_tool("undo", {"change_id": change_id}))
            assert undone["restored"] == [sandbox.path(name)]
    assert {name: sandbox.get(name).decode() for name in FILES} == FILES


def test_a_change_made_through_an_operation_called_directly_is_named_in_its_recording(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "before\n")
    shared = sandbox.vfs()
    recording = Recording("write_file")
    write_file(shared.for_call(CallContext(recording=recording)), "a.txt", "after\n")
    (change_id,) = recording.changes
    assert recording.why_not is None
    undone = undo(shared, log_of(shared), None, change_id=change_id)
    assert undone.restored == [sandbox.path("a.txt")] and sandbox.get("a.txt") == b"before\n"


def test_a_change_through_the_shared_filesystem_is_recorded_for_no_call(sandbox: Sandbox) -> None:
    """A program's change outside any tool call (the ``vfs`` protocol's) is kept for no undo."""
    shared = sandbox.vfs()
    recording = Recording("write_file")
    view = shared.for_call(CallContext(recording=recording))
    write_file(shared, "a.txt", "a program's\n")
    assert recording.changes == [] and shared.context is NO_CALL
    write_file(view, "a.txt", "a call's\n")
    assert len(recording.changes) == 1


def test_a_view_is_made_for_each_call_and_shares_all_but_its_context(sandbox: Sandbox) -> None:
    shared = sandbox.vfs()
    first, second = shared.for_call(CallContext(Tally())), shared.for_call(CallContext(Tally()))
    assert first is not second and first.context.tally is not second.context.tally
    assert first.jail is shared.jail and first.kept is shared.kept and first.shared is shared
    sandbox.put("a.txt", "12345")
    read_file(first, "a.txt")
    assert first.context.tally is not None and second.context.tally is not None
    assert (first.context.tally.read, second.context.tally.read) == (5, 0)


def test_an_error_names_the_path_as_this_call_spelt_it(sandbox: Sandbox) -> None:
    view = sandbox.vfs().for_call(CallContext(written={}))
    with pytest.raises(NotFound):
        read_file(view, "missing/a.txt")
    assert view.context.written == {sandbox.path("missing/a.txt"): "missing/a.txt"}


def test_a_session_s_buffers_save_through_the_view_of_the_call_that_saves(sandbox: Sandbox) -> None:
    from vfs_mcp.profiles.ide import buffers
    from vfs_mcp.settings import Settings

    sandbox.put("a.txt", "one\n")
    shared, settings = sandbox.vfs(), Settings()
    uri = sandbox.path("a.txt")
    opening = shared.for_call(CallContext(recording=Recording("file_open")))
    buffers(opening, settings).open(uri)
    saving = shared.for_call(CallContext(recording=Recording("file_save")))
    buffers(saving, settings).save(uri, "two\n")
    assert opening.context.recording is not None and opening.context.recording.changes == []
    assert saving.context.recording is not None and len(saving.context.recording.changes) == 1
