"""A crash is a failure like any other: a server killed with SIGKILL while it applies a patch to
many files, copies a folder, or moves a folder to another mount leaves, once a new server has
started, every tree all before or all after the call — and no temp file. Kill points spread
over each call (its time measured uninterrupted first), on a local folder (ten) and on S3 (moto, four).

On S3 the tree is smaller (``FILES``): what a kill there adds to one on a local folder is only the
store (objects written one by one, no rename), and the full-size tree's change is killed at ten
points on the local folder; four points spread over a 30-object call still land between objects.

The change's record is in the state store before its first step; the new server finds it, sees
its writer dead, and takes back what the change made (``vfs_mcp.changes.recovery``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
import pytest
from processes import RawStdio

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import LocalState, ObjectState
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.files.undo import undo
from vfs_mcp_backends.tempfiles import is_temp_name

pytestmark = pytest.mark.slow

FILES = {"file": 120, "s3": 30}
LINES = 1500  # ~ 60 kB a file
POINTS = {"file": 10, "s3": 4}
"""Files in the tree and kill points spread over a call, by store: on S3 each point seeds and
reads back every object through moto, so fewer of both, the points still spread over the whole call."""

Tree = dict[str, str]
"""mount number and path inside it -> sha256 of a file, or "dir"."""


@functools.cache
def body(n: int) -> str:
    return "".join(f"file {n:03d} line {i:04d} of the tree\n" for i in range(LINES))


def patch(files: int) -> str:
    """A unified diff changing the first line of each of ``files`` files, adding one and deleting one."""
    parts = []
    for n in range(files):
        parts.append(
            f"--- a/tree/f{n:03d}.txt\n+++ b/tree/f{n:03d}.txt\n@@ -1,3 +1,3 @@\n"
            f"-file {n:03d} line 0000 of the tree\n+FILE {n:03d} PATCHED\n"
            f" file {n:03d} line 0001 of the tree\n file {n:03d} line 0002 of the tree\n"
        )
    parts.append("--- /dev/null\n+++ b/tree/added.txt\n@@ -0,0 +1 @@\n+added by the patch\n")
    parts.append("--- a/tree/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-to be deleted\n")
    return "".join(parts)


@dataclass
class Place:
    """Two mounts on one kind of store, and how to see them past the server."""

    roots: list[str]
    fs: Any
    paths: list[str]
    """The store paths of the mounts' roots."""
    args: tuple[str, ...]
    env: dict[str, str]
    state: Path
    files: int
    """Files in the seeded tree (``FILES`` of its store)."""
    points: int
    """Kill points spread over a call (``POINTS`` of its store)."""

    def snapshot(self) -> Tree:
        """Every entry of both mounts; the files' bytes read in one batch (concurrent on S3)."""
        self.fs.invalidate_cache()
        entries: dict[str, str] = {}
        for number, top in enumerate(self.paths):
            for path, info in self.fs.find(top, withdirs=True, detail=True).items():
                rel = f"{number}:{str(path)[len(top) :].strip('/')}"
                if not rel.endswith(":"):
                    entries[rel] = "dir" if info["type"] == "directory" else str(path)
        files = [path for path in entries.values() if path != "dir" and not path.endswith("/")]
        contents = self.fs.cat(files) if files else {}
        # a folder marker ("key/", an object on S3) is read by its own name: a batch strips the slash
        contents |= {path: self.fs.cat_file(path) for path in entries.values() if path.endswith("/")}
        tree = {
            rel: hashlib.sha256(contents[path]).hexdigest() if path != "dir" else path for rel, path in entries.items()
        }
        return {rel: kind for rel, kind in tree.items() if kind != "dir" or "file" in self.fs.protocol}

    def seed(self) -> None:
        for top in self.paths:
            if "file" in self.fs.protocol:  # what a folder holds: the server serving it holds it open
                if inside := self.fs.ls(top, detail=False) if self.fs.exists(top) else []:
                    self.fs.rm(inside, recursive=True)
            elif self.fs.exists(top):
                self.fs.rm(top, recursive=True)
            self.fs.makedirs(top, exist_ok=True)
            self.fs.pipe_file(f"{top}/keep.txt", b"a root of an object store holds something\n")
        files = {f"{self.paths[0]}/tree/f{n:03d}.txt": body(n).encode() for n in range(self.files)}
        self.fs.pipe({**files, f"{self.paths[0]}/tree/gone.txt": b"to be deleted\n"})  # concurrent on S3

    def server(self) -> RawStdio:
        return RawStdio(self.roots[0], self.roots[1], *self.args, env=self.env)

    def seen_by(self, server: RawStdio) -> None:
        """The tree just seeded is what ``server`` serves (a call to a server that sees none is refused, all before)."""
        seen = server.call("get_file_info", path=f"{self.roots[0]}/tree/f000.txt")["result"]
        assert not seen.get("isError"), f"the server does not see the tree seeded: {seen}"

    def pending(self) -> list[str]:
        return [str(p) for p in self.state.rglob("pending/*")]


