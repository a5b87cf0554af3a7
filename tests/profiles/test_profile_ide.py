"""The ide profile (SPEC §5; its original: the Emacs IDE integration): file_open / file_read / file_save / file_close.

The tool list is checked against the original over a real stdio subprocess; result shapes are
golden (field for field) on memory, local and s3; then the buffer behaviour: clamping,
backups, encodings, changes made on disk behind an open buffer, closing with unsaved
content, error codes with the original's JSON-RPC numbers, and jail escapes through ``uri``.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from conftest import CANARY, Sandbox, ScopedSandbox, make_sandbox
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult
from results import ok

from vfs_mcp import build_server
from vfs_mcp.errors import BinaryContent, TooLarge
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.ops.buffers import editor as buffers
from vfs_mcp.ops.text import codings
from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

IDE = ("ide",)
REQUIRED = object()
# The original's request parameters: required, or optional with the default we give them.
ORIGINAL_ARGS: dict[str, dict[str, Any]] = {
    "file_open": {"uri": REQUIRED, "line": None, "column": None},
    "file_read": {"uri": REQUIRED, "start_line": None, "end_line": None},
    "file_save": {"uri": REQUIRED, "content": REQUIRED, "create_if_not_exists": False},
    "file_close": {"uri": REQUIRED, "save_if_modified": True},
}
ARG_TYPES = {
    "uri": "string",
    "line": "integer",
    "column": "integer",
    "start_line": "integer",
    "end_line": "integer",
    "content": "string",
    "create_if_not_exists": "boolean",
    "save_if_modified": "boolean",
    "encoding": "string",
    "force": "boolean",
    "backup": "boolean",
    "handle": "string",
}
# Our additions: optional, with these defaults.
EXTRA_ARGS: dict[str, dict[str, Any]] = {
    "file_open": {"encoding": None},
    "file_read": {"handle": None},
    "file_save": {"force": False, "backup": True, "handle": None},
    "file_close": {"handle": None},
}
ORIGINAL_RESULTS = {
    "file_open": {"success", "buffer", "line", "column"},
    "file_read": {"content", "lines", "encoding"},
    "file_save": {"success", "bytes_written", "backup_created"},
    "file_close": {"success", "was_modified"},
}
ORIGINAL_NAMES = {
    "file_open": "file/open",
    "file_read": "file/read",
    "file_save": "file/save",
    "file_close": "file/close",
}


# -- helpers ----------------------------------------------------------------------------


def without_handle(result: Any) -> dict[str, Any]:
    """An open's fields but its handle, checked to be one (22 random characters)."""
    fields = dict(ok(result))
    handle = fields.pop("handle")
    assert isinstance(handle, str) and len(handle) == 22
    return fields


@pytest.fixture
def sandbox(scoped_sandbox: ScopedSandbox) -> ScopedSandbox:
    """A folder of its own in a mount shared by this module (an s3 bucket costs a second)."""
    return scoped_sandbox


@pytest.fixture
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    """A memory mount for behaviour that does not depend on the backend."""
    return make_sandbox("memory", tmp_path, request)


def uri(box: Sandbox, rel: str) -> str:
    """How the original names a file: file:// plus the percent-encoded path locally, the URL otherwise."""
    path = box.path(rel)
    return "file://" + quote(path) if box.kind == "local" else path


def error(result: CallToolResult, code: str, jsonrpc: int) -> dict[str, Any]:
    """The error data of a failed call, checked for our code and the original's JSON-RPC number."""
    assert result.is_error, f"expected {code}, got {data_of(result)}"
    data: dict[str, Any] = error_of(result) or {}
    assert (data["code"], data["jsonrpc_code"]) == (code, jsonrpc), data
    assert result.content[0].text.startswith(f"{code}: ")
    return data


def server_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", *args])


