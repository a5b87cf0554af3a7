"""Contract tests of the core file tools (SPEC §3, §4 "Basic" and "Working directory").

Every test goes through the in-process MCP client, so it checks what a model sees: the
structured content, the text block, and error results with their stable codes. Tests on
``sandbox`` run on memory, local and s3 (moto's server); ``local_sandbox`` tests cover what
only a local disk has (atomic rename, modes, symlinks) or what does not depend on the
backend at all (tool metadata, argument validation). Related checks share one test: each
s3 sandbox costs a bucket, and the suite has to stay fast.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import results
from conftest import every_store
from mcp_types import CallToolResult
from results import changed, ok

import vfs_mcp
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.profiles.results import error_of

pytestmark = [pytest.mark.anyio, every_store]

READ_TOOLS = {
    "read_file",
    "read_multiple_files",
    "list_directory",
    "get_file_info",
    "list_allowed_directories",
    "change_directory",
    "get_working_directory",
}
WRITE_TOOLS = {"write_file", "create_directory", "move_file", "copy_file", "delete_path"}
CORE_TOOLS = READ_TOOLS | WRITE_TOOLS
DESTRUCTIVE_TOOLS = {"write_file", "move_file", "copy_file", "delete_path"}

MULTIBYTE = "añb€c😀d — ünïcødé ✓ " * 3 + "end"


# -- helpers ----------------------------------------------------------------------------


def text(result: CallToolResult) -> str:
    assert result.content, result
    return result.content[0].text


def assert_error(result: CallToolResult, code: str) -> str:
    """An error result with ``code``, its text one line that starts with the code; returns it."""
    line = results.assert_error(result, code)
    assert line.startswith(f"{code}: "), line
    assert "\n" not in line, f"error message is not one line: {line!r}"
    return line


def add_second_mount(sandbox: Any, name: str = "second") -> Mount:
    """A writable memory mount beside the sandbox's (add it before building the client)."""
    second = open_mount(MountSpec(f"memory://{name}"))
    sandbox.extra_mounts.append(second)
    return second


def second_put(mount: Mount, rel: str, data: bytes) -> None:
    mount.fs.pipe_file(mount.fs_path(rel), data)


def second_get(mount: Mount, rel: str) -> bytes:
    data: bytes = mount.fs.cat_file(mount.fs_path(rel))
    return data


def second_exists(mount: Mount, rel: str) -> bool:
    return bool(mount.fs.exists(mount.fs_path(rel)))


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def read_in_pages(client: Any, path: str, max_bytes: int, encoding: str = "utf-8") -> list[str]:
    """Follow next_offset_bytes from 0 to the end; returns the text of every page."""
    pages: list[str] = []
    offset = 0
    while True:
        assert len(pages) < 5000, "paging does not terminate"
        result = await client.call_tool(
            "read_file", {"path": path, "offset_bytes": offset, "max_bytes": max_bytes, "encoding": encoding}
        )
        meta = ok(result)
        pages.append(text(result))
        if not meta["has_more"]:
            assert meta["next_offset_bytes"] is None, meta
            return pages
        assert meta["next_offset_bytes"] > offset, f"window {max_bytes}: no progress from offset {offset}: {meta}"
        offset = meta["next_offset_bytes"]


# -- read_file ----------------------------------------------------------------------------


async def test_read_file_returns_the_whole_file_once_as_text_then_a_line_of_metadata(sandbox):
    body = "héllo\nwörld\n" + "unique-marker " * 40
    data = body.encode()
    sandbox.put("notes/a.txt", data)
    sandbox.put("empty.txt", b"")
    async with sandbox.client() as client:
        whole = await client.call_tool("read_file", {"path": sandbox.path("notes/a.txt")})
        relative = await client.call_tool("read_file", {"path": "notes/a.txt"})
        empty = await client.call_tool("read_file", {"path": sandbox.path("empty.txt")})
    meta = ok(whole)
    assert text(whole) == body
    assert len(whole.content) == 2 and whole.structured_content is None
    footer = whole.content[1].text
    assert f"{len(data)} bytes" in footer and hashlib.sha256(data).hexdigest() in footer
    assert "unique-marker" not in footer + json.dumps(meta), "the content must travel once"
    assert meta["path"] == sandbox.path("notes/a.txt")
    assert meta["encoding"] == "utf-8"
    assert meta["size"] == len(data)
    assert meta["offset_bytes"] == 0
    assert meta["bytes_read"] == len(data)
    assert meta["has_more"] is False
    assert meta["next_offset_bytes"] is None
    assert meta["sha256"] == hashlib.sha256(data).hexdigest()
    assert text(relative) == body
    assert ok(relative)["path"] == sandbox.path("notes/a.txt")
    assert text(empty) == ""
    assert ok(empty)["size"] == 0


async def test_read_file_byte_ranges_return_exact_slices_and_say_what_follows(sandbox):
    sandbox.put("digits.txt", "0123456789")
    path = sandbox.path("digits.txt")
    async with sandbox.client() as client:
        middle = await client.call_tool("read_file", {"path": path, "offset_bytes": 2, "max_bytes": 3})
        last = await client.call_tool("read_file", {"path": path, "offset_bytes": 7, "max_bytes": 100})
        head = await client.call_tool("read_file", {"path": path, "max_bytes": 4})
        tail = await client.call_tool("read_file", {"path": path, "offset_bytes": 6})
        past = await client.call_tool("read_file", {"path": path, "offset_bytes": 50, "max_bytes": 5})
    assert text(middle) == "234"
    assert {k: ok(middle)[k] for k in ("offset_bytes", "bytes_read", "size", "has_more", "next_offset_bytes")} == {
        "offset_bytes": 2,
        "bytes_read": 3,
        "size": 10,
        "has_more": True,
        "next_offset_bytes": 5,
    }
    assert text(last) == "789"
    assert ok(last)["has_more"] is False
    assert ok(last)["next_offset_bytes"] is None
    assert text(head) == "0123"
    assert ok(head)["offset_bytes"] == 0
    assert ok(head)["next_offset_bytes"] == 4
    assert text(tail) == "6789"
    assert ok(tail)["has_more"] is False
    assert text(past) == ""
    assert ok(past)["has_more"] is False


async def test_paging_with_next_offset_bytes_reassembles_a_file_exactly(sandbox):
    sandbox.put("utf8.txt", MULTIBYTE)
    blob = bytes(range(256)) * 3
    sandbox.put("blob.bin", blob)
    async with sandbox.client() as client:
        texts = {window: await read_in_pages(client, sandbox.path("utf8.txt"), window) for window in (4, 7, 64)}
        b64 = await read_in_pages(client, sandbox.path("blob.bin"), 100, encoding="base64")
    for window, pages in texts.items():
        assert "".join(pages) == MULTIBYTE, f"window {window}"
        assert all("\ufffd" not in page for page in pages)
    assert b"".join(base64.b64decode(page) for page in b64) == blob


async def test_paging_with_a_window_smaller_than_one_character_still_advances(sandbox):
    body = "€😀x€"  # 3-byte and 4-byte characters
    sandbox.put("wide.txt", body)
    async with sandbox.client() as client:
        pages = {window: await read_in_pages(client, sandbox.path("wide.txt"), window) for window in (1, 2, 3)}
    for window, got in pages.items():
        assert "".join(got) == body, f"window {window}"


