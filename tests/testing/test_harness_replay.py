"""Recorded sessions replayed elsewhere, and tree diffs: through the public harness only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from vfs_mcp.cli.main import main
from vfs_mcp.testing import VfsClient, load_calls, local_server, memory_server, replay, tree_diff

pytestmark = pytest.mark.anyio

FILES = {"src/app.py": "print('hi')\n", "docs/big.md": "x" * 5000 + "\n", "notes.md": "one\ntwo\n"}


async def a_session(client: VfsClient) -> None:
    """Calls an agent might make, some of them failing, by relative and by absolute path."""
    await client.call_tool("read_file", {"path": "src/app.py"})
    await client.call_tool("read_file", {"path": client.fs.path("docs/big.md")})
    await client.call_tool("read_file", {"path": "src/missing.py"})
    await client.call_tool("list_directory", {"path": client.fs.root})
    await client.call_tool("edit_file", {"path": "notes.md", "edits": [{"oldText": "two", "newText": "2"}]})
    await client.call_tool("edit_file", {"path": "notes.md", "edits": [{"oldText": "two", "newText": "2"}]})
    await client.call_tool("write_file", {"path": "out/result.txt", "content": "done\n", "create_dirs": True})
    await client.call_tool("search_files", {"path": ".", "pattern": "*.py"})


async def recorded(tmp_path: Path) -> Path:
    session = tmp_path / "session.jsonl"
    async with memory_server(FILES) as client:
        await a_session(client)
        client.save_calls(session)
    return session


async def test_a_recording_is_one_json_line_per_call_with_the_root_written_as_a_placeholder(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in (await recorded(tmp_path)).read_text().splitlines()]

    assert [(line["tool"], line["outcome"]) for line in lines] == [
        ("read_file", "ok"),
        ("read_file", "ok"),
        ("read_file", "NOT_FOUND"),
        ("list_directory", "ok"),
        ("edit_file", "ok"),
        ("edit_file", "CONFLICT"),
        ("write_file", "ok"),
        ("search_files", "ok"),
    ]
    assert lines[1]["arguments"] == {"path": "${root}/docs/big.md"}
    assert lines[3]["arguments"] == {"path": "${root}"}
    assert all(line["digest"].startswith("sha256:") for line in lines)
    assert "memory://" not in (tmp_path / "session.jsonl").read_text()


async def test_a_session_recorded_on_memory_replays_on_a_local_folder_with_the_same_outcomes(tmp_path: Path) -> None:
    session = await recorded(tmp_path)
    async with local_server(FILES, folder=tmp_path / "work") as client:
        report = await replay(session, client, root=client.fs.root)
        after = client.fs.snapshot()

    assert report.same, str(report)
    assert str(report) == "8 calls replayed, every outcome the same"
    assert after == {**FILES, "notes.md": "one\n2\n", "out/result.txt": "done\n"}


async def test_a_strict_replay_on_the_same_kind_of_server_sees_the_same_results(tmp_path: Path) -> None:
    session = await recorded(tmp_path)
    async with memory_server(FILES, name="elsewhere") as client:
        report = await replay(session, client, root=client.fs.root, strict=True)
    assert report.same, str(report)


async def test_a_changed_server_is_reported_at_the_first_call_that_differs(tmp_path: Path) -> None:
    session = await recorded(tmp_path)
    async with memory_server(FILES, max_read_bytes=1000) as client:
        report = await replay(session, client, root=client.fs.root)

    assert not report.same and report.difference is not None
    assert report.difference.index == 1  # the read of docs/big.md, now over the limit
    assert (report.difference.recorded.outcome, report.difference.replayed.outcome) == ("ok", "TOO_LARGE")
    assert str(report).startswith('2 of 8 calls replayed; call 2 (read_file {"path": "${root}/docs/big.md"}): ')
    assert "outcome ok was TOO_LARGE" in str(report)
    assert len(client.calls) == 2  # it stopped there


def test_a_line_that_is_not_a_recorded_call_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tool": "read_file", "arguments": {}, "outcome": "ok", "digest": "sha256:0"}\n{"tool": 1}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl line 2 is not a recorded call"):
        load_calls(bad)


async def test_vfs_mcp_replay_runs_a_recording_on_a_folder_and_exits_1_at_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = await recorded(tmp_path)
    for rel, content in FILES.items():
        (tmp_path / "work" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "work" / rel).write_text(content)
    (tmp_path / "again").mkdir()
    for rel, content in FILES.items():
        (tmp_path / "again" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "again" / rel).write_text(content)

    assert await _in_thread(main, ["replay", str(session), "--", str(tmp_path / "work")]) == 0
    assert "8 calls replayed, every outcome the same" in capsys.readouterr().out
    args = ["replay", str(session), "--", str(tmp_path / "again"), "--max-read-bytes", "1000"]
    assert await _in_thread(main, args) == 1
    assert "outcome ok was TOO_LARGE" in capsys.readouterr().out
    assert await _in_thread(main, ["replay", str(tmp_path / "missing.jsonl")]) == 2


async def _in_thread(run: Any, argv: list[str]) -> Any:
    return await anyio.to_thread.run_sync(run, argv)


def test_a_tree_diff_lists_added_removed_and_changed_files_with_a_unified_diff() -> None:
    before = {"a.txt": "one\ntwo\n", "gone.txt": "x", "blob.bin": b"\x00\x01"}
    after = {"a.txt": "one\n2\n", "new.txt": "hello\n", "blob.bin": b"\x00\x02"}

    diff = tree_diff(before, after)

    assert diff and not tree_diff(after, dict(after))
    assert str(diff).splitlines() == [  # in path order
        "~ a.txt (8 bytes -> 6 bytes)",
        "    --- a/a.txt",
        "    +++ b/a.txt",
        "    @@ -1,2 +1,2 @@",
        "     one",
        "    -two",
        "    +2",
        "~ blob.bin (2 bytes -> 2 bytes)",
        "    binary content differs",
        "- gone.txt (1 byte)",
        "+ new.txt (6 bytes)",
    ]


async def test_client_fs_diff_shows_what_the_agent_changed() -> None:
    async with memory_server({"notes.md": "one\ntwo\n", "old.txt": "x"}) as client:
        before = client.fs.snapshot()
        await client.call_tool("edit_file", {"path": "notes.md", "edits": [{"oldText": "two", "newText": "2"}]})
        await client.call_tool("delete_path", {"path": "old.txt"})
        await client.call_tool("write_file", {"path": "new.txt", "content": "hi\n"})
        diff = client.fs.diff(before)

    assert (list(diff.added), list(diff.removed), list(diff.changed)) == (["new.txt"], ["old.txt"], ["notes.md"])
    assert "    -two" in diff.lines() and "    +2" in diff.lines()
    assert client.fs.snapshot() == {"notes.md": "one\n2\n", "new.txt": "hi\n"}
