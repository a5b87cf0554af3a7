"""Asking the person before a change destroys (``--confirm``), in both protocol eras: through
2025-11-25 an ``elicitation/create`` request sent mid-call, on 2026-07-28 an input round the
client answers by calling again. Accepted: the change is made. Declined or dismissed: nothing
changes, and the result is DECLINED. A client that declared no elicitation is never sent a
request. A file changed between the question and the answer: CONFLICT, never a stale plan.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import (
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsResult,
    Root,
)
from results import assert_error, changed, ok

from vfs_mcp import build_server
from vfs_mcp.changes.confirm import MANY
from vfs_mcp.cli.options import parser, settings_from
from vfs_mcp.jail.mounts import Config
from vfs_mcp.server.calls.confirmed import KEY
from vfs_mcp.settings import Settings
from vfs_mcp.testing import Person, memory_server

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]
"""2025-11-25 (``elicitation/create``) and 2026-07-28 (an input round)."""


def seeded(box: Sandbox) -> None:
    box.put("build/a.o", b"a" * 1000)
    box.put("build/sub/b.o", b"b" * 24)
    box.put("keep.txt", "keep\n")
    box.put("notes.txt", "old notes\n")
    box.put("draft.txt", "draft\n")


def client(box: Sandbox, mode: str, person: Any = None, **settings: Any) -> Client:
    server = build_server([box.mount], Settings(**settings))
    return Client(server, mode=mode, elicitation_callback=person)  # type: ignore[arg-type]


Kind = tuple[str, str, dict[str, Any], Callable[[Sandbox], None], Callable[[Sandbox], None]]
"""A destructive call: its name, tool, arguments, what holds when it was made, what holds when not."""


def _deleted(box: Sandbox) -> None:
    assert not box.exists("build")


def _kept(box: Sandbox) -> None:
    assert box.get("build/a.o") == b"a" * 1000 and box.get("build/sub/b.o") == b"b" * 24


def _moved(box: Sandbox) -> None:
    assert box.get("notes.txt") == b"draft\n" and not box.exists("draft.txt")


def _not_moved(box: Sandbox) -> None:
    assert box.get("notes.txt") == b"old notes\n" and box.get("draft.txt") == b"draft\n"


def _copied(box: Sandbox) -> None:
    assert box.get("notes.txt") == b"keep\n"


def _not_copied(box: Sandbox) -> None:
    assert box.get("notes.txt") == b"old notes\n"


def _written(box: Sandbox) -> None:
    assert box.get("notes.txt") == b"new\n"


KINDS: list[Kind] = [
    ("delete", "delete_path", {"path": "build", "recursive": True}, _deleted, _kept),
    ("move", "move_file", {"source": "draft.txt", "destination": "notes.txt", "overwrite": True}, _moved, _not_moved),
    ("copy", "copy_file", {"source": "keep.txt", "destination": "notes.txt", "overwrite": True}, _copied, _not_copied),
    ("write", "write_file", {"path": "notes.txt", "content": "new\n"}, _written, _not_copied),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
async def test_an_accepted_destructive_change_is_made_after_the_person_was_asked(
    sandbox: Sandbox, mode: str, kind: Kind
) -> None:
    _, tool, arguments, made, _ = kind
    seeded(sandbox)
    person = Person("accept")
    async with client(sandbox, mode, person) as c:
        changed(await c.call_tool(tool, arguments))
    made(sandbox)
    assert len(person.asked) == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", ["decline", "cancel"])
@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
async def test_a_declined_destructive_change_changes_nothing_and_says_declined(
    sandbox: Sandbox, mode: str, answer: Any, kind: Kind
) -> None:
    _, tool, arguments, _, untouched = kind
    seeded(sandbox)
    before = sandbox.snapshot()
    person = Person(answer)
    async with client(sandbox, mode, person) as c:
        shown = assert_error(await c.call_tool(tool, arguments), "DECLINED")
    assert "do not retry" in shown
    untouched(sandbox)
    assert sandbox.snapshot() == before
    assert len(person.asked) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_the_question_says_what_will_happen_in_numbers(sandbox: Sandbox, mode: str) -> None:
    seeded(sandbox)
    person = Person("decline")
    async with client(sandbox, mode, person) as c:
        await c.call_tool("delete_path", {"path": "build", "recursive": True})
    [question] = person.asked
    assert "delete the folder" in question and "build" in question
    assert "2 file(s), 1.0 KiB removed or replaced" in question
    assert question.index("build/a.o") < question.index("build/sub/b.o")  # the largest first
    assert "undo can take it back" in question


async def test_the_question_names_the_largest_paths_and_counts_the_rest(sandbox: Sandbox) -> None:
    for n in range(8):
        sandbox.put(f"logs/{n}.log", b"x" * (n + 1))
    person = Person("decline")
    async with client(sandbox, "legacy", person) as c:
        await c.call_tool("delete_path", {"path": "logs", "recursive": True})
    [question] = person.asked
    named = [line.strip().rsplit("/", 1)[-1] for line in question.splitlines() if line.startswith("  ")]
    assert named == ["7.log", "6.log", "5.log", "4.log", "3.log", "... and 3 more"]
    assert "8 file(s), 36 bytes" in question


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
async def test_a_client_without_elicitation_is_never_asked_and_changes_as_before(
    sandbox: Sandbox, mode: str, kind: Kind
) -> None:
    _, tool, arguments, made, _ = kind
    seeded(sandbox)
    async with client(sandbox, mode) as c:  # no callback: the client declares no elicitation
        changed(await c.call_tool(tool, arguments))
    made(sandbox)


@pytest.mark.parametrize("mode", MODES)
async def test_a_policy_the_operator_named_refuses_what_a_client_without_elicitation_cannot_confirm(
    sandbox: Sandbox, mode: str
) -> None:
    seeded(sandbox)
    async with client(sandbox, mode, confirm="destructive") as c:
        shown = assert_error(await c.call_tool("delete_path", {"path": "build", "recursive": True}), "DECLINED")
        changed(await c.call_tool("write_file", {"path": "fresh.txt", "content": "new\n"}))  # destroys nothing
    assert "cannot show the question" in shown
    _kept(sandbox)


@pytest.mark.parametrize("mode", MODES)
async def test_changes_that_destroy_nothing_ask_nothing(sandbox: Sandbox, mode: str) -> None:
    seeded(sandbox)
    sandbox.mkdir("empty")
    person = Person("decline")
    async with client(sandbox, mode, person) as c:
        changed(await c.call_tool("write_file", {"path": "fresh.txt", "content": "new\n"}))
        changed(await c.call_tool("edit_file", {"path": "keep.txt", "edits": [{"oldText": "keep", "newText": "kept"}]}))
        changed(await c.call_tool("delete_path", {"path": "empty", "recursive": True}))
        changed(await c.call_tool("delete_path", {"path": "draft.txt"}))
        changed(await c.call_tool("copy_file", {"source": "keep.txt", "destination": "copy.txt"}))
    assert person.asked == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_the_session_read_or_wrote_is_rewritten_without_asking(sandbox: Sandbox, mode: str) -> None:
    """(One client of an in-process or stdio server is one session, in either era.)"""
    seeded(sandbox)
    person = Person("decline")
    async with client(sandbox, mode, person) as c:
        ok(await c.call_tool("read_file", {"path": "notes.txt"}))
        changed(await c.call_tool("write_file", {"path": "notes.txt", "content": "new\n"}))
        changed(await c.call_tool("write_file", {"path": "notes.txt", "content": "newer\n"}))
        assert person.asked == []
        sandbox.put("notes.txt", "someone else's\n")  # not the version this session knows
        assert_error(await c.call_tool("write_file", {"path": "notes.txt", "content": "mine\n"}), "DECLINED")
    assert len(person.asked) == 1
    assert sandbox.get("notes.txt") == b"someone else's\n"


@pytest.mark.parametrize("mode", MODES)
async def test_a_write_that_pins_the_version_it_read_asks_nothing(sandbox: Sandbox, mode: str) -> None:
    seeded(sandbox)
    person = Person("decline")
    async with client(sandbox, mode, person) as c:
        digest = hashlib.sha256(b"old notes\n").hexdigest()  # read elsewhere: this session never read it
        arguments = {"path": "notes.txt", "content": "new\n", "expected_hash": digest}
        changed(await c.call_tool("write_file", arguments))
    assert person.asked == []


@pytest.mark.parametrize("mode", MODES)
async def test_writes_asks_before_every_change(sandbox: Sandbox, mode: str) -> None:
    person = Person("decline")
    async with client(sandbox, mode, person, confirm="writes") as c:
        assert_error(await c.call_tool("write_file", {"path": "fresh.txt", "content": "new\n"}), "DECLINED")
        ok(await c.call_tool("list_directory", {"path": "."}))
    assert not sandbox.exists("fresh.txt")
    assert len(person.asked) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_never_asks_nothing(sandbox: Sandbox, mode: str) -> None:
    seeded(sandbox)
    person = Person("decline")
    async with client(sandbox, mode, person, confirm="never") as c:
        changed(await c.call_tool("delete_path", {"path": "build", "recursive": True}))
    assert person.asked == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_restore_of_many_changes_asks_and_a_decline_undoes_nothing(sandbox: Sandbox, mode: str) -> None:
    person = Person("decline")
    async with client(sandbox, mode, person) as c:
        ids = []
        for number in range(MANY + 1):
            result = await c.call_tool("write_file", {"path": f"f{number}.txt", "content": f"{number}\n"})
            ids.append(changed(result) and result.meta["vfs-mcp/result"]["change_id"])  # type: ignore[index]
        assert person.asked == []
        assert_error(await c.call_tool("undo", {"change_id": ids[0], "and_after": True}), "DECLINED")
        assert all(sandbox.exists(f"f{n}.txt") for n in range(MANY + 1))
        person.answer = "accept"
        ok(await c.call_tool("undo", {"change_id": ids[0], "and_after": True}))
    assert not any(sandbox.exists(f"f{n}.txt") for n in range(MANY + 1))
    assert len(person.asked) == 2
    assert f"undo {MANY + 1} change(s)" in person.asked[0] and "undo can NOT take it back" in person.asked[0]


async def test_changes_pending_under_review_ask_nothing_and_applying_many_asks() -> None:
    files = {f"docs/{n:02d}.md": f"old {n}\n" for n in range(MANY + 1)}
    person = Person("decline")
    async with memory_server(files, review=True, agent_may_apply=True, confirm="destructive", answer=person) as c:
        for n in range(MANY + 1):
            changed(await c.call_tool("write_file", {"path": f"docs/{n:02d}.md", "content": f"new {n}\n"}))
        assert person.asked == []  # pending: nothing reaches the store before a person applies it
        assert_error(await c.call_tool("review_ready", {"apply": True}), "DECLINED")
        assert len(c.pending()) == MANY + 1
        person.answer = "accept"
        ok(await c.call_tool("review_ready", {"apply": True}))
        assert c.pending() == []
    assert len(person.asked) == 2 and f"{MANY + 1} file(s)" in person.asked[0]


async def test_applying_a_review_that_replaces_one_file_asks_and_one_that_only_adds_does_not() -> None:
    """An apply writes each pending file whole: over a file in the store it asks, as a write over a
    file the session never read does, whatever the count; new files alone replace nothing."""
    person = Person("accept")
    async with memory_server({"a.md": "old\n"}, review=True, agent_may_apply=True, answer=person) as c:
        changed(await c.call_tool("write_file", {"path": "a.md", "content": "new\n"}))
        ok(await c.call_tool("review_ready", {"apply": True}))
        assert len(person.asked) == 1 and "write over memory://workspace/a.md" in person.asked[0]
        changed(await c.call_tool("write_file", {"path": "b.md", "content": "new\n"}))
        ok(await c.call_tool("review_ready", {"apply": True}))
        assert len(person.asked) == 1 and c.pending() == []


async def test_a_client_that_fails_to_show_the_question_changes_nothing(sandbox: Sandbox) -> None:
    seeded(sandbox)

    async def broken(context: ClientRequestContext, params: ElicitRequestParams) -> ErrorData:
        return ErrorData(code=-32603, message="no dialog here")

    async with client(sandbox, "legacy", broken) as c:
        shown = assert_error(await c.call_tool("delete_path", {"path": "build", "recursive": True}), "DECLINED")
    assert "could not ask the person" in shown and "no dialog here" in shown
    _kept(sandbox)


class Meddling:
    """A person who accepts, but someone changes ``rel`` in the store before the answer arrives."""

    def __init__(self, box: Sandbox, rel: str) -> None:
        self.box, self.rel, self.asked = box, rel, 0

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked += 1
        self.box.put(self.rel, b"changed while the person was asked\n")
        return ElicitResult(action="accept", content={})


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_changed_between_question_and_answer_is_conflict_and_nothing_changes(
    sandbox: Sandbox, mode: str
) -> None:
    seeded(sandbox)
    person = Meddling(sandbox, "build/sub/b.o")
    async with client(sandbox, mode, person) as c:
        shown = assert_error(await c.call_tool("delete_path", {"path": "build", "recursive": True}), "CONFLICT")
    assert "call again to ask anew" in shown
    assert sandbox.get("build/a.o") == b"a" * 1000
    assert sandbox.get("build/sub/b.o") == b"changed while the person was asked\n"
    assert person.asked == 1


# -- the 2026-07-28 round, by hand: another replica finishes the call --------------------------


def _replica(box: Sandbox, key: str) -> Any:
    return build_server([box.mount], Settings(request_state_key=key))


async def _first_round(c: Client, tool: str, arguments: dict[str, Any]) -> InputRequiredResult:
    asked = await c.session.call_tool(tool, arguments, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult), asked
    return asked


async def _answer(
    c: Client, tool: str, arguments: dict[str, Any], asked: InputRequiredResult, action: str
) -> CallToolResult:
    responses = {KEY: ElicitResult(action=action, content={} if action == "accept" else None)}  # type: ignore[arg-type]
    done = await c.session.call_tool(
        tool, arguments, input_responses=responses, request_state=asked.request_state, allow_input_required=True
    )
    assert isinstance(done, CallToolResult), done
    return done


async def test_another_replica_finishes_an_accepted_call(sandbox: Sandbox) -> None:
    seeded(sandbox)
    key = "k" * 32
    arguments = {"path": "build", "recursive": True}
    async with (
        Client(_replica(sandbox, key), mode="auto", elicitation_callback=Person("accept")) as first,
        Client(_replica(sandbox, key), mode="auto", elicitation_callback=Person("accept")) as second,
    ):
        asked = await _first_round(first, "delete_path", arguments)
        [(name, request)] = (asked.input_requests or {}).items()
        assert name == KEY and "delete the folder" in request.params.message  # type: ignore[union-attr]
        assert json.dumps(asked.request_state).count(sandbox.mount.url) == 0  # sealed: nothing readable
        _kept(sandbox)
        changed(await _answer(second, "delete_path", arguments, asked, "accept"))
    _deleted(sandbox)


async def test_another_replica_refuses_an_answer_to_a_plan_that_changed(sandbox: Sandbox) -> None:
    seeded(sandbox)
    key = "k" * 32
    arguments = {"path": "build", "recursive": True}
    async with (
        Client(_replica(sandbox, key), mode="auto", elicitation_callback=Person("accept")) as first,
        Client(_replica(sandbox, key), mode="auto", elicitation_callback=Person("accept")) as second,
    ):
        asked = await _first_round(first, "delete_path", arguments)
        sandbox.put("build/new.o", b"made while the person was asked")
        assert_error(await _answer(second, "delete_path", arguments, asked, "accept"), "CONFLICT")
        assert sandbox.get("build/new.o") == b"made while the person was asked"
        assert_error(await _answer(second, "delete_path", arguments, asked, "decline"), "CONFLICT")
    _kept(sandbox)


async def test_a_replica_with_another_key_refuses_the_state(sandbox: Sandbox) -> None:
    seeded(sandbox)
    arguments = {"path": "build", "recursive": True}
    async with (
        Client(_replica(sandbox, "k" * 32), mode="auto", elicitation_callback=Person("accept")) as first,
        Client(_replica(sandbox, "x" * 32), mode="auto", elicitation_callback=Person("accept")) as second,
    ):
        asked = await _first_round(first, "delete_path", arguments)
        with pytest.raises(Exception, match="Invalid or expired requestState"):
            await _answer(second, "delete_path", arguments, asked, "accept")
    _kept(sandbox)


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_asked_for_its_roots_first_is_then_asked_to_confirm(local_sandbox: Sandbox, mode: str) -> None:
    """The 2026-07-28 rounds follow one another: the roots' round, then the confirmation's."""
    seeded(local_sandbox)
    root = Path(local_sandbox.root).as_uri()

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=root)])  # type: ignore[arg-type]

    person = Person("accept")
    server = build_server([local_sandbox.mount], Settings(client_roots="narrow"))
    async with Client(server, mode=mode, elicitation_callback=person, list_roots_callback=roots) as c:  # type: ignore[arg-type]
        changed(await c.call_tool("delete_path", {"path": "build", "recursive": True}))
    _deleted(local_sandbox)
    assert len(person.asked) == 1


async def test_a_roots_refresh_due_while_the_person_answers_does_not_ask_the_person_again(
    local_sandbox: Sandbox,
) -> None:
    """On 2026-07-28 the person's answer comes with the call made again; roots due for a
    refresh by then (``roots_refresh=0``: always) are asked for at the next call, not before
    this answer is taken (a new round would drop it, and the person would be asked again)."""
    seeded(local_sandbox)
    root = Path(local_sandbox.root).as_uri()
    asked_for_roots = []

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        asked_for_roots.append(root)
        return ListRootsResult(roots=[Root(uri=root)])  # type: ignore[arg-type]

    person = Person("accept")
    server = build_server([local_sandbox.mount], Settings(client_roots="narrow", roots_refresh=0))
    async with Client(server, elicitation_callback=person, list_roots_callback=roots) as c:  # type: ignore[arg-type]
        changed(await c.call_tool("delete_path", {"path": "build", "recursive": True}))
        assert len(person.asked) == 1
        assert len(asked_for_roots) == 1
        ok(await c.call_tool("list_directory", {"path": "."}))
        assert len(asked_for_roots) == 2  # the refresh put off, made at the next call
    _deleted(local_sandbox)


def test_the_options_set_the_policy_and_a_request_state_key_of_32_bytes_or_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key"
    key.write_text("short\n")
    args = parser().parse_args(["--confirm", "writes", "--request-state-key-file", str(key)])
    with pytest.raises(ValueError, match="at least 32 bytes"):
        settings_from(args, None)
    key.write_text("k" * 32 + "\n")
    settings = settings_from(args, None)
    assert (settings.confirm, settings.request_state_key) == ("writes", "k" * 32)
    assert "k" * 32 not in repr(settings)
    monkeypatch.setenv("VFS_MCP_REQUEST_STATE_KEY", "e" * 40)
    assert settings_from(parser().parse_args([]), None).request_state_key == "e" * 40
    assert settings_from(parser().parse_args([]), None).confirm == "auto"
    config = tmp_path / "vfs.toml"
    config.write_text('confirm = "never"\n')
    assert settings_from(parser().parse_args([]), Config.load(config)).confirm == "never"
