"""FIFOs, sockets and devices are refused, never waited on: every open for content is
non-blocking and checked on the descriptor, so even a file swapped for a FIFO between the
check and the open leaves no thread blocked.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from conftest import Sandbox
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.ops.search.grep import GrepQuery, grep_files
from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio

BOUND = 20.0
"""Seconds within which every call here must answer: it proves "does not hang", nothing more."""


def code(result: CallToolResult) -> str | None:
    if not result.is_error:
        return None
    error = error_of(result)
    assert error is not None, result.content
    return str(error["code"])


def message(result: CallToolResult) -> str:
    return str(getattr(result.content[0], "text", ""))


def refused(result: CallToolResult) -> None:
    assert code(result) == "INVALID_ARGUMENT", message(result)
    assert "not a regular file" in message(result)


@pytest.fixture
def with_fifos(local_sandbox: Sandbox) -> Sandbox:
    local_sandbox.put("box/a.txt", "alpha\n")
    local_sandbox.put("box/b.txt", "alpha\n")
    os.mkfifo(local_sandbox.mount.fs_path("pipe"))
    os.mkfifo(local_sandbox.mount.fs_path("box/pipe"))
    local_sandbox.extra_mounts.append(open_mount(MountSpec("memory://elsewhere")))
    return local_sandbox


async def test_content_of_a_fifo_is_refused_by_every_tool_without_waiting(with_fifos: Sandbox) -> None:
    box = with_fifos
    with anyio.fail_after(BOUND):
        async with box.client(call_timeout=BOUND / 2) as client:
            read = await client.call_tool("read_file", {"path": box.path("pipe")})
            copied = await client.call_tool("copy_file", {"source": box.path("pipe"), "destination": box.path("copy")})
            moved = await client.call_tool(
                "move_file", {"source": box.path("pipe"), "destination": "memory://elsewhere/pipe"}
            )
            hashed = await client.call_tool(
                "write_file", {"path": box.path("pipe"), "content": "x", "expected_hash": "0" * 64}
            )
            grepped = await client.call_tool("grep_files", {"path": box.path("pipe"), "pattern": "alpha"})
    for result in (read, copied, hashed):
        refused(result)
    assert code(moved) == "INVALID_ARGUMENT" and "nothing was moved" in message(moved)
    assert code(grepped) == "INVALID_ARGUMENT"
    assert not box.exists("copy")
    assert Path(box.mount.fs_path("pipe")).is_fifo()


async def test_whole_tree_tools_pass_over_fifos(with_fifos: Sandbox) -> None:
    box = with_fifos
    with anyio.fail_after(BOUND):
        async with box.client(call_timeout=BOUND / 2) as client:
            grepped = await client.call_tool("grep_files", {"path": box.path("box"), "pattern": "alpha"})
            duplicates = await client.call_tool("find_duplicate_files", {"path": box.path("box")})
            copied = await client.call_tool(
                "copy_file", {"source": box.path("box"), "destination": box.path("copy"), "recursive": True}
            )
    assert code(grepped) is None and code(duplicates) is None and code(copied) is None
    assert sorted(m["path"] for m in data_of(grepped)["matches"]) == [box.path(f"box/{n}.txt") for n in "ab"]
    assert data_of(duplicates)["groups"][0]["paths"] == [box.path("box/a.txt"), box.path("box/b.txt")]
    assert box.exists("copy/a.txt") and not box.exists("copy/pipe")


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
def test_both_grep_engines_skip_fifos_and_read_one_file_without_opening_it_by_name(
    with_fifos: Sandbox, engine: Literal["ripgrep", "python"]
) -> None:
    vfs = with_fifos.vfs()
    tree = grep_files(vfs, with_fifos.path("box"), GrepQuery(pattern="alpha"), engine=engine)
    one = grep_files(vfs, with_fifos.path("box/a.txt"), GrepQuery(pattern="alpha"), engine=engine)
    assert [m.path for m in tree.matches] == [with_fifos.path("box/a.txt"), with_fifos.path("box/b.txt")]
    assert [(m.path, m.line) for m in one.matches] == [(with_fifos.path("box/a.txt"), "alpha")]
    assert (tree.engine, one.engine) == (engine, engine)


@contextmanager
def swapping(folder: Path, name: str, content: bytes) -> Iterator[None]:
    """Swap ``name`` between a regular file and a FIFO as fast as possible (renames: atomic)."""
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            try:
                os.mkfifo(folder / ".f")
                os.replace(folder / ".f", folder / name)
                (folder / ".r").write_bytes(content)
                os.replace(folder / ".r", folder / name)
            except OSError:
                pass

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


async def test_a_file_swapped_with_a_fifo_never_blocks_a_call(local_sandbox: Sandbox) -> None:
    content = b"regular content\n"
    local_sandbox.put("race/x.txt", content)
    digest = hashlib.sha256(content).hexdigest()
    seen: dict[str | None, int] = {}
    folder = Path(local_sandbox.mount.fs_path("race"))
    with anyio.fail_after(240):
        async with local_sandbox.client(call_timeout=5) as client:
            with swapping(folder, "x.txt", content):
                for rounds in range(2000):  # until both kinds were met (a loaded machine may need more)
                    if rounds >= 250 and seen.get(None) and seen.get("INVALID_ARGUMENT"):
                        break
                    for result in (
                        await client.call_tool("read_file", {"path": local_sandbox.path("race/x.txt")}),
                        await client.call_tool(
                            "copy_file",
                            {"source": local_sandbox.path("race/x.txt"), "destination": "out.txt", "overwrite": True},
                        ),
                        await client.call_tool(
                            "write_file",
                            {"path": local_sandbox.path("race/x.txt"), "content": "y", "expected_hash": digest},
                        ),
                    ):
                        seen[code(result)] = seen.get(code(result), 0) + 1
                        assert code(result) in (None, "INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT"), message(result)
    assert seen.get(None) and seen.get("INVALID_ARGUMENT"), f"the swaps never met a call: {seen}"


def server(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", *args])


async def test_fifos_through_the_real_cli_answer_invalid_argument_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a.txt").write_text("alpha\n")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "pipe"}),
        ("copy_file", {"source": "pipe", "destination": "copy"}),
        ("move_file", {"source": "pipe", "destination": "memory://scratch/pipe"}),
        ("write_file", {"path": "pipe", "content": "x", "expected_hash": "0" * 64}),
        ("grep_files", {"path": "pipe", "pattern": "alpha"}),
    ]
    with anyio.fail_after(BOUND):
        async with Client(server(str(tmp_path), "memory://scratch")) as client:
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            grepped = await client.call_tool("grep_files", {"path": ".", "pattern": "alpha"})
    for (name, _), result in zip(calls, results, strict=True):
        assert code(result) == "INVALID_ARGUMENT", (name, message(result))
    assert code(grepped) is None and len(data_of(grepped)["matches"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "pipe"]
