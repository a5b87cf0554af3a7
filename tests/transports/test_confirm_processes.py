"""``--confirm`` through real server processes: over stdio and HTTP, in both protocol eras, each
destructive kind accepted (made) and declined (nothing changed, DECLINED), a client without
elicitation never asked; and on 2026-07-28, two stateless replicas behind HAProxy sharing a
``--request-state-key-file``: one asks, the other finishes the call.

The kinds: a restore (``undo`` with ``and_after`` of more than ``MANY`` changes), a recursive
delete, a move, a copy and a write over a file, on a server of one folder; and a review applied
(``review_ready`` with ``apply`` of more than ``MANY`` pending files) on a server under
``--review``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from emulators import Unavailable
from mcp import Client
from processes import load_balancer, stdio_params, vfs_mcp_http
from results import assert_error, changed, ok

from vfs_mcp.changes.confirm import MANY
from vfs_mcp.testing import Person

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]

Call = tuple[str, dict[str, Any]]

CALLS: list[Call] = [
    ("delete_path", {"path": "build", "recursive": True}),
    ("move_file", {"source": "draft.txt", "destination": "notes.txt", "overwrite": True}),
    ("copy_file", {"source": "keep.txt", "destination": "notes.txt", "overwrite": True}),
    ("write_file", {"path": "notes.txt", "content": "new\n"}),
]
"""Each destructive kind of one call, in an order where each still destroys after the ones before."""


def seed(folder: Path) -> None:
    (folder / "build" / "sub").mkdir(parents=True)
    (folder / "build" / "a.o").write_bytes(b"a" * 1000)
    (folder / "build" / "sub" / "b.o").write_bytes(b"b" * 24)
    (folder / "keep.txt").write_text("keep\n")
    (folder / "notes.txt").write_text("old notes\n")
    (folder / "draft.txt").write_text("draft\n")


async def restore_then_calls(client: Client) -> list[Call]:
    """``MANY`` + 1 changes, each a new file (none asks); then the restore that takes them all
    back, and ``CALLS``: the restore first, so that it takes back those changes only."""
    first = ""
    for n in range(MANY + 1):
        result = await client.call_tool("write_file", {"path": f"new-{n:02d}.txt", "content": f"{n}\n"})
        first = first or ok(result)["change_id"]
    return [("undo", {"change_id": first, "and_after": True}), *CALLS]


def seed_docs(folder: Path) -> None:
    (folder / "docs").mkdir()
    for n in range(MANY + 1):
        (folder / "docs" / f"{n:02d}.md").write_text(f"old {n}\n")


async def pending_then_apply(client: Client) -> list[Call]:
    """``MANY`` + 1 files rewritten, pending under review (none asks); then applying them."""
    for n in range(MANY + 1):
        changed(await client.call_tool("write_file", {"path": f"docs/{n:02d}.md", "content": f"new {n}\n"}))
    return [("review_ready", {"apply": True})]


@dataclass(frozen=True)
class Kinds:
    """Destructive kinds one server asks about: its flags, the folder it starts on, the changes
    (asking nothing) that give the calls to ask about, and the folder once every call is made."""

    name: str
    flags: tuple[str, ...]
    seed: Callable[[Path], None]
    prepare: Callable[[Client], Awaitable[list[Call]]]
    made: dict[str, bytes]
    asks: str
    """What the first question says."""


SERVERS = [
    Kinds(
        "restore-delete-move-copy-write",
        (),
        seed,
        restore_then_calls,
        {"keep.txt": b"keep\n", "notes.txt": b"new\n"},
        f"undo {MANY + 1} change(s)",
    ),
    Kinds(
        "review-apply",
        ("--review", "--agent-may-apply"),
        seed_docs,
        pending_then_apply,
        {f"docs/{n:02d}.md": f"new {n}\n".encode() for n in range(MANY + 1)},
        f"{MANY + 1} file(s)",
    ),
]
KINDS = pytest.mark.parametrize("kinds", SERVERS, ids=[kinds.name for kinds in SERVERS])


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


async def each_kind_declined_then_accepted(connect: Callable[[Person], Client], folder: Path, kinds: Kinds) -> None:
    """Every kind declined (nothing changes), then every kind accepted (each is made), each
    connection a client of its own."""
    kinds.seed(folder)
    declining = Person("decline")
    async with connect(declining) as client:
        calls = await kinds.prepare(client)
        assert declining.asked == []
        before = files(folder)
        for tool, arguments in calls:
            assert_error(await client.call_tool(tool, arguments), "DECLINED")
    assert files(folder) == before
    assert len(declining.asked) == len(calls) and kinds.asks in declining.asked[0]
    accepting = Person("accept")
    async with connect(accepting) as client:
        for tool, arguments in calls:
            changed(await client.call_tool(tool, arguments))
    assert len(accepting.asked) == len(calls)
    assert files(folder) == kinds.made


async def each_kind_made_without_asking(client: Client, folder: Path, kinds: Kinds) -> None:
    """A client that declared no elicitation: every kind is made, so nothing was asked of it
    (the SDK's client answers a question it cannot show with an error, and the call would be
    DECLINED)."""
    for tool, arguments in await kinds.prepare(client):
        changed(await client.call_tool(tool, arguments))
    assert files(folder) == kinds.made


@KINDS
@pytest.mark.parametrize("mode", MODES)
async def test_stdio_asks_before_each_destructive_kind(tmp_path: Path, mode: str, kinds: Kinds) -> None:
    folder = tmp_path / "work"
    folder.mkdir()

    def connect(person: Person) -> Client:
        params = stdio_params(str(folder), "--ignore-client-roots", *kinds.flags)
        return Client(params, mode=mode, elicitation_callback=person)  # type: ignore[arg-type]

    await each_kind_declined_then_accepted(connect, folder, kinds)


@KINDS
@pytest.mark.parametrize(("mode", "flags"), [("legacy", ()), ("auto", ("--stateless",))], ids=MODES)
async def test_http_asks_before_each_destructive_kind(
    tmp_path: Path, mode: str, flags: tuple[str, ...], kinds: Kinds
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    with vfs_mcp_http(str(folder), {}, *flags, *kinds.flags) as port:

        def connect(person: Person) -> Client:
            return Client(f"http://127.0.0.1:{port}/mcp", mode=mode, elicitation_callback=person)  # type: ignore[arg-type]

        await each_kind_declined_then_accepted(connect, folder, kinds)


@KINDS
@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_over_stdio_is_never_asked(tmp_path: Path, mode: str, kinds: Kinds) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    kinds.seed(folder)
    async with Client(stdio_params(str(folder), "--ignore-client-roots", *kinds.flags), mode=mode) as client:  # type: ignore[arg-type]
        await each_kind_made_without_asking(client, folder, kinds)


@KINDS
@pytest.mark.parametrize(("mode", "flags"), [("legacy", ()), ("auto", ("--stateless",))], ids=MODES)
async def test_a_client_without_elicitation_over_http_is_never_asked(
    tmp_path: Path, mode: str, flags: tuple[str, ...], kinds: Kinds
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    kinds.seed(folder)
    with vfs_mcp_http(str(folder), {}, *flags, *kinds.flags) as port:
        async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:  # type: ignore[arg-type]
            await each_kind_made_without_asking(client, folder, kinds)


def _replicas(stack: ExitStack, folder: Path, keys: list[Path], tmp_path: Path, flags: tuple[str, ...]) -> int:
    replicas = [
        stack.enter_context(vfs_mcp_http(str(folder), {}, "--stateless", "--request-state-key-file", str(key), *flags))
        for key in keys
    ]
    try:
        return stack.enter_context(load_balancer(replicas, False, tmp_path))
    except Unavailable as exc:
        pytest.skip(str(exc))


@KINDS
async def test_two_replicas_behind_haproxy_finish_each_others_question_for_each_destructive_kind(
    tmp_path: Path, kinds: Kinds
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    key = tmp_path / "key"
    key.write_text("a shared secret of at least thirty-two bytes\n")
    with ExitStack() as stack:
        port = _replicas(stack, folder, [key, key], tmp_path, kinds.flags)

        def connect(person: Person) -> Client:
            return Client(f"http://127.0.0.1:{port}/mcp", mode="auto", elicitation_callback=person)  # type: ignore[arg-type]

        await each_kind_declined_then_accepted(connect, folder, kinds)


@KINDS
async def test_replicas_with_different_keys_refuse_each_others_state(tmp_path: Path, kinds: Kinds) -> None:
    """The rounds of each kind's call do cross replicas behind the balancer (round robin: the
    answer is the request after the question): with keys that differ, every answer reaches a
    replica that cannot open the state, and nothing changes."""
    folder = tmp_path / "work"
    folder.mkdir()
    kinds.seed(folder)
    keys = [tmp_path / "key-a", tmp_path / "key-b"]
    for n, key in enumerate(keys):
        key.write_text(f"secret number {n} of at least thirty-two bytes\n")
    with ExitStack() as stack:
        port = _replicas(stack, folder, keys, tmp_path, kinds.flags)
        person = Person("accept")
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="auto", elicitation_callback=person) as c:  # type: ignore[arg-type]
            calls = await kinds.prepare(c)
            before = files(folder)
            for tool, arguments in calls:
                with pytest.raises(Exception, match="Invalid or expired requestState"):
                    await c.call_tool(tool, arguments)
    assert files(folder) == before
    assert len(person.asked) == len(calls)
