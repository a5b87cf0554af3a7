"""The issue's end-to-end rows for two builds in one session, alternating, beside their floors:
``./dev bench --against REV`` (``python benchmarks/side_by_side.py --against REV``).

Each build serves from a venv of its own that holds what a user's install holds
(``builds.py``: REV installed once; the working tree installed editable once, its bytecode
written at each run), and each round of a row starts a fresh server of each build in turn
(A, B, then B, A: the load hits both) through the smallest JSON-RPC client
(``stdio_server.py``, no SDK on our side, so the client is the same whatever build it
drives): spawn, initialize, tools/list, then the row's calls at once, with no pause that
would let the server finish its warm-up first. The first call of each server is reported
apart from the calls after it. Floors (``rg``, ``find``, ``cat``, ``sed``, ``patch``, the
SDK's import, a bare SDK tool's round trip and its durable edit) run in the same rounds. Every
answer is checked; timings are printed, never asserted. Peak memory is each row's server's
``VmHWM``.

Without ``--against`` the working tree runs alone against its floors, from ``.venv`` (the
quick tier CI runs: ``test_bench_side_by_side.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bare_server  # noqa: E402
from builds import built, compile_working_tree, working_tree  # noqa: E402
from conftest import REGEX, SourceTree, log_line, patch_case_text, seeded_for_edit, write_log  # noqa: E402
from stdio_server import StdioServer  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests"))  # the tests' installers of other servers
from emulators import npm_bin, pip_bin  # noqa: E402

MEMORY_BOUND = 150 * 10**6
HUGE_PATCH_MEMORY = 400 * 10**6
"""The second apply_patch row's bound: 280 MB in process (its 24 MB file as 1,000,000 lines, the
new bytes, the reply's diff of 10,000 hunks)."""
HUGE_PATCH_CONFIG = 'max_write_bytes = "64 MiB"\n'
"""The second apply_patch row's server config: its 24 MB result is over the default 16 MiB write
limit (a build without the ``max_write_bytes`` key refuses to start)."""
SLOW_CALL = 2.0
"""Seconds from which one call of a build stands for all (f37b77b's apply_patch took 15 s)."""
READ_BYTES = 10 * 10**6
EDIT_BYTES = 10**6
SMALL_FILES = 100
LINE_OFFSET, LINE_LIMIT, LOG_LINES = 500_000, 100, 1_000_000
OPTIONS = ("--max-read-bytes", str(4 * READ_BYTES))
GREP = {"path": "src", "pattern": REGEX, "is_regex": True, "context_lines": 2, "results_limit": 100}
GLOB = {"path": "src", "pattern": "**/m07.py", "max_results": 10000}
TREE = {"path": "src", "max_entries": 100_000}
"""The whole tree: 21,020 entries (the default depth of 3 reaches every file)."""
LINES = {"path": "numbered.log", "offset": LINE_OFFSET, "limit": LINE_LIMIT}
EDIT = {"path": "edit.txt", "edits": [{"oldText": "retries = 3", "newText": "retries = 5"}]}
EDIT_ROW = "edit 1 MB, durable, diff"


@dataclass(frozen=True)
class Scale:
    """How big the data is and how many rounds and calls each row makes."""

    tree_files: int
    patch_lines: int
    patch_hunks: int
    huge_lines: int
    huge_hunks: int
    """The second apply_patch row's file and patch (ten times the first's)."""
    rounds: int
    calls: int
    """Calls a server makes after its first (cheap rows make four times as many)."""


FULL = Scale(20_000, patch_lines=100_000, patch_hunks=1_000, huge_lines=1_000_000, huge_hunks=10_000, rounds=5, calls=5)
QUICK = Scale(2_000, patch_lines=10_000, patch_hunks=100, huge_lines=100_000, huge_hunks=1_000, rounds=1, calls=3)


@dataclass(frozen=True)
class PatchCase:
    """A file of ``patching/`` (``NAME.txt``, its original ``NAME.orig``), a patch of it, and
    the file as GNU ``patch`` leaves it."""

    name: str
    patch: str
    patched: bytes