# -- the tool list, over stdio ------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "listed"),
    [
        (
            (),
            {"file_open": "file_open", "file_read": "file_read", "file_save": "file_save", "file_close": "file_close"},
        ),
        (("--tool-names", "seed", "--read-only"), {k: v for k, v in ORIGINAL_NAMES.items() if k != "file_save"}),
    ],
    ids=["safe-names", "seed-names-read-only"],
)
async def test_stdio_server_lists_the_seed_tools_with_their_arguments_and_defaults(
    tmp_path: Path, flags: tuple[str, ...], listed: dict[str, str]
) -> None:
    (tmp_path / "hello.el").write_text('(message "hi")\n')
    async with Client(server_params(str(tmp_path), "--profile", "ide", *flags)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        u = f"file://{quote(str(tmp_path))}/hello.el"
        opened = await client.call_tool(listed["file_open"], {"uri": u})
    assert set(tools) == set(listed.values())
    for ours, name in listed.items():
        tool = tools[name]
        props = tool.input_schema["properties"]
        expected = {**ORIGINAL_ARGS[ours], **EXTRA_ARGS.get(ours, {})}
        assert set(props) == set(expected), name
        assert set(tool.input_schema.get("required", [])) == {a for a, d in expected.items() if d is REQUIRED}
        for arg, default in expected.items():
            if default is not REQUIRED:
                assert props[arg].get("default") == default, (name, arg)  # None is not spelt out
            kinds = {props[arg].get("type")} | {t.get("type") for t in props[arg].get("anyOf", [])}
            assert ARG_TYPES[arg] in kinds, (name, arg)
        assert ORIGINAL_RESULTS[ours] <= set(tool.output_schema["properties"]), name
        assert tool.annotations.read_only_hint is (ours in ("file_open", "file_read")), name
        assert tool.annotations.open_world_hint is False
        assert tool.description
    assert without_handle(opened) == {
        "success": True,
        "buffer": "hello.el",
        "line": 1,
        "column": 1,
        "uri": u,
        "encoding": "utf-8",
        "line_ending": "lf",
        "total_lines": 1,
        "modified": False,
        "externally_modified": False,
    }


async def test_ide_profile_sits_beside_the_default_profile(memory: Sandbox) -> None:
    names = {tool.name for tool in await memory.server(profiles=("default", "ide")).list_tools()}
    assert {"read_file", "write_file", "file_open", "file_read", "file_save", "file_close"} <= names


async def test_a_mixed_server_lists_file_save_and_refuses_it_on_the_read_only_mount() -> None:
    mounts = open_mounts([MountSpec("memory://ide-rw"), MountSpec("memory://ide-ro", read_only=True)])
    async with Client(build_server(mounts, Settings(profiles=IDE))) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("file_save", {"uri": "memory://ide-ro/a", "content": "x"})
    assert "file_save" in names
    error(refused, "READ_ONLY", -32603)


# -- golden result shapes on every backend ---------------------------------------------------


async def test_open_read_save_close_results_match_the_seed_field_for_field(sandbox: Sandbox) -> None:
    sandbox.put("src/file.el", "one\ntwo\nthree\n")
    u = uri(sandbox, "src/file.el")
    async with sandbox.client(profiles=IDE) as client:
        opened = await client.call_tool("file_open", {"uri": u, "line": 2, "column": 3})
        read = await client.call_tool("file_read", {"uri": u, "start_line": 2, "end_line": 3})
        saved = await client.call_tool("file_save", {"uri": u, "content": "one\n2\n"})
        closed = await client.call_tool("file_close", {"uri": u, "save_if_modified": True})
        again = await client.call_tool("file_close", {"uri": u})

    assert without_handle(opened) == {
        "success": True,
        "buffer": "file.el",
        "line": 2,
        "column": 3,
        "uri": u,
        "encoding": "utf-8",
        "line_ending": "lf",
        "total_lines": 3,
        "modified": False,
        "externally_modified": False,
    }
    assert opened.content[0].text == "Opened file.el at line 2, column 3 (utf-8, 3 lines)"
    assert ok(read) == {
        "content": "two\nthree\n",
        "lines": 2,
        "encoding": "utf-8",
        "uri": u,
        "start_line": 2,
        "end_line": 3,
        "total_lines": 3,
        "modified": False,
        "externally_modified": False,
    }
    assert [block.text for block in read.content] == ["two\nthree\n", "(lines 2-3 of 3, utf-8)"]
    assert ok(saved) == {
        "success": True,
        "bytes_written": 6,
        "backup_created": True,
        "uri": u,
        "encoding": "utf-8",
        "created": False,
        "backup": u + "~",
        "externally_modified": False,
    }
    assert ok(closed) == {"success": True, "was_modified": False, "uri": u, "was_open": True, "saved": False}
    assert ok(again) == {"success": True, "was_modified": False, "uri": u, "was_open": False, "saved": False}
    assert sandbox.get("src/file.el") == b"one\n2\n"
    assert sandbox.get("src/file.el~") == b"one\ntwo\nthree\n"


async def test_save_keeps_a_backup_of_each_previous_version_unless_told_not_to(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "v1\n")
    u = uri(sandbox, "a.txt")
    async with sandbox.client(profiles=IDE) as client:
        off = ok(await client.call_tool("file_save", {"uri": u, "content": "v2\n", "backup": False}))
        assert not sandbox.exists("a.txt~")
        first = ok(await client.call_tool("file_save", {"uri": u, "content": "v3\n"}))
        assert sandbox.get("a.txt~") == b"v2\n"
        ok(await client.call_tool("file_open", {"uri": u}))
        second = ok(await client.call_tool("file_save", {"uri": u, "content": "v4\n"}))
        assert sandbox.get("a.txt~") == b"v3\n"
        third = ok(await client.call_tool("file_save", {"uri": u, "content": "v5\n", "backup": False}))
    assert (off["backup_created"], off["backup"]) == (False, None)
    assert (first["backup_created"], first["backup"]) == (True, u + "~")
    assert second["backup_created"] and not third["backup_created"]
    assert sandbox.get("a.txt~") == b"v3\n"
    assert sandbox.get("a.txt") == b"v5\n"


async def test_save_creates_a_missing_file_only_when_asked(sandbox: Sandbox) -> None:
    u = uri(sandbox, "new/deep/n.txt")
    async with sandbox.client(profiles=IDE) as client:
        refused = await client.call_tool("file_save", {"uri": u, "content": "x"})
        created = ok(await client.call_tool("file_save", {"uri": u, "content": "x\n", "create_if_not_exists": True}))
        not_kept = ok(await client.call_tool("file_close", {"uri": u}))
    assert "create_if_not_exists=true" in error(refused, "NOT_FOUND", -32602)["message"]
    assert created == {
        "success": True,
        "bytes_written": 2,
        "backup_created": False,
        "uri": u,
        "encoding": "utf-8",
        "created": True,
        "backup": None,
        "externally_modified": False,
    }
    assert sandbox.get("new/deep/n.txt") == b"x\n"
    assert not not_kept["was_open"]  # saving a file that is not open keeps no buffer


# -- positions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "column", "expected"),
    [
        (None, None, (1, 1)),
        (2, 4, (2, 4)),
        (0, 0, (1, 1)),
        (-7, -3, (1, 1)),
        (2, 99, (2, 6)),  # "three" has 5 characters: column 6 is its end
        (99, 2, (3, 2)),
        (99, 99, (3, 2)),  # the last line is "é"
        (1, 4, (1, 4)),
    ],
)
async def test_open_clamps_positions_and_returns_the_actual_one(
    memory: Sandbox, line: int | None, column: int | None, expected: tuple[int, int]
) -> None:
    memory.put("p.txt", "one\nthree\né")
    args: dict[str, Any] = {"uri": memory.path("p.txt")}
    args |= {"line": line} if line is not None else {}
    args |= {"column": column} if column is not None else {}
    async with memory.client(profiles=IDE) as client:
        result = ok(await client.call_tool("file_open", args))
    assert (result["line"], result["column"]) == expected
    assert result["total_lines"] == 3