async def test_a_range_starting_or_ending_inside_a_multibyte_character_does_not_split_it(sandbox):
    data = "a€b😀c".encode()  # a | e2 82 ac | b | f0 9f 98 80 | c
    sandbox.put("mid.txt", data)
    async with sandbox.client() as client:
        starts = [
            await client.call_tool(
                "read_file", {"path": sandbox.path("mid.txt"), "offset_bytes": start, "max_bytes": 4}
            )
            for start in range(len(data))
        ]
        cut = await client.call_tool("read_file", {"path": sandbox.path("mid.txt"), "offset_bytes": 0, "max_bytes": 2})
    for start, result in enumerate(starts):
        meta = ok(result)
        first = meta["offset_bytes"]
        assert "\ufffd" not in text(result), (start, meta)
        assert data[first : first + meta["bytes_read"]].decode("utf-8") == text(result), (start, meta)
        assert first == len(data) or data[first] & 0xC0 != 0x80, f"offset_bytes {first} is inside a character"
    assert text(cut) == "a"
    assert ok(cut)["bytes_read"] == 1
    assert ok(cut)["next_offset_bytes"] == 1


async def test_read_file_decodes_any_python_codec_and_base64(sandbox):
    samples = {
        "latin-1": "café crème, naïve",
        "utf-16": "héllo wörld €",
        "cp1252": "smart “quotes” €",
        "utf-8": "plain ünïcode ✓",
    }
    for codec, body in samples.items():
        sandbox.put(f"{codec}.txt", body.encode(codec))
    blob = bytes(range(256))
    sandbox.put("blob.bin", blob)
    async with sandbox.client() as client:
        decoded = {
            codec: await client.call_tool("read_file", {"path": sandbox.path(f"{codec}.txt"), "encoding": codec})
            for codec in samples
        }
        whole = await client.call_tool("read_file", {"path": sandbox.path("blob.bin"), "encoding": "base64"})
        ranged = await client.call_tool(
            "read_file", {"path": sandbox.path("blob.bin"), "encoding": "base64", "offset_bytes": 10, "max_bytes": 5}
        )
    for codec, body in samples.items():
        assert text(decoded[codec]) == body, codec
    assert base64.b64decode(text(whole)) == blob
    assert ok(whole)["encoding"] == "base64"
    assert ok(whole)["size"] == 256
    assert base64.b64decode(text(ranged)) == blob[10:15]
    assert ok(ranged)["next_offset_bytes"] == 15


async def test_reading_binary_data_as_text_is_binary_content_suggesting_base64(sandbox):
    sandbox.put("program.bin", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    sandbox.put("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    sandbox.put("latin.txt", "café".encode("latin-1"))
    async with sandbox.client() as client:
        whole = await client.call_tool("read_file", {"path": sandbox.path("program.bin")})
        ranged = await client.call_tool(
            "read_file", {"path": sandbox.path("image.png"), "offset_bytes": 0, "max_bytes": 64}
        )
        not_utf8 = await client.call_tool("read_file", {"path": sandbox.path("latin.txt")})
    assert "base64" in assert_error(whole, "BINARY_CONTENT")
    assert "base64" in assert_error(ranged, "BINARY_CONTENT")
    assert_error(not_utf8, "BINARY_CONTENT")


async def test_max_read_bytes_makes_whole_reads_too_large_while_ranged_reads_still_work(sandbox):
    body = "".join(chr(ord("a") + i % 26) for i in range(45))
    sandbox.put("big.txt", body)
    sandbox.put("edge.txt", "y" * 10)
    async with sandbox.client(max_read_bytes=10) as client:
        too_large = await client.call_tool("read_file", {"path": sandbox.path("big.txt")})
        edge = await client.call_tool("read_file", {"path": sandbox.path("edge.txt")})
        first = await client.call_tool(
            "read_file", {"path": sandbox.path("big.txt"), "offset_bytes": 0, "max_bytes": 5}
        )
        greedy = await client.call_tool(
            "read_file", {"path": sandbox.path("big.txt"), "offset_bytes": 0, "max_bytes": 40}
        )
        pages = await read_in_pages(client, sandbox.path("big.txt"), 1000)
    message = assert_error(too_large, "TOO_LARGE")
    assert "offset_bytes" in message or "read_file_lines" in message
    assert text(edge) == "y" * 10, "a file of exactly max_read_bytes is readable whole"
    assert text(first) == body[:5]
    assert ok(greedy)["bytes_read"] <= 10
    assert ok(greedy)["has_more"] is True
    assert "".join(pages) == body


async def test_read_file_refuses_an_unknown_encoding_a_directory_and_a_missing_path_with_their_codes(sandbox):
    sandbox.put("a.txt", "text")
    sandbox.put("folder/inside.txt", "x")
    async with sandbox.client() as client:
        codec = await client.call_tool("read_file", {"path": sandbox.path("a.txt"), "encoding": "no-such-codec"})
        folder = await client.call_tool("read_file", {"path": sandbox.path("folder")})
        root = await client.call_tool("read_file", {"path": sandbox.path("")})
        missing = await client.call_tool("read_file", {"path": sandbox.path("nope/missing.txt")})
    assert_error(codec, "INVALID_ARGUMENT")
    assert_error(folder, "IS_A_DIRECTORY")
    assert_error(root, "IS_A_DIRECTORY")
    assert sandbox.path("nope/missing.txt") in assert_error(missing, "NOT_FOUND")


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "a.txt", "offset_bytes": -1}),
        ("read_file", {"path": "a.txt", "max_bytes": 0}),
        ("list_directory", {"path": ".", "format": "xml"}),
        ("list_directory", {"path": ".", "limit": 0}),
        ("read_multiple_files", {"paths": []}),
    ],
)
async def test_an_out_of_range_parameter_is_an_invalid_argument_result(local_sandbox, tool, args):
    local_sandbox.put("a.txt", "text")
    async with local_sandbox.client() as client:
        result = await client.call_tool(tool, args)
    assert_error(result, "INVALID_ARGUMENT")


# -- read_multiple_files ----------------------------------------------------------------------


async def test_read_multiple_files_keeps_the_order_given_with_one_text_block_per_file(sandbox):
    for i in range(6):
        sandbox.put(f"f{i}.txt", f"content {i}\n")
    sandbox.put("latin.txt", "café".encode("latin-1"))
    order = [5, 0, 3, 1, 4, 2, 3]
    paths = [sandbox.path(f"f{i}.txt") for i in order]
    async with sandbox.client() as client:
        result = await client.call_tool("read_multiple_files", {"paths": paths})
        latin = await client.call_tool(
            "read_multiple_files", {"paths": [sandbox.path("latin.txt"), sandbox.path("f0.txt")], "encoding": "latin-1"}
        )
    meta = ok(result)
    assert [f["path"] for f in meta["files"]] == paths
    assert all(f["ok"] for f in meta["files"])
    assert (meta["succeeded"], meta["failed"]) == (len(paths), 0)
    assert len(result.content) == len(paths)
    for block, i, path in zip(result.content, order, paths, strict=True):
        assert block.text.startswith(path)
        assert f"content {i}\n" in block.text
    assert "content" not in json.dumps(meta), "file contents must not be repeated in structured content"
    assert "café" in latin.content[0].text
    assert "content 0" in latin.content[1].text


