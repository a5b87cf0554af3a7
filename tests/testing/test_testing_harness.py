"""The test harness (docs/testing-agents.md), used exactly as its users use it: everything comes from ``vfs_mcp.testing``.

The plugin's fixtures have their own module (test_testing_plugin.py); the guide's examples run in
test_docs_examples.py.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import vfs_mcp.testing
from vfs_mcp.profiles.results import data_of
from vfs_mcp.testing import (
    Person,
    ToolCall,
    Version,
    connect,
    load_dir,
    local_fs,
    local_server,
    memory_fs,
    memory_server,
    moto_s3,
    s3_server,
)

pytestmark = pytest.mark.anyio


async def test_memory_server_asks_its_person_before_destroying() -> None:
    person = Person("decline")
    async with memory_server({"build/a.o": "x", "notes.md": "old\n"}, confirm="destructive", answer=person) as client:
        declined = await client.call_tool("write_file", {"path": "notes.md", "content": "new\n"})
        person.answer = "accept"
        accepted = await client.call_tool("write_file", {"path": "notes.md", "content": "new\n"})

        assert declined.is_error and client.calls[0].code == "DECLINED"
        assert not accepted.is_error and client.fs.read_text("notes.md") == "new\n"
    assert len(person.asked) == 2 and "write over memory://workspace/notes.md" in person.asked[0]


async def test_a_person_may_decide_by_the_question() -> None:
    person = Person(decide=lambda question: "accept" if "/tmp/" in question else "cancel")
    async with memory_server({"tmp/a": "1", "src/b": "2"}, confirm="destructive", answer=person) as client:
        await client.call_tool("delete_path", {"path": "tmp", "recursive": True})
        await client.call_tool("delete_path", {"path": "src", "recursive": True})

        assert client.fs.snapshot() == {"src/b": "2"}
        assert [call.code for call in client.calls] == [None, "DECLINED"]


async def test_the_spec_example_reads_a_seeded_file() -> None:
    async with memory_server({"src/app.py": "print('hi')\n"}, profile="default") as client:
        result = await client.call_tool("read_file", {"path": "src/app.py"})

    assert not result.is_error
    assert result.content[0].text == "print('hi')\n"  # type: ignore[union-attr]
    assert isinstance(client, Client)


async def test_snapshot_shows_what_the_agent_changed_and_nothing_else() -> None:
    seed = {"src/app.py": "pritn('hi')\n", "README.md": "# demo\n", "logo.png": b"\x89PNG\r\n\x1a\n\xff"}
    async with memory_server(seed) as client:
        assert client.fs.snapshot() == seed
        await client.call_tool("edit_file", {"path": "src/app.py", "edits": [{"oldText": "pritn", "newText": "print"}]})
        await client.call_tool("write_file", {"path": "notes/todo.txt", "content": "ship\n", "create_dirs": True})
        await client.call_tool("delete_path", {"path": "README.md"})
        await client.call_tool("create_directory", {"path": "empty"})

        assert client.fs.snapshot() == {
            "logo.png": b"\x89PNG\r\n\x1a\n\xff",  # not UTF-8: stays bytes
            "notes/todo.txt": "ship\n",
            "src/app.py": "print('hi')\n",
        }
        assert client.fs.snapshot("src") == {"app.py": "print('hi')\n"}
        assert client.fs.snapshot("notes", text=False) == {"todo.txt": b"ship\n"}


async def test_every_call_is_recorded_with_its_arguments_outcome_and_error_code() -> None:
    async with memory_server({"a.txt": "alpha\n"}) as client:
        arguments = {"path": "a.txt"}
        await client.call_tool("read_file", arguments)
        arguments["path"] = "changed after the call"
        await client.call_tool("read_file", {"path": "missing.txt"})
        await client.call_tool("read_file", {"path": 42})
        with pytest.raises(MCPError, match="no tool named 'no_such_tool'"):  # -32602: a protocol error
            await client.call_tool("no_such_tool", {})
        await client.session.call_tool("get_file_info", {"path": "a.txt"})  # around Client.call_tool

        calls = client.calls

    assert [c.tool for c in calls] == ["read_file", "read_file", "read_file", "no_such_tool", "get_file_info"]
    ok, missing, bad_argument, unknown, info = calls
    assert ok == ToolCall(
        tool="read_file",
        arguments={"path": "a.txt"},
        is_error=False,
        code=None,
        text=ok.text,
        structured=ok.structured,
        reads=(("memory://workspace/a.txt", Version(sha256=hashlib.sha256(b"alpha\n").hexdigest())),),
    )
    assert ok.text.startswith("alpha\n\n[memory://workspace/a.txt: 6 bytes")  # the text, then a line about it
    assert ok.structured is not None and ok.structured["path"] == "memory://workspace/a.txt"
    assert (missing.is_error, missing.code) == (True, "NOT_FOUND")
    assert missing.text.startswith("NOT_FOUND: ") and "missing.txt" in missing.text
    assert (bad_argument.code, bad_argument.arguments) == ("INVALID_ARGUMENT", {"path": 42})
    assert (unknown.is_error, unknown.code) == (True, "INVALID_ARGUMENT") and "no_such_tool" in unknown.text
    assert not info.is_error and info.structured is not None and info.structured["type"] == "file"


async def test_calls_from_another_client_of_the_same_server_are_recorded_too() -> None:
    async with memory_server({"a.txt": "x"}) as client, Client(client.server) as other:
        await other.call_tool("read_file", {"path": "a.txt"})
        assert [c.tool for c in client.calls] == ["read_file"]


async def test_fs_reaches_the_files_the_tools_see_in_both_directions() -> None:
    async with memory_server() as client:
        fs = client.fs
        fs.write("docs/guide.md", "# Guide\n")
        fs.mkdir("empty/inner")
        listing = await client.call_tool("directory_tree", {"path": "."})
        assert "guide.md" in str(data_of(listing))
        assert "inner" in str(data_of(listing))

        await client.call_tool("write_file", {"path": "docs/guide.md", "content": "# Changed\n"})
        assert fs.read_text("docs/guide.md") == "# Changed\n"
        assert fs.read_bytes(fs.path("docs/guide.md")) == b"# Changed\n"  # named as the tools name it
        assert fs.path("docs/guide.md") == "memory://workspace/docs/guide.md"
        assert fs.root == "memory://workspace"
        assert fs.exists("docs") and fs.isdir("docs") and not fs.isdir("docs/guide.md")

        fs.remove("docs")
        assert not fs.exists("docs/guide.md")
        result = await client.call_tool("read_file", {"path": "docs/guide.md"})
        assert client.calls[-1].code == "NOT_FOUND", result


async def test_fs_refuses_paths_outside_its_mount() -> None:
    fs = memory_fs({"a.txt": "x"})
    for outside in ("../a.txt", "a/../../b", "/etc/passwd", "s3://bucket/a.txt", "memory://other/a.txt"):
        with pytest.raises(ValueError, match="mount"):
            fs.read_bytes(outside)
    assert fs.read_text("./a.txt") == fs.read_text("memory://workspace/a.txt") == "x"
    with pytest.raises(IsADirectoryError):
        fs.write("", "x")
    with pytest.raises(PermissionError):
        fs.remove(".")
    with pytest.raises(FileNotFoundError):
        fs.read_bytes("missing")


async def test_a_read_only_server_lists_no_write_tools_yet_the_test_can_still_seed_it() -> None:
    async with memory_server({"a.txt": "x"}, read_only=True) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "read_file" in tools
        assert tools.isdisjoint({"write_file", "edit_file", "delete_path", "move_file"})
        client.fs.write("b.txt", "set up by the test")
        assert (await client.call_tool("read_file", {"path": "b.txt"})).is_error is False


async def test_server_options_reach_the_server() -> None:
    files = {"big.txt": "x" * 100, "secret.env": "KEY=1\n", "small.txt": "y"}
    async with memory_server(files, max_read_bytes=50, deny=[".env", "*.env"]) as client:
        await client.call_tool("read_file", {"path": "big.txt"})
        await client.call_tool("read_file", {"path": "secret.env"})
        await client.call_tool("read_file", {"path": "small.txt"})
        assert [c.code for c in client.calls] == ["TOO_LARGE", "NOT_FOUND", None]

    async with memory_server(max_write_bytes=10) as client:
        await client.call_tool("write_file", {"path": "a.txt", "content": "x" * 11})
        assert client.calls[-1].code == "TOO_LARGE"
        assert client.fs.snapshot() == {}


async def test_unknown_options_and_profiles_are_refused_before_serving() -> None:
    with pytest.raises(TypeError, match="max_read_bytes"):
        connect(memory_fs(), max_read_byte=1)
    with pytest.raises(ValueError, match="unknown profile"):
        connect(memory_fs(), profile="nonsense")


async def test_seeding_from_a_local_folder_copies_regular_files_only(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('hi')\n")
    (project / "data.bin").write_bytes(b"\x00\xff")
    (tmp_path / "outside.txt").write_text("outside\n")
    (project / "link.txt").symlink_to(tmp_path / "outside.txt")
    (project / "linked_dir").symlink_to(tmp_path, target_is_directory=True)

    expected = {"data.bin": b"\x00\xff", "src/app.py": b"print('hi')\n"}
    assert load_dir(project) == expected
    async with memory_server(project) as client:
        assert client.fs.snapshot(text=False) == expected
    async with memory_server({**load_dir(project), "extra.txt": "more"}) as client:
        assert set(client.fs.snapshot()) == {"data.bin", "src/app.py", "extra.txt"}
    with pytest.raises(NotADirectoryError):
        load_dir(project / "data.bin")


async def test_local_server_uses_a_temporary_folder_and_removes_it(tmp_path: Path) -> None:
    async with local_server({"src/app.py": "print('hi')\n"}) as client:
        root = client.fs.root
        assert os.path.isfile(os.path.join(root, "src", "app.py"))
        result = await client.call_tool("read_file", {"path": os.path.join(root, "src", "app.py")})
        assert data_of(result) is not None
        assert data_of(result)["path"] == os.path.join(root, "src", "app.py")
    assert not os.path.exists(root)

    async with local_server({"a.txt": "x"}, folder=tmp_path / "kept") as client:
        await client.call_tool("write_file", {"path": "b.txt", "content": "y"})
    assert (tmp_path / "kept" / "b.txt").read_text() == "y"


async def test_one_mount_can_serve_several_clients_and_sit_beside_others(tmp_path: Path) -> None:
    shared = memory_fs({"a.txt": "x"})
    other = local_fs(tmp_path / "other", {"b.txt": "y"})
    async with connect(shared, extra=[other]) as first, connect(shared) as second:
        await first.call_tool("write_file", {"path": "new.txt", "content": "from first"})
        assert (await second.call_tool("read_file", {"path": "new.txt"})).is_error is False
        copied = await first.call_tool("copy_file", {"source": other.path("b.txt"), "destination": "b.txt"})
        assert not copied.is_error
        assert [c.tool for c in second.calls] == ["read_file"]  # each client has its own server
    assert shared.snapshot() == {"a.txt": "x", "b.txt": "y", "new.txt": "from first"}


async def test_s3_server_on_moto_behaves_like_memory() -> None:
    with moto_s3() as endpoint:
        async with s3_server(
            {"src/app.py": "print('hi')\n"}, bucket="harness-test", prefix="work", endpoint_url=endpoint
        ) as client:
            assert client.fs.root == "s3://harness-test/work"
            await client.call_tool("write_file", {"path": "out/result.txt", "content": "done\n", "create_dirs": True})
            await client.call_tool("read_file", {"path": "nope"})
            assert client.fs.snapshot() == {"out/result.txt": "done\n", "src/app.py": "print('hi')\n"}
            assert [c.code for c in client.calls] == [None, "NOT_FOUND"]


def test_all_is_exactly_the_public_api() -> None:
    defined = {
        name
        for name, value in vars(vfs_mcp.testing).items()
        if not name.startswith("_") and str(getattr(value, "__module__", "")).startswith("vfs_mcp.testing.")
    }
    # the two type aliases, the result readers of vfs_mcp.profiles.results, a read's version
    assert set(vfs_mcp.testing.__all__) == defined | {"Files", "Seed", "data_of", "error_of", "Version"}
