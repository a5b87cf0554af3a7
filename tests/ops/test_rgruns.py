"""A folder searched by ripgrep in several runs at once answers exactly as one sorted run:
the same matches, in the same order, pages and notes (``vfs_mcp.ops.search.ripgrep_runs``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.search import ripgrep, ripgrep_runs
from vfs_mcp.ops.search.grep import GrepQuery, GrepResult, grep_files

# Top-level names the ignore syntax must spell exactly (globs, comments, negations, spaces),
# beside ignore files further down, hidden files and links.
TREE = {
    "#hash/x.txt": "needle in #hash\n",
    "!bang/x.txt": "needle in !bang\n",
    "[ab]/x.txt": "needle in [ab]\n",
    "a/x.txt": "needle in a (the glob [ab] must not stand for it)\n",
    "star*/x.txt": "needle in star*\n",
    "trail /x.txt": "needle in a name with a trailing space\n",
    "back\\slash/x.txt": "needle in back\\slash\n",
    "é/x.txt": "needle in é\n",
    ".hidden/x.txt": "needle hidden\n",
    "top.txt": "needle at the top\nneedle again\n",
    "z/.gitignore": "*.log\n!keep.log\n",
    "z/drop.log": "needle dropped\n",
    "z/keep.log": "needle kept\n",
    "z/deep/deeper/x.txt": "one\nneedle deep\nthree\n",
    "zz.txt": "no match\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> JailedFS:
    for rel, text in TREE.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    os.symlink("top.txt", tmp_path / "link.txt")
    return JailedFS(Jail(open_mounts([MountSpec(str(tmp_path))])))


def searched(vfs: JailedFS, runs: int, **query: object) -> GrepResult:
    at_once = ripgrep_runs.RUNS
    ripgrep_runs.RUNS = runs
    try:
        return grep_files(vfs, ".", GrepQuery("needle", **query))  # type: ignore[arg-type]
    finally:
        ripgrep_runs.RUNS = at_once


@pytest.mark.parametrize("runs", [2, 3, 5, 100])
@pytest.mark.parametrize(
    "query",
    [
        {},
        {"respect_gitignore": True},
        {"respect_gitignore": True, "max_depth": 2},
        {"exclude": ["*.log", "a"]},
        {"before": 1, "after": 1, "limit": 3},
        {"before": 1, "after": 1, "limit": 3, "offset": 4},
        {"include": ["*.txt"]},
        {"include": ["*.txt"], "respect_gitignore": True},
        {"count_only": True},
    ],
    ids=repr,
)
def test_runs_at_once_answer_as_one_run(tree: JailedFS, runs: int, query: dict[str, object]) -> None:
    one = searched(tree, 1, **query)
    assert one.engine == "ripgrep" and (one.matches or one.counts)

    assert searched(tree, runs, **query) == one


def test_a_folder_is_cut_into_runs_of_its_top_level_names_in_ripgreps_order(tmp_path: Path) -> None:
    for name in ("b", "a", "B", "a.b", "a-c", "é"):
        (tmp_path / name).mkdir()

    cut = ripgrep_runs.chunks(str(tmp_path), include_globs=False)

    assert cut is not None and [name for run in cut for name in run] == ["B", "a", "a-c", "a.b", "b", "é"]
    assert len(cut) == ripgrep_runs.RUNS


@pytest.mark.parametrize("name", [".gitignore", ".ignore", ".rgignore"])
def test_a_folder_with_an_ignore_file_at_its_top_is_searched_in_one_run(tmp_path: Path, name: str) -> None:
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
    (tmp_path / name).write_text("a/\n")

    assert ripgrep_runs.chunks(str(tmp_path), include_globs=False) is None


def test_a_flat_folder_is_searched_in_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ripgrep_runs, "MAX_NAMES", 8)
    for n in range(9):
        (tmp_path / f"f{n}.txt").write_text("x\n")
    assert ripgrep_runs.chunks(str(tmp_path), include_globs=False) is None

    (tmp_path / "f0.txt").unlink()
    assert ripgrep_runs.chunks(str(tmp_path), include_globs=False) is not None


def test_include_globs_and_unspellable_names_leave_one_run(tmp_path: Path) -> None:
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
    assert ripgrep_runs.chunks(str(tmp_path), include_globs=True) is None

    (tmp_path / "new\nline").mkdir()
    assert ripgrep_runs.chunks(str(tmp_path), include_globs=False) is None


def test_ignore_rules_spell_each_name_literally() -> None:
    rules = ripgrep_runs.ignore_rules(["#x", "!y", "[ab]", "s*", "t ", "b\\s"])

    assert rules == "/*\n!/\\#x\n!/\\!y\n!/\\[ab\\]\n!/s\\*\n!/t\\ \n!/b\\\\s\n"


def test_a_full_page_stops_every_run(tree: JailedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[ripgrep_runs.Runs] = []
    real = ripgrep_runs.Runs

    def kept(*args: object) -> ripgrep_runs.Runs:
        started.append(real(*args))  # type: ignore[arg-type]
        return started[-1]

    monkeypatch.setattr(ripgrep, "Runs", kept)
    result = searched(tree, 4, limit=1)

    assert result.has_more and len(result.matches) == 1
    assert started and all(proc.poll() is not None for proc in started[0]._procs)
