"""Benchmark data, written once per session, and the scale switch.

Full sizes by default; quick sizes when ``VFS_BENCH_QUICK=1`` or ``CI`` is set, so CI runs
the same suites in seconds. Every log file's line ``n`` (0-based) starts with ``n`` as ten
digits, so a benchmark can check it got the right lines, not just some lines. The search
benchmarks share one generated source tree (on disk, and copied into a memory mount) whose
planted lines and duplicate files are known, and objects on moto's S3 server reached through
a proxy that adds latency (``latency_proxy.py``).
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from builds import compile_working_tree
from latency_proxy import LatencyProxy

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
LEVELS = ("INFO ", "DEBUG", "WARN ", "ERROR")
MESSAGES = (
    "request handled",
    "cache miss for key user:profile, fetching from the primary store",
    "retrying upstream call after timeout",
    "connection pool at 80% capacity; consider raising max_connections",
    "ok",
)
LINES_PER_WRITE = 1 << 16


@dataclass(frozen=True)
class Scale:
    """How big each benchmark's data is; ``rounds`` is for the benchmarks that need a setup per round."""

    quick: bool
    big_log: int
    small_log: int
    lines: int
    offset: int
    edit_bytes: int
    rounds: int
    tree_files: int
    s3_objects: int
    s3_keys: int
    s3_rounds: int
    limit: int = 100
    tail: int = 100

    @property
    def big_log_label(self) -> str:
        return size_label(self.big_log)

    @property
    def small_log_label(self) -> str:
        return size_label(self.small_log)

    @property
    def edit_label(self) -> str:
        return size_label(self.edit_bytes)


FULL = Scale(
    quick=False,
    big_log=GiB,
    small_log=MiB,
    lines=10_000_000,
    offset=5_000_000,
    edit_bytes=10**7,
    rounds=5,
    tree_files=20_000,
    s3_objects=500,
    s3_keys=5_000,
    s3_rounds=3,
)
QUICK = Scale(
    quick=True,
    big_log=64 * MiB,
    small_log=MiB,
    lines=1_000_000,
    offset=500_000,
    edit_bytes=10**7,
    rounds=3,
    tree_files=2_000,
    s3_objects=100,
    s3_keys=1_000,
    s3_rounds=1,
)


def _quick_requested() -> bool:
    return os.environ.get("VFS_BENCH_QUICK", "") not in ("", "0") or bool(os.environ.get("CI"))


SCALE = QUICK if _quick_requested() else FULL


def pytest_report_header() -> str:
    how = "quick (VFS_BENCH_QUICK or CI is set)" if SCALE.quick else "full (VFS_BENCH_QUICK=1 for quick)"
    return f"vfs-mcp benchmark scale: {how}"


def size_label(size: int) -> str:
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size / 10**6:g} MB"


def log_line(n: int) -> str:
    return f"{n:010d} 2024-05-01T12:{n // 60 % 60:02d}:{n % 60:02d}Z {LEVELS[n % 4]} worker-{n % 8} {MESSAGES[n % 5]}\n"


def write_log(path: Path, *, lines: int | None = None, size: int | None = None) -> int:
    """Write whole log lines until ``lines`` lines or at least ``size`` bytes; returns the line count."""
    written = n = 0
    with path.open("wb") as out:
        while (lines is None or n < lines) and (size is None or written < size):
            stop = n + LINES_PER_WRITE if lines is None else min(lines, n + LINES_PER_WRITE)
            chunk = "".join(map(log_line, range(n, stop))).encode()
            if size is not None and written + len(chunk) > size:
                # The last chunk: only the lines needed to reach ``size``.
                cut = chunk.index(b"\n", size - written - 1) + 1
                chunk = chunk[:cut]
                stop = n + chunk.count(b"\n")
            out.write(chunk)
            written += len(chunk)
            n = stop
    return n


@dataclass(frozen=True)
class LogFile:
    name: str
    """Path relative to the mount root."""
    host: Path
    lines: int

    def text(self, start: int, stop: int) -> str:
        """Lines ``[start, stop)`` as they are in the file."""
        return "".join(map(log_line, range(start, min(stop, self.lines))))