async def test_positions_in_an_empty_file_and_a_crlf_file(memory: Sandbox) -> None:
    memory.put("empty.txt", b"")
    memory.put("crlf.txt", b"ab\r\ncd\r\n")
    async with memory.client(profiles=IDE) as client:
        empty = ok(await client.call_tool("file_open", {"uri": memory.path("empty.txt"), "line": 5, "column": 5}))
        crlf = ok(await client.call_tool("file_open", {"uri": memory.path("crlf.txt"), "line": 1, "column": 9}))
        read = ok(await client.call_tool("file_read", {"uri": memory.path("empty.txt"), "end_line": 9}))
    assert (empty["line"], empty["column"], empty["total_lines"]) == (1, 1, 0)
    assert (crlf["column"], crlf["line_ending"]) == (3, "crlf")  # the \r is not a column
    assert (read["content"], read["lines"], read["start_line"], read["end_line"]) == ("", 0, 1, 0)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (None, None, (1, 4, "1\n2\n3\n4\n")),
        (2, None, (2, 4, "2\n3\n4\n")),
        (None, 2, (1, 2, "1\n2\n")),
        (0, 99, (1, 4, "1\n2\n3\n4\n")),
        (-3, 1, (1, 1, "1\n")),
        (99, None, (4, 4, "4\n")),
        (99, 120, (4, 4, "4\n")),
        (3, 3, (3, 3, "3\n")),
        (None, -5, (1, 1, "1\n")),
    ],
)
async def test_read_clamps_line_ranges_and_returns_the_actual_one(
    memory: Sandbox, start: int | None, end: int | None, expected: tuple[int, int, str]
) -> None:
    memory.put("r.txt", "1\n2\n3\n4\n")
    args: dict[str, Any] = {"uri": memory.path("r.txt")}
    args |= {"start_line": start} if start is not None else {}
    args |= {"end_line": end} if end is not None else {}
    async with memory.client(profiles=IDE) as client:
        result = ok(await client.call_tool("file_read", args))
    first, last, content = expected
    assert (result["start_line"], result["end_line"], result["content"]) == (first, last, content)
    assert (result["lines"], result["total_lines"]) == (last - first + 1, 4)