@dataclass(frozen=True)
class Data:
    """The folder every server serves, and what the rows expect to find in it."""

    root: Path
    tree: SourceTree
    patches: dict[str, PatchCase]
    python: str = sys.executable
    """The interpreter the SDK's floors run in (the working tree's build)."""

    @property
    def log_text(self) -> str:
        return "".join(map(log_line, range(LINE_OFFSET, LINE_OFFSET + LINE_LIMIT)))


def write_data(root: Path, scale: Scale, python: str = sys.executable) -> Data:
    tree = SourceTree(scale.tree_files, duplicate_pairs=max(1, scale.tree_files // 200))
    for rel, content in tree.files():
        path = root / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    write_log(root / "ten.log", size=READ_BYTES)
    write_log(root / "edit.txt", size=EDIT_BYTES)
    (root / "edit.txt").write_bytes(seeded_for_edit((root / "edit.txt").read_bytes()))
    write_log(root / "numbered.log", lines=LOG_LINES)
    (root / "small").mkdir()
    for i in range(SMALL_FILES):
        (root / "small" / f"f{i:03d}.txt").write_text(f"small file {i}\n" * 20)
    folder = root / "patching"
    folder.mkdir()
    patches = {}
    for name, lines, hunks in (
        ("big", scale.patch_lines, scale.patch_hunks),
        ("huge", scale.huge_lines, scale.huge_hunks),
    ):
        original, diff = patch_case_text(lines, hunks, f"patching/{name}.txt")
        (folder / f"{name}.txt").write_text(original)
        (folder / f"{name}.orig").write_text(original)
        (folder / f"{name}.diff").write_text(diff)
        subprocess.run(["patch", "-s", f"{name}.txt", f"{name}.diff"], cwd=folder, check=True)
        patches[name] = PatchCase(name, diff, (folder / f"{name}.txt").read_bytes())
        shutil.copyfile(folder / f"{name}.orig", folder / f"{name}.txt")
    return Data(root, tree, patches, python)


# -- builds and what one round of a row measures -------------------------------------------------


@dataclass(frozen=True)
class Build:
    """A build of vfs-mcp (``python -m vfs_mcp`` in that interpreter), or another MCP server
    (``command``: a peer, given the data folder as its one root)."""

    label: str
    python: str = ""
    command: tuple[str, ...] = ()


class Refused(Exception):
    """A server would not start for a row (a config key its build does not take)."""


@dataclass
class Figures:
    """One build's (or a floor's) samples of a row, in seconds, and its servers' peak memory."""

    first: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    peak: int = 0
    parts: dict[str, list[float]] = field(default_factory=dict)
    """A floor's components, when it is a sum (the edit's)."""
    slow: bool = False
    """A call took over ``SLOW_CALL``: its first call stands for the build, no more rounds."""
    refused: str = ""
    """Why the build's server would not start for the row (it is left out of the row)."""

    def add(self, other: Figures) -> None:
        self.first += other.first
        self.times += other.times
        self.peak = max(self.peak, other.peak)
        self.slow = self.slow or other.slow
        for name, samples in other.parts.items():
            self.parts.setdefault(name, []).extend(samples)


def server_env() -> dict[str, str]:
    """No ``PYTHONPATH``: each interpreter serves its own build's ``vfs_mcp``."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@contextmanager
def started(build: Build, data: Data, config: str = "") -> Iterator[StdioServer]:
    """A server of ``build`` on the data, given ``config`` (TOML) as its ``--config`` file."""
    options: tuple[str, ...] = OPTIONS
    if config:
        path = data.root / "server.toml"  # in the served folder, outside the rows' paths
        path.write_text(config)
        options += ("--config", str(path))
    # Run from the data folder: ``-m`` puts the working folder first on the import path.
    command = [*build.command, str(data.root)] if build.command else None
    try:
        server = StdioServer(data.root, *options, python=build.python, command=command, cwd=data.root, env=server_env())
    except AssertionError as exc:  # it exited before answering initialize, saying why on stderr
        raise Refused(str(exc)) from exc
    try:
        yield server
    finally:
        server.close()


Check = Callable[[Data, dict[str, Any]], None]


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in result["content"] if b["type"] == "text")


def calls(
    tool: str,
    arguments: dict[str, Any] | Callable[[Data], dict[str, Any]],
    check: Check,
    *,
    many: int = 1,
    before: Callable[[Data], None] | None = None,
    after: Callable[[Data], None] | None = None,
    config: str = "",
) -> Callable[[Build, Data, Scale], Figures]:
    """A row that starts a server (with ``config`` as its config file, if any) and calls
    ``tool`` at once, then ``scale.calls * many`` times more; ``before`` runs ahead of each call
    (untimed), ``after`` once at the end. Every call must succeed (``StdioServer.call``)."""

    def measure(build: Build, data: Data, scale: Scale) -> Figures:
        figures = Figures()
        given = arguments(data) if callable(arguments) else arguments
        with started(build, data, config) as server:
            for n in range(1 + scale.calls * many):
                if before:
                    before(data)
                result = server.call(tool, **given)
                (figures.times if n else figures.first).append(server.elapsed)
                if not n:
                    check(data, result)
                if server.elapsed > SLOW_CALL:
                    figures.times += [] if n else [server.elapsed]
                    figures.slow = True
                    break
            figures.peak = server.peak_rss()
        if after:
            after(data)
        return figures

    return measure


def start(build: Build, data: Data, scale: Scale) -> Figures:
    """Spawn, initialize, tools/list answered: ``scale.calls`` fresh servers a round."""
    figures = Figures()
    for _ in range(scale.calls):
        started_at = time.perf_counter()
        with started(build, data) as server:
            figures.times.append(time.perf_counter() - started_at)
            assert any(tool["name"] == "read_file" for tool in server.tools)
            figures.peak = max(figures.peak, server.peak_rss())
    return figures


def lines_first(build: Build, data: Data, scale: Scale) -> Figures:
    """Only the first call of a fresh server (several servers a round)."""
    figures = Figures()
    for _ in range(scale.calls):
        with started(build, data) as server:
            result = server.call("read_file_lines", **LINES)
            figures.times.append(server.elapsed)
            check_lines(data, result)
            figures.peak = max(figures.peak, server.peak_rss())
    return figures


# -- answers checked -------------------------------------------------------------------------------


def check_read(data: Data, result: dict[str, Any]) -> None:
    assert result["content"][0]["text"].encode() == (data.root / "ten.log").read_bytes()


def check_grep(data: Data, result: dict[str, Any]) -> None:
    hits = min(100, len(data.tree.regex_paths()))
    assert text_of(result).count("deadline_ms = 120000") >= hits, text_of(result)[:500]


def glob_count(data: Data) -> int:
    return data.tree.count // 20  # one m07.py a folder


def check_glob(data: Data, result: dict[str, Any]) -> None:
    assert text_of(result).count("m07.py") == glob_count(data)


def check_small(data: Data, result: dict[str, Any]) -> None:
    text = text_of(result)
    assert all(f"small file {i}\n" in text for i in range(SMALL_FILES))


def check_lines(data: Data, result: dict[str, Any]) -> None:
    assert text_of(result).startswith(data.log_text)


def check_edit(data: Data, result: dict[str, Any]) -> None:
    assert b"retries = 5" in (data.root / "edit.txt").read_bytes()


def check_tree(data: Data, result: dict[str, Any]) -> None:
    text = text_of(result)
    assert text.count(".py\n") == data.tree.count and f", {data.tree.count} files" in text, text[-300:]


def patched(name: str) -> Check:
    def check(data: Data, result: dict[str, Any]) -> None:
        assert (data.root / "patching" / f"{name}.txt").read_bytes() == data.patches[name].patched

    return check


def check_nothing(data: Data, result: dict[str, Any]) -> None:
    pass


def seed_edit(data: Data) -> None:
    path = data.root / "edit.txt"
    path.write_bytes(path.read_bytes().replace(b"retries = 5", b"retries = 3", 1))


def restored(name: str) -> Callable[[Data], None]:
    def restore(data: Data) -> None:
        shutil.copyfile(data.root / "patching" / f"{name}.orig", data.root / "patching" / f"{name}.txt")

    return restore


# -- floors -----------------------------------------------------------------------------------------


def timed(work: Callable[[], object], times: int, before: Callable[[], object] | None = None) -> Figures:
    figures = Figures()
    for _ in range(times):
        if before:
            before()
        started_at = time.perf_counter()
        work()
        figures.times.append(time.perf_counter() - started_at)
    return figures


def command(*argv: str | Path, cwd: Path | None = None) -> Callable[[], object]:
    return lambda: subprocess.run([str(a) for a in argv], cwd=cwd, check=True, stdout=subprocess.PIPE)


def rg() -> str:
    return shutil.which("rg") or str(Path(sys.executable).with_name("rg"))


def floor_import(data: Data, scale: Scale) -> Figures:
    """The SDK's import, ended as the timed servers are (killed: no interpreter teardown)."""
    return timed(command(data.python, "-c", "import os, mcp.server; os._exit(0)"), scale.calls)


def floor_grep(data: Data, scale: Scale) -> Figures:
    return timed(command(rg(), "-n", "-C2", "-e", REGEX, data.root / "src"), scale.calls)


def floor_glob(data: Data, scale: Scale) -> Figures:
    return timed(command("find", data.root / "src", "-name", "m07.py"), scale.calls)


def floor_read(data: Data, scale: Scale) -> Figures:
    return timed(command("cat", data.root / "ten.log"), scale.calls)


def floor_small(data: Data, scale: Scale) -> Figures:
    files = [data.root / "small" / f"f{i:03d}.txt" for i in range(SMALL_FILES)]
    return timed(command("cat", *files), scale.calls * 4)


def floor_sed(data: Data, scale: Scale) -> Figures:
    first, last = LINE_OFFSET + 1, LINE_OFFSET + LINE_LIMIT
    return timed(command("sed", "-n", f"{first},{last}p;{last}q", data.root / "numbered.log"), scale.calls)


def floor_find(data: Data, scale: Scale) -> Figures:
    return timed(command("find", data.root / "src", "-printf", "%P %s\n"), scale.calls)


def floor_patch(name: str) -> Callable[[Data, Scale], Figures]:
    def floor(data: Data, scale: Scale) -> Figures:
        folder, restore = data.root / "patching", restored(name)
        run = command("patch", "-s", f"{name}.txt", f"{name}.diff", cwd=folder)
        return timed(run, scale.calls, lambda: restore(data))

    return floor


def bare_round_trip(data: Data, scale: Scale) -> Figures:
    """A bare SDK tool's round trip: a fresh ``bare_server.py``, called as the rows call ours."""
    return bare_calls(data, scale, "ping", {})


def bare_calls(
    data: Data, scale: Scale, tool: str, arguments: dict[str, Any], before: Callable[[Data], None] | None = None
) -> Figures:
    """``tool`` of a fresh ``bare_server.py``, called as the rows call ours (``before`` ahead of each call)."""
    figures = Figures()
    server = StdioServer(data.root, command=[data.python, str(HERE / "bare_server.py")], cwd=data.root)
    with server:
        for n in range(1 + scale.calls * 4):
            if before:
                before(data)
            server.call(tool, **arguments)
            (figures.times if n else figures.first).append(server.elapsed)
        figures.peak = server.peak_rss()
    return figures


def durable_edit(data: Data, scale: Scale) -> Figures:
    """The least a durable edit does (``bare_server.durable_edit``), in process."""
    path = data.root / "edit.txt"
    return timed(
        lambda: bare_server.durable_edit(path, "retries = 3", "retries = 5"), scale.calls * 4, lambda: seed_edit(data)
    )


def floor_edit(data: Data, scale: Scale) -> Figures:
    """The edit's end-to-end floor: a bare SDK tool whose body is the durable edit
    (``bare_server.py``'s ``edit``), called as the row calls ours, the file seeded before each
    call. Its parts beside it: a bare tool's round trip, the durable edit in process, and their
    sum, per sample the round trip plus the edit's minimum (the row's floor until 2026-12-03: a
    sum of parts, one of them a minimum, that no server on the SDK reaches end to end)."""
    floor = bare_calls(data, scale, "edit", {"path": "edit.txt", "old": "retries = 3", "new": "retries = 5"}, seed_edit)
    trip, durable = bare_round_trip(data, scale), durable_edit(data, scale)
    floor.parts = {
        "bare SDK tool": trip.times,
        "durable edit in process": durable.times,
        "their sum": [t + min(durable.times) for t in trip.times],
    }
    return floor


# -- the rows ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    name: str
    measure: Callable[[Build, Data, Scale], Figures]
    floor_name: str = ""
    floor: Callable[[Data, Scale], Figures] | None = None
    goal: float | None = None
    """At most this many times the floor; None: at or under the other build."""
    memory: int = MEMORY_BOUND
    """The most a server of the row may hold (``VmHWM``), asserted."""


def apply_patch_row(name: str, title: str, memory: int = MEMORY_BOUND, config: str = "") -> Row:
    """``apply_patch`` of ``patching/NAME.diff`` beside GNU ``patch`` of it."""
    measure = calls(
        "apply_patch",
        lambda data: {"patch": data.patches[name].patch},
        patched(name),
        before=restored(name),
        after=restored(name),
        config=config,
    )
    return Row(title, measure, "GNU `patch`", floor_patch(name), 2.0, memory)


ROWS = (
    Row("start + tools/list", start, "`import mcp.server`", floor_import, 1.1),
    Row("regex grep ±2 lines", calls("grep_files", GREP, check_grep), "`rg -n -C2`", floor_grep, 1.2),
    Row("glob `**/m07.py`", calls("search_files", GLOB, check_glob), "`find -name`", floor_glob, 1.7),
    Row("full tree", calls("directory_tree", TREE, check_tree), "`find -printf`", floor_find),
    Row("read 10 MB", calls("read_file", {"path": "ten.log"}, check_read), "`cat`", floor_read),
    Row(
        "100 small reads",
        calls(
            "read_multiple_files", {"paths": [f"small/f{i:03d}.txt" for i in range(SMALL_FILES)]}, check_small, many=4
        ),
        "`cat` of the 100",
        floor_small,
    ),
    Row(
        EDIT_ROW,
        calls("edit_file", EDIT, check_edit, many=4, before=seed_edit, after=seed_edit),
        "a bare SDK tool making the durable edit",
        floor_edit,
        1.5,
    ),
    Row("lines 500,000-500,100, warm", calls("read_file_lines", LINES, check_lines, many=4), "`sed -n`", floor_sed),
    Row("lines 500,000-500,100, first call", lines_first, "`sed -n`", floor_sed, 1.3),
    # Each row's name holds its file's (big, huge), so ``-k`` picks one alone.
    apply_patch_row("big", "apply_patch big"),
    # A file of 1,000,000 lines (24 MB) is held as its lines to place 10,000 hunks: its own bound,
    # and a write limit above its result.
    apply_patch_row(
        "huge", "apply_patch huge, ten times the hunks and lines", memory=HUGE_PATCH_MEMORY, config=HUGE_PATCH_CONFIG
    ),
    Row(
        "trivial call",
        calls("list_allowed_directories", {}, check_nothing, many=4),
        "bare SDK tool",
        bare_round_trip,
    ),
)


# -- peers: other MCP filesystem servers, on the rows they answer -----------------------------------

Measure = Callable[[Build, Data, Scale], Figures]
REFERENCE = ("@modelcontextprotocol/server-filesystem", "2026.8.31")
SAFURRIER = ("iflow-mcp-safurrier-mcp-filesystem", "0.2.0")
SAFURRIER_PINS = ("mcp==1.12.4", "fastmcp==2.10.6", "pydantic==2.11.10")
"""Its own bounds (``fastmcp>=0.4``) let in FastMCP, MCP SDK and pydantic releases it cannot import with."""


def check_named_tree(data: Data, result: dict[str, Any]) -> None:
    """Every file of the tree named once, in whatever form the server draws a tree."""
    assert text_of(result).count(".py") == data.tree.count, text_of(result)[-300:]


def peer_edit(data: Data) -> dict[str, Any]:
    return {**EDIT, "path": str(data.root / EDIT["path"])}


def peer_tree(**options: Any) -> Callable[[Data], dict[str, Any]]:
    return lambda data: {"path": str(data.root / TREE["path"]), **options}


PEER_EDIT = calls("edit_file", peer_edit, check_edit, many=4, before=seed_edit, after=seed_edit)
PEERS: dict[str, tuple[Callable[[], Path], dict[str, Measure]]] = {
    # What ``--peers`` starts beside the builds: how each is installed (once, into the tests'
    # cache) and, by row name, the call it makes for that row (absolute paths under its root).
    "reference server": (
        lambda: npm_bin(REFERENCE, "mcp-server-filesystem"),
        {"full tree": calls("directory_tree", peer_tree(), check_named_tree), EDIT_ROW: PEER_EDIT},
    ),
    "safurrier": (
        lambda: pip_bin(SAFURRIER, "mcp-filesystem", SAFURRIER_PINS),
        {"full tree": calls("directory_tree", peer_tree(max_depth=10), check_named_tree), EDIT_ROW: PEER_EDIT},
    ),
}


def peers() -> list[Build]:
    """Every peer, installed if it is not yet."""
    return [Build(label, command=(str(install()),)) for label, (install, _) in PEERS.items()]


# -- running them -----------------------------------------------------------------------------------


@dataclass
class Result:
    row: Row
    builds: dict[str, Figures]
    floor: Figures


def run_rows(builds: list[Build], data: Data, scale: Scale, rows: tuple[Row, ...] = ROWS) -> Iterator[Result]:
    """Each row's rounds: every build once a round (the order reversed every other round), then
    its floor; yields a row's figures when its rounds are done."""
    for row in rows:
        figures = {build.label: Figures() for build in builds}
        taking_part = [build for build in builds if not build.command or row.name in PEERS[build.label][1]]
        floor = Figures()
        for r in range(scale.rounds):
            for build in taking_part if r % 2 == 0 else taking_part[::-1]:
                done = figures[build.label]
                if done.slow or done.refused:
                    continue
                measure = PEERS[build.label][1][row.name] if build.command else row.measure
                try:
                    done.add(measure(build, data, scale))
                except Refused as refused:
                    done.refused = str(refused)
            if row.floor:
                floor.add(row.floor(data, scale))
        yield Result(row, figures, floor)


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def cell(samples: list[float]) -> str:
    """``median (min)`` in ms."""
    return f"{ms(statistics.median(samples))} ({ms(min(samples))})" if samples else "—"


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def ratio(ours: list[float], other: list[float]) -> str:
    """``median / median (min / min)``."""
    if not ours or not other:
        return "—"
    return f"{median(ours) / median(other):.2f}x ({min(ours) / min(other):.2f}x)"


def verdict(result: Result, label: str, reference: str | None, peers: list[str]) -> str:
    """The row's goal and whether ``label``'s median meets it; beside peers, whether it is at or
    under the fastest of them."""
    ours = result.builds[label].times
    if not ours:
        return "—"
    said = []
    if result.row.goal is not None:
        met = median(ours) <= result.row.goal * median(result.floor.times)
        said.append(f"≤ {result.row.goal}x floor: {'met' if met else 'MISSED'}")
    elif reference is None:
        said.append("≤ the older build")
    elif result.builds[reference].times:
        said.append(f"≤ {reference}: {'met' if median(ours) <= median(result.builds[reference].times) else 'MISSED'}")
    timed = [peer for peer in peers if result.builds[peer].times]
    if timed:
        fastest = min(timed, key=lambda peer: median(result.builds[peer].times))
        met = median(ours) <= median(result.builds[fastest].times)
        said.append(f"≤ the fastest peer ({fastest}): {'met' if met else 'MISSED'}")
    return "; ".join(said)


def table(results: list[Result], builds: list[Build]) -> str:
    """The figures as a markdown table (ms, median (min)), then the first calls, the floors'
    parts and the builds a row's servers refused to start for."""
    labels = [b.label for b in builds]
    ours_and_older = [b.label for b in builds if not b.command]
    peers = [b.label for b in builds if b.command]
    reference, ours = (labels[0] if len(ours_and_older) > 1 else None), ours_and_older[-1]
    head = ["workload", *labels]
    head += [f"{label} / {labels[0]}" for label in labels[1:]]
    head += ["floor", f"{ours} / floor", "goal", "peak MB" + (f" ({' / '.join(labels)})" if len(labels) > 1 else "")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for result in results:
        cells = [result.row.name, *(cell(result.builds[label].times) for label in labels)]
        cells += [ratio(result.builds[label].times, result.builds[labels[0]].times) for label in labels[1:]]
        has_floor = bool(result.floor.times)
        cells.append(f"{result.row.floor_name} {cell(result.floor.times)}" if has_floor else "—")
        cells.append(ratio(result.builds[ours].times, result.floor.times) if has_floor else "—")
        cells.append(verdict(result, ours, reference, peers))
        cells.append(" / ".join(f"{result.builds[label].peak / 10**6:.0f}" for label in labels))
        lines.append("| " + " | ".join(cells) + " |")
    notes = ["", "First call of each server, the calls above are those after it (ms, median (min)):"]
    notes += [
        f"- {r.row.name}: " + ", ".join(f"{label} {cell(f.first)}" for label, f in r.builds.items() if f.first)
        for r in results
        if any(f.first for f in r.builds.values())
    ]
    notes += [
        f"- floor of {r.row.name}: " + ", ".join(f"{name} {cell(samples)}" for name, samples in r.floor.parts.items())
        for r in results
        if r.floor.parts
    ]
    notes += [
        f"- {r.row.name}: {label} would not start: {f.refused.splitlines()[0]}"
        for r in results
        for label, f in r.builds.items()
        if f.refused
    ]
    return "\n".join(lines + notes)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def compare(
    builds: list[Build], scale: Scale, rows: tuple[Row, ...] = ROWS, out: Callable[[str], None] = print
) -> list[Result]:
    """Writes the data, runs every row for ``builds`` and prints the table; returns the figures.
    Every server's peak memory is checked against its row's bound, 150 MB but for the largest
    patch (AssertionError)."""
    compile_working_tree()
    results = []
    with tempfile.TemporaryDirectory(prefix="vfs-bench-side-by-side-") as folder:
        data = write_data(Path(folder), scale, [b for b in builds if not b.command][-1].python)
        out(f"rounds: {scale.rounds}, each build alternating; {load()}")
        for result in run_rows(builds, data, scale, rows):
            results.append(result)
            out(f"  {result.row.name}: " + ", ".join(f"{k} {cell(v.times)}" for k, v in result.builds.items()))
        out(f"{load()}\n\n{table(results, builds)}")
    over = [(r.row.name, k, v.peak) for r in results for k, v in r.builds.items() if v.peak > r.row.memory]
    assert not over, f"peak server memory over the row's bound: {over}"
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument(
        "--against",
        metavar="REV",
        action="append",
        default=[],
        help="a git revision to build and run beside the working tree (again for more; the first is the reference)",
    )
    parser.add_argument("--no-working-tree", action="store_true", help="only the --against builds (two revisions, say)")
    parser.add_argument(
        "--peers", action="store_true", help="also other MCP filesystem servers, on the rows they answer (PEERS)"
    )
    parser.add_argument("--quick", action="store_true", help="quick sizes (also when VFS_BENCH_QUICK=1)")
    parser.add_argument("--rounds", type=int, help="rounds a row (default 5, quick 1)")
    parser.add_argument("-k", dest="only", help="only the rows whose name holds this text")
    parser.add_argument("--json", type=Path, help="also write every sample here (seconds)")
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("VFS_BENCH_QUICK", "") not in ("", "0")
    scale = QUICK if quick else FULL
    if args.rounds:
        scale = dataclasses.replace(scale, rounds=args.rounds)
    repo = HERE.parent
    builds = [Build(rev, str(built(rev, repo))) for rev in args.against]
    if not args.no_working_tree or not builds:
        # Beside another build, the working tree runs from a venv like a user's (not .venv's test tools).
        builds.append(Build("working tree", str(working_tree(repo)) if builds else sys.executable))
    if args.peers:
        builds += peers()
    results = compare(builds, scale, tuple(row for row in ROWS if (args.only or "") in row.name))
    if args.json:
        samples = {
            r.row.name: {"builds": {k: asdict(v) for k, v in r.builds.items()}, "floor": asdict(r.floor)}
            for r in results
        }
        args.json.write_text(json.dumps(samples, indent=1))


if __name__ == "__main__":
    main()
