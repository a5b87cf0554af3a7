"""How ``./dev test`` hands out the suite (``--dist loadgroup``): a module listed in
``ONE_WORKER`` is one unit of work, so its costly module fixtures are built once; every other
test is a unit of its own; and every module the order lists is one the suite has."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import LONGEST_FIRST, ONE_WORKER, pytest_xdist_make_scheduler

TESTS = Path(__file__).parent


def test_a_one_worker_module_is_one_unit_and_any_other_test_its_own(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pytestconfig.option, "dist", "loadgroup")
    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"])  # as -n 2 spells it
    scheduler = pytest_xdist_make_scheduler(pytestconfig, None)
    bundle = ["tests/cli/test_bundle.py::test_a", "tests/cli/test_bundle.py::test_b[x]"]
    others = ["tests/ops/test_edit.py::test_a", "tests/ops/test_edit.py::test_b"]

    assert {scheduler._split_scope(nodeid) for nodeid in bundle} == {"tests/cli/test_bundle.py"}
    assert [scheduler._split_scope(nodeid) for nodeid in others] == others


@pytest.mark.parametrize("dist", ["load", "loadfile", "no"])
def test_other_ways_of_handing_out_keep_their_own_scheduler(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch, dist: str
) -> None:
    monkeypatch.setattr(pytestconfig.option, "dist", dist)
    assert pytest_xdist_make_scheduler(pytestconfig, None) is None


def test_every_module_the_order_names_is_in_the_suite() -> None:
    modules = {path.stem for path in TESTS.rglob("test_*.py")}
    assert set(LONGEST_FIRST) <= modules and set(ONE_WORKER) <= modules
    assert not set(LONGEST_FIRST) & set(ONE_WORKER)  # a one-worker module goes first anyway