async def test_read_refuses_a_range_that_ends_before_it_starts(memory: Sandbox) -> None:
    memory.put("r.txt", "1\n2\n3\n")
    async with memory.client(profiles=IDE) as client:
        result = await client.call_tool("file_read", {"uri": memory.path("r.txt"), "start_line": 3, "end_line": 2})
    assert "end_line 2 is before start_line 3" in error(result, "INVALID_ARGUMENT", -32602)["message"]


# -- encodings --------------------------------------------------------------------------

SAMPLES = [
    # (file bytes, encoding reported, line ending, text a model sees, text it saves, bytes saved)
    pytest.param("café naïve\nGrüße\n".encode("latin-1"), "iso8859-1", "lf", id="latin-1"),
    pytest.param("He said “hi” — 5 €\n".encode("cp1252"), "cp1252", "lf", id="cp1252"),
    pytest.param(codecs.BOM_UTF16_LE + "héllo ✓\nwörld\n".encode("utf-16-le"), "utf-16", "lf", id="utf-16-le-bom"),
    pytest.param(codecs.BOM_UTF16_BE + "héllo ✓\r\nwörld\r\n".encode("utf-16-be"), "utf-16", "crlf", id="utf-16-be"),
    pytest.param("héllo ✓\nwörld 😀\n".encode(), "utf-8", "lf", id="utf-8"),
    pytest.param(codecs.BOM_UTF8 + "héllo\r\nwörld\r\n".encode(), "utf-8-sig", "crlf", id="utf-8-bom-crlf"),
    pytest.param("Привет мир, как дела?\nхорошо\n".encode("cp1251"), "cp1251", "lf", id="cp1251"),  # noqa: RUF001
    pytest.param(b"plain ascii\n", "utf-8", "lf", id="ascii"),
]


def expected_text(data: bytes, encoding: str) -> str:
    return data.decode(encoding).replace("\r\n", "\n")


@pytest.mark.parametrize(("data", "encoding", "ending"), SAMPLES)
async def test_encoding_is_detected_on_open_and_preserved_on_save(
    sandbox: Sandbox, data: bytes, encoding: str, ending: str
) -> None:
    sandbox.put("enc.txt", data)
    u = uri(sandbox, "enc.txt")
    text = expected_text(data, encoding)
    new_text = text + text.splitlines()[0] + " again\n"
    async with sandbox.client(profiles=IDE) as client:
        opened = ok(await client.call_tool("file_open", {"uri": u}))
        read = ok(await client.call_tool("file_read", {"uri": u}))
        saved = ok(await client.call_tool("file_save", {"uri": u, "content": new_text}))
        after = ok(await client.call_tool("file_read", {"uri": u}))
    assert (opened["encoding"], opened["line_ending"]) == (encoding, ending)
    assert (read["content"], read["encoding"]) == (text, encoding)
    expected_bytes = new_text.replace("\n", "\r\n") if ending == "crlf" else new_text
    bom = next((b for b in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF8) if data.startswith(b)), b"")
    codec = {codecs.BOM_UTF16_LE: "utf-16-le", codecs.BOM_UTF16_BE: "utf-16-be", codecs.BOM_UTF8: "utf-8"}.get(bom)
    assert sandbox.get("enc.txt") == bom + expected_bytes.encode(codec or encoding)
    assert saved["bytes_written"] == len(sandbox.get("enc.txt"))
    assert sandbox.get("enc.txt~") == data
    assert (after["content"], after["encoding"], after["modified"]) == (new_text, encoding, False)