async def test_read_multiple_files_reports_each_failure_on_its_own_without_failing_the_call(sandbox):
    sandbox.put("good.txt", "good")
    sandbox.put("dir/x.txt", "x")
    sandbox.put("bin.dat", b"\x00\x01\x02")
    sandbox.put("large.txt", "L" * 100)
    names = ("good.txt", "missing.txt", "dir", "bin.dat", "large.txt")
    paths = [sandbox.path(p) for p in names]
    async with sandbox.client(max_read_bytes=50) as client:
        result = await client.call_tool("read_multiple_files", {"paths": paths})
    meta = ok(result)
    files = meta["files"]
    assert [f["ok"] for f in files] == [True, False, False, False, False]
    codes = [f["error"]["code"] if f["error"] else None for f in files]
    assert codes == [None, "NOT_FOUND", "IS_A_DIRECTORY", "BINARY_CONTENT", "TOO_LARGE"]
    assert files[0]["sha256"] == hashlib.sha256(b"good").hexdigest()
    assert files[0]["size"] == 4
    assert (meta["succeeded"], meta["failed"]) == (1, 4)
    assert len(result.content) == 5
    assert "good" in result.content[0].text
    for block, code in zip(result.content[1:], codes[1:], strict=True):
        assert code in block.text


async def test_read_multiple_files_spends_its_byte_limit_in_order_and_an_oversized_file_spends_none(sandbox):
    for name, size in (("huge.txt", 100), ("a.txt", 30), ("b.txt", 30), ("c.txt", 10)):
        sandbox.put(name, "x" * size)
    paths = [sandbox.path(p) for p in ("huge.txt", "a.txt", "b.txt", "c.txt")]
    async with sandbox.client(max_read_bytes=50) as client:
        files = ok(await client.call_tool("read_multiple_files", {"paths": paths}))["files"]
    assert [f["error"]["code"] if f["error"] else f["size"] for f in files] == ["TOO_LARGE", 30, "TOO_LARGE", 10]
    assert "over the 50-byte limit for whole reads" in files[0]["error"]["message"]
    assert "would take this reply over its 50-byte limit" in files[2]["error"]["message"]


# -- write_file -------------------------------------------------------------------------------


async def test_write_file_creates_then_overwrites_then_appends(sandbox):
    path = sandbox.path("w/new.txt")
    sandbox.mkdir("w")
    async with sandbox.client() as client:
        created = changed(await client.call_tool("write_file", {"path": path, "content": "a long first body ✓\n"}))
        overwritten = ok(await client.call_tool("write_file", {"path": path, "content": "short\n"}))
        after_overwrite = sandbox.get("w/new.txt")
        read = ok(await client.call_tool("read_file", {"path": path}))
        appended = ok(await client.call_tool("write_file", {"path": path, "content": "two\n", "append": True}))
        ok(await client.call_tool("write_file", {"path": path, "content": "three\n", "append": True}))
        fresh_log = ok(
            await client.call_tool("write_file", {"path": sandbox.path("w/log"), "content": "1\n", "append": True})
        )
    first = "a long first body ✓\n".encode()
    assert created == {
        "path": path,
        "bytes_written": len(first),
        "created": True,
        "appended": False,
        "sha256": hashlib.sha256(first).hexdigest(),
    }
    assert overwritten["created"] is False
    assert after_overwrite == b"short\n", "an overwrite leaves no tail of the longer old content"
    assert overwritten["sha256"] == read["sha256"]
    assert appended["appended"] is True
    assert appended["created"] is False
    assert appended["bytes_written"] == 4
    assert sandbox.get("w/new.txt") == b"short\ntwo\nthree\n"
    assert fresh_log["created"] is True
    assert sandbox.get("w/log") == b"1\n"


async def test_write_without_create_dirs_into_missing_folder_is_not_found(sandbox):
    sandbox.put("plain.txt", "plain")
    async with sandbox.client() as client:
        missing = await client.call_tool("write_file", {"path": sandbox.path("no/such/dir/a.txt"), "content": "x"})
        nothing_made = not sandbox.exists("no")
        made = await client.call_tool(
            "write_file", {"path": sandbox.path("deep/er/a.txt"), "content": "x", "create_dirs": True}
        )
        below_file = await client.call_tool("write_file", {"path": sandbox.path("plain.txt/c.txt"), "content": "x"})
        below_file_forced = await client.call_tool(
            "write_file", {"path": sandbox.path("plain.txt/c.txt"), "content": "x", "create_dirs": True}
        )
    assert "create_dirs" in assert_error(missing, "NOT_FOUND")
    assert nothing_made
    ok(made)
    assert sandbox.get("deep/er/a.txt") == b"x"
    assert sandbox.isdir("deep/er")
    assert_error(below_file, "NOT_A_DIRECTORY")
    assert_error(below_file_forced, "NOT_A_DIRECTORY")
    assert sandbox.get("plain.txt") == b"plain"


async def test_write_file_encodes_with_any_codec_or_base64_and_refuses_an_unknown_one(sandbox):
    samples = {"latin-1": "café naïve", "utf-16": "héllo €", "cp1252": "smart “quotes” €"}
    blob = bytes(range(256))
    async with sandbox.client() as client:
        for codec, body in samples.items():
            ok(
                await client.call_tool(
                    "write_file", {"path": sandbox.path(f"{codec}.txt"), "content": body, "encoding": codec}
                )
            )
        b64 = await client.call_tool(
            "write_file",
            {"path": sandbox.path("blob.bin"), "content": base64.b64encode(blob).decode(), "encoding": "base64"},
        )
        bad_b64 = await client.call_tool(
            "write_file", {"path": sandbox.path("bad.bin"), "content": "not base64 !!", "encoding": "base64"}
        )
        unknown = await client.call_tool(
            "write_file", {"path": sandbox.path("k.txt"), "content": "x", "encoding": "klingon"}
        )
    for codec, body in samples.items():
        assert sandbox.get(f"{codec}.txt") == body.encode(codec), codec
    assert ok(b64)["bytes_written"] == 256
    assert sandbox.get("blob.bin") == blob
    assert_error(bad_b64, "INVALID_ARGUMENT")
    assert not sandbox.exists("bad.bin")
    assert_error(unknown, "INVALID_ARGUMENT")
    assert not sandbox.exists("k.txt")


async def test_an_unencodable_character_is_invalid_argument_and_leaves_the_file_byte_identical(sandbox):
    original = b"original ascii body\n"
    sandbox.put("a.txt", original)
    async with sandbox.client() as client:
        result = await client.call_tool(
            "write_file", {"path": sandbox.path("a.txt"), "content": "price: 5€", "encoding": "ascii"}
        )
        appended = await client.call_tool(
            "write_file", {"path": sandbox.path("a.txt"), "content": "€", "encoding": "ascii", "append": True}
        )
        new = await client.call_tool("write_file", {"path": sandbox.path("b.txt"), "content": "€", "encoding": "ascii"})
    assert_error(result, "INVALID_ARGUMENT")
    assert_error(appended, "INVALID_ARGUMENT")
    assert_error(new, "INVALID_ARGUMENT")
    assert sandbox.get("a.txt") == original
    assert not sandbox.exists("b.txt")


async def test_expected_hash_lets_a_matching_write_through_and_turns_a_stale_one_into_a_conflict(sandbox):
    sandbox.put("a.txt", "version 1\n")
    path = sandbox.path("a.txt")
    async with sandbox.client() as client:
        v1 = ok(await client.call_tool("read_file", {"path": path}))["sha256"]
        matching = await client.call_tool("write_file", {"path": path, "content": "version 2\n", "expected_hash": v1})
        stale = await client.call_tool("write_file", {"path": path, "content": "version 3\n", "expected_hash": v1})
        stale_append = await client.call_tool(
            "write_file", {"path": path, "content": "more\n", "append": True, "expected_hash": v1}
        )
        deleted = await client.call_tool(
            "write_file", {"path": sandbox.path("gone.txt"), "content": "x", "expected_hash": v1}
        )
    ok(matching)
    assert_error(stale, "CONFLICT")
    assert_error(stale_append, "CONFLICT")
    assert sandbox.get("a.txt") == b"version 2\n"
    assert_error(deleted, "CONFLICT")
    assert not sandbox.exists("gone.txt")


