"""The issue's end-to-end rows (``side_by_side.py``) for the working tree alone, beside their
floors: what CI's quick tier runs (``./dev bench --against REV`` runs them beside another
build). The table is printed, its ratios never asserted; every answer is checked and every
server's peak memory held to 150 MB.
"""

from __future__ import annotations

import sys

import pytest
from conftest import SCALE
from side_by_side import FULL, QUICK, Build, compare


def test_the_issue_rows_beside_their_floors(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print()
        compare([Build("working tree", sys.executable)], QUICK if SCALE.quick else FULL)