async def test_save_of_a_file_that_is_not_open_keeps_its_encoding(memory: Sandbox) -> None:
    memory.put("l1.txt", "déjà vu\r\n".encode("latin-1"))
    async with memory.client(profiles=IDE) as client:
        saved = ok(
            await client.call_tool("file_save", {"uri": memory.path("l1.txt"), "content": "déjà vu\nà bientôt\n"})
        )
    assert saved["encoding"] == "iso8859-1"
    assert memory.get("l1.txt") == "déjà vu\r\nà bientôt\r\n".encode("latin-1")


async def test_text_the_encoding_cannot_hold_is_refused_and_changes_nothing(memory: Sandbox) -> None:
    memory.put("l1.txt", "café\n".encode("latin-1"))
    u = memory.path("l1.txt")
    async with memory.client(profiles=IDE) as client:
        ok(await client.call_tool("file_open", {"uri": u}))
        refused = await client.call_tool("file_save", {"uri": u, "content": "café ✓\n"})
        read = ok(await client.call_tool("file_read", {"uri": u}))
        closed = ok(await client.call_tool("file_close", {"uri": u}))
    assert "'✓'" in error(refused, "INVALID_ARGUMENT", -32602)["message"]
    assert memory.get("l1.txt") == "café\n".encode("latin-1")
    assert not memory.exists("l1.txt~")
    assert (read["content"], read["modified"]) == ("café\n", False)
    assert not closed["was_modified"]


async def test_open_takes_an_encoding_instead_of_detecting_and_binary_files_are_refused(memory: Sandbox) -> None:
    memory.put("l1.txt", "café\n".encode("latin-1"))
    memory.put("blob.bin", bytes(range(256)) * 4)
    async with memory.client(profiles=IDE) as client:
        wrong = await client.call_tool("file_open", {"uri": memory.path("l1.txt"), "encoding": "utf-8"})
        right = ok(await client.call_tool("file_open", {"uri": memory.path("l1.txt"), "encoding": "cp850"}))
        read = ok(await client.call_tool("file_read", {"uri": memory.path("l1.txt")}))
        unknown = await client.call_tool("file_open", {"uri": memory.path("l1.txt"), "encoding": "nope"})
        as_base64 = await client.call_tool("file_open", {"uri": memory.path("l1.txt"), "encoding": "base64"})
        blob = await client.call_tool("file_open", {"uri": memory.path("blob.bin")})
        blob_read = await client.call_tool("file_read", {"uri": memory.path("blob.bin")})
    error(wrong, "BINARY_CONTENT", -32602)
    assert (right["encoding"], read["content"]) == ("cp850", "cafÚ\n")
    error(unknown, "INVALID_ARGUMENT", -32602)
    error(as_base64, "INVALID_ARGUMENT", -32602)
    error(blob, "BINARY_CONTENT", -32602)
    error(blob_read, "BINARY_CONTENT", -32602)


@pytest.mark.parametrize(
    ("text", "encoding", "expected"),
    [
        ("café naïve résumé\n", "latin-1", "iso8859-1"),
        ("Grüße aus Köln, schöne Straße\n", "latin-1", "iso8859-1"),
        ("Hyvää yötä, äiti!\n", "latin-1", "iso8859-1"),
        ("El niño comió piña. ¿Qué tal?\n", "latin-1", "iso8859-1"),
        ("x = 1  # café\n", "latin-1", "iso8859-1"),
        ("“quoted” — €5\n", "cp1252", "cp1252"),
        ("Привет мир, как дела?\n", "cp1251", "cp1251"),
        ("Καλημέρα κόσμε, τι κάνεις;\n", "cp1253", "cp1253"),
        ("hello\n", "utf-16-le", "utf-16-le"),
        ("", "utf-8", "utf-8"),
    ],
)
def test_detect_names_the_encoding_of_short_texts(text: str, encoding: str, expected: str) -> None:
    coding = codings.detect(text.encode(encoding), "x")
    assert coding.name == expected
    assert coding.decode(text.encode(encoding), "x") == text


def test_detect_on_a_prefix_tolerates_a_character_cut_at_the_end() -> None:
    data = "aé".encode()[:-1]
    assert codings.detect(data, "x", complete=False).name == "utf-8"
    with pytest.raises(BinaryContent):
        codings.detect(b"\x00" + data, "x")


