"""Memory in proportion to the reply, not to the request: the calls that once grew the server
by gigabytes, through the real CLI over stdio, each leave its peak RSS under 300 MB."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import RawStdio

pytestmark = pytest.mark.slow

PEAK_MB = 300
BIG = 10 * 1024 * 1024


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[RawStdio, Path]]:
    with RawStdio(tmp_path) as box:
        yield box, tmp_path


def test_reading_one_big_file_forty_times_stays_small(server: tuple[RawStdio, Path]) -> None:
    box, folder = server
    (folder / "big.txt").write_bytes(b"x" * 80 + b"\n" * (BIG // 81))
    answer = box.call("read_multiple_files", paths=["big.txt"] * 40)
    assert len(json.dumps(answer)) < 40 * BIG // 4
    assert peak_rss_mb(box.proc.pid) < PEAK_MB


def test_grep_with_wide_context_and_a_huge_result_limit_stays_small(server: tuple[RawStdio, Path]) -> None:
    box, folder = server
    (folder / "m.txt").write_text("m line\n" * 600_000)
    answer = box.call("grep_files", path=".", pattern="m", context_lines=100, max_results=100000)
    assert len(json.dumps(answer)) < 5 * 1024 * 1024
    assert peak_rss_mb(box.proc.pid) < PEAK_MB


def test_a_pinned_write_over_a_gigabyte_file_hashes_it_in_pieces(server: tuple[RawStdio, Path]) -> None:
    box, folder = server
    with open(folder / "huge.bin", "wb") as handle:
        handle.truncate(1024 * 1024 * 1024)  # sparse: a gigabyte of zeros that costs no disk
    digest = hashlib.sha256()
    with open(folder / "huge.bin", "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    answer = box.call("write_file", path="huge.bin", content="small now", expected_hash=digest.hexdigest())
    assert answer["result"]["isError"] is False, answer  # type: ignore[index]
    assert (folder / "huge.bin").read_text() == "small now"
    assert peak_rss_mb(box.proc.pid) < PEAK_MB


def test_copying_a_gigabyte_into_a_memory_mount_stops_at_its_limit(tmp_path: Path) -> None:
    with open(tmp_path / "huge.bin", "wb") as handle:
        handle.truncate(1024 * 1024 * 1024)  # sparse
    with RawStdio(tmp_path, "memory://scratch", "--memory-max-bytes", "64MiB") as box:
        answer = box.call("copy_file", source="huge.bin", destination="memory://scratch/huge.bin")
        small = box.call("write_file", path="memory://scratch/small.txt", content="fits")
        assert peak_rss_mb(box.proc.pid) < PEAK_MB
    assert answer["result"]["isError"] is True, answer  # type: ignore[index]
    assert answer["result"]["content"][0]["text"].startswith("TOO_LARGE"), answer  # type: ignore[index]
    assert small["result"]["isError"] is False, small  # type: ignore[index]