@pytest.fixture(params=["local", "local-copied", "s3"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    state_home = tmp_path / "state-home"
    if request.param.startswith("local"):
        paths = [str(tmp_path / "one"), str(tmp_path / "two")]
        fs = fsspec.filesystem("file", auto_mkdir=True)
        # The default state store: a private folder under $XDG_STATE_HOME for these mounts. A file
        # a change replaces is kept there by a second name; on a mount that refuses hard-linked
        # files, by a copy in the record (``vfs_mcp.changes.state.linked``): both forms are killed.
        args = ("--deny-hardlinked",) if request.param == "local-copied" else ()
        env = {"XDG_STATE_HOME": str(state_home)}
        yield Place(paths, fs, paths, args, env, state_home, FILES["file"], POINTS["file"])
        return
    endpoint = request.getfixturevalue("s3_endpoint")
    keys = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    fs = fsspec.filesystem("s3", endpoint_url=endpoint, key="testing", secret="testing", skip_instance_cache=True)
    bucket = f"crash-{uuid.uuid4().hex[:10]}"
    fs.mkdir(bucket)
    paths = [f"{bucket}/one", f"{bucket}/two"]
    state = tmp_path / "state"
    env = {"AWS_ENDPOINT_URL": endpoint, **keys}
    roots = [f"s3://{p}" for p in paths]
    yield Place(roots, fs, paths, ("--state", str(state)), env, state, FILES["s3"], POINTS["s3"])


SCENARIOS: dict[str, Callable[[Place], tuple[str, dict[str, Any]]]] = {
    "apply_patch": lambda place: ("apply_patch", {"patch": patch(place.files), "path": place.roots[0]}),
    "copy_file": lambda place: (
        "copy_file",
        {"source": f"{place.roots[0]}/tree", "destination": f"{place.roots[0]}/copy", "recursive": True},
    ),
    "move_file": lambda place: (
        "move_file",
        {"source": f"{place.roots[0]}/tree", "destination": f"{place.roots[1]}/tree"},
    ),
}


REPLACES = ("apply_patch",)
"""The scenarios whose change replaces files (kept by a second name or, on ``local-copied``, a
copy); a copy makes new files and a move renames them: the two forms are the same to them."""


@pytest.mark.parametrize(
    ("place", "scenario"),
    [
        (where, scenario)
        for where in ("local", "local-copied", "s3")
        for scenario in SCENARIOS
        if where != "local-copied" or scenario in REPLACES
    ],
    indirect=["place"],
)
def test_a_call_killed_at_any_point_leaves_every_tree_all_before_or_all_after_once_a_server_starts(
    place: Place, scenario: str
) -> None:
    tool, arguments = SCENARIOS[scenario](place)
    place.seed()
    before = place.snapshot()
    with place.server() as server:
        place.seen_by(server)  # as by the servers killed next, the ones of kill points before
        started = time.perf_counter()
        answer = server.call(tool, **arguments)
        seconds = time.perf_counter() - started
        assert not answer["result"].get("isError"), answer
        after = place.snapshot()
        assert after != before
        outcomes = _killed_at_every_point(place, server, lambda server: (tool, arguments), seconds, before, after)
    print(f"\n{scenario} on {place.fs.protocol}: {seconds * 1000:.0f} ms uninterrupted; kill points: {outcomes}")


def _killed_at_every_point(
    place: Place,
    server: RawStdio,
    call: Callable[[Any], tuple[str, dict[str, Any]]],
    seconds: float,
    before: Tree,
    after: Tree,
) -> list[str]:
    """For each of the place's ``points`` moments spread over ``seconds``: seed the place, start the call
    ``call`` gives on ``server`` (what it needs made first made there), SIGKILL the server at that
    moment, start another; the trees must be all ``before`` or all ``after``, with no temp file or
    record left under way. The outcome of each point.

    The server started after a kill is the one the next point's call is killed in (a server's
    start is most of a point's time, on a local folder), the first point's is the one that made the
    call uninterrupted: every recovery is a new server's, and every call is killed in a server that
    was serving while its tree was seeded again."""
    outcomes = []
    points = place.points
    with ExitStack() as servers:
        for point in range(points):
            place.seed()
            place.seen_by(server)
            tool, arguments = call(server)
            server.start_call(tool, **arguments)
            time.sleep(seconds * (point + 0.5) / points)
            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait()
            server = servers.enter_context(place.server())  # it finishes what the dead one left before it serves
            assert "result" in server.call("list_allowed_directories")
            now = place.snapshot()
            outcomes.append("before" if now == before else "after" if now == after else "mixed")
            assert now in (before, after), f"kill point {point + 1} of {points}: {_diff(before, after, now)}"
            assert _temp_files(now) == [], f"kill point {point + 1}: temp files left"
            assert place.pending() == [], f"kill point {point + 1}: records left under way"
    return outcomes


def _temp_files(tree: Tree) -> list[str]:
    return [rel for rel in tree if is_temp_name(rel.rsplit("/", 1)[-1].split(":")[-1])]


def _diff(before: Tree, after: Tree, now: Tree) -> str:
    as_before = sum(now.get(k) == v for k, v in before.items())
    as_after = sum(now.get(k) == v for k, v in after.items())
    return f"{as_before} of {len(before)} entries as before, {as_after} of {len(after)} as after"


def _through_the_timeline(place: Place, server: RawStdio, scenario: str) -> tuple[str, dict[str, Any]]:
    """Changes made through ``server`` for ``scenario``, and the undo to kill: a restore point
    that takes back a patch of every file and a later write ("restore": over 100 files); or
    the undo of that restore, which makes them all again ("redo")."""
    patched = server.call("apply_patch", patch=patch(place.files), path=place.roots[0])
    change_id = patched["result"]["_meta"]["vfs-mcp/result"]["change_id"]
    wrote = server.call("write_file", path=f"{place.roots[0]}/tree/extra.txt", content="written after the patch\n")
    assert not wrote["result"].get("isError"), wrote
    if scenario == "restore":
        return "undo", {"change_id": change_id, "and_after": True}
    restored = server.call("undo", change_id=change_id, and_after=True)
    return "undo", {"change_id": restored["result"]["_meta"]["vfs-mcp/result"]["change_id"]}


@pytest.mark.parametrize("scenario", ["restore", "redo"])
def test_a_restore_or_redo_killed_at_any_point_is_all_before_or_all_after_once_a_server_starts(
    place: Place, scenario: str
) -> None:
    place.seed()
    with place.server() as server:
        tool, arguments = _through_the_timeline(place, server, scenario)
        before = place.snapshot()
        started = time.perf_counter()
        answer = server.call(tool, **arguments)
        seconds = time.perf_counter() - started
        assert not answer["result"].get("isError"), answer
        after = place.snapshot()
        assert after != before and len(answer["result"]["_meta"]["vfs-mcp/result"]["restored"]) >= place.files
        outcomes = _killed_at_every_point(
            place, server, lambda server: _through_the_timeline(place, server, scenario), seconds, before, after
        )
    print(f"\n{scenario} on {place.fs.protocol}: {seconds * 1000:.0f} ms uninterrupted; kill points: {outcomes}")


KILLED_BEFORE_ITS_LINE = """
import os, signal, sys
from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.changes.state import LocalState, ObjectState
from vfs_mcp.changes.state.timeline import Timeline
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.patch import apply_patch
from vfs_mcp.ops.edits.replace import TextEdit, edit_file

folder, state, change, where = sys.argv[1:]
vfs = JailedFS(Jail([open_mount(MountSpec(folder))]))
changelog = changes.attach(vfs, log.ChangeLog(LocalState(state)))
changelog.checkpoint("start", [vfs.mounts[0].url])


def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


if where == "before its line":
    Timeline.append = killed
else:  # its line written, its record not yet filed
    real_append = Timeline.append
    def append(self, entry, *args, **kwargs):
        real_append(self, entry, *args, **kwargs)
        killed()
    Timeline.append = append
call = vfs.for_call(CallContext(recording=Recording(change)))
if change == "edit_file":
    edit_file(call, "a.txt", [TextEdit(oldText="alpha", newText="omega")])
else:
    patch = "".join(f"--- a/{n}.txt\\n+++ b/{n}.txt\\n@@ -1 +1 @@\\n-alpha\\n+omega\\n" for n in "ab")
    apply_patch(call, patch)
"""


@pytest.mark.parametrize("where", ["before its line", "after its line"])
@pytest.mark.parametrize("change", ["edit_file", "apply_patch"])
def test_a_change_killed_between_its_record_and_its_history_line_has_its_line_once_a_server_starts(
    tmp_path: Path, change: str, where: str
) -> None:
    """A SIGKILL once a change is made, before or after its line on the timeline is written:
    the next instance files its record and gives it its one line, so ``history`` shows it and
    an undo by its id takes it back (one step, its record written beside it; two, written before)."""
    folder, state = tmp_path / "served", tmp_path / "state"
    folder.mkdir()
    for name in "ab":
        (folder / f"{name}.txt").write_bytes(b"alpha\n")
    child = subprocess.run([sys.executable, "-c", KILLED_BEFORE_ITS_LINE, str(folder), str(state), change, where])
    assert child.returncode == -signal.SIGKILL
    assert (folder / "a.txt").read_bytes() == b"omega\n", "killed once the change was made"
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder)))]))
    changelog = changes.attach(vfs, log.ChangeLog(LocalState(str(state))))
    lines = [entry for entry in changelog.timeline.newest_first() if entry.checkpoint is None]
    assert [entry.tool for entry in lines] == [change], "the change has exactly one line in the history"
    assert lines[0].paths, lines[0]
    undo(vfs, changelog, None, change_id=lines[0].id)
    assert [(folder / f"{name}.txt").read_bytes() for name in "ab"] == [b"alpha\n", b"alpha\n"]