# -- changes made on disk behind an open buffer ----------------------------------------


async def test_read_and_save_report_a_change_on_disk_and_save_refuses_it_unless_forced(sandbox: Sandbox) -> None:
    sandbox.put("ext.txt", "mine\n")
    u = uri(sandbox, "ext.txt")
    async with sandbox.client(profiles=IDE) as client:
        ok(await client.call_tool("file_open", {"uri": u}))
        clean = ok(await client.call_tool("file_read", {"uri": u}))
        sandbox.put("ext.txt", "theirs, longer\n")
        stale = ok(await client.call_tool("file_read", {"uri": u}))
        refused = await client.call_tool("file_save", {"uri": u, "content": "my edit\n"})
        on_disk = sandbox.get("ext.txt")
        pending = ok(await client.call_tool("file_read", {"uri": u}))
        reopened = ok(await client.call_tool("file_open", {"uri": u}))
        close_refused = await client.call_tool("file_close", {"uri": u})
        forced = ok(await client.call_tool("file_save", {"uri": u, "content": "my edit\n", "force": True}))
        after = ok(await client.call_tool("file_read", {"uri": u}))
        closed = ok(await client.call_tool("file_close", {"uri": u}))
    assert not clean["externally_modified"]
    assert (stale["content"], stale["externally_modified"], stale["modified"]) == ("mine\n", True, False)
    assert "force=true" in error(refused, "CONFLICT", -32602)["message"]
    assert on_disk == b"theirs, longer\n"
    # The refused content stays in the buffer, unsaved, and re-opening does not throw it away.
    assert (pending["content"], pending["modified"], pending["externally_modified"]) == ("my edit\n", True, True)
    assert (reopened["modified"], reopened["externally_modified"]) == (True, True)
    error(close_refused, "CONFLICT", -32602)
    assert forced["externally_modified"] and forced["backup_created"]
    assert sandbox.get("ext.txt") == b"my edit\n"
    assert sandbox.get("ext.txt~") == b"theirs, longer\n"  # the change that force overwrote is kept
    assert (after["modified"], after["externally_modified"]) == (False, False)
    assert (closed["was_open"], closed["was_modified"]) == (True, False)


async def test_open_again_reloads_a_file_changed_on_disk(sandbox: Sandbox) -> None:
    sandbox.put("r.txt", "old\n")
    u = uri(sandbox, "r.txt")
    async with sandbox.client(profiles=IDE) as client:
        ok(await client.call_tool("file_open", {"uri": u}))
        sandbox.put("r.txt", "new\nlines\n")
        reopened = ok(await client.call_tool("file_open", {"uri": u, "line": 2}))
        read = ok(await client.call_tool("file_read", {"uri": u}))
        saved = ok(await client.call_tool("file_save", {"uri": u, "content": "newer\n"}))
    assert (reopened["total_lines"], reopened["line"], reopened["externally_modified"]) == (2, 2, False)
    assert (read["content"], read["externally_modified"]) == ("new\nlines\n", False)
    assert not saved["externally_modified"]


async def test_a_file_deleted_behind_its_buffer_is_an_external_change(memory: Sandbox) -> None:
    memory.put("gone.txt", "here\n")
    u = memory.path("gone.txt")
    async with memory.client(profiles=IDE) as client:
        ok(await client.call_tool("file_open", {"uri": u}))
        memory.mount.fs.rm_file(memory.mount.fs_path("gone.txt"))
        read = ok(await client.call_tool("file_read", {"uri": u}))
        refused = await client.call_tool("file_save", {"uri": u, "content": "back\n"})
        forced = ok(await client.call_tool("file_save", {"uri": u, "content": "back\n", "force": True}))
    assert (read["content"], read["externally_modified"]) == ("here\n", True)
    error(refused, "CONFLICT", -32602)
    assert (forced["created"], forced["externally_modified"], forced["backup_created"]) == (True, True, False)
    assert memory.get("gone.txt") == b"back\n"