async def test_writing_onto_a_directory_is_a_directory_and_keeps_it(sandbox):
    sandbox.put("folder/keep.txt", "keep")
    async with sandbox.client() as client:
        folder = await client.call_tool("write_file", {"path": sandbox.path("folder"), "content": "x"})
        appended = await client.call_tool(
            "write_file", {"path": sandbox.path("folder"), "content": "x", "append": True}
        )
        root = await client.call_tool("write_file", {"path": sandbox.path(""), "content": "x"})
    assert_error(folder, "IS_A_DIRECTORY")
    assert_error(appended, "IS_A_DIRECTORY")
    assert_error(root, "IS_A_DIRECTORY")
    assert sandbox.isdir("folder")
    assert sandbox.get("folder/keep.txt") == b"keep"


# -- write_file: local-only atomicity ---------------------------------------------------------


async def test_local_write_leaves_no_temp_file_behind(local_sandbox):
    sandbox = local_sandbox
    sandbox.put("dir/a.txt", "old")
    async with sandbox.client() as client:
        for i in range(3):
            ok(await client.call_tool("write_file", {"path": sandbox.path("dir/a.txt"), "content": f"v{i}"}))
        ok(await client.call_tool("write_file", {"path": sandbox.path("dir/b.txt"), "content": "new"}))
        failed = await client.call_tool(
            "write_file", {"path": sandbox.path("dir/a.txt"), "content": "€", "encoding": "ascii"}
        )
    assert_error(failed, "INVALID_ARGUMENT")
    assert sorted(os.listdir(sandbox.mount.fs_path("dir"))) == ["a.txt", "b.txt"]


async def test_local_overwrite_preserves_the_file_mode(local_sandbox):
    sandbox = local_sandbox
    sandbox.put("secret.cfg", "old")
    host = sandbox.mount.fs_path("secret.cfg")
    os.chmod(host, 0o640)
    async with sandbox.client() as client:
        ok(await client.call_tool("write_file", {"path": sandbox.path("secret.cfg"), "content": "new"}))
    assert stat.S_IMODE(os.stat(host).st_mode) == 0o640
    assert Path(host).read_bytes() == b"new"


async def test_local_new_file_gets_the_usual_mode_under_the_umask(local_sandbox):
    sandbox = local_sandbox
    mask = os.umask(0)
    os.umask(mask)
    async with sandbox.client() as client:
        ok(await client.call_tool("write_file", {"path": sandbox.path("fresh.txt"), "content": "x"}))
    assert stat.S_IMODE(os.stat(sandbox.mount.fs_path("fresh.txt")).st_mode) == 0o666 & ~mask


async def test_local_overwrite_replaces_the_file_by_rename_so_an_open_reader_keeps_the_old_content(local_sandbox):
    sandbox = local_sandbox
    sandbox.put("a.txt", "old content")
    host = sandbox.mount.fs_path("a.txt")
    with open(host, "rb") as reader:
        before = os.fstat(reader.fileno()).st_ino
        async with sandbox.client() as client:
            ok(await client.call_tool("write_file", {"path": sandbox.path("a.txt"), "content": "new"}))
        assert reader.read() == b"old content"
    assert os.stat(host).st_ino != before
    assert Path(host).read_bytes() == b"new"


# -- create_directory -------------------------------------------------------------------------


async def test_create_directory_creates_it_with_its_parents_and_it_lists_as_empty(sandbox):
    async with sandbox.client() as client:
        made = changed(await client.call_tool("create_directory", {"path": sandbox.path("made")}))
        listing = ok(await client.call_tool("list_directory", {"path": sandbox.path("made")}))
        parent = ok(await client.call_tool("list_directory", {"path": sandbox.path("")}))
        info = ok(await client.call_tool("get_file_info", {"path": sandbox.path("made")}))
        nested = ok(await client.call_tool("create_directory", {"path": sandbox.path("a/b/c")}))
    assert made == {"path": sandbox.path("made"), "created": True}
    assert sandbox.isdir("made")
    assert listing["entries"] == []
    assert listing["total"] == 0
    assert [(e["name"], e["type"]) for e in parent["entries"]] == [("made", "directory")]
    assert info["type"] == "directory"
    assert nested["created"] is True
    assert sandbox.isdir("a") and sandbox.isdir("a/b") and sandbox.isdir("a/b/c")


async def test_create_directory_without_parents_needs_an_existing_parent(sandbox):
    sandbox.mkdir("x")
    async with sandbox.client() as client:
        missing = await client.call_tool("create_directory", {"path": sandbox.path("nope/y"), "parents": False})
        present = await client.call_tool("create_directory", {"path": sandbox.path("x/y"), "parents": False})
    assert_error(missing, "NOT_FOUND")
    assert not sandbox.exists("nope")
    assert ok(present)["created"] is True
    assert sandbox.isdir("x/y")


async def test_create_directory_on_an_existing_path_follows_exist_ok_and_never_replaces_a_file(sandbox):
    sandbox.put("there/f.txt", "f")
    sandbox.put("taken", "a file")
    async with sandbox.client() as client:
        again = await client.call_tool("create_directory", {"path": sandbox.path("there")})
        strict = await client.call_tool("create_directory", {"path": sandbox.path("there"), "exist_ok": False})
        on_file = await client.call_tool("create_directory", {"path": sandbox.path("taken")})
        on_file_strict = await client.call_tool("create_directory", {"path": sandbox.path("taken"), "exist_ok": False})
    assert ok(again)["created"] is False
    assert_error(strict, "ALREADY_EXISTS")
    assert sandbox.get("there/f.txt") == b"f"
    assert_error(on_file, "ALREADY_EXISTS")
    assert_error(on_file_strict, "ALREADY_EXISTS")
    assert sandbox.get("taken") == b"a file"


# -- list_directory ---------------------------------------------------------------------------


async def test_list_directory_gives_name_type_and_size_in_name_order(sandbox):
    sandbox.put("b.txt", "12345")
    sandbox.put("a.py", "print(1)\n")
    sandbox.mkdir("empty_dir")
    sandbox.put("implied/inside.txt", "inside")  # on s3, a directory only through a file
    async with sandbox.client() as client:
        meta = ok(await client.call_tool("list_directory", {"path": sandbox.path("")}))
        default = ok(await client.call_tool("list_directory", {}))
    entries = {e["name"]: e for e in meta["entries"]}
    assert [e["name"] for e in meta["entries"]] == ["a.py", "b.txt", "empty_dir", "implied"]
    assert (entries["b.txt"]["type"], entries["b.txt"]["size"]) == ("file", 5)
    assert (entries["a.py"]["type"], entries["a.py"]["size"]) == ("file", 9)
    assert (entries["empty_dir"]["type"], entries["empty_dir"]["size"]) == ("directory", None)
    assert (entries["implied"]["type"], entries["implied"]["size"]) == ("directory", None)
    assert entries["b.txt"]["path"] == sandbox.path("b.txt")
    assert meta["path"] == sandbox.path("")
    assert (meta["total"], meta["has_more"], meta["next_offset"]) == (4, False, None)
    if "modified" in sandbox.mount.capabilities.timestamps:
        assert entries["b.txt"]["modified"] is not None
    assert default == meta, "the default path is the working directory, the first mount's root"


