"""Benchmark data, written once per session, and the scale switch.

Full sizes by default; quick sizes when ``VFS_BENCH_QUICK=1`` or ``CI`` is set, so CI runs
the same suites in seconds. Every file is a log whose line ``n`` (0-based) starts with ``n``
as ten digits, so a benchmark can check it got the right lines, not just some lines.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from vfs_mcp.filesystem import JailedFS
from vfs_mcp.jail import Jail
from vfs_mcp.mounts import MountSpec, open_mounts

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


FULL = Scale(quick=False, big_log=GiB, small_log=MiB, lines=10_000_000, offset=5_000_000, edit_bytes=10**7, rounds=5)
QUICK = Scale(quick=True, big_log=64 * MiB, small_log=MiB, lines=1_000_000, offset=500_000, edit_bytes=10**7, rounds=3)


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


@pytest.fixture(scope="session")
def edit_case(data_dir: Path, scale: Scale) -> EditCase:
    host = data_dir / "edit.txt"
    write_log(host, size=scale.edit_bytes)
    data = host.read_bytes()
    middle = data.index(b"\n", len(data) // 2) + 1
    original = data[:middle] + b"config: retries = 3\n" + data[middle:]
    host.write_bytes(original)
    return EditCase("edit.txt", host, original, old="retries = 3", new="retries = 5")