async def test_close_saves_or_discards_content_a_failed_save_left_unsaved(sandbox: ScopedSandbox) -> None:
    # A folder squatting on the backup name makes the save fail after its content was accepted.
    for rel in ("keep.txt", "drop.txt"):
        sandbox.put(rel, "v1\n")
        sandbox.put(f"{rel}~/squat", "x")
    keep, drop = uri(sandbox, "keep.txt"), uri(sandbox, "drop.txt")
    async with sandbox.client(profiles=IDE) as client:
        for u in (keep, drop):
            ok(await client.call_tool("file_open", {"uri": u}))
            error(await client.call_tool("file_save", {"uri": u, "content": "v2\n"}), "IS_A_DIRECTORY", -32602)
        for rel in ("keep.txt", "drop.txt"):
            sandbox.mount.fs.rm(sandbox._raw(f"{rel}~"), recursive=True)
            sandbox.mount.backend.invalidate_tree(sandbox._raw(f"{rel}~"))
        pending = ok(await client.call_tool("file_read", {"uri": keep}))
        kept = ok(await client.call_tool("file_close", {"uri": keep, "save_if_modified": True}))
        dropped = ok(await client.call_tool("file_close", {"uri": drop, "save_if_modified": False}))
    assert (pending["content"], pending["modified"], pending["externally_modified"]) == ("v2\n", True, False)
    assert kept == {"success": True, "was_modified": True, "uri": keep, "was_open": True, "saved": True}
    assert dropped == {"success": True, "was_modified": True, "uri": drop, "was_open": True, "saved": False}
    assert (sandbox.get("keep.txt"), sandbox.get("keep.txt~")) == (b"v2\n", b"v1\n")
    assert sandbox.get("drop.txt") == b"v1\n"


# -- buffers -----------------------------------------------------------------------------


async def test_buffers_are_named_like_emacs_and_kept_per_session(memory: Sandbox) -> None:
    memory.put("a/x.txt", "a\n")
    memory.put("b/x.txt", "b\n")
    async with memory.client(profiles=IDE) as client:
        first = ok(await client.call_tool("file_open", {"uri": memory.path("a/x.txt")}))
        second = ok(await client.call_tool("file_open", {"uri": memory.path("b/x.txt")}))
        again = ok(await client.call_tool("file_open", {"uri": memory.path("a/x.txt")}))
        async with memory.client(profiles=IDE) as other:
            elsewhere = ok(await other.call_tool("file_close", {"uri": memory.path("a/x.txt")}))
        here = ok(await client.call_tool("file_close", {"uri": memory.path("a/x.txt")}))
    assert (first["buffer"], second["buffer"], again["buffer"]) == ("x.txt", "x.txt<2>", "x.txt")
    assert not elsewhere["was_open"]
    assert here["was_open"]


def test_open_buffers_and_their_size_are_bounded(memory: Sandbox) -> None:
    for name in ("1", "2", "3"):
        memory.put(name, "x\n")
    memory.put("big", "y" * 100)
    bufs = buffers.Buffers(memory.vfs(), max_read_bytes=50, max_buffers=2)
    bufs.open(memory.path("1"))
    bufs.open(memory.path("2"))
    bufs.open(memory.path("2"))  # re-opening is not another buffer
    with pytest.raises(TooLarge, match="close some"):
        bufs.open(memory.path("3"))
    assert bufs.close(memory.path("1")).was_open
    bufs.open(memory.path("3"))
    with pytest.raises(TooLarge, match="limit"):
        bufs.read(memory.path("big"))