async def test_list_directory_hides_dot_names_unless_include_hidden_and_filters_by_a_case_insensitive_pattern(sandbox):
    sandbox.put("visible.txt", "v")
    sandbox.put(".hidden", "h")
    sandbox.put(".config/settings", "s")
    for name in ("a.py", "B.PY", "c.Py", "pyfile", ".secret.py"):
        sandbox.put(name, "x")
    root = sandbox.path("")
    async with sandbox.client() as client:
        default = ok(await client.call_tool("list_directory", {"path": root}))
        everything = ok(await client.call_tool("list_directory", {"path": root, "include_hidden": True}))
        upper = ok(await client.call_tool("list_directory", {"path": root, "pattern": "*.PY"}))
        lower_hidden = ok(
            await client.call_tool("list_directory", {"path": root, "pattern": "*.py", "include_hidden": True})
        )
        none = ok(await client.call_tool("list_directory", {"path": root, "pattern": "*.rs"}))
    assert [e["name"] for e in default["entries"]] == ["B.PY", "a.py", "c.Py", "pyfile", "visible.txt"]
    assert [e["name"] for e in everything["entries"]] == [
        ".config",
        ".hidden",
        ".secret.py",
        "B.PY",
        "a.py",
        "c.Py",
        "pyfile",
        "visible.txt",
    ]
    assert [e["name"] for e in upper["entries"]] == ["B.PY", "a.py", "c.Py"]
    assert upper["total"] == 3
    assert [e["name"] for e in lower_hidden["entries"]] == [".secret.py", "B.PY", "a.py", "c.Py"]
    assert (none["entries"], none["total"]) == ([], 0)


async def test_list_directory_pages_with_offset_and_limit(sandbox):
    names = [f"f{i}.txt" for i in range(5)]
    for name in names:
        sandbox.put(name, "x")
    root = sandbox.path("")
    pages = []
    async with sandbox.client() as client:
        offset: int | None = 0
        while offset is not None:
            page = ok(await client.call_tool("list_directory", {"path": root, "offset": offset, "limit": 2}))
            pages.append(page)
            offset = page["next_offset"]
        past = ok(await client.call_tool("list_directory", {"path": root, "offset": 10}))
    assert [[e["name"] for e in p["entries"]] for p in pages] == [names[0:2], names[2:4], names[4:5]]
    assert [(p["has_more"], p["next_offset"], p["total"]) for p in pages] == [
        (True, 2, 5),
        (True, 4, 5),
        (False, None, 5),
    ]
    assert (past["entries"], past["has_more"]) == ([], False)


async def test_list_directory_text_format_reads_as_lines_and_json_format_is_the_structured_content(sandbox):
    sandbox.put("a.txt", "12345")
    sandbox.put("sub/x", "x")
    for i in range(3):
        sandbox.put(f"z{i}", "z")
    root = sandbox.path("")
    async with sandbox.client() as client:
        default = await client.call_tool("list_directory", {"path": root})
        plain = await client.call_tool("list_directory", {"path": root, "format": "text"})
        paged = await client.call_tool("list_directory", {"path": root, "limit": 2})
        as_json = await client.call_tool("list_directory", {"path": root, "format": "json"})
    lines = text(default).splitlines()
    assert text(default) == text(plain)
    assert any(line.startswith("[FILE] a.txt") and "5" in line for line in lines)
    assert "[DIR] sub" in lines
    assert "offset=2" in text(paged), "a paged text reply says how to get the next page"
    with pytest.raises(json.JSONDecodeError):
        json.loads(text(default))
    assert json.loads(text(as_json)) == ok(as_json) == ok(default)


async def test_list_directory_of_a_file_is_not_a_directory_and_of_a_missing_path_not_found(sandbox):
    sandbox.put("a.txt", "x")
    async with sandbox.client() as client:
        on_file = await client.call_tool("list_directory", {"path": sandbox.path("a.txt")})
        missing = await client.call_tool("list_directory", {"path": sandbox.path("ghost")})
    assert_error(on_file, "NOT_A_DIRECTORY")
    assert_error(missing, "NOT_FOUND")


# -- move_file --------------------------------------------------------------------------------


async def test_move_file_renames_a_file_and_moves_a_directory_tree(sandbox):
    sandbox.put("old.txt", "payload")
    sandbox.put("b.txt", "b")
    sandbox.mkdir("dest")
    sandbox.put("tree/one.txt", "1")
    sandbox.put("tree/sub/two.txt", "2")
    async with sandbox.client() as client:
        renamed = changed(
            await client.call_tool(
                "move_file", {"source": sandbox.path("old.txt"), "destination": sandbox.path("new.txt")}
            )
        )
        ok(
            await client.call_tool(
                "move_file", {"source": sandbox.path("b.txt"), "destination": sandbox.path("dest/b.txt")}
            )
        )
        tree = ok(
            await client.call_tool("move_file", {"source": sandbox.path("tree"), "destination": sandbox.path("moved")})
        )
    assert renamed == {
        "source": sandbox.path("old.txt"),
        "destination": sandbox.path("new.txt"),
        "type": "file",
        "overwritten": False,
    }
    assert sandbox.get("new.txt") == b"payload"
    assert not sandbox.exists("old.txt")
    assert sandbox.get("dest/b.txt") == b"b"
    assert not sandbox.exists("b.txt")
    assert tree["type"] == "directory"
    assert sandbox.get("moved/one.txt") == b"1"
    assert sandbox.get("moved/sub/two.txt") == b"2"
    assert not sandbox.exists("tree/one.txt")
    assert not sandbox.exists("tree")


async def test_move_onto_an_existing_file_needs_overwrite_and_without_it_leaves_both_intact(sandbox):
    sandbox.put("src.txt", "source")
    sandbox.put("dst.txt", "destination")
    args = {"source": sandbox.path("src.txt"), "destination": sandbox.path("dst.txt")}
    async with sandbox.client() as client:
        refused = await client.call_tool("move_file", args)
        src_after, dst_after = sandbox.get("src.txt"), sandbox.get("dst.txt")
        replaced = await client.call_tool("move_file", args | {"overwrite": True})
    assert_error(refused, "ALREADY_EXISTS")
    assert (src_after, dst_after) == (b"source", b"destination")
    assert ok(replaced)["overwritten"] is True
    assert sandbox.get("dst.txt") == b"source"
    assert not sandbox.exists("src.txt")


async def test_a_refused_move_changes_nothing(sandbox):
    sandbox.put("src.txt", "source")
    sandbox.put("d/f.txt", "f")
    sandbox.put("keep.txt", "keep")
    async with sandbox.client() as client:
        no_parent = await client.call_tool(
            "move_file", {"source": sandbox.path("src.txt"), "destination": sandbox.path("missing/dir/dst.txt")}
        )
        no_source = await client.call_tool(
            "move_file", {"source": sandbox.path("ghost"), "destination": sandbox.path("g2")}
        )
        into_itself = await client.call_tool(
            "move_file", {"source": sandbox.path("d"), "destination": sandbox.path("d/inner")}
        )
        onto_itself = await client.call_tool(
            "move_file", {"source": sandbox.path("src.txt"), "destination": sandbox.path("src.txt"), "overwrite": True}
        )
        root = await client.call_tool(
            "move_file", {"source": sandbox.path(""), "destination": sandbox.path("elsewhere")}
        )
    assert_error(no_parent, "NOT_FOUND")
    assert not sandbox.exists("missing")
    assert_error(no_source, "NOT_FOUND")
    assert not sandbox.exists("g2")
    assert_error(into_itself, "INVALID_ARGUMENT")
    assert not sandbox.exists("d/inner")
    assert sandbox.get("d/f.txt") == b"f"
    assert onto_itself.is_error
    assert sandbox.get("src.txt") == b"source"
    assert root.is_error
    assert sandbox.get("keep.txt") == b"keep"
    assert not sandbox.exists("elsewhere")


