"""``vfs-mcp review --apply`` killed (SIGKILL) at any point: once a review starts again, the store
and the pending layer agree — everything applied and nothing pending, or nothing applied and
everything pending. The layer's entries leave it inside the apply's change (its record names
them, before its first step), so recovery finishes or takes back both at once.

Kill points are counted, not timed: the child counts each step made on the store and each
write, move and delete in the state store, and kills itself after the Nth.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from results import text_of

from vfs_mcp import build_server
from vfs_mcp.errors import Internal
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.review import open_review
from vfs_mcp.settings import Settings
from vfs_mcp_backends.layers import Layer

pytestmark = pytest.mark.anyio

KILLED_APPLY = """
import os, signal, sys
from vfs_mcp.changes import state, steps
from vfs_mcp.cli import review

folder, store, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
events = 0


def counted(real):
    def event(*args, **kwargs):
        global events
        out = real(*args, **kwargs)
        events += 1
        if events == after:
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    return event


steps.Step.perform = counted(steps.Step.perform)
for verb in ("write", "move", "delete"):
    setattr(state.LocalState, verb, counted(getattr(state.LocalState, verb)))
code = review.main([folder, "--state", store, "--apply"])
print(events)
sys.exit(code)
"""

SEED = {"a.txt": "alpha\n", "c.txt": "to be deleted\n", "keep.txt": "kept\n"}
EDITS = (
    ("edit_file", {"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}),
    ("write_file", {"path": "b.txt", "content": "new\n"}),
    ("write_file", {"path": "new/notes.md", "content": "todo\n", "create_dirs": True}),
    ("delete_path", {"path": "c.txt"}),
)
PENDING = ["a.txt", "b.txt", "c.txt", "new/notes.md"]


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def pending(folder: Path, state: Path) -> list[str]:
    """What a review started now lists (it first finishes what a dead apply left)."""
    with open_review([str(folder)], state=str(state)) as review:
        return sorted(item.path.removeprefix(str(folder) + "/") for item in review.pending())


def killed_apply(folder: Path, state: Path, after: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", KILLED_APPLY, str(folder), str(state), str(after)],
        capture_output=True,
        text=True,
        timeout=120,
    )


async def seeded(tmp_path: Path, name: str) -> tuple[Path, Path]:
    folder, state = tmp_path / name / "proj", tmp_path / name / "state"
    folder.mkdir(parents=True)
    for rel, text in SEED.items():
        (folder / rel).write_text(text)
    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(review=True, state=str(state)))
    async with Client(server) as client:
        for tool, args in EDITS:
            result = await client.call_tool(tool, args)
            assert not result.is_error, text_of(result)
    server.vfs.caches["changes.log"].close()
    return folder, state


@pytest.mark.slow
async def test_review_apply_killed_at_any_point_leaves_the_store_and_the_layer_agreeing(tmp_path: Path) -> None:
    folder, state = await seeded(tmp_path, "whole")
    before = files(folder)
    assert pending(folder, state) == PENDING
    whole = killed_apply(folder, state, 0)
    assert whole.returncode == 0, whole.stderr
    events = int(whole.stdout.split()[-1])
    after = files(folder)
    assert after != before and pending(folder, state) == []
    points = sorted({max(1, round(events * n / 8)) for n in range(1, 8)} | {events - 2, events - 1})
    assert len(points) >= 5
    outcomes: list[str] = []
    for point in points:
        folder, state = await seeded(tmp_path, f"killed-{point}")
        child = killed_apply(folder, state, point)
        assert child.returncode == -9, f"kill point {point} of {events}: {child.stderr}"
        listed = pending(folder, state)
        now = files(folder)
        outcome = "before" if (now, listed) == (before, PENDING) else "after" if (now, listed) == (after, []) else ""
        assert outcome, f"kill point {point} of {events}: store {sorted(now)}, pending {listed}"
        outcomes.append(outcome)
        assert list((state / "pending").iterdir()) == [], f"kill point {point}: records left under way"
    print(f"\nreview --apply: {events} events; kill points {points}: {outcomes}")
    assert "before" in outcomes and "after" in outcomes


async def test_an_apply_whose_layer_cannot_be_changed_is_taken_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layer's part fails (the state store refuses the write) once the store is written: the
    steps are taken back, the change never happened, and everything stays pending."""
    folder, state = await seeded(tmp_path, "refused")
    before, recorded = files(folder), sorted((state / "changes").iterdir())

    def refused(self: Layer, build: Any) -> None:
        raise OSError(28, "No space left on device")

    with open_review([str(folder)], state=str(state)) as review:
        monkeypatch.setattr(Layer, "change", refused)
        with pytest.raises(Internal, match=r"pending layer could not be changed.*nothing was changed"):
            review.apply()
        monkeypatch.undo()
    assert files(folder) == before and pending(folder, state) == PENDING
    assert list((state / "pending").iterdir()) == [] and sorted((state / "changes").iterdir()) == recorded