@dataclass(frozen=True)
class EditCase:
    """A text file with one unique string to replace, and a way to put it back."""

    name: str
    host: Path
    original: bytes
    old: str
    new: str

    def restore(self) -> None:
        self.host.write_bytes(self.original)


@pytest.fixture(scope="session", autouse=True)
def compiled() -> None:
    """Every server a benchmark starts loads our bytecode, as an install would."""
    compile_working_tree()


@pytest.fixture(scope="session")
def scale() -> Scale:
    return SCALE


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("vfs-bench-data")
    yield folder
    # pytest keeps its last three temp dirs; gigabytes of logs should not be kept with them.
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def new_vfs(data_dir: Path) -> Callable[[], JailedFS]:
    """A fresh JailedFS over the data folder each call: empty caches, so no warm line index."""
    mounts = open_mounts([MountSpec(str(data_dir))])
    return lambda: JailedFS(Jail(mounts))


def _log(data_dir: Path, name: str, *, lines: int | None = None, size: int | None = None) -> LogFile:
    host = data_dir / name
    return LogFile(name, host, write_log(host, lines=lines, size=size))


@pytest.fixture(scope="session")
def big_log(data_dir: Path, scale: Scale) -> LogFile:
    return _log(data_dir, "big.log", size=scale.big_log)


@pytest.fixture(scope="session")
def small_log(data_dir: Path, scale: Scale) -> LogFile:
    return _log(data_dir, "small.log", size=scale.small_log)


@pytest.fixture(scope="session")
def numbered_log(data_dir: Path, scale: Scale) -> LogFile:
    return _log(data_dir, "numbered.log", lines=scale.lines)


EDIT_OLD, EDIT_NEW = "retries = 3", "retries = 5"