async def test_move_file_across_two_mounts_moves_files_and_trees(sandbox):
    second = add_second_mount(sandbox)
    sandbox.put("cross.txt", "over there")
    sandbox.put("tree/a.txt", "a")
    sandbox.put("tree/sub/b.txt", "b")
    sandbox.put("src.txt", "source")
    second_put(second, "dst.txt", b"destination")
    async with sandbox.client() as client:
        moved = ok(
            await client.call_tool(
                "move_file", {"source": sandbox.path("cross.txt"), "destination": "memory://second/landed.txt"}
            )
        )
        ok(await client.call_tool("move_file", {"source": sandbox.path("tree"), "destination": "memory://second/tree"}))
        tree_there = second_get(second, "tree/sub/b.txt")
        back = ok(
            await client.call_tool("move_file", {"source": "memory://second/tree", "destination": sandbox.path("back")})
        )
        refused = await client.call_tool(
            "move_file", {"source": sandbox.path("src.txt"), "destination": "memory://second/dst.txt"}
        )
    assert moved["destination"] == "memory://second/landed.txt"
    assert second_get(second, "landed.txt") == b"over there"
    assert not sandbox.exists("cross.txt")
    assert tree_there == b"b"
    assert back["type"] == "directory"
    assert sandbox.get("back/a.txt") == b"a"
    assert sandbox.get("back/sub/b.txt") == b"b"
    assert not sandbox.exists("tree")
    assert not second_exists(second, "tree")
    assert_error(refused, "ALREADY_EXISTS")
    assert sandbox.get("src.txt") == b"source"
    assert second_get(second, "dst.txt") == b"destination"


# -- copy_file --------------------------------------------------------------------------------


async def test_copy_file_copies_a_file_and_a_directory_only_with_recursive(sandbox):
    sandbox.put("a.txt", "copy me")
    sandbox.put("tree/a.txt", "aaa")
    sandbox.put("tree/sub/b.txt", "bbbbb")
    sandbox.mkdir("tree/empty")
    async with sandbox.client() as client:
        single = changed(
            await client.call_tool("copy_file", {"source": sandbox.path("a.txt"), "destination": sandbox.path("b.txt")})
        )
        flat = await client.call_tool(
            "copy_file", {"source": sandbox.path("tree"), "destination": sandbox.path("copy")}
        )
        nothing_copied = not sandbox.exists("copy")
        deep = ok(
            await client.call_tool(
                "copy_file", {"source": sandbox.path("tree"), "destination": sandbox.path("copy"), "recursive": True}
            )
        )
    assert single == {
        "source": sandbox.path("a.txt"),
        "destination": sandbox.path("b.txt"),
        "type": "file",
        "bytes_copied": 7,
        "overwritten": False,
    }
    assert sandbox.get("a.txt") == sandbox.get("b.txt") == b"copy me"
    assert "recursive" in assert_error(flat, "IS_A_DIRECTORY")
    assert nothing_copied
    assert deep["type"] == "directory"
    assert deep["bytes_copied"] == 8
    assert sandbox.get("copy/a.txt") == b"aaa"
    assert sandbox.get("copy/sub/b.txt") == b"bbbbb"
    assert sandbox.get("tree/a.txt") == b"aaa"
    if sandbox.mount.capabilities.empty_dirs:
        assert sandbox.isdir("copy/empty")


async def test_copy_file_honours_overwrite_and_create_dirs(sandbox):
    sandbox.put("a.txt", "new")
    sandbox.put("b.txt", "old and longer")
    src = sandbox.path("a.txt")
    async with sandbox.client() as client:
        refused = await client.call_tool("copy_file", {"source": src, "destination": sandbox.path("b.txt")})
        b_after_refusal = sandbox.get("b.txt")
        replaced = await client.call_tool(
            "copy_file", {"source": src, "destination": sandbox.path("b.txt"), "overwrite": True}
        )
        parents = await client.call_tool("copy_file", {"source": src, "destination": sandbox.path("n/e/w.txt")})
        no_parents = await client.call_tool(
            "copy_file", {"source": src, "destination": sandbox.path("q/w.txt"), "create_dirs": False}
        )
    assert_error(refused, "ALREADY_EXISTS")
    assert b_after_refusal == b"old and longer"
    assert ok(replaced)["overwritten"] is True
    assert sandbox.get("b.txt") == b"new"
    ok(parents)
    assert sandbox.get("n/e/w.txt") == b"new"
    assert_error(no_parents, "NOT_FOUND")
    assert not sandbox.exists("q")


async def test_a_refused_copy_changes_nothing(sandbox):
    sandbox.put("d/f.txt", "f")
    async with sandbox.client() as client:
        missing = await client.call_tool(
            "copy_file", {"source": sandbox.path("ghost"), "destination": sandbox.path("b")}
        )
        into_itself = await client.call_tool(
            "copy_file", {"source": sandbox.path("d"), "destination": sandbox.path("d/again"), "recursive": True}
        )
    assert_error(missing, "NOT_FOUND")
    assert not sandbox.exists("b")
    assert_error(into_itself, "INVALID_ARGUMENT")
    assert not sandbox.exists("d/again")


async def test_copy_file_across_two_mounts_copies_the_bytes(sandbox):
    second = add_second_mount(sandbox)
    data = bytes(range(256))
    sandbox.put("blob.bin", data)
    sandbox.put("tree/x.txt", "x")
    async with sandbox.client() as client:
        there = await client.call_tool(
            "copy_file", {"source": sandbox.path("blob.bin"), "destination": "memory://second/blob.bin"}
        )
        tree = await client.call_tool(
            "copy_file", {"source": sandbox.path("tree"), "destination": "memory://second/tree", "recursive": True}
        )
        back = await client.call_tool(
            "copy_file", {"source": "memory://second/blob.bin", "destination": sandbox.path("back.bin")}
        )
    assert ok(there)["bytes_copied"] == 256
    assert ok(tree)["bytes_copied"] == 1
    ok(back)
    assert second_get(second, "blob.bin") == data
    assert second_get(second, "tree/x.txt") == b"x"
    assert sandbox.get("back.bin") == data
    assert sandbox.get("blob.bin") == data


# -- delete_path ------------------------------------------------------------------------------


async def test_delete_path_removes_a_file_an_empty_directory_and_a_tree_only_with_recursive(sandbox):
    sandbox.put("a.txt", "x")
    sandbox.mkdir("empty")
    sandbox.put("full/a.txt", "a")
    sandbox.put("full/sub/b.txt", "b")
    sandbox.mkdir("full/nothing")
    sandbox.put("fullness.txt", "a neighbour with a common prefix")
    async with sandbox.client() as client:
        file = changed(await client.call_tool("delete_path", {"path": sandbox.path("a.txt")}))
        empty = ok(await client.call_tool("delete_path", {"path": sandbox.path("empty")}))
        refused = await client.call_tool("delete_path", {"path": sandbox.path("full")})
        intact = (sandbox.get("full/a.txt"), sandbox.get("full/sub/b.txt"))
        tree = ok(await client.call_tool("delete_path", {"path": sandbox.path("full"), "recursive": True}))
        listing = ok(await client.call_tool("list_directory", {"path": sandbox.path("")}))
    assert file == {"path": sandbox.path("a.txt"), "existed": True, "type": "file", "removed": True}
    assert not sandbox.exists("a.txt")
    assert empty["type"] == "directory"
    assert not sandbox.exists("empty")
    assert refused.is_error
    assert "recursive" in text(refused)
    assert intact == (b"a", b"b")
    assert tree["removed"] is True
    assert not sandbox.exists("full/sub/b.txt")
    assert not sandbox.exists("full")
    assert sandbox.get("fullness.txt") == b"a neighbour with a common prefix"
    assert [e["name"] for e in listing["entries"]] == ["fullness.txt"]


