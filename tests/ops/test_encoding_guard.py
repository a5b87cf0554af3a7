"""No reply can take the server down: hostile names and contents over real stdio.

A string with a lone surrogate (an undecodable byte of a file name or of a file read with
``surrogateescape``, or a ``\\ud800`` escape in a request) cannot be encoded as UTF-8; one
such string in a reply made the transport raise and the server exit, leaving the client
waiting forever. The server is driven here by raw JSON-RPC lines, so requests can carry what
no well-behaved client would send.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult, TextContent

from vfs_mcp.profiles import PROFILES
from vfs_mcp.server.replies import _encodes

SURROGATE = re.compile("[\ud800-\udfff]")
ANSWER_SECONDS = 30  # a generous bound that proves "does not hang"

HOSTILE = [
    '"bad\\udcc3(.txt"',  # the file whose name holds the byte 0xC3, as Python names it
    '"\\ud800lone.txt"',  # a lone surrogate no file system can name
    '"nul\\u0000byte"',
    '"' + "x" * 5000 + '"',
    '"bad.txt"',
]


class Raw:
    """A vfs-mcp stdio server spoken to in raw JSON lines."""

    def __init__(self, root: Path, profile: str) -> None:
        self.profile = profile
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vfs_mcp", str(root), "--profile", profile],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.ids = iter(range(1, 1_000_000))
        init = '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}'
        self.request("initialize", init)
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: str) -> dict[str, Any]:
        """Send a request whose params are raw JSON text; the response (a deadline, not a hang)."""
        number = next(self.ids)
        self.send(f'{{"jsonrpc":"2.0","id":{number},"method":"{method}","params":{params}}}')
        while True:
            try:
                line = self.lines.get(timeout=ANSWER_SECONDS)
            except queue.Empty:
                raise AssertionError(f"no answer to {method} {params[:200]} (server alive: {self.alive})") from None
            message = json.loads(line)
            if message.get("id") == number:
                return message  # type: ignore[no-any-return]

    def call(self, tool: str, arguments: str) -> dict[str, Any]:
        return self.request("tools/call", f'{{"name":{json.dumps(tool)},"arguments":{arguments}}}')

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> str:
        self.proc.kill()
        self.proc.wait()
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self.reader.join(timeout=ANSWER_SECONDS)
        self.proc.stdout.close()
        self.proc.stdin.close()
        log = self.proc.stderr.read().decode(errors="replace")
        self.proc.stderr.close()
        return log


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A folder of names and contents that are not valid text."""
    root = tmp_path / "hostile"
    root.mkdir()
    (root / "bad.txt").write_bytes(b"bad bytes: \xc3\x28 end\nlast line\n")
    (root / "utf16.txt").write_bytes("\ufeffwide text\n".encode("utf-16-le"))
    (root / "surrogate.txt").write_bytes(b"encoded surrogate: \xed\xa0\x80\n")
    (root / "nul.bin").write_bytes(b"a\x00b\n" * 10)
    (root / "long.txt").write_bytes(b"y" * 200_000 + b"\n")
    os.mkdir(os.fsencode(root) + b"/dir\xff")
    for name in (b"bad\xc3(.txt", b"dir\xff/inner\xfe.txt", b"line\nbreak.txt"):
        with open(os.fsencode(root) + b"/" + name, "wb") as handle:
            handle.write(b"hostile name \xc3\x28\n")
    return root


@pytest.fixture
def server(request: pytest.FixtureRequest, hostile: Path) -> Iterator[Raw]:
    raw = Raw(hostile, request.param)
    try:
        yield raw
    finally:
        raw.close()


def _value(schema: dict[str, Any], text: str) -> str:
    """A JSON value (as text) for ``schema`` built around the hostile string ``text``."""
    if "enum" in schema:
        return json.dumps(schema["enum"][0])
    kind = schema.get("type")
    if kind == "array":
        return f"[{_value(schema.get('items', {}), text)}]"
    if kind == "object":
        return _object(schema, text)
    if kind in ("integer", "number"):
        return "1"
    if kind == "boolean":
        return "false"
    return text


def _object(schema: dict[str, Any], text: str) -> str:
    required = set(schema.get("required", []))
    fields = [f"{json.dumps(k)}:{_value(v, text)}" for k, v in schema.get("properties", {}).items() if k in required]
    return "{" + ",".join(fields) + "}"


