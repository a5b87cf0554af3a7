"""A server process sweeps the temp files killed writes left once it is up and idle: the sweep
walks the whole tree, and beside the start and the first calls it would share the interpreter
with them (a tree of 20,000 files slows a fresh server's first call noticeably)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.server import tools
from vfs_mcp_backends.localfs import SWEEP_PAUSE_EVERY
from vfs_mcp_backends.tempfiles import new_temp_name


def stale_temp_file(folder: Path) -> Path:
    """A temp file a killed write left an hour ago."""
    path = folder / "sub" / new_temp_name()
    path.parent.mkdir(exist_ok=True)
    path.write_text("half a write")
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    return path


def run_server_script(root: Path, first: str) -> list[str]:
    """A fresh interpreter builds the server ``vfs-mcp ROOT`` builds, does ``first`` (its first
    request), waits for the warm-up and the housekeeping after it, and prints whether every
    sweep began after the first request was answered and whether the stale file is gone."""
    stale = stale_temp_file(root)
    script = (
        "import threading, anyio\n"
        "from vfs_mcp.cli.options import parser, server_from\n"
        "from vfs_mcp.jail.mounts import Mount\n"
        "answered, swept = [], []\n"
        "sweep = Mount.sweep_temp_files\n"
        "Mount.sweep_temp_files = lambda self, older_than, pause=None: swept.append(bool(answered)) or sweep(self, older_than, pause)\n"
        f"args = parser().parse_args([{str(root)!r}])\n"
        "server = server_from(args, args.roots, warm_up=True)\n"
        f"{first}\n"
        "answered.append(1)\n"
        "server.warming.join()\n"
        "for thread in threading.enumerate():\n"
        "    if thread.name == 'vfs-mcp-housekeeping':\n"
        "        thread.join()\n"
        "print('after', bool(swept) and all(swept))\n"
        f"print('gone', not __import__('os').path.exists({str(stale)!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.parametrize(
    "first",
    [
        "anyio.run(server.list_tools)",
        "anyio.run(server.call_tool, 'list_allowed_directories', {})",  # a client that lists no tools
    ],
    ids=["tools/list", "a call"],
)
def test_a_server_process_sweeps_stale_temp_files_once_it_is_idle_not_while_it_starts(
    tmp_path: Path, first: str
) -> None:
    assert run_server_script(tmp_path, first) == ["after", "True", "gone", "True"]


def test_a_server_inside_a_command_sweeps_at_once(tmp_path: Path) -> None:
    # vfs-mcp xml and replay build a server without a warm-up: nothing waits for it to be idle.
    stale = stale_temp_file(tmp_path)
    script = (
        "import threading\n"
        "from vfs_mcp.cli.options import parser, server_from\n"
        f"args = parser().parse_args([{str(tmp_path)!r}])\n"
        "server_from(args, args.roots)\n"
        "for thread in threading.enumerate():\n"
        "    if thread.name == 'vfs-mcp-sweep':\n"
        "        thread.join()\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)

    assert not stale.exists()


def test_a_sweep_waits_in_its_pauses_and_sweeps_once_they_let_it(tmp_path: Path) -> None:
    for n in range(3 * SWEEP_PAUSE_EVERY):
        (tmp_path / f"file{n}").write_text("x")
    stale = stale_temp_file(tmp_path)
    go, pausing, paused = threading.Event(), threading.Event(), []

    def pause() -> None:
        paused.append(1)
        pausing.set()
        go.wait()

    mount = open_mount(MountSpec(str(tmp_path)))
    sweep = threading.Thread(target=mount.sweep_temp_files, args=(60, pause))
    sweep.start()
    pausing.wait(60)  # the sweep's first pause
    held = sweep.is_alive() and len(paused) == 1 and stale.exists()
    go.set()
    sweep.join()

    assert held, "the sweep went on while its pause waited"
    assert not stale.exists()
    assert len(paused) >= 3


def test_what_runs_between_calls_waits_while_a_call_is_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    entered, waited = threading.Event(), threading.Event()

    class NoCall(threading.Event):
        """The server's "no call in flight" event, saying when someone starts waiting on it."""

        def wait(self, timeout: float | None = None) -> bool:
            entered.set()
            return super().wait(timeout)

    no_call = NoCall()
    no_call.set()
    monkeypatch.setattr(tools, "_NO_CALL", no_call)
    with tools.in_flight():
        waiting = threading.Thread(target=lambda: tools.between_calls() or waited.set())
        waiting.start()
        assert entered.wait(60), "between_calls did not wait on the in-flight calls"
        during = waited.is_set()
    waiting.join(60)

    assert not during and waited.is_set()