async def test_delete_of_a_missing_path_is_not_found_unless_forced(sandbox):
    async with sandbox.client() as client:
        missing = await client.call_tool("delete_path", {"path": sandbox.path("ghost")})
        forced = await client.call_tool("delete_path", {"path": sandbox.path("ghost"), "force": True})
    assert_error(missing, "NOT_FOUND")
    assert ok(forced) == {"path": sandbox.path("ghost"), "existed": False, "type": None, "removed": False}


async def test_deleting_the_mount_root_is_access_denied_and_deletes_nothing(sandbox):
    sandbox.put("keep/a.txt", "a")
    results = []
    async with sandbox.client() as client:
        for how in ({}, {"recursive": True}, {"recursive": True, "force": True}):
            results.append(await client.call_tool("delete_path", {"path": sandbox.path("")} | how))
            results.append(await client.call_tool("delete_path", {"path": "."} | how))
    for result in results:
        assert_error(result, "ACCESS_DENIED")
    assert sandbox.get("keep/a.txt") == b"a"


async def test_local_delete_of_a_symlink_removes_the_link_not_its_target(local_sandbox):
    sandbox = local_sandbox
    sandbox.put("target.txt", "target")
    os.symlink(sandbox.mount.fs_path("target.txt"), sandbox.mount.fs_path("link.txt"))
    async with sandbox.client() as client:
        result = await client.call_tool("delete_path", {"path": sandbox.path("link.txt")})
    ok(result)
    assert not os.path.lexists(sandbox.mount.fs_path("link.txt"))
    assert sandbox.get("target.txt") == b"target"


# -- get_file_info ----------------------------------------------------------------------------


async def test_get_file_info_has_the_fields_the_backend_supports(sandbox):
    sandbox.put("docs/readme.txt", "hello")
    for name in ("data.json", "pic.png", "blob.zzz9"):
        sandbox.put(name, "x")
    async with sandbox.client() as client:
        info = ok(await client.call_tool("get_file_info", {"path": sandbox.path("docs/readme.txt")}))
        folder = ok(await client.call_tool("get_file_info", {"path": sandbox.path("docs")}))
        root = ok(await client.call_tool("get_file_info", {"path": sandbox.path("")}))
        mimes = {
            name: ok(await client.call_tool("get_file_info", {"path": sandbox.path(name)}))["mime_type"]
            for name in ("data.json", "pic.png", "blob.zzz9")
        }
        missing = await client.call_tool("get_file_info", {"path": sandbox.path("ghost")})
    assert info["path"] == sandbox.path("docs/readme.txt")
    assert info["name"] == "readme.txt"
    assert (info["type"], info["size"], info["mime_type"]) == ("file", 5, "text/plain")
    assert info["is_symlink"] is False
    assert info["mount"] == sandbox.root
    assert info["read_only"] is False
    now = datetime.now(UTC)
    for field in sandbox.mount.capabilities.timestamps:
        assert info[field] is not None, f"{sandbox.kind} should report {field}"
        assert abs((parse_time(info[field]) - now).total_seconds()) < 3600, info[field]
    if sandbox.mount.capabilities.etags:
        assert info["etag"] and '"' not in info["etag"]
    else:
        assert info["etag"] is None
    if sandbox.mount.capabilities.modes:
        assert re.fullmatch(r"[r-][w-][x-][r-][w-][x-][r-][w-][x-]", info["permissions"])
        assert re.fullmatch(r"0[0-7]{3}", info["mode"])
    assert (folder["type"], folder["mime_type"]) == ("directory", None)
    assert root["type"] == "directory"
    assert mimes == {"data.json": "application/json", "pic.png": "image/png", "blob.zzz9": "application/octet-stream"}
    assert_error(missing, "NOT_FOUND")


async def test_get_file_info_text_format_is_key_value_lines_and_json_format_is_the_structured_content(sandbox):
    sandbox.put("a.txt", "12345")
    async with sandbox.client() as client:
        default = await client.call_tool("get_file_info", {"path": sandbox.path("a.txt")})
        as_text = await client.call_tool("get_file_info", {"path": sandbox.path("a.txt"), "format": "text"})
        as_json = await client.call_tool("get_file_info", {"path": sandbox.path("a.txt"), "format": "json"})
    assert text(default) == text(as_text)
    lines = text(as_text).splitlines()
    assert "type: file" in lines
    assert "size: 5" in lines
    assert f"path: {sandbox.path('a.txt')}" in lines
    assert json.loads(text(as_json)) == ok(as_json) == ok(as_text)


async def test_local_get_file_info_reports_permissions_and_flags_a_symlink(local_sandbox):
    sandbox = local_sandbox
    sandbox.put("cfg.ini", "x")
    os.chmod(sandbox.mount.fs_path("cfg.ini"), 0o640)
    os.symlink(sandbox.mount.fs_path("cfg.ini"), sandbox.mount.fs_path("alias.ini"))
    async with sandbox.client() as client:
        info = ok(await client.call_tool("get_file_info", {"path": sandbox.path("cfg.ini")}))
        alias = ok(await client.call_tool("get_file_info", {"path": sandbox.path("alias.ini")}))
    assert (info["permissions"], info["mode"]) == ("rw-r-----", "0640")
    assert alias["is_symlink"] is True
    assert (alias["type"], alias["size"]) == ("file", 1)


# -- list_allowed_directories -----------------------------------------------------------------


async def test_list_allowed_directories_names_every_mount_with_backend_and_flags(sandbox):
    second = add_second_mount(sandbox)
    second.read_only = True
    async with sandbox.client() as client:
        result = await client.call_tool("list_allowed_directories", {})
    first, other = ok(result)["directories"]
    assert first == {
        "root": sandbox.root,
        "backend": "local" if sandbox.kind == "local" else sandbox.mount.scheme,
        "read_only": False,
        "empty_directories": sandbox.mount.capabilities.empty_dirs,
        "symlinks": sandbox.mount.capabilities.symlinks,
    }
    assert other == {
        "root": "memory://second",
        "backend": "memory",
        "read_only": True,
        "empty_directories": True,
        "symlinks": False,
    }
    assert sandbox.root in text(result)
    assert "memory://second" in text(result)
    assert "read-only" in text(result)


# -- working directory ------------------------------------------------------------------------


async def test_change_directory_reports_previous_and_current_and_relative_paths_follow_it(sandbox):
    sandbox.put("proj/src/main.py", "main")
    sandbox.put("proj/README", "readme")
    async with sandbox.client() as client:
        start = await client.call_tool("get_working_directory", {})
        first = ok(await client.call_tool("change_directory", {"path": sandbox.path("proj")}))
        second = ok(await client.call_tool("change_directory", {"path": "src"}))
        read = await client.call_tool("read_file", {"path": "main.py"})
        written = ok(await client.call_tool("write_file", {"path": "note.txt", "content": "here"}))
        listed = ok(await client.call_tool("list_directory", {}))
        up = ok(await client.call_tool("change_directory", {"path": ".."}))
        readme = await client.call_tool("read_file", {"path": "README"})
        info = ok(await client.call_tool("get_file_info", {"path": "src/main.py"}))
        now = ok(await client.call_tool("get_working_directory", {}))
    assert ok(start)["current_dir"] == sandbox.root
    assert ok(start)["script_dir"] == f"vfs-mcp {metadata.version('vfs-mcp')}"
    assert str(Path(vfs_mcp.__file__).resolve().parent) not in text(start)
    assert sandbox.root in text(start)
    assert first == {"previous_dir": sandbox.root, "current_dir": sandbox.path("proj")}
    assert second == {"previous_dir": sandbox.path("proj"), "current_dir": sandbox.path("proj/src")}
    assert text(read) == "main"
    assert ok(read)["path"] == sandbox.path("proj/src/main.py")
    assert written["path"] == sandbox.path("proj/src/note.txt")
    assert sandbox.get("proj/src/note.txt") == b"here"
    assert listed["path"] == sandbox.path("proj/src")
    assert [e["name"] for e in listed["entries"]] == ["main.py", "note.txt"]
    assert up == {"previous_dir": sandbox.path("proj/src"), "current_dir": sandbox.path("proj")}
    assert text(readme) == "readme"
    assert info["path"] == sandbox.path("proj/src/main.py")
    assert now["current_dir"] == sandbox.path("proj")