def seeded_for_edit(data: bytes) -> bytes:
    """``data`` with a line holding ``EDIT_OLD`` once, in its middle: what the edit rows replace."""
    middle = data.index(b"\n", len(data) // 2) + 1
    return data[:middle] + f"config: {EDIT_OLD}\n".encode() + data[middle:]


@pytest.fixture(scope="session")
def edit_case(data_dir: Path, scale: Scale) -> EditCase:
    host = data_dir / "edit.txt"
    write_log(host, size=scale.edit_bytes)
    original = seeded_for_edit(host.read_bytes())
    host.write_bytes(original)
    return EditCase("edit.txt", host, original, old=EDIT_OLD, new=EDIT_NEW)


def patch_case_text(lines: int, hunks: int, name: str = "big.txt") -> tuple[str, str]:
    """A file of ``lines`` numbered lines, and a unified diff (as ``git diff`` writes it, for
    ``name``) of ``hunks`` one-line changes spread evenly, 3 lines of context each."""
    step = lines // hunks
    original = "".join(f"line {n} of the file\n" for n in range(lines))
    body = []
    for k in range(hunks):
        n = k * step + step // 2
        body.append(f"@@ -{n - 2},7 +{n - 2},7 @@\n")
        body += [f" line {m} of the file\n" for m in range(n - 3, n)]
        body += [f"-line {n} of the file\n", f"+LINE {n} CHANGED\n"]
        body += [f" line {m} of the file\n" for m in range(n + 1, n + 4)]
    return original, f"--- a/{name}\n+++ b/{name}\n" + "".join(body)


# -- a source tree for grep and the analytics tools ------------------------------------------

RARE_LITERAL = "legacy_quota_override"
REGEX = r"deadline_ms = \d{5,}"
_LITERAL_LINE = "        legacy_quota_override = True  # remove after the billing migration\n"
_REGEX_LINE = '        export = self.client.fetch("/api/v1/export", deadline_ms = 120000)\n'
_WORDS = ("user", "order", "invoice", "session", "cache", "queue", "report", "tenant", "payment", "search")


@functools.cache
def _corpus() -> tuple[str, ...]:
    """200,000 lines of Python-like code (~41 bytes a line) for files to take slices of.

    It never holds the rare literal, and its ``deadline_ms`` values have three digits, so
    every line the regex matches is a planted one.
    """
    rng = random.Random(7)
    lines: list[str] = []
    while len(lines) < 200_000:
        word, n = rng.choice(_WORDS), rng.randrange(1000)
        lines += [
            f"class {word.capitalize()}Service{n}(BaseService):\n",
            f'    """Serve {word} requests for shard {n}."""\n',
            "\n",
            f"    def handle_{word}_{n}(self, request, timeout=30):\n",
            f'        result = self.client.fetch(f"/api/v1/{word}/{{request.id}}", deadline_ms = {rng.randrange(100, 999)})\n',
            "        if result.status != 200:\n",
            f'            raise UpstreamError(result.status, "{word} lookup failed")\n',
            "        for item in result.items:\n",
            f"            self.cache[item.key] = item.value  # {word} {rng.randrange(10**6)}\n",
            "        return result\n",
            "\n",
        ]
    return tuple(lines)


@dataclass(frozen=True)
class SourceTree:
    """``count`` source files in ``pkgNN/modNN/mNN.py`` (20 a folder), listed in path order.

    Sizes are log-normal like a real tree's (median ~10 KB, mean ~15 KB, a few up to 240 KB),
    so many unrelated files share a size. ``literal_hits`` files hold the rare literal once and
    ``regex_hits`` files a line the regex matches, each spread evenly and mid-file (so with
    context on both sides); ``duplicate_pairs`` files are byte copies of others. Every other
    file is unique: its first line names it.
    """

    count: int
    literal_hits: int = 20
    regex_hits: int = 200
    duplicate_pairs: int = 100

    def __post_init__(self) -> None:
        planted = set(self.literal_at) | set(self.regex_at)
        copied = set(self.copies) | set(self.copies.values())
        assert len(planted) == self.literal_hits + self.regex_hits and not planted & copied

    def _spread(self, n: int, first: int) -> range:
        return range(first, self.count, self.count // n) if n else range(0)

    @property
    def literal_at(self) -> range:
        return self._spread(self.literal_hits, self.count // max(1, self.literal_hits) // 2)

    @property
    def regex_at(self) -> range:
        return self._spread(self.regex_hits, 1)

    @functools.cached_property
    def copies(self) -> dict[int, int]:
        """Copy index -> the index it copies (half a step earlier)."""
        copy_at = self._spread(self.duplicate_pairs, self.count // max(1, self.duplicate_pairs) - 1)
        return {c: c - copy_at.step // 2 for c in copy_at}

    @staticmethod
    def path(i: int) -> str:
        return f"pkg{i // 1000:02d}/mod{i // 20 % 50:02d}/m{i % 20:02d}.py"

    def content(self, i: int) -> bytes:
        i = self.copies.get(i, i)
        corpus = _corpus()
        rng = random.Random(i)
        k = max(5, min(6000, int(rng.lognormvariate(5.5, 0.9))))
        start = rng.randrange(len(corpus) - k)
        body = list(corpus[start : start + k])
        if i in self.literal_at:
            body.insert(k // 2, _LITERAL_LINE)
        elif i in self.regex_at:
            body.insert(k // 2, _REGEX_LINE)
        return (f'"""Module {i} of the vfs-mcp search benchmarks."""\n' + "".join(body)).encode()

    def files(self) -> Iterator[tuple[str, bytes]]:
        for i in range(self.count):
            yield self.path(i), self.content(i)

    def literal_paths(self) -> list[str]:
        return [self.path(i) for i in self.literal_at]

    def regex_paths(self) -> list[str]:
        return [self.path(i) for i in self.regex_at]

    def duplicate_pairs_paths(self) -> list[tuple[str, str]]:
        return sorted((self.path(s), self.path(c)) for c, s in self.copies.items())


@dataclass(frozen=True)
class LocalTree:
    spec: SourceTree
    host: Path
    total_bytes: int

    @property
    def label(self) -> str:
        return f"{self.spec.count:,} files / {self.total_bytes / 10**6:.0f} MB"


@pytest.fixture(scope="session")
def source_tree(data_dir: Path, scale: Scale) -> LocalTree:
    # The proportion: 100 duplicate pairs in 20,000 files (10 in the quick 2,000).
    spec = SourceTree(scale.tree_files, duplicate_pairs=max(1, scale.tree_files // 200))
    root = data_dir / "src"
    total = 0
    for rel, data in spec.files():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        total += len(data)
    return LocalTree(spec, root, total)


@pytest.fixture(scope="session")
def tree_vfs(source_tree: LocalTree) -> JailedFS:
    """The source tree on a local mount (grep runs ripgrep here)."""
    return JailedFS(Jail(open_mounts([MountSpec(str(source_tree.host))])))


@pytest.fixture(scope="session")
def memory_tree_vfs(source_tree: LocalTree) -> JailedFS:
    """The same source tree copied into a memory mount (grep runs the Python engine here)."""
    return JailedFS(Jail(open_mounts([MountSpec("memory://tree", options={"seed_dir": str(source_tree.host)})])))


# -- S3: moto's server in its own process, reached through a latency proxy ------------------

S3_LATENCY = 0.020
S3_BUCKET = "vfs-bench"
S3_CREDENTIALS = {"key": "testing", "secret": "testing"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"moto_server did not listen on port {port} within {timeout} s")


@pytest.fixture(scope="session")
def moto_port() -> Iterator[int]:
    """moto's S3 server as a separate process (in-process it would share our GIL and hide concurrency)."""
    server = Path(sys.executable).with_name("moto_server")
    if not server.exists():
        pytest.skip("moto_server is not installed beside this Python (pip install 'moto[server]')")
    port = _free_port()
    proc = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_for_port(port, proc)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def s3_proxy(moto_port: int) -> Iterator[LatencyProxy]:
    """The way in to moto for everything timed: +20 ms a request, each request line recorded."""
    proxy = LatencyProxy("127.0.0.1", moto_port, S3_LATENCY)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


def s3fs_client(endpoint: str, **options: Any) -> Any:
    """A plain s3fs filesystem with no cached listings."""
    import s3fs

    return s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True, **S3_CREDENTIALS, **options)


@dataclass(frozen=True)
class S3Data:
    grep_prefix: str
    """``bucket/grep``: ``Scale.s3_objects`` files of a ``SourceTree``."""
    grep_tree: SourceTree
    tree_prefix: str
    """``bucket/tree``: ``Scale.s3_keys`` objects of 100 bytes, 50 a folder in ``dNN/sNN/`` (10 ``sNN`` a ``dNN``)."""
    tree_keys: int

    def new_vfs(self, prefix: str, endpoint: str) -> JailedFS:
        """A fresh mount (so no cached listing) of ``s3://<prefix>`` through ``endpoint``."""
        spec = MountSpec(f"s3://{prefix}", options={"endpoint_url": endpoint, **S3_CREDENTIALS})
        return JailedFS(Jail(open_mounts([spec])))


@pytest.fixture(scope="session")
def s3_data(moto_port: int, scale: Scale) -> S3Data:
    """Objects uploaded straight to moto (not through the proxy), concurrently by s3fs."""
    admin = s3fs_client(f"http://127.0.0.1:{moto_port}")
    admin.mkdir(S3_BUCKET)
    grep_tree = SourceTree(scale.s3_objects, regex_hits=0, duplicate_pairs=0)
    objects = {f"{S3_BUCKET}/grep/{rel}": data for rel, data in grep_tree.files()}
    keys = scale.s3_keys
    objects |= {
        f"{S3_BUCKET}/tree/d{i // 500:02d}/s{i // 50 % 10:02d}/f{i % 50:03d}.txt": b"x" * 100 for i in range(keys)
    }
    admin.pipe(objects)
    return S3Data(f"{S3_BUCKET}/grep", grep_tree, f"{S3_BUCKET}/tree", keys)
