"""The race that beats check-then-open servers, run for real (issue: "a jail that holds under races").

One thread flips a directory inside the mount between a real directory and a symlink to an
outside folder, as fast as it can, while a client reads and writes through it over a real
stdio server. Nothing from outside may ever be returned, and nothing outside may change.
A deliberately naive check-then-open reader, run against the same flipping directory, is the
control: it must leak, or the test proves nothing.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio

INSIDE = b"inside content\n"
OUTSIDE = b"OUTSIDE SECRET\n"
ROUNDS = 1500


@contextmanager
def flipping(swap: Path, outside: Path) -> Iterator[None]:
    """Flip ``swap`` between a real directory and a symlink to ``outside``, in a tight loop."""
    stop = threading.Event()
    away = swap.with_name("swap.away")

    def flip() -> None:
        while not stop.is_set():
            try:
                os.rename(swap, away)  # the real directory steps aside...
                os.symlink(outside, swap)  # ...and a link to the outside takes its name
                os.unlink(swap)
                os.rename(away, swap)  # then the real directory is back
            except OSError:
                pass

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        if swap.is_symlink():
            swap.unlink()
        if away.exists():
            os.rename(away, swap)


def arena(tmp_path: Path) -> tuple[Path, Path]:
    mount = tmp_path / "mount"
    swap = mount / "swap"
    outside = tmp_path / "outside"
    swap.mkdir(parents=True)
    outside.mkdir()
    (swap / "secret.txt").write_bytes(INSIDE)
    (outside / "secret.txt").write_bytes(OUTSIDE)
    return mount, outside


def naive_read(mount: Path, rel: str) -> bytes | None:
    """The control: check the real path, then open by name (a second walk that follows links)."""
    path = mount / rel
    try:
        if not os.path.realpath(path).startswith(str(mount.resolve()) + os.sep):
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def test_the_naive_check_then_open_control_does_leak(tmp_path: Path) -> None:
    mount, outside = arena(tmp_path)
    leaked = 0
    with flipping(mount / "swap", outside):
        for _ in range(50_000):
            if naive_read(mount, "swap/secret.txt") == OUTSIDE:
                leaked += 1
                if leaked >= 3:
                    break
    assert leaked >= 1, "the control never lost the race: the test would prove nothing"


async def test_reads_and_writes_over_stdio_never_cross_a_flipping_link(tmp_path: Path) -> None:
    mount, outside = arena(tmp_path)
    params = StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", str(mount)])
    leaks: list[str] = []
    refused = inside = 0
    async with Client(params) as client:
        with flipping(mount / "swap", outside):
            for i in range(ROUNDS):
                read = await client.call_tool("read_file", {"path": "swap/secret.txt"})
                text = " ".join(getattr(block, "text", "") for block in read.content)
                if "OUTSIDE" in text:
                    leaks.append(f"read {i}: {text!r}")
                refused += bool(read.is_error)
                inside += not read.is_error
                await client.call_tool("write_file", {"path": f"swap/new-{i % 20}.txt", "content": f"round {i}"})
                await client.call_tool("write_file", {"path": "swap/secret.txt", "content": "PWNED"})
    assert leaks == []
    assert refused and inside, "the flips never met a call: the race was not exercised"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"], "a file was created outside"
    assert (outside / "secret.txt").read_bytes() == OUTSIDE, "the outside file was changed"
