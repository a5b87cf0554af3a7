"""A memory mount holds at most its ``max_bytes`` (1 GiB by default; the mount's option in the
config file, ``--memory-max-bytes`` on the command line): a write, copy or seed past it is
TOO_LARGE as it passes the limit, before the bytes take the server's memory, and changes nothing."""

from __future__ import annotations

import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client

from vfs_mcp.cli.options import parser, server_from
from vfs_mcp.jail.mounts import MountSpec, open_mount, open_mounts
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.build import build_server
from vfs_mcp_backends.memory import DEFAULT_MAX_BYTES

pytestmark = pytest.mark.anyio
MiB = 1 << 20


@asynccontextmanager
async def scratch(folder: Path, max_bytes: int = MiB) -> AsyncIterator[Client]:
    """A client of a server over ``folder`` and ``memory://scratch`` of ``max_bytes``."""
    mounts = open_mounts([MountSpec(str(folder)), MountSpec("memory://scratch", options={"max_bytes": max_bytes})])
    async with Client(build_server(mounts)) as client:
        yield client


def too_large(result: object) -> bool:
    return bool(result.is_error) and error_of(result)["code"] == "TOO_LARGE"  # type: ignore[attr-defined]


async def test_a_write_past_the_limit_is_too_large_and_changes_nothing(tmp_path: Path) -> None:
    async with scratch(tmp_path) as client:
        first = await client.call_tool("write_file", {"path": "memory://scratch/a.txt", "content": "a" * (MiB // 2)})
        past = await client.call_tool("write_file", {"path": "memory://scratch/b.txt", "content": "b" * (MiB // 2 + 1)})
        again = await client.call_tool("write_file", {"path": "memory://scratch/a.txt", "content": "A" * (MiB // 2)})
        listed = await client.call_tool("list_directory", {"path": "memory://scratch"})
    assert not first.is_error and too_large(past) and not again.is_error
    assert "max_bytes" in past.content[0].text  # type: ignore[union-attr]
    assert "b.txt" not in str(listed.content)


async def test_copying_a_big_local_file_into_memory_fails_at_the_limit_with_bounded_memory(tmp_path: Path) -> None:
    with open(tmp_path / "big.bin", "wb") as handle:
        handle.truncate(256 * MiB)  # sparse: no disk
    async with scratch(tmp_path, 4 * MiB) as client:
        tracemalloc.start()
        try:
            copied = await client.call_tool("copy_file", {"source": "big.bin", "destination": "memory://scratch/b"})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        listed = await client.call_tool("list_directory", {"path": "memory://scratch"})
    assert too_large(copied), copied.content
    assert peak < 32 * MiB, f"{peak / MiB:.0f} MiB taken to refuse a copy past a 4 MiB limit"
    assert "b" not in str(listed.content).replace("scratch", "")


async def test_a_copy_inside_a_memory_mount_counts_against_its_limit(tmp_path: Path) -> None:
    async with scratch(tmp_path) as client:
        await client.call_tool("write_file", {"path": "memory://scratch/a.txt", "content": "a" * (MiB // 2 + 1)})
        copied = await client.call_tool(
            "copy_file", {"source": "memory://scratch/a.txt", "destination": "memory://scratch/c.txt"}
        )
    assert too_large(copied), copied.content


def test_a_memory_mount_has_a_limit_by_default_and_refuses_a_seed_past_its_own(tmp_path: Path) -> None:
    assert open_mount(MountSpec("memory://m")).fs.max_bytes == DEFAULT_MAX_BYTES == 1 << 30
    (tmp_path / "seed.bin").write_bytes(b"x" * (2 * MiB))
    with pytest.raises(ValueError, match=r"cannot mount memory://m: .*at most 1048576 bytes"):
        open_mount(MountSpec("memory://m", options={"seed_dir": str(tmp_path), "max_bytes": MiB}))
    with pytest.raises(ValueError, match=r"option max_bytes = .lots. for memory mounts"):
        open_mount(MountSpec("memory://m", options={"max_bytes": "lots"}))


@pytest.mark.parametrize(
    "how",
    [["--memory-max-bytes", "1MiB"], ["--config", "{config}"]],
    ids=["command-line", "config-file"],
)
async def test_the_limit_comes_from_the_command_line_or_the_config_file(tmp_path: Path, how: list[str]) -> None:
    config = tmp_path / "vfs.toml"
    config.write_text('[[mount]]\nroot = "memory://m"\noptions = { max_bytes = "1 MiB" }\n')
    args = parser().parse_args(["memory://m", *(arg.format(config=config) for arg in how)])
    async with Client(server_from(args, args.roots)) as client:
        past = await client.call_tool("write_file", {"path": "big.txt", "content": "x" * (MiB + 1)})
        fits = await client.call_tool("write_file", {"path": "small.txt", "content": "x" * MiB})
    assert too_large(past) and not fits.is_error


async def test_moving_a_folder_past_half_the_limit_renames_it_without_room_for_a_copy(tmp_path: Path) -> None:
    async with scratch(tmp_path) as client:
        wrote = await client.call_tool(
            "write_file", {"path": "memory://scratch/old/a.txt", "content": "a" * (MiB * 3 // 4), "create_dirs": True}
        )
        moved = await client.call_tool(
            "move_file", {"source": "memory://scratch/old", "destination": "memory://scratch/new"}
        )
        read = await client.call_tool("read_file", {"path": "memory://scratch/new/a.txt", "max_bytes": 10})
        undone = await client.call_tool("undo", {})
        back = await client.call_tool("list_directory", {"path": "memory://scratch"})
    assert not wrote.is_error and not moved.is_error, moved.content
    assert "aaa" in str(read.content), read.content
    assert not undone.is_error, undone.content
    assert "old" in str(back.content) and "new" not in str(back.content)
