"""The real thing: `vfs-mcp` spawned as a stdio subprocess, driven by the SDK's client."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from processes import INITIALIZE, RawStdio

from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio


def server_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp", *args])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_server_lists_tools_reads_and_writes(tmp_path: Path, mode: str) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk\n")
    async with Client(server_params(str(tmp_path)), mode=mode) as client:  # type: ignore[arg-type]
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"read_file", "write_file", "list_directory"} <= names

        read = await client.call_tool("read_file", {"path": str(tmp_path / "hello.txt")})
        assert not read.is_error
        assert read.content[0].text == "hello from disk\n"

        written = await client.call_tool("write_file", {"path": "new.txt", "content": "written over stdio"})
        assert not written.is_error
        denied = await client.call_tool("read_file", {"path": "/etc/passwd"})
        assert denied.is_error
        assert error_of(denied)["code"] == "ACCESS_DENIED"
    assert (tmp_path / "new.txt").read_text() == "written over stdio"


async def test_stdio_server_with_no_root_serves_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("cwd")
    params = StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp"], cwd=tmp_path)
    async with Client(params) as client:
        result = await client.call_tool("list_allowed_directories", {})
        read = await client.call_tool("read_file", {"path": "here.txt"})
    assert data_of(result)["directories"][0]["root"] == str(tmp_path)
    assert read.content[0].text == "cwd"


async def test_read_only_stdio_server_does_not_list_write_tools(tmp_path: Path) -> None:
    async with Client(server_params(str(tmp_path), "--read-only")) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "read_file" in names
    assert not names & {"write_file", "create_directory", "move_file", "copy_file", "delete_path"}


def test_bad_root_exits_with_a_clear_message(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    done = subprocess.run([sys.executable, "-m", "vfs_mcp", str(missing)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "cannot mount" in done.stderr
    assert done.stdout == ""


async def test_a_30_mb_request_is_refused_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with Client(server_params(str(tmp_path))) as client:
        huge = await client.call_tool("write_file", {"path": "huge.txt", "content": "x" * (30 * 1024 * 1024)})
        assert huge.is_error
        assert error_of(huge)["code"] == "TOO_LARGE"
        after = await client.call_tool("write_file", {"path": "small.txt", "content": "still serving"})
        assert not after.is_error
    assert not (tmp_path / "huge.txt").exists()
    assert (tmp_path / "small.txt").read_text() == "still serving"


# -- the transport: replies as the serializer's bytes, stray output off the wire ----------------

SHOUTING_SERVER = """
import os, sys, anyio
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.transports.stdio import serve

server = build_server(open_mounts([MountSpec(sys.argv[1])]), Settings())

@server.tool()
def shout() -> str:
    print("stray print", flush=True)
    os.write(1, b"stray write\\n")
    os.system("echo stray child")
    return "shouted"

anyio.run(serve, server)
"""


def test_what_a_tool_or_its_child_writes_to_standard_output_never_reaches_the_wire(tmp_path: Path) -> None:
    script = tmp_path / "shouting.py"
    script.write_text(SHOUTING_SERVER)
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_allowed_directories"}},
    ]
    server = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
    server.stdin.flush()
    answers = [json.loads(server.stdout.readline()) for _ in range(3)]  # every line on the wire is JSON-RPC
    server.stdin.close()  # input ends once every request is answered, as a client ends it
    server.wait(60)
    assert server.stderr is not None
    stderr = server.stderr.read()
    server.stdout.close()
    server.stderr.close()
    assert sorted(answer["id"] for answer in answers) == [1, 2, 3]
    shouted = next(answer for answer in answers if answer["id"] == 2)
    assert shouted["result"]["content"][0]["text"] == "shouted"
    assert {b"stray print", b"stray write", b"stray child"} <= set(stderr.splitlines())


def test_a_reply_is_one_line_of_utf8_json_holding_every_character_as_read(tmp_path: Path) -> None:
    content = "".join(f'{n}\\t"quoted" back\\\\slash é ✓ 🙂\\r\\n' for n in range(20_000))
    (tmp_path / "mixed.txt").write_text(content, newline="")
    with RawStdio(tmp_path) as server:
        answer = server.call("read_file", path="mixed.txt")
    assert answer["result"]["content"][0]["text"] == content


def test_a_request_id_too_big_for_64_bits_is_answered_with_it(tmp_path: Path) -> None:
    with RawStdio(tmp_path) as server:
        line = {"jsonrpc": "2.0", "id": 2**70, "method": "tools/call", "params": {"name": "list_allowed_directories"}}
        answer = server.exchange(json.dumps(line).encode())
    assert answer["id"] == 2**70 and not answer["result"]["isError"]


@pytest.mark.parametrize("replies_to", ["pipe", "file"])
def test_a_request_longer_than_one_read_is_answered_whether_replies_go_to_a_pipe_or_a_file(
    tmp_path: Path, replies_to: str
) -> None:
    # The event loop waits on a pipe; a worker thread writes a file.
    (tmp_path / "root").mkdir()
    content = "x" * 300_000  # one request line over four 64 KiB reads
    replies = tmp_path / "replies.jsonl"
    with replies.open("wb") as file:
        server = subprocess.Popen(
            [sys.executable, "-m", "vfs_mcp", str(tmp_path / "root")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE if replies_to == "pipe" else file,
            stderr=subprocess.DEVNULL,
        )

    def ask(method: str, params: dict[str, object], number: int) -> dict[str, Any]:
        assert server.stdin is not None
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}).encode())
        server.stdin.write(b"\n")
        server.stdin.flush()
        if server.stdout is not None:
            return json.loads(server.stdout.readline())  # type: ignore[no-any-return]
        deadline = time.monotonic() + 60
        while replies.read_bytes().count(b"\n") < number and time.monotonic() < deadline:
            time.sleep(0.01)
        return json.loads(replies.read_bytes().splitlines()[number - 1])  # type: ignore[no-any-return]

    with server:
        assert ask("initialize", INITIALIZE, 1)["result"]["serverInfo"]
        written = ask("tools/call", {"name": "write_file", "arguments": {"path": "long.txt", "content": content}}, 2)
        read = ask("tools/call", {"name": "read_file", "arguments": {"path": "long.txt"}}, 3)
        server.kill()
    assert not written["result"]["isError"]
    assert read["result"]["content"][0]["text"] == content


STOPPED_READING = b"the client stopped reading replies; the server ends when its input does"


def test_a_client_that_stops_reading_mid_reply_ends_the_server_quietly(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("a line of a big file\n" * 200_000)  # 4 MB: more than a pipe holds
    server = subprocess.Popen(
        [sys.executable, "-m", "vfs_mcp", str(tmp_path), "--log-level", "INFO"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "big.txt"}},
        },
    ]
    server.stdin.write(json.dumps(requests[0]).encode() + b"\n")
    server.stdin.flush()
    server.stdout.readline()
    server.stdin.write(json.dumps(requests[1]).encode() + b"\n")
    server.stdin.flush()
    server.stdout.read(1000)
    server.stdout.close()  # gone mid-reply
    said = []
    with ThreadPoolExecutor(1) as reader:  # until the server says it met the closed pipe (or 60 s)
        while not said or STOPPED_READING not in said[-1]:
            said.append(reader.submit(server.stderr.readline).result(timeout=60))
            assert said[-1], b"".join(said)
    server.stdin.close()  # only then does its input end
    assert server.wait(60) == 0
    assert b"Traceback" not in b"".join(said) + server.stderr.read()
    server.stderr.close()