async def test_private_files_get_no_backup_others_could_read(local_sandbox: Sandbox) -> None:
    local_sandbox.put("secret.txt", "s1\n")
    os.chmod(local_sandbox.mount.fs_path("secret.txt"), 0o600)
    u = uri(local_sandbox, "secret.txt")
    async with local_sandbox.client(profiles=IDE) as client:
        saved = ok(await client.call_tool("file_save", {"uri": u, "content": "s2\n"}))
    mask = os.umask(0)
    os.umask(mask)
    leaks = (0o666 & ~mask) & 0o077
    assert saved["backup_created"] is not bool(leaks)
    backup = Path(local_sandbox.mount.fs_path("secret.txt~"))
    assert backup.exists() is saved["backup_created"]
    if backup.exists():
        assert stat.S_IMODE(backup.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE(Path(local_sandbox.mount.fs_path("secret.txt")).stat().st_mode) == 0o600


# -- URIs, errors and the jail -------------------------------------------------------------


async def test_file_uris_may_be_percent_encoded_as_the_seed_writes_them(local_sandbox: Sandbox) -> None:
    local_sandbox.put("dir/my file é.txt", "x\n")
    path = local_sandbox.path("dir/my file é.txt")
    standard = "file://" + quote(path)
    forms = [standard, "file://" + quote(path, safe=""), "file://localhost" + quote(path), f"file://{path}"]
    async with local_sandbox.client(profiles=IDE) as client:
        results = [ok(await client.call_tool("file_open", {"uri": form})) for form in forms]
        closed = ok(await client.call_tool("file_close", {"uri": forms[1]}))
    assert {r["uri"] for r in results} == {standard}
    assert {r["buffer"] for r in results} == {"my file é.txt"}  # one buffer, however it is spelled
    assert closed["was_open"] and closed["uri"] == standard


async def test_errors_carry_the_seed_jsonrpc_codes(memory: Sandbox) -> None:
    memory.put("f.txt", "x\n")
    memory.mkdir("d")
    async with memory.client(profiles=IDE) as client:
        cases = [
            ("file_open", {"uri": memory.path("missing.txt")}, "NOT_FOUND", -32602),
            ("file_read", {"uri": memory.path("missing.txt")}, "NOT_FOUND", -32602),
            ("file_open", {"uri": memory.path("d")}, "IS_A_DIRECTORY", -32602),
            ("file_open", {"uri": ""}, "INVALID_ARGUMENT", -32602),
            ("file_open", {"uri": "file:///tmp/a%00b"}, "INVALID_ARGUMENT", -32602),
            ("file_open", {"uri": memory.path("f.txt"), "line": "two"}, "INVALID_ARGUMENT", -32602),
            ("file_save", {"uri": memory.path("f.txt")}, "INVALID_ARGUMENT", -32602),
            ("file_close", {"uri": memory.path("f.txt"), "bogus": 1}, "INVALID_ARGUMENT", -32602),
            ("file_read", {"uri": "file:///etc/passwd"}, "ACCESS_DENIED", -32603),
            ("file_read", {"uri": "http://example.com/x"}, "ACCESS_DENIED", -32603),
        ]
        for tool, args, code, jsonrpc in cases:
            data = error(await client.call_tool(tool, args), code, jsonrpc)
            assert data["status"] in (400, 403, 404), data


def escapes(box: Sandbox) -> list[str]:
    """URIs that leave the mount, written the ways the original and its clients write them."""
    root = box.root
    if box.kind == "local":
        outside = str(box.outside / "secret.txt")
        return [
            "file://" + quote(outside),
            "file://" + quote(outside, safe=""),
            "file://" + quote(root) + "/../outside/secret.txt",
            "file://" + quote(root) + "/%2E%2E/outside/secret.txt",
            "file://" + quote(root + "_evil/secret.txt"),
            "file://" + quote(root + "/link_out"),
            "file://" + quote(root + "/link_dir/secret.txt"),
            "file://evil.example" + quote(outside),
            "simplecache::file://" + quote(outside),
        ]
    if box.kind == "memory":
        return [f"{root}/../other/secret.txt", "memory://other/secret.txt", f"{root}_evil/secret.txt"]
    bucket = root.removeprefix("s3://").split("/")[0]
    return [
        f"s3://{bucket}/pre-evil/secret.txt",
        f"s3://{bucket}/pre/../pre-evil/secret.txt",
        f"s3://{bucket}-other/secret.txt",
    ]


@pytest.mark.parametrize("kind", ["memory", "local", "s3"])
async def test_jail_escapes_through_uri_are_access_denied(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    box = make_sandbox(kind, tmp_path, request)
    if kind == "local":
        os.symlink(box.outside / "secret.txt", box.mount.fs_path("link_out"))
        os.symlink(box.outside, box.mount.fs_path("link_dir"))
    async with box.client(profiles=IDE) as client:
        for escape in escapes(box):
            calls = [
                ("file_open", {"uri": escape}),
                ("file_read", {"uri": escape}),
                ("file_save", {"uri": escape, "content": "pwned", "create_if_not_exists": True, "force": True}),
                ("file_close", {"uri": escape, "save_if_modified": True}),
            ]
            for tool, args in calls:
                result = await client.call_tool(tool, args)
                data = error(result, "ACCESS_DENIED", -32603)
                assert CANARY.decode() not in str(result.content)
                assert str(box.outside) not in data["message"] or str(box.outside) in unquote(escape)
    assert (box.outside / "secret.txt").read_bytes() == CANARY
    assert not (box.outside / "secret.txt~").exists()
