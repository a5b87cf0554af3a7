"""``--confirm`` through real server processes: over stdio and HTTP, in both protocol eras, each
destructive kind accepted (made) and declined (nothing changed, DECLINED), a client without
elicitation never asked; and on 2026-07-28, two stateless replicas behind HAProxy sharing a
``--request-state-key-file``: one asks, the other finishes the call.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from emulators import Unavailable
from mcp import Client
from processes import load_balancer, stdio_params, vfs_mcp_http
from results import assert_error, changed

from vfs_mcp.testing import Person

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("delete_path", {"path": "build", "recursive": True}),
    ("move_file", {"source": "draft.txt", "destination": "notes.txt", "overwrite": True}),
    ("copy_file", {"source": "keep.txt", "destination": "notes.txt", "overwrite": True}),
    ("write_file", {"path": "notes.txt", "content": "new\n"}),
]
"""Each destructive kind, in an order where each still destroys after the ones before."""


def seed(folder: Path) -> dict[str, bytes]:
    (folder / "build" / "sub").mkdir(parents=True)
    (folder / "build" / "a.o").write_bytes(b"a" * 1000)
    (folder / "build" / "sub" / "b.o").write_bytes(b"b" * 24)
    (folder / "keep.txt").write_text("keep\n")
    (folder / "notes.txt").write_text("old notes\n")
    (folder / "draft.txt").write_text("draft\n")
    return files(folder)


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


async def each_kind_declined_then_accepted(connect: Any, folder: Path) -> None:
    """Every kind declined (nothing changes), then every kind accepted (each is made)."""
    before = seed(folder)
    declining = Person("decline")
    async with connect(declining) as client:
        for tool, arguments in CALLS:
            assert_error(await client.call_tool(tool, arguments), "DECLINED")
    assert files(folder) == before
    assert len(declining.asked) == len(CALLS)
    accepting = Person("accept")
    async with connect(accepting) as client:
        for tool, arguments in CALLS:
            changed(await client.call_tool(tool, arguments))
    assert len(accepting.asked) == len(CALLS)
    assert files(folder) == {"keep.txt": b"keep\n", "notes.txt": b"new\n"}


@pytest.mark.parametrize("mode", MODES)
async def test_stdio_asks_before_each_destructive_kind(tmp_path: Path, mode: str) -> None:
    folder = tmp_path / "work"
    folder.mkdir()

    def connect(person: Person) -> Client:
        params = stdio_params(str(folder), "--ignore-client-roots")
        return Client(params, mode=mode, elicitation_callback=person)  # type: ignore[arg-type]

    await each_kind_declined_then_accepted(connect, folder)


@pytest.mark.parametrize(("mode", "flags"), [("legacy", ()), ("auto", ("--stateless",))], ids=MODES)
async def test_http_asks_before_each_destructive_kind(tmp_path: Path, mode: str, flags: tuple[str, ...]) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    with vfs_mcp_http(str(folder), {}, *flags) as port:

        def connect(person: Person) -> Client:
            return Client(f"http://127.0.0.1:{port}/mcp", mode=mode, elicitation_callback=person)  # type: ignore[arg-type]

        await each_kind_declined_then_accepted(connect, folder)


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_over_stdio_is_never_asked(tmp_path: Path, mode: str) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    seed(folder)
    async with Client(stdio_params(str(folder), "--ignore-client-roots"), mode=mode) as client:  # type: ignore[arg-type]
        for tool, arguments in CALLS:
            changed(await client.call_tool(tool, arguments))
    assert files(folder) == {"keep.txt": b"keep\n", "notes.txt": b"new\n"}


@pytest.mark.parametrize(("mode", "flags"), [("legacy", ()), ("auto", ("--stateless",))], ids=MODES)
async def test_a_client_without_elicitation_over_http_is_never_asked(
    tmp_path: Path, mode: str, flags: tuple[str, ...]
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    seed(folder)
    with vfs_mcp_http(str(folder), {}, *flags) as port:
        async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:  # type: ignore[arg-type]
            for tool, arguments in CALLS:
                changed(await client.call_tool(tool, arguments))
    assert files(folder) == {"keep.txt": b"keep\n", "notes.txt": b"new\n"}


def _replicas(stack: ExitStack, folder: Path, keys: list[Path], tmp_path: Path) -> int:
    replicas = [
        stack.enter_context(vfs_mcp_http(str(folder), {}, "--stateless", "--request-state-key-file", str(key)))
        for key in keys
    ]
    try:
        return stack.enter_context(load_balancer(replicas, False, tmp_path))
    except Unavailable as exc:
        pytest.skip(str(exc))


async def test_two_replicas_behind_haproxy_finish_each_others_question_for_each_destructive_kind(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    key = tmp_path / "key"
    key.write_text("a shared secret of at least thirty-two bytes\n")
    with ExitStack() as stack:
        port = _replicas(stack, folder, [key, key], tmp_path)

        def connect(person: Person) -> Client:
            return Client(f"http://127.0.0.1:{port}/mcp", mode="auto", elicitation_callback=person)  # type: ignore[arg-type]

        await each_kind_declined_then_accepted(connect, folder)


async def test_replicas_with_different_keys_refuse_each_others_state(tmp_path: Path) -> None:
    """The rounds of one call do cross replicas behind the balancer: with keys that differ, the
    answer reaches a replica that cannot open the state, and nothing is deleted."""
    folder = tmp_path / "work"
    folder.mkdir()
    before = seed(folder)
    keys = [tmp_path / "key-a", tmp_path / "key-b"]
    for n, key in enumerate(keys):
        key.write_text(f"secret number {n} of at least thirty-two bytes\n")
    with ExitStack() as stack:
        port = _replicas(stack, folder, keys, tmp_path)
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="auto", elicitation_callback=Person("accept")) as c:  # type: ignore[arg-type]
            with pytest.raises(Exception, match="Invalid or expired requestState"):
                await c.call_tool(*CALLS[0])
    assert files(folder) == before
