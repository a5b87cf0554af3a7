"""docs/tools.md is generated from the code; this fails when they disagree."""

from pathlib import Path

from vfs_mcp.cli.tool_docs import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def test_the_committed_tool_reference_matches_the_code() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "run: python scripts/gen_tool_reference.py"
