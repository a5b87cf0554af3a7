"""Write docs/tools.md and the tool schema table (vfs_mcp/server/schemas.json) from the live tool
schemas: `python scripts/gen_tool_reference.py`."""

from pathlib import Path

from vfs_mcp.cli.tool_docs import render
from vfs_mcp.server import schemas, tools

if __name__ == "__main__":
    schemas.TABLE.write_bytes(schemas.written(tools.generated_schemas()))
    print(f"wrote {schemas.TABLE}")
    target = Path(__file__).resolve().parent.parent / "docs" / "tools.md"
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