KILLED_BETWEEN_ITS_RECORD_AND_ITS_LINE = """
import os, signal, sys
from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.jail.context import CallContext, Recording
from vfs_mcp.changes.state import ObjectState, layout
from vfs_mcp.changes.state.timeline import Timeline
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.replace import TextEdit, edit_file

folder, state, endpoint = sys.argv[1:]
vfs = JailedFS(Jail([open_mount(MountSpec(folder))]))
changelog = changes.attach(vfs, log.ChangeLog(ObjectState(state, {"endpoint_url": endpoint})))
done = set()
real_append, real_write = Timeline.append, ObjectState.write


def second(which):
    # The change's second write, its line or its record, whichever comes second, is killed as it starts.
    if done and which not in done:
        os.kill(os.getpid(), signal.SIGKILL)
    done.add(which)


def append(self, entry, *args, **kwargs):
    second("line")
    return real_append(self, entry, *args, **kwargs)


def write(self, name, *args, **kwargs):
    if name.startswith(layout.CHANGES + "/"):
        second("record")
    return real_write(self, name, *args, **kwargs)


Timeline.append, ObjectState.write = append, write
edit_file(vfs.for_call(CallContext(recording=Recording("edit_file"))), "a.txt", [TextEdit(oldText="alpha", newText="omega")])
"""


