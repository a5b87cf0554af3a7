"""``vfs-mcp review --apply`` killed (SIGKILL) at any point: once a review starts again, the store
and the pending layer agree — everything applied and nothing pending, or nothing applied and
everything pending. The layer's entries leave it inside the apply's change (its record names
them, before its first step), so recovery finishes or takes back both at once.

After every odd kill point a server under review starts first, and finishes it; after every
even one, ``vfs-mcp review`` does. Kill points are counted, not timed: the child counts each step made on the store and each
write, move and delete in the state store, and kills itself after the Nth, for every N but the
last (after which nothing is left to do).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
import pytest
from mcp import Client
from results import text_of

from vfs_mcp import build_server, changes
from vfs_mcp.errors import Internal
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.review import open_review
from vfs_mcp.settings import Settings
from vfs_mcp_backends.layers import Layer

pytestmark = pytest.mark.anyio

KILLED_APPLY = """
import os, signal, sys
from vfs_mcp.changes import prepared, state
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


prepared.Prepared.perform = counted(prepared.Prepared.perform)
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


@dataclass
class Place:
    """Where a mount under review lies (a local folder, or a prefix of a bucket on moto), its
    state store (a local folder: what the kill points count), and how to read the store."""

    root: str
    state: Path
    fs: Any
    top: str
    env: dict[str, str]

    def files(self) -> dict[str, bytes]:
        self.fs.invalidate_cache()
        found = self.fs.find(self.top, detail=True)
        return {str(p)[len(self.top) + 1 :]: self.fs.cat_file(p) for p, i in found.items() if i["type"] == "file"}

    def pending(self) -> tuple[list[str], int]:
        """What a review started now lists (it first finishes what a dead apply left), and the
        entries its layer holds (an entry left over the store's new content would hide the
        store's later changes, though it lists nothing where it shows what the store holds)."""
        with open_review([self.root], state=str(self.state)) as review:
            listed = sorted(item.path.removeprefix(self.root.rstrip("/") + "/") for item in review.pending())
            return listed, len(review.sides[0].layer.nodes)

    def settings(self) -> Settings:
        return Settings(review=True, state=str(self.state))

    def killed_apply(self, after: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", KILLED_APPLY, self.root, str(self.state), str(after)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **self.env},
        )


@pytest.fixture(params=["local", "s3"])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "s3":
        endpoint = request.getfixturevalue("s3_endpoint")
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)  # what `vfs-mcp review` of an s3:// mount reads
    return str(request.param)


async def seeded(tmp_path: Path, name: str, kind: str = "local") -> Place:
    """SEED in a new place, EDITS pending on it."""
    state = tmp_path / name / "state"
    if kind == "local":
        folder = tmp_path / name / "proj"
        folder.mkdir(parents=True)
        place = Place(str(folder), state, fsspec.filesystem("file"), str(folder), {})
    else:
        endpoint = os.environ["AWS_ENDPOINT_URL"]
        fs = fsspec.filesystem("s3", endpoint_url=endpoint, key="testing", secret="testing", skip_instance_cache=True)
        bucket = f"apply-{uuid.uuid4().hex[:10]}"
        fs.mkdir(bucket)
        place = Place(f"s3://{bucket}/proj", state, fs, f"{bucket}/proj", {"AWS_ENDPOINT_URL": endpoint})
    for rel, text in SEED.items():
        place.fs.pipe_file(f"{place.top}/{rel}", text.encode())
    server = build_server(open_mounts([MountSpec(place.root)]), place.settings())
    async with Client(server) as client:
        for tool, args in EDITS:
            result = await client.call_tool(tool, args)
            assert not result.is_error, text_of(result)
    changes.log_of(server.vfs).close()
    return place


@pytest.mark.slow
async def test_review_apply_killed_at_any_point_leaves_the_store_and_the_layer_agreeing(
    tmp_path: Path, kind: str
) -> None:
    place = await seeded(tmp_path, "whole", kind)
    before = place.files()
    pending = place.pending()
    assert pending[0] == PENDING
    whole = place.killed_apply(0)
    assert whole.returncode == 0, whole.stderr
    events = int(whole.stdout.split()[-1])
    after = place.files()
    assert after != before and place.pending() == ([], 0)
    points = list(range(1, events))  # after every event but the last
    assert len(points) >= 5
    outcomes: list[str] = []
    for point in points:
        place = await seeded(tmp_path, f"killed-{point}", kind)
        child = place.killed_apply(point)
        assert child.returncode == -9, f"kill point {point} of {events}: {child.stderr}"
        if point % 2:  # a server under review starts first: it finishes the apply on the store
            restarted = build_server(open_mounts([MountSpec(place.root)]), place.settings())
            changes.log_of(restarted.vfs).close()
            assert list((place.state / "pending").iterdir()) == [], f"kill point {point}: the server left it"
        listed = place.pending()
        now = place.files()
        outcome = (
            "before" if (now, listed) == (before, pending) else "after" if (now, listed) == (after, ([], 0)) else ""
        )
        assert outcome, f"kill point {point} of {events}: store {sorted(now)}, pending {listed}"
        outcomes.append(outcome)
        assert list((place.state / "pending").iterdir()) == [], f"kill point {point}: records left under way"
    print(f"\nreview --apply on {kind}: {events} events; kill points {points}: {outcomes}")
    assert "before" in outcomes and "after" in outcomes


async def test_an_apply_whose_layer_cannot_be_changed_is_taken_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layer's part fails (the state store refuses the write) once the store is written: the
    steps are taken back, the change never happened, and everything stays pending."""
    place = await seeded(tmp_path, "refused")
    state = place.state
    before, recorded = place.files(), sorted((state / "changes").iterdir())

    def refused(self: Layer, build: Any) -> None:
        raise OSError(28, "No space left on device")

    with open_review([place.root], state=str(state)) as review:
        monkeypatch.setattr(Layer, "change", refused)
        with pytest.raises(Internal, match=r"pending layer could not be changed.*nothing was changed"):
            review.apply()
        monkeypatch.undo()
    assert place.files() == before and place.pending()[0] == PENDING
    assert list((state / "pending").iterdir()) == [] and sorted((state / "changes").iterdir()) == recorded