async def test_changing_directory_to_a_file_or_a_missing_path_fails_and_keeps_the_working_directory(sandbox):
    sandbox.put("sub/a.txt", "a")
    async with sandbox.client() as client:
        ok(await client.call_tool("change_directory", {"path": "sub"}))
        to_file = await client.call_tool("change_directory", {"path": "a.txt"})
        to_nowhere = await client.call_tool("change_directory", {"path": "nowhere"})
        cwd = ok(await client.call_tool("get_working_directory", {}))
    assert_error(to_file, "NOT_A_DIRECTORY")
    assert_error(to_nowhere, "NOT_FOUND")
    assert cwd["current_dir"] == sandbox.path("sub")


async def test_change_directory_into_another_mount_makes_relative_paths_resolve_there(sandbox):
    second = add_second_mount(sandbox)
    second_put(second, "docs/x.txt", b"in second")
    async with sandbox.client() as client:
        moved = ok(await client.call_tool("change_directory", {"path": "memory://second/docs"}))
        read = await client.call_tool("read_file", {"path": "x.txt"})
        ok(await client.call_tool("write_file", {"path": "y.txt", "content": "written"}))
    assert moved == {"previous_dir": sandbox.root, "current_dir": "memory://second/docs"}
    assert text(read) == "in second"
    assert second_get(second, "docs/y.txt") == b"written"
    assert not sandbox.exists("y.txt")


# -- read-only mounts -------------------------------------------------------------------------


async def test_write_tools_are_not_even_listed_when_every_mount_is_read_only(sandbox):
    sandbox.mount.read_only = True
    sandbox.put("a.txt", "readable")
    async with sandbox.client() as client:
        names = {t.name for t in (await client.list_tools()).tools}
        read = await client.call_tool("read_file", {"path": sandbox.path("a.txt")})
        listed = ok(await client.call_tool("list_allowed_directories", {}))
    assert names >= READ_TOOLS
    assert not (WRITE_TOOLS & names)
    assert text(read) == "readable"
    assert listed["directories"][0]["read_only"] is True


async def test_writes_to_the_read_only_mount_of_a_mixed_server_are_read_only_and_change_nothing(sandbox):
    sandbox.mount.read_only = True
    second = add_second_mount(sandbox)
    sandbox.put("a.txt", "original")
    sandbox.put("dir/b.txt", "b")
    second_put(second, "w.txt", b"writable")
    ro = sandbox.path
    calls = [
        ("write_file", {"path": ro("a.txt"), "content": "changed"}),
        ("write_file", {"path": ro("a.txt"), "content": "more", "append": True}),
        ("write_file", {"path": ro("new.txt"), "content": "new"}),
        ("create_directory", {"path": ro("newdir")}),
        ("create_directory", {"path": ro("dir")}),
        ("move_file", {"source": ro("a.txt"), "destination": ro("moved.txt")}),
        ("move_file", {"source": ro("a.txt"), "destination": "memory://second/moved.txt"}),
        ("move_file", {"source": "memory://second/w.txt", "destination": ro("w.txt")}),
        ("copy_file", {"source": "memory://second/w.txt", "destination": ro("w.txt")}),
        ("copy_file", {"source": ro("a.txt"), "destination": ro("copy.txt")}),
        ("delete_path", {"path": ro("a.txt")}),
        ("delete_path", {"path": ro("dir"), "recursive": True}),
        ("delete_path", {"path": ro("ghost"), "force": True}),
    ]
    async with sandbox.client() as client:
        names = {t.name for t in (await client.list_tools()).tools}
        refusals = [(tool, args, await client.call_tool(tool, args)) for tool, args in calls]
        allowed = await client.call_tool(
            "copy_file", {"source": ro("a.txt"), "destination": "memory://second/copied.txt"}
        )
        written = await client.call_tool("write_file", {"path": "memory://second/fresh.txt", "content": "ok"})
    assert names >= WRITE_TOOLS, "a mixed server lists its write tools"
    for tool, args, result in refusals:
        assert result.is_error, (tool, args)
        assert_error(result, "READ_ONLY")
    assert sandbox.get("a.txt") == b"original"
    assert sandbox.get("dir/b.txt") == b"b"
    for rel in ("new.txt", "newdir", "moved.txt", "w.txt", "copy.txt"):
        assert not sandbox.exists(rel), rel
    assert second_get(second, "w.txt") == b"writable"
    assert not second_exists(second, "moved.txt")
    ok(allowed)
    ok(written)
    assert second_get(second, "copied.txt") == b"original"
    assert second_get(second, "fresh.txt") == b"ok"


# -- tool metadata and protocol modes ---------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_core_tool_has_a_title_description_and_annotations_and_answers_in_text(local_sandbox, mode):
    async with local_sandbox.client(mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= CORE_TOOLS
    for name in sorted(CORE_TOOLS):
        tool = tools[name]
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)
        assert tool.title, name
        assert tool.description, name
        assert len(tool.description) < 600, f"{name}: description is long ({len(tool.description)} chars)"
        # The whole answer is the text (tooling.py): no output schema for a client to check it against.
        assert tool.output_schema is None, name
        hints = tool.annotations
        assert hints is not None, name
        assert hints.open_world_hint is False, name
        assert isinstance(hints.read_only_hint, bool), name
        assert isinstance(hints.destructive_hint, bool), name
        assert isinstance(hints.idempotent_hint, bool), name
        assert hints.read_only_hint is (name in READ_TOOLS), name
        assert hints.destructive_hint is (name in DESTRUCTIVE_TOOLS), name


async def test_the_core_tools_work_in_both_protocol_modes(sandbox):
    outcomes = {}
    for mode in ("auto", "legacy"):
        async with sandbox.client(mode=mode) as client:
            outcomes[mode] = [
                await client.call_tool(
                    "write_file", {"path": sandbox.path(f"{mode}/a.txt"), "content": "mode ✓", "create_dirs": True}
                ),
                await client.call_tool("read_file", {"path": sandbox.path(f"{mode}/a.txt")}),
                await client.call_tool("list_directory", {"path": sandbox.path(mode), "format": "json"}),
                await client.call_tool("read_file", {"path": sandbox.path(f"{mode}/none.txt")}),
                await client.call_tool("delete_path", {"path": sandbox.path(mode), "recursive": True}),
            ]
    for mode, (written, read, listed, missing, deleted) in outcomes.items():
        assert ok(written)["created"] is True, mode
        assert text(read) == "mode ✓", mode
        assert ok(read)["sha256"] == hashlib.sha256("mode ✓".encode()).hexdigest()
        assert [e["name"] for e in ok(listed)["entries"]] == ["a.txt"]
        assert_error(missing, "NOT_FOUND")
        assert error_of(missing)["status"] == 404
        assert ok(deleted)["removed"] is True
        assert not sandbox.exists(mode)
