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
from side_by_side import FULL, QUICK, ROWS, Build, Data, PatchCase, calls, compare


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
