"""Data that survives faults: foreign bytes kept by edits, hard links, full disks, killed servers."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox
from mcp import Client, StdioServerParameters
from processes import INITIALIZE

from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import TEMP_PREFIX
from vfs_mcp.profiles.results import error_of

pytestmark = pytest.mark.anyio

# UTF-8 text with two invalid bytes (latin-1 é and a stray 0xff) around the line we edit.
FOREIGN = b"caf\xe9 = 1\nname = 'x\xff'\nvalue = 2\nend = 'na\xefve'\n"


async def test_edit_of_a_file_with_invalid_utf8_keeps_every_other_byte(sandbox: Sandbox) -> None:
    sandbox.put("mixed.py", FOREIGN)
    async with sandbox.client() as client:
        result = await client.call_tool(
            "edit_file", {"path": sandbox.path("mixed.py"), "edits": [{"oldText": "value = 2", "newText": "value = 3"}]}
        )
    assert not result.is_error, result.content[0].text
    assert sandbox.get("mixed.py") == FOREIGN.replace(b"value = 2", b"value = 3")
    assert "\ufffd" not in sandbox.get("mixed.py").decode("utf-8", "surrogateescape")


async def test_line_edit_of_a_file_with_invalid_utf8_keeps_every_other_byte(sandbox: Sandbox) -> None:
    sandbox.put("mixed.py", FOREIGN)
    async with sandbox.client() as client:
        result = await client.call_tool(
            "edit_file_at_line",
            {
                "path": sandbox.path("mixed.py"),
                "line_edits": [
                    {"line_number": 3, "action": "replace", "content": "value = 4", "expected_content": "value = 2"}
                ],
            },
        )
    assert not result.is_error, result.content[0].text
    assert sandbox.get("mixed.py") == FOREIGN.replace(b"value = 2", b"value = 4")


async def test_plain_reads_of_invalid_utf8_still_say_binary_content(sandbox: Sandbox) -> None:
    sandbox.put("mixed.py", FOREIGN)
    async with sandbox.client() as client:
        result = await client.call_tool("read_file", {"path": sandbox.path("mixed.py")})
    assert error_of(result)["code"] == "BINARY_CONTENT"


# -- hard links -------------------------------------------------------------------------


def hard_linked(sandbox: Sandbox) -> tuple[Path, Path]:
    shared = sandbox.outside / "shared.txt"
    shared.write_bytes(b"shared with the outside\n")
    inside = Path(sandbox.mount.fs_path("linked.txt"))
    os.link(shared, inside)
    return shared, inside


async def test_deny_hardlinked_refuses_reading_and_writing_a_hard_linked_file(local_sandbox: Sandbox) -> None:
    local_sandbox.mount.deny_hardlinked = True
    shared, _ = hard_linked(local_sandbox)
    async with local_sandbox.client() as client:
        read = await client.call_tool("read_file", {"path": local_sandbox.path("linked.txt")})
        write = await client.call_tool("write_file", {"path": local_sandbox.path("linked.txt"), "content": "x"})
    assert error_of(read)["code"] == "ACCESS_DENIED"
    assert error_of(write)["code"] == "ACCESS_DENIED"
    assert "shared with" not in read.content[0].text
    assert shared.read_bytes() == b"shared with the outside\n"


@pytest.mark.parametrize("append", [False, True])
async def test_writes_replace_a_hard_linked_file_never_write_into_it(local_sandbox: Sandbox, append: bool) -> None:
    shared, inside = hard_linked(local_sandbox)
    async with local_sandbox.client() as client:
        result = await client.call_tool(
            "write_file", {"path": local_sandbox.path("linked.txt"), "content": "new\n", "append": append}
        )
    assert not result.is_error, result.content[0].text
    assert shared.read_bytes() == b"shared with the outside\n"
    assert inside.read_bytes() == (b"shared with the outside\nnew\n" if append else b"new\n")
    assert inside.stat().st_nlink == 1


# -- full disks -------------------------------------------------------------------------


async def test_no_space_left_leaves_the_original_intact_and_says_so(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.put("data.txt", b"original\n")
    if sandbox.kind == "local":
        # A fake file system that fills up: every write to one of our temp files fails.
        # Both ways a staged file writes: one buffer (``os.write``), an edit's pieces (``os.writev``).
        def full_disk(real: Callable[[int, Any], int]) -> Callable[[int, Any], int]:
            def write(fd: int, data: Any) -> int:
                if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(TEMP_PREFIX):
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real(fd, data)

            return write

        monkeypatch.setattr("vfs_mcp_backends.staged_files.os.write", full_disk(os.write))
        monkeypatch.setattr("vfs_mcp_backends.staged_files.os.writev", full_disk(os.writev))
    else:

        def full_store(*args: Any, **kwargs: Any) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(sandbox.mount.fs, "pipe_file", full_store)
    async with sandbox.client() as client:
        write = await client.call_tool("write_file", {"path": sandbox.path("data.txt"), "content": "replaced\n"})
        edit = await client.call_tool(
            "edit_file", {"path": sandbox.path("data.txt"), "edits": [{"oldText": "original", "newText": "edited"}]}
        )
    for result in (write, edit):
        assert error_of(result)["code"] == "INTERNAL"
        assert "no space left" in result.content[0].text
        assert "nothing was changed" in result.content[0].text
    monkeypatch.undo()
    assert sandbox.get("data.txt") == b"original\n"
    if sandbox.mount.capabilities.host_paths:
        assert not [p for p in os.listdir(sandbox.mount.fs_path("")) if p.startswith(TEMP_PREFIX)]


async def test_a_file_size_limit_during_write_leaves_the_original_intact(tmp_path: Path) -> None:
    """A real kernel limit (RLIMIT_FSIZE, as a quota would) hits the server mid-write."""
    (tmp_path / "data.txt").write_bytes(b"original\n")
    limit = 1024 * 1024
    boot = (
        "import resource, signal, sys;"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}));"
        "from vfs_mcp.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    params = StdioServerParameters(command=sys.executable, args=["-c", boot, str(tmp_path)])
    async with Client(params) as client:
        big = await client.call_tool("write_file", {"path": "data.txt", "content": "y" * (2 * limit)})
        assert error_of(big)["code"] == "TOO_LARGE"  # EFBIG: over a size limit, as a memory mount's max_bytes
        assert "nothing was changed" in big.content[0].text
        small = await client.call_tool("write_file", {"path": "other.txt", "content": "still fine"})
        assert not small.is_error
    assert (tmp_path / "data.txt").read_bytes() == b"original\n"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(TEMP_PREFIX)]


# -- a server killed mid-write ----------------------------------------------------------


def rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


@pytest.mark.slow  # starts and kills server processes
def test_a_server_killed_mid_write_leaves_old_or_new_content_never_a_torn_file(tmp_path: Path) -> None:
    size = 4 * 1024 * 1024
    versions = [bytes([65 + i]) * size for i in range(3)]  # AAAA..., BBBB..., CCCC...
    target = tmp_path / "big.bin"
    target.write_bytes(versions[0])
    rng = random.Random(7)
    for round_no in range(8):
        before = target.read_bytes()
        new = versions[(round_no + 1) % 3]
        proc = subprocess.Popen(
            [sys.executable, "-m", "vfs_mcp", str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            rpc(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": INITIALIZE,
                },
            )
            rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            rpc(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "write_file", "arguments": {"path": "big.bin", "content": new.decode()}},
                },
            )
            time.sleep(rng.uniform(0.0, 0.6))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()  # type: ignore[union-attr]
        after = target.read_bytes()
        assert after in (before, new), f"round {round_no}: a torn file of {len(after)} bytes"
    # Whatever temp files the kills left are invisible, and swept at the next start.
    mount = open_mount(MountSpec(str(tmp_path)))
    mount.sweep_temp_files(older_than=0)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(TEMP_PREFIX)]
