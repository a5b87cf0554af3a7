"""What a model pays for: the tool list of every profile, and a 10 kB file read in both views.

Figures, not timings (``pytest benchmarks -s -k tool_list`` prints them; README has them):

- model-visible: name + description + input schema of every tool, as compact JSON (what the
  Anthropic and OpenAI APIs take, on every turn); full: the ``tools/list`` result as sent.
  Beside the reference server (``@modelcontextprotocol/server-filesystem`` 2026.8.31), measured
  the same way through the MCP Inspector: 8,001 and 12,983 bytes for its 14 tools.
- reading a 10,240-byte source file (the first 10 kB of ``vfs_mcp/server/build.py``) with each
  profile's read tool: the structured-first view (``JSON.stringify(structuredContent)`` when
  present) and the content-first view (the text blocks), in characters.

The bounds asserted are the product's (tests/profiles/test_tool_list.py, tests/profiles/test_views.py hold the
same ones): default ≤ 9.5 kB (27 tools), official ≤ the
reference, a read ≤ 1.3x the file in either view.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp import Client
from mcp_types import ListToolsResult

from vfs_mcp import build_server
from vfs_mcp.cli.tool_docs import visible_bytes
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.profiles import PROFILES
from vfs_mcp.profiles.results import views
from vfs_mcp.server import sdk
from vfs_mcp.settings import Settings

REFERENCE = {"tools": 14, "visible": 8001, "full": 12983}
SOURCE = Path(__file__).resolve().parent.parent / "vfs_mcp" / "server" / "build.py"
READS = {
    "default": ("read_file", {"path": "app.py"}),
    "official": ("read_text_file", {"path": "app.py"}),
    "fs": ("fs_read_file", {"path": "app.py"}),
    "ide": ("file_read", {"uri": "APP_URI"}),
}


def sizes(profile: str) -> tuple[int, int, int]:
    server = build_server(open_mounts([MountSpec("memory://bench-tools")]), Settings(profiles=(profile,)))
    tools = sdk.registered_tools(server)
    listed = ListToolsResult(tools=anyio.run(server.list_tools))
    full = len(json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")))
    return len(tools), visible_bytes(tools), full


def read_views(profile: str, folder: Path) -> tuple[int, int]:
    tool, arguments = READS[profile]
    if "uri" in arguments:
        arguments = {"uri": (folder / "app.py").as_uri()}
    server = build_server(open_mounts([MountSpec(str(folder))]), Settings(profiles=(profile,)))

    async def call() -> tuple[str, str]:
        async with Client(server) as client:
            return views(await client.call_tool(tool, arguments))

    structured_first, content_first = anyio.run(call)
    return len(structured_first), len(content_first)


def test_tool_list_and_read_sizes_per_profile(tmp_path: Path) -> None:
    data = SOURCE.read_bytes()[:10_240]
    data = data[: data.rfind(b"\n") + 1]  # whole lines
    (tmp_path / "app.py").write_bytes(data)
    rows = ["profile    tools  model-visible  full tools/list  10 kB read: structured-first  content-first"]
    ref = REFERENCE
    rows.append(f"reference  {ref['tools']:>5}  {ref['visible']:>13,}  {ref['full']:>15,}")
    for profile in PROFILES:
        count, visible, full = sizes(profile)
        structured_first, content_first = read_views(profile, tmp_path)
        ratio = max(structured_first, content_first) / len(data)
        rows.append(
            f"{profile:<9}  {count:>5}  {visible:>13,}  {full:>15,}  "
            f"{structured_first:>27,}  {content_first:>13,}  ({ratio:.3f}x of {len(data):,} bytes)"
        )
        assert ratio <= 1.3, profile
        if profile == "default":
            assert visible <= 9_500 + 600  # all 29 tools: 27 in 9,500 bytes, the timeline's two in 600 more
        if profile == "official":
            assert visible <= ref["visible"]
    print("\n" + "\n".join(rows))
