"""The harness over a real checkout under review (``memory_server(overlay=...)``): the agent reads
the checkout and writes only to memory; ``client.fs.diff()`` and ``client.pending()`` show what it
would have changed; the checkout is untouched (its tree hash)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import tree_hash

from vfs_mcp.testing import memory_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    print('hi')\n")
    (root / "README.md").write_text("# repo\n")
    (root / "old").mkdir()
    (root / "old" / "notes.txt").write_text("stale\n")
    os.symlink("src/app.py", root / "app")
    return root


async def test_an_agent_on_a_checkout_under_review_changes_only_memory(checkout: Path) -> None:
    before = tree_hash(checkout)
    async with memory_server(overlay=checkout, files={"TODO.md": "- ship\n"}) as client:
        calls = [
            ("edit_file", {"path": "src/app.py", "edits": [{"oldText": "'hi'", "newText": "'hello'"}]}),
            ("write_file", {"path": "docs/guide.md", "content": "guide\n", "create_dirs": True}),
            ("delete_path", {"path": "old", "recursive": True}),
            ("move_file", {"source": "README.md", "destination": "docs/README.md"}),
            ("copy_file", {"source": "app", "destination": "main.py"}),
        ]
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            assert not result.is_error, result.content
        diff = client.fs.diff()
        pending = {item.path.removeprefix(f"{checkout}/"): item.status for item in client.pending()}

    assert tree_hash(checkout) == before
    assert sorted(diff.added) == ["TODO.md", "docs/README.md", "docs/guide.md", "main.py"]
    assert sorted(diff.removed) == ["README.md", "old/notes.txt"]
    assert list(diff.changed) == ["src/app.py"] and "+    print('hello')" in str(diff)
    assert pending == {
        "TODO.md": "added",
        "docs/README.md": "moved",
        "docs/guide.md": "added",
        "main.py": "added",
        "old": "deleted",
        "src/app.py": "modified",
    }


async def test_a_memory_mount_under_review_keeps_its_seed_and_shows_the_agents_changes() -> None:
    async with memory_server({"a.txt": "one\n"}, review=True) as client:
        await client.call_tool("write_file", {"path": "a.txt", "content": "two\n"})
        assert client.fs.read_text("a.txt") == "two\n"
        assert client.fs.under_review() is not None and client.fs.under_review().read_text("a.txt") == "one\n"  # type: ignore[union-attr]
        assert [(item.status, item.path) for item in client.pending()] == [("modified", "memory://workspace/a.txt")]


async def test_diff_without_a_snapshot_is_only_for_a_mount_under_review() -> None:
    async with memory_server({"a.txt": "one\n"}) as client:
        with pytest.raises(TypeError, match="needs the files before"):
            client.fs.diff()
