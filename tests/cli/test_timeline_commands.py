"""A person's timeline commands, as typed in a shell in the folder an agent worked on: no
server, no agent — ``vfs-mcp history`` shows the ids, ``vfs-mcp undo NAME --and-after`` puts
the folder back, ``vfs-mcp undo <that undo's id>`` brings the agent's work back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from processes import stdio_params
from results import changed, ok

from vfs_mcp.changes import log

pytestmark = pytest.mark.anyio


def vfs_mcp(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vfs-mcp ARGS`` typed in ``folder`` (the test run's own state home, as every process here)."""
    return subprocess.run(
        [sys.executable, "-m", "vfs_mcp", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]},
        check=False,
    )


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_change_id_never_begins_with_a_dash_which_the_command_line_would_read_as_an_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drawn = iter(["-NYTYd5JX58eWEdjP4IxAw", "NYTYd5JX58eWEdjP4IxAw"])  # the first, drawn in a full run
    monkeypatch.setattr(log.secrets, "token_urlsafe", lambda size: next(drawn))
    assert log.new_id() == "NYTYd5JX58eWEdjP4IxAw"


async def test_a_person_puts_the_folder_back_and_then_the_agents_work_back_with_three_commands(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("print('hello')\n")
    (folder / "README.md").write_text("# project\n")
    before = tree(folder)
    marked = vfs_mcp(folder, "checkpoint", "before-agent")
    async with Client(stdio_params(str(folder))) as agent:
        edited = ok(
            await agent.call_tool(
                "edit_file", {"path": "src/app.py", "edits": [{"oldText": "hello", "newText": "goodbye"}]}
            )
        )
        changed(await agent.call_tool("write_file", {"path": "src/extra.py", "content": "x = 1\n"}))
        changed(await agent.call_tool("delete_path", {"path": "README.md"}))
        during = vfs_mcp(folder, "history")  # while the server serves the same store
    after = tree(folder)
    shown = vfs_mcp(folder, "history")
    preview = vfs_mcp(folder, "undo", "before-agent", "--and-after", "--dry-run")
    assert tree(folder) == after
    restored = vfs_mcp(folder, "undo", "before-agent", "--and-after")
    assert tree(folder) == before
    undo_id = re.search(r"this undo is change (\S+):", restored.stdout).group(1)  # type: ignore[union-attr]
    redone = vfs_mcp(folder, "undo", undo_id)
    again = vfs_mcp(folder, "undo", edited["change_id"])

    assert marked.returncode == 0 and "checkpoint before-agent is change" in marked.stdout
    assert during.returncode == shown.returncode == 0 and edited["change_id"] in during.stdout
    lines = shown.stdout.splitlines()
    assert [line.split()[2] for line in lines[:4]] == ["delete_path", "write_file", "edit_file", "checkpoint"]
    assert lines[2].startswith(edited["change_id"]) and "[checkpoint before-agent]" in lines[3]
    assert preview.returncode == 0 and "would undo checkpoint before-agent" in preview.stdout
    assert restored.returncode == 0 and "and 3 later changes" in restored.stdout
    assert redone.returncode == 0 and tree(folder) == after
    assert again.returncode == 1 and "undone already" in again.stderr
    assert vfs_mcp(folder, "undo").returncode == 2


async def test_history_of_a_path_and_an_unknown_name_as_a_person_types_them(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    async with Client(stdio_params(str(folder))) as agent:
        for name in ("a.txt", "b.txt"):
            changed(await agent.call_tool("write_file", {"path": name, "content": name}))
    only_a = vfs_mcp(folder, "history", "--path", "a.txt")
    unknown = vfs_mcp(folder, "undo", "no-such-point", "--and-after")
    assert only_a.returncode == 0 and "a.txt" in only_a.stdout and "b.txt" not in only_a.stdout
    assert unknown.returncode == 1 and "neither a change id nor a checkpoint" in unknown.stderr
