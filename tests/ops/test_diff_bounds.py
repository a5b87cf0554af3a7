"""Diffs of hostile size or shape (issue 37: each once ran for minutes, or answered 312 MiB) answer
within 30 s of CPU, in memory bounded by what they read and answer, never past the reply cap,
and say what they leave out. Each call runs through a server in a child process
(``hostile_diffs.py``), on every store, its CPU time and its peak RSS (from the call's start)
measured.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKENDS
from hostile_diffs import peak_allowed_mb
from processes import run_limited

pytestmark = pytest.mark.slow

CAP = 1_000_000
"""The child server's ``--max-response-chars``."""
CPU_SECONDS = 30
CHILD = Path(__file__).with_name("hostile_diffs.py")
MB = 1 << 20
_buckets = itertools.count()


def hostile(case: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """The reply of ``case`` in a store of ``kind``, checked for what every case must hold."""
    if kind == "local":
        url, options = str(tmp_path), {}
    elif kind == "memory":
        url, options = "memory://hostile", {}
    else:
        url, options = f"s3://hostile-{next(_buckets)}/pre", {"endpoint_url": request.getfixturevalue("s3_endpoint")}
    done = run_limited([str(CHILD), case, url, json.dumps(options), str(CAP)], CPU_SECONDS, env=dict(os.environ))
    assert done.returncode == 0, f"the call did not answer within {CPU_SECONDS} s of CPU: {done.stderr[-1500:]}"
    reply: dict[str, Any] = json.loads(done.stdout)
    assert not reply["is_error"], reply["text"][:500]
    assert reply["text_chars"] <= CAP and reply["meta_chars"] <= CAP
    assert reply["peak_mb"] <= peak_allowed_mb(reply), (reply["peak_mb"], reply["inputs"])
    return reply


@pytest.mark.parametrize("kind", BACKENDS)
def test_replacing_a_line_that_every_other_line_of_200000_holds_diffs_at_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reply = hostile("replace_all", kind, tmp_path, request)
    assert reply["fields"]["changed"] is True
    assert "-old line\n+new line\n keep 2\n-old line\n+new line\n" in reply["text"]
    assert "[diff cut at 500,000 characters: " in reply["text"]  # what the rest adds and removes


@pytest.mark.parametrize("kind", BACKENDS)
def test_ten_thousand_line_edits_of_a_20000_line_file_diff_at_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reply = hostile("line_edits", kind, tmp_path, request)
    assert reply["fields"]["applied"] == 10_000
    assert "-line 0\n+new 1\n line 1\n-line 2\n+new 3\n" in reply["text"]


@pytest.mark.parametrize("kind", BACKENDS)
def test_comparing_200000_lines_with_crlf_on_every_other_one_finds_those_lines(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reply = hostile("crlf", kind, tmp_path, request)
    assert (reply["fields"]["added"], reply["fields"]["removed"]) == (100_000, 100_000)
    assert "not matched one by one" not in reply["text"]
    assert reply["fields"]["cut"].startswith("[diff cut at 500,000 characters: ")


@pytest.mark.parametrize("kind", BACKENDS)
def test_comparing_files_of_repeated_lines_finds_the_600_changed_ones(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reply = hostile("repeated", kind, tmp_path, request)
    assert 590 <= reply["fields"]["added"] == reply["fields"]["removed"] <= 600
    assert reply["fields"]["cut"] is None


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_comparing_two_50_mib_files_that_differ_on_every_line_answers_within_the_reply_cap(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reply = hostile("every_line", kind, tmp_path, request)
    lines = 50 * MB // 64
    assert (reply["fields"]["added"], reply["fields"]["removed"]) == (lines, lines)
    assert reply["fields"]["cut"].startswith("[diff cut at 500,000 characters: ")
