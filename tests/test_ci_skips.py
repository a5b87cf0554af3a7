"""What a run could not test is said, and on CI it is a failure: a test that needs a tool the
repository installs (node's packages, HAProxy, uv, an emulator) and cannot have it skips with
the reason, the run's summary lists each skipped suite with its reasons, and under ``CI=true``
the same test fails."""

from __future__ import annotations

import emulators
import pytest

pytest_plugins = ["pytester"]

NEEDS_A_TOOL = """
from emulators import Unavailable, unavailable


def test_needs_haproxy():
    try:
        raise Unavailable("HAProxy comes from Debian's packages, and apt-get or dpkg is missing")
    except Unavailable as exc:
        unavailable(exc)


def test_runs():
    assert True
"""
SUMMARY = "pytest_terminal_summary = __import__('emulators').skipped_suites\n"


def test_a_missing_tool_skips_and_the_summary_names_the_suite_and_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(emulators, "ON_CI", False)
    pytester.makeconftest(SUMMARY)
    pytester.makepyfile(test_balancer=NEEDS_A_TOOL)
    run = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    run.assert_outcomes(passed=1, skipped=1)
    run.stdout.fnmatch_lines(
        [
            "*suites skipped, and why*",
            "test_balancer.py: 1 skipped: HAProxy comes from Debian's packages, and apt-get or dpkg is missing",
        ]
    )


def test_on_ci_a_missing_tool_fails_instead_of_skipping(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(emulators, "ON_CI", True)
    pytester.makeconftest(SUMMARY)
    pytester.makepyfile(test_balancer=NEEDS_A_TOOL)
    run = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    run.assert_outcomes(passed=1, failed=1)
    run.stdout.fnmatch_lines(["*CI=true, so what a test needs and cannot have is a failure, not a skip: HAProxy*"])
    assert "suites skipped" not in run.stdout.str()
