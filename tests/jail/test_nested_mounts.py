"""The most specific mount decides what a path may do, however the path is spelt; the same
root configured twice refuses to start instead of picking one of its two policies."""

from __future__ import annotations

from pathlib import Path

import pytest
from jail.test_config import refusal
from mcp import Client

from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

PATCH = "*** Begin Patch\n*** Update File: {path}\n-ro\n+rw\n*** End Patch\n"


@pytest.mark.parametrize("spelling", ["ro/rel.txt", "./ro/../ro/rel.txt", "{outer}/ro/rel.txt"])
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"content": "rw\n"}),
        ("write_file", {"content": "rw\n", "append": True}),
        ("edit_file", {"edits": [{"oldText": "ro", "newText": "rw"}]}),
        ("edit_file_at_line", {"line_edits": [{"line_number": 1, "action": "replace", "content": "rw"}]}),
        ("delete_path", {}),
        ("apply_patch", {}),
        ("move_file", {"destination": "moved.txt"}),
    ],
)
async def test_a_read_only_mount_inside_a_writable_one_refuses_writes_however_the_path_is_spelt(
    tmp_path: Path, spelling: str, tool: str, args: dict[str, str]
) -> None:
    outer = tmp_path / "x"
    (outer / "ro").mkdir(parents=True)
    (outer / "ro" / "rel.txt").write_text("ro\n")
    mounts = [open_mount(MountSpec(str(outer))), open_mount(MountSpec(str(outer / "ro"), read_only=True))]
    path = spelling.format(outer=outer)
    arguments = {"patch": PATCH.format(path=path)} if tool == "apply_patch" else {"path": path, **args}
    if tool == "move_file":
        arguments = {"source": path, **args}
    async with Client(build_server(mounts, Settings())) as client:  # type: ignore[arg-type]
        result = await client.call_tool(tool, arguments)
    assert error_of(result)["code"] == "READ_ONLY", result.content[0].text
    assert (outer / "ro" / "rel.txt").read_text() == "ro\n"


@pytest.mark.parametrize("second", ["{root}", "{root}/", "file://{root}"])
def test_the_same_root_twice_in_a_config_refuses_to_start_naming_both(tmp_path: Path, second: str) -> None:
    text = f'[[mount]]\nroot = "{tmp_path}"\nread_only = true\n\n[[mount]]\nroot = "{second.format(root=tmp_path)}"\n'
    said = refusal(tmp_path, text)
    assert "[[mount]] 1" in said and "[[mount]] 2" in said and "same" in said
