"""apply_patch beside the tools people apply patches with, on the same file and patch, in the
same run: 1,000 one-line hunks (3 lines of context each, a unified diff as ``git diff`` writes
it) on a 100,000-line file (quick: 100 hunks on 10,000 lines), against GNU ``patch`` and
``git apply``. Every round starts from the original file (restored outside the timing) and
every result is checked against what ``patch`` makes of it. Timings are reported, never
asserted (README: goal ≤ 2x ``patch``); ``test_apply_patch_ratio`` runs them alternating, on
this case and on ten times its hunks and lines. The call end to end over stdio is a row of
``side_by_side.py``. ``compare_files`` of the file before and after the patch is the diff of a
normal size (one line changed in a hundred), beside GNU ``diff -u``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import Scale, patch_case_text

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.diff.compare import compare_files
from vfs_mcp.ops.edits.patch import PatchResult, apply_patch


@dataclass(frozen=True)
class PatchCase:
    folder: Path
    original: bytes
    patched: bytes
    diff: str
    hunks: int

    @property
    def file(self) -> Path:
        return self.folder / "big.txt"

    def restore(self) -> None:
        self.file.write_bytes(self.original)


@pytest.fixture(scope="session")
def patch_case(data_dir: Path, scale: Scale) -> PatchCase:
    lines, hunks = (10_000, 100) if scale.quick else (100_000, 1_000)
    return made_case(data_dir / "patching", lines, hunks)


def made_case(folder: Path, lines: int, hunks: int) -> PatchCase:
    """A file of ``lines`` lines and a diff of ``hunks`` hunks in ``folder``, and the file as
    ``patch`` leaves it."""
    folder.mkdir()
    original, diff = patch_case_text(lines, hunks)
    (folder / "change.diff").write_text(diff)
    (folder / "big.txt").write_text(original)
    subprocess.run(["patch", "-s", "big.txt", "change.diff"], cwd=folder, check=True)
    patched = (folder / "big.txt").read_bytes()
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    return PatchCase(folder, original.encode(), patched, diff, hunks)


def group(case: PatchCase) -> str:
    lines = case.original.count(b"\n")
    return f"7 apply_patch: {case.hunks} hunks on {lines:,} lines vs patch, git apply (≤ 2x patch)"


def run(benchmark: Any, case: PatchCase, work: Any) -> None:
    benchmark.group = group(case)
    benchmark.pedantic(work, setup=case.restore, rounds=5, warmup_rounds=1)
    assert case.file.read_bytes() == case.patched


def test_apply_patch(benchmark: Any, patch_case: PatchCase) -> None:
    vfs = JailedFS(Jail(open_mounts([MountSpec(str(patch_case.folder))])))

    def ours() -> PatchResult:
        return apply_patch(vfs, patch_case.diff)

    run(benchmark, patch_case, ours)


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")
def test_gnu_patch_baseline(benchmark: Any, patch_case: PatchCase) -> None:
    run(benchmark, patch_case, lambda: subprocess.run(["patch", "-s", "big.txt", "change.diff"], cwd=patch_case.folder))


def test_git_apply_baseline(benchmark: Any, patch_case: PatchCase) -> None:
    run(benchmark, patch_case, lambda: subprocess.run(["git", "apply", "change.diff"], cwd=patch_case.folder))


def alternated(case: PatchCase, works: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    """Wall seconds of each work, ``rounds`` times, one after the other in each round (the
    load falls on all alike), each from the original file and checked against ``patch``'s."""
    timings: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(rounds):
        for name, work in works.items():
            case.restore()
            started = time.perf_counter()
            work()
            timings[name].append(time.perf_counter() - started)
            assert case.file.read_bytes() == case.patched
    return timings


@pytest.mark.parametrize("size", ["big", "huge"])
def test_apply_patch_ratio(patch_case: PatchCase, data_dir: Path, scale: Scale, size: str) -> None:
    """apply_patch (durable) beside ``patch`` (and ``git apply``) on the same file, alternating:
    min and median of each, apply_patch's CPU (its thread's), and the load. ``big``: the
    session's case; ``huge``: ten times its hunks and lines (full: 10,000 hunks on 1,000,000
    lines, 24 MB)."""
    case = patch_case if size == "big" else huge_case(data_dir, scale)
    vfs = JailedFS(Jail(open_mounts([MountSpec(str(case.folder))])))
    cpu: list[float] = []

    def ours() -> None:
        started = time.thread_time()
        apply_patch(vfs, case.diff)
        cpu.append(time.thread_time() - started)

    def tool(*command: str) -> Any:
        return lambda: subprocess.run(command, cwd=case.folder, check=True)

    works = {"apply_patch": ours, "patch": tool("patch", "-s", "big.txt", "change.diff")}
    if size == "big":  # git apply takes minutes a call on the huge case
        works["git apply"] = tool("git", "apply", "change.diff")
    timings = alternated(case, works, rounds=7 if size == "big" else 3)
    least = {name: min(times) for name, times in timings.items()}
    middle = {name: statistics.median(times) for name, times in timings.items()}
    lines = case.original.count(b"\n")
    print(
        f"\n{case.hunks:,} hunks on {lines:,} lines, load {os.getloadavg()[0]:.1f}: "
        + ", ".join(f"{name} {least[name] * 1000:.1f} ({middle[name] * 1000:.1f}) ms" for name in timings)
        + f"; apply_patch's CPU {min(cpu) * 1000:.1f} ({statistics.median(cpu) * 1000:.1f}) ms; "
        f"{least['apply_patch'] / least['patch']:.2f}x ({middle['apply_patch'] / middle['patch']:.2f}x) patch, min (median)"
    )


def huge_case(data_dir: Path, scale: Scale) -> PatchCase:
    """Ten times the session's case: its hunks and its lines."""
    lines, hunks = (100_000, 1_000) if scale.quick else (1_000_000, 10_000)
    return made_case(data_dir / "patching-huge", lines, hunks)


def compared(case: PatchCase) -> None:
    """The file as the patch leaves it (``patched.txt``), beside the original (restored)."""
    case.restore()
    (case.folder / "patched.txt").write_bytes(case.patched)


def compare_group(case: PatchCase) -> str:
    lines = case.original.count(b"\n")
    return f"7b compare_files: {case.hunks} changed lines of {lines:,} vs diff -u"


def test_compare_files(benchmark: Any, patch_case: PatchCase) -> None:
    compared(patch_case)
    vfs = JailedFS(Jail(open_mounts([MountSpec(str(patch_case.folder))])))
    benchmark.group = compare_group(patch_case)
    result = benchmark(lambda: compare_files(vfs, "big.txt", "patched.txt"))
    assert result.added == result.removed == patch_case.hunks and result.cut is None


@pytest.mark.skipif(shutil.which("diff") is None, reason="GNU diff is not installed")
def test_diff_u_baseline(benchmark: Any, patch_case: PatchCase) -> None:
    compared(patch_case)
    benchmark.group = compare_group(patch_case)
    done = benchmark(
        lambda: subprocess.run(["diff", "-u", "big.txt", "patched.txt"], cwd=patch_case.folder, capture_output=True)
    )
    assert done.stdout.count(b"\n+LINE ") == patch_case.hunks
