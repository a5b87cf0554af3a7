"""The issue's end-to-end rows (``side_by_side.py``) for the working tree alone, beside their
floors: what CI's quick tier runs (``./dev bench --against REV`` runs them beside another
build). The table is printed, its ratios never asserted; every answer is checked and every
server's peak memory held to 150 MB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import SCALE, patch_case_text
from side_by_side import (
    FULL,
    HERE,
    PEERS,
    QUICK,
    ROWS,
    Build,
    Data,
    PatchCase,
    Row,
    calls,
    check_nothing,
    compare,
    run_rows,
    table,
)


def test_the_issue_rows_beside_their_floors(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print()
        compare([Build("working tree", sys.executable)], QUICK if SCALE.quick else FULL)


def test_a_row_whose_call_answers_an_error_fails_instead_of_timing_it(tmp_path: Path) -> None:
    original, diff = patch_case_text(1_000, 10, "patching/big.txt")
    (tmp_path / "patching").mkdir()
    (tmp_path / "patching" / "big.txt").write_text(original)
    data = Data(tmp_path, None, {"big": PatchCase("big", diff, b"")})  # type: ignore[arg-type]
    # The write limit from the row's config is under the patch's size: the server answers TOO_LARGE.
    row = calls("apply_patch", {"patch": diff}, lambda data, result: None, config="max_write_bytes = 100\n")
    with pytest.raises(AssertionError, match="TOO_LARGE"):
        row(Build("working tree", sys.executable), data, QUICK)


def test_each_apply_patch_row_is_picked_alone_by_a_part_of_its_name() -> None:
    names = [row.name for row in ROWS if "apply_patch" in row.name]
    assert len(names) == 2
    for name in names:
        picked = name.split(",")[0]
        assert [row.name for row in ROWS if picked in row.name] == [name]


def test_a_build_that_will_not_start_for_a_row_is_left_out_of_it_and_a_peer_runs_only_the_rows_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The working tree refuses a config key it does not take (as an older build refuses a newer
    # row's); the peer, a bare SDK server, answers only the row named for it.
    refused = Row("refused", calls("list_allowed_directories", {}, check_nothing, config="no_such_key = 1\n"))
    served = Row("served", calls("list_allowed_directories", {}, check_nothing))
    monkeypatch.setitem(PEERS, "bare", (lambda: HERE / "bare_server.py", {"served": calls("ping", {}, check_nothing)}))
    builds = [
        Build("working tree", sys.executable),
        Build("bare", command=(sys.executable, str(HERE / "bare_server.py"))),
    ]
    results = list(run_rows(builds, Data(tmp_path, None, {}), QUICK, (refused, served)))  # type: ignore[arg-type]
    first, second = ({label: bool(f.times) for label, f in r.builds.items()} for r in results)
    assert first == {"working tree": False, "bare": False} and second == {"working tree": True, "bare": True}
    assert "exited (2) before answering initialize" in results[0].builds["working tree"].refused
    shown = table(results, builds)
    assert "- refused: working tree would not start:" in shown
    assert "≤ the fastest peer (bare):" in shown.splitlines()[3]
