"""The heap kept while calls come and given back once the server is idle (``server.memory``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client

from vfs_mcp import build_server
from vfs_mcp.changes.state import housekeeping
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.server import memory
from vfs_mcp.server.calls import idle

pytestmark = pytest.mark.anyio


class Scheduled(list[Callable[[], None]]):
    """What the idle count asked to run later, run when the test says."""

    def __call__(self, delay: float, job: Callable[[], None]) -> None:
        assert delay == memory.IDLE
        self.append(job)

    def run(self) -> None:
        while self:
            self.pop(0)()
        housekeeping.settle()


def counting() -> tuple[memory.Idle, list[int]]:
    given: list[int] = []
    return memory.Idle(lambda: given.append(1) or True), given


def test_the_heap_is_given_back_once_when_no_call_came_for_the_idle_time() -> None:
    count, given = counting()
    later = Scheduled()
    count.began()
    count.ended(later)
    later.run()
    assert given == [1] and count.trims == 1


def test_a_call_that_came_before_the_idle_time_was_over_puts_the_giving_back_off() -> None:
    count, given = counting()
    later = Scheduled()
    for _ in range(2):  # the second call comes and goes before the first one's check
        count.began()
        count.ended(later)
    first = later.pop(0)
    first()
    housekeeping.settle()
    assert given == []
    later.run()  # the second call's check
    assert given == [1]


def test_nothing_is_given_back_while_another_call_runs() -> None:
    count, given = counting()
    later = Scheduled()
    count.began()
    count.began()
    count.ended(later)
    assert later == []
    count.ended(later)
    later.run()
    assert given == [1]


async def test_a_tool_call_through_the_pipeline_asks_for_the_check_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    count, given = counting()
    later = Scheduled()
    monkeypatch.setattr(idle, "IDLE_SERVER", count)
    monkeypatch.setattr(idle, "_later", later)
    async with Client(build_server(open_mounts([MountSpec(str(tmp_path))]))) as client:
        await client.call_tool("read_file", {"path": "a.txt"})
        assert count.running == 0 and len(later) == 1
        later.run()
    assert given == [1]


@pytest.mark.skipif(memory._LIBC is None, reason="glibc's malloc only")
def test_what_a_big_call_freed_in_the_heap_goes_back_to_the_system() -> None:
    # In a process of its own: the thresholds are the process's.
    script = textwrap.dedent(
        """
        import sys
        from vfs_mcp.server import memory

        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096

        memory.settle()
        before = rss()
        blocks, pins = [], []
        for n in range(40):  # 120 MB in blocks under the threshold, each pinned by a small one after it
            blocks.append(bytes([n]) * (3 << 20))
            pins.append(bytes([n]) * 200_000)
        del blocks
        kept = rss() - before
        assert memory.give_back()
        print(kept >> 20, (rss() - before) >> 20)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    kept, after = map(int, out.split())
    assert kept > 100  # MB the heap held, freed but not given back
    assert after < 16