def test_a_change_recorded_once_made_killed_between_its_record_and_its_line_is_never_undoable_and_unlisted(
    tmp_path: Path, s3_endpoint: str
) -> None:
    """On an object store a change of one step is recorded once it is made, in two writes: its
    line and its record. A SIGKILL between them never leaves a record that an undo finds but
    history does not show: its line is written first (the change was made: history says so; an
    undo by its id says it is not in the undo log)."""
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint, key="testing", secret="testing", skip_instance_cache=True)
    bucket = f"line-{uuid.uuid4().hex[:10]}"
    fs.mkdir(bucket)
    folder, state = tmp_path / "served", f"s3://{bucket}/state"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"alpha\n")
    script = KILLED_BETWEEN_ITS_RECORD_AND_ITS_LINE
    child = subprocess.run([sys.executable, "-c", script, str(folder), state, s3_endpoint])
    assert child.returncode == -signal.SIGKILL
    assert (folder / "a.txt").read_bytes() == b"omega\n", "killed once the change was made"
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder)))]))
    changelog = changes.attach(vfs, log.ChangeLog(ObjectState(state, {"endpoint_url": s3_endpoint})))
    lines = [entry.id for entry in changelog.timeline.newest_first()]
    recorded = [name.rsplit("/", 1)[-1].removesuffix(".rec") for name in fs.find(f"{bucket}/state/changes")]
    assert set(recorded) <= set(lines), "every change an undo can find has its line in the history"
    assert len(lines) == 1
