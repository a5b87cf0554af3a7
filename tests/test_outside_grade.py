"""An outside grader's verdict: ``mcp-quality`` (PyPI, pinned) run on vfs-mcp and on the
reference server (``@modelcontextprotocol/server-filesystem``, npm, pinned) over the same folder.

Both JSON reports are kept in the test cache (``reports/mcp-quality/``; ``.ci/run`` prints
where). The families this project answers for are held to grades: contract A (its errors say
what to do next), cost B (the tool list's tokens), and neither below the reference's. The
security and safety findings it rejects for a filesystem server are listed, with the spec's
words, in docs/clients.md ("An outside grader"); the test checks that list names every kind of
finding the grader still makes, so a new one cannot pass unexplained.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from emulators import Unavailable, cache_dir, npm_bin, pip_bin, unavailable

pytestmark = pytest.mark.slow

MCP_QUALITY = ("mcp-quality", "0.7.0")
REFERENCE = ("@modelcontextprotocol/server-filesystem", "2026.8.31")
RUN_TIMEOUT = 600
DOCS = Path(__file__).resolve().parent.parent / "docs" / "clients.md"


def reports_dir() -> Path:
    """Where the reports are kept for a CI run to show."""
    return cache_dir() / "reports" / "mcp-quality"


def grade(grader: Path, server: list[str], name: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(grader), "run", shlex.join(server), "--security", "--safety", "--json"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.stdout.strip(), f"mcp-quality wrote no report (exit {done.returncode}): {done.stderr[-2000:]}"
    report: dict[str, Any] = json.loads(done.stdout)
    reports_dir().mkdir(parents=True, exist_ok=True)
    (reports_dir() / f"{name}.json").write_text(json.dumps(report, indent=1))
    return report


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """vfs-mcp's report and the reference's, on one folder."""
    try:
        grader = pip_bin(MCP_QUALITY, "mcp-quality")
        reference = npm_bin(REFERENCE, "mcp-server-filesystem")
    except Unavailable as exc:
        unavailable(exc)
    folder = tmp_path_factory.mktemp("graded")
    (folder / "notes.txt").write_text("hello\n")
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("print('hi')\n")
    ours = grade(grader, [str(Path(sys.executable).parent / "vfs-mcp"), str(folder)], "vfs-mcp")
    theirs = grade(grader, [str(reference), str(folder)], "reference")
    return ours, theirs


def family(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = report["families"][name]
    return found


def test_the_grader_rates_contract_a_and_cost_b_neither_below_the_reference(
    reports: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, theirs = reports
    contract, cost = family(ours, "contract"), family(ours, "cost")
    assert contract["score"] >= 90 and contract["metrics"]["error_recovery_affordance"] >= 90, contract["metrics"]
    assert cost["score"] >= 80, cost["metrics"]["toolset_tokens"]
    assert contract["score"] >= family(theirs, "contract")["score"]
    assert family(ours, "security")["score"] >= family(theirs, "security")["score"]
    assert family(ours, "safety")["score"] >= family(theirs, "safety")["score"]


def test_every_kind_of_finding_left_is_explained_in_the_docs(reports: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, _ = reports
    codes = {finding["code"] for fam in ours["families"].values() for finding in fam.get("findings", [])}
    docs = DOCS.read_text(encoding="utf-8")
    assert codes and all(f"`{code}`" in docs for code in codes), sorted(code for code in codes if code not in docs)
