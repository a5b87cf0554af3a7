"""Write docs/tools.md from the live tool schemas: `python scripts/gen_tool_reference.py`."""

from pathlib import Path

from vfs_mcp.cli.reference import render

if __name__ == "__main__":
    target = Path(__file__).resolve().parent.parent / "docs" / "tools.md"
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