DEEP_CALLS = {  # calls that put hostile names or text into a reply
    "default": [
        ("list_directory", '{"path":"."}'),
        ("directory_tree", '{"path":"."}'),
        ("search_files", '{"path":".","pattern":"*"}'),
        ("grep_files", '{"path":".","pattern":"hostile"}'),
        ("grep_files", '{"path":".","pattern":"bytes","count_only":true}'),
        ("find_duplicate_files", '{"path":".","min_size":0}'),
        ("read_file", '{"path":"bad.txt","encoding":"latin-1"}'),
        ("edit_file", '{"path":"bad.txt","edits":[{"oldText":"last line","newText":"LAST LINE"}]}'),
        ("compare_files", '{"file1":"bad.txt","file2":"bad\\udcc3(.txt","encoding":"latin-1"}'),
        ("read_multiple_files", '{"paths":["bad\\udcc3(.txt","\\ud800","surrogate.txt"]}'),
        ("read_file", '{"path":"\\ud800\\udfff\\udc80.txt"}'),
    ],
    "official": [
        ("list_directory", '{"path":"."}'),
        ("list_directory_with_sizes", '{"path":"."}'),
        ("directory_tree", '{"path":"."}'),
        ("search_files", '{"path":".","pattern":"**/*"}'),
        ("read_text_file", '{"path":"bad.txt"}'),
        ("edit_file", '{"path":"bad.txt","edits":[{"oldText":"last line","newText":"LAST LINE"}]}'),
        ("read_multiple_files", '{"paths":["bad.txt","bad\\udcc3(.txt"]}'),
        ("get_file_info", '{"path":"dir\\udcff"}'),
    ],
    "fs": [
        ("fs_list_files", '{"root":".","include_dirs":true,"include_metadata":true}'),
        ("fs_search_text", '{"query":"hostile"}'),
        ("fs_read_file", '{"path":"bad.txt"}'),
        ("fs_path_info", '{"path":"bad\\udcc3(.txt"}'),
    ],
    "ide": [
        ("file_open", '{"uri":"bad.txt"}'),
        ("file_read", '{"uri":"surrogate.txt"}'),
        ("file_read", '{"uri":"file:///\\ud800"}'),
    ],
}


@pytest.mark.parametrize("server", list(PROFILES), indirect=True)
def test_every_tool_answers_hostile_names_and_contents_and_the_server_stays_up(server: Raw) -> None:
    tools = server.request("tools/list", "{}")["result"]["tools"]
    calls = list(DEEP_CALLS[server.profile])
    for tool in tools:
        for text in HOSTILE:
            calls.append((tool["name"], _object(tool["inputSchema"], text)))
    for name, arguments in calls:
        answer = server.call(name, arguments)
        assert "result" in answer or "error" in answer, answer
        assert not SURROGATE.search(json.dumps(answer, ensure_ascii=False)), f"{name}: a lone surrogate on the wire"
    assert server.alive
    assert server.request("tools/list", "{}")["result"]["tools"] == tools


@pytest.mark.parametrize("server", ["official"], indirect=True)
def test_an_edit_whose_diff_holds_an_undecodable_byte_is_answered(server: Raw, hostile: Path) -> None:
    answer = server.call("edit_file", '{"path":"bad.txt","edits":[{"oldText":"last line","newText":"LAST LINE"}]}')
    text = answer["result"]["content"][0]["text"]
    assert "+LAST LINE" in text and "bad bytes: \ufffd( end" in text
    assert (hostile / "bad.txt").read_bytes() == b"bad bytes: \xc3\x28 end\nLAST LINE\n"
    assert server.alive


@pytest.mark.parametrize("dumped", [True, False], ids=["dict", "model"])
def test_the_reply_guard_finds_a_lone_surrogate_in_the_text_or_anywhere_else(dumped: bool) -> None:
    """The guard searches text blocks without serializing them and serializes the rest; a tool
    result reaches it as the SDK's model or as the dict the SDK dumps it to."""

    def reply(text: str, meta: Any) -> Any:
        result = CallToolResult(content=[TextContent(type="text", text=text)], _meta={"vfs-mcp/result": {"p": meta}})
        return result.model_dump(by_alias=True, exclude_none=True) if dumped else result

    assert _encodes(reply("plain " * 1000, "fine"))
    assert _encodes(reply("é and 😀", "fine"))
    assert not _encodes(reply("bad \udcc3 byte", "fine"))
    assert not _encodes(reply("fine", "bad \ud800 name"))
    assert _encodes(reply("fine", 2**70))  # beyond orjson's integers: pydantic decides, and takes it
