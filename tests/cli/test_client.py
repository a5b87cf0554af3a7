"""The command-line client: `vfs-mcp call` against real servers, `vfs-mcp tools`, and the pieces."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conftest import serving_http
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, TextContent, Tool, ToolAnnotations

from vfs_mcp.cli import client, printing
from vfs_mcp.cli.main import main
from vfs_mcp.errors import NotFound
from vfs_mcp.profiles.results import failed

pytestmark = pytest.mark.anyio
SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "lines": {"type": "integer", "minimum": 1},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "ratio": {"type": "number"},
        "recursive": {"type": "boolean"},
        "exclude_patterns": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        "options": {"anyOf": [{"$ref": "#/$defs/Options"}, {"type": "null"}]},
        "format": {"enum": ["text", "json"], "type": "string"},
    },
}
TOOL = Tool(name="probe", input_schema=SCHEMA)


def vfs_mcp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`vfs-mcp ARGS` as a real process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "vfs_mcp", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


# --- end to end against real servers -------------------------------------------------------


def test_call_reads_a_file_from_a_stdio_server(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk\n")
    done = vfs_mcp("call", "head_file", "path=hello.txt", "lines=1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    content, footer = done.stdout.split("\n", 1)
    assert content == "hello from disk"
    assert footer.strip().startswith("[") and "1 line of 1" in footer  # the line the model sees after it
    assert "\x1b[" not in done.stdout  # piped: plain


def test_call_reports_a_tool_error_with_exit_code_1(tmp_path: Path) -> None:
    done = vfs_mcp("call", "read_file", "path=missing.txt", "--", str(tmp_path), "--read-only", cwd=tmp_path)
    assert done.returncode == 1
    assert (
        done.stdout
        == f"error: NOT_FOUND (404): missing.txt ({tmp_path / 'missing.txt'}) does not exist; list its folder to check the name\n"
    )


def test_call_usage_errors_exit_2_before_any_server_starts(tmp_path: Path) -> None:
    done = vfs_mcp("call", "read_file", "path", cwd=tmp_path)
    assert done.returncode == 2
    assert "expected key=value" in done.stderr
    assert done.stdout == ""


def test_an_unknown_tool_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "reed_file", "path=x", "--", str(tmp_path)]) == 2
    assert "there is no tool named 'reed_file'; did you mean 'read_file'?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--read-only"], "write_file is not served: every mount is read-only, so no tool that writes is listed"),
        (["--tools", "read-only"], "write_file is not served: --tools read-only leaves it out"),
    ],
    ids=["read-only", "tools"],
)
def test_a_tool_the_server_leaves_out_is_a_usage_error_that_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], says: str
) -> None:
    assert main(["call", "write_file", "path=x.txt", "content=y", "--", str(tmp_path), *options]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "x.txt").exists()


def test_call_undo_needs_the_id_a_change_printed_and_takes_it_back_from_another_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", "undo"]) == 2
    assert "vfs-mcp call undo change_id=ID" in capsys.readouterr().err
    (tmp_path / "a.txt").write_text("before\n")
    written = vfs_mcp("call", "write_file", "path=a.txt", "content=after", cwd=tmp_path)
    (change_id,) = re.findall(r"change ([\w-]{22})", written.stdout)
    undone = vfs_mcp("call", "undo", f"change_id={change_id}", cwd=tmp_path)
    assert undone.returncode == 0, undone.stderr
    assert (tmp_path / "a.txt").read_text() == "before\n"


def test_long_content_is_previewed_with_a_note_and_json_out_has_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {i}\n" for i in range(100)))
    assert main(["call", "read_file", "--json", '{"path": "long.txt"}', "offset_bytes=0", "--", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("line 0\n") and "line 39\n" in out and "line 40" not in out
    assert re.search(r"\n\[cut: \d+ more lines, [\d,]+ more characters; --full shows everything\]\n$", out)

    assert main(["call", "read_file", "path=long.txt", "--json-out", "--", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["isError"] is False
    assert result["content"][0]["text"].count("\n") == 100
    assert result["_meta"]["vfs-mcp/result"]["path"] == str(tmp_path / "long.txt")


def test_call_over_http_sends_the_bearer_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.txt").write_text("over http")
    token_file = tmp_path / "token"
    token_file.write_text("t0ken\n")
    with serving_http(tmp_path, token="t0ken") as url:
        assert main(["call", "read_file", "path=a.txt", "--url", url, "--auth-token-file", str(token_file)]) == 0
        assert capsys.readouterr().out.startswith("over http\n[")
        assert main(["call", "read_file", "path=a.txt", "--url", url, "--retries", "0"]) == 1
        assert "vfs-mcp call:" in capsys.readouterr().err


def test_an_unreachable_url_fails_with_exit_1_after_the_retries(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(client, "BACKOFF_SECONDS", 0)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    assert main(["call", "list_allowed_directories", "--url", f"http://127.0.0.1:{port}/mcp", "--retries", "2"]) == 1
    assert "(after 3 tries)" in capsys.readouterr().err


def test_call_refuses_both_url_and_server_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "read_file", "path=a", "--url", "http://127.0.0.1:1/mcp", "--", "/tmp"]) == 2
    assert main(["call", "read_file", "--json", "[1]"]) == 2
    assert "JSON object" in capsys.readouterr().err


def test_tools_lists_what_a_server_with_those_options_offers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--read-only", "--plain"]) == 0
    read_only = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert main(["tools", "--tools", "search", "--plain"]) == 0
    search = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert main(["tools", "write_file", "--read-only"]) == 2
    refused = capsys.readouterr().err

    assert "read_file" in read_only and "write_file" not in read_only and "edit_file" not in read_only
    assert search == ["grep_files", "search_files", "directory_tree"]
    assert "write_file is not served: every mount is read-only" in refused


def test_tools_lists_each_tool_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools"]) == 0
    lines = capsys.readouterr().out.splitlines()
    by_name = {line.split()[0]: line for line in lines}
    assert {"read_file", "write_file", "grep_files", "change_directory"} <= set(by_name)
    assert by_name["read_file"].endswith("images and audio viewable.")
    assert main(["tools", "--profile", "nope"]) == 2
    assert "unknown profile" in capsys.readouterr().err


# --- the pieces -----------------------------------------------------------------------------


def test_text_arguments_take_the_tool_types() -> None:
    raw = {
        "path": "a.txt",
        "lines": "5",
        "limit": "7",
        "ratio": "0.5",
        "recursive": "yes",
        "excludePatterns": '["*.log", "build"]',
        "options": '{"a": 1}',
        "format": "json",
        "unknown": "kept",
    }
    assert client.coerce_arguments(TOOL, raw) == {
        "path": "a.txt",
        "lines": 5,
        "limit": 7,
        "ratio": 0.5,
        "recursive": True,
        "exclude_patterns": ["*.log", "build"],
        "options": {"a": 1},
        "format": "json",
        "unknown": "kept",
    }
    assert client.coerce_arguments(TOOL, {"exclude_patterns": "*.log", "recursive": "False"}) == {
        "exclude_patterns": ["*.log"],
        "recursive": False,
    }


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("lines", "5.5", "an integer"),
        ("recursive", "maybe", "true or false"),
        ("ratio", "nan", "a number"),
        ("exclude_patterns", "[broken", "a JSON array"),
        ("options", "[1]", "a JSON object"),
    ],
)
def test_a_value_that_does_not_fit_its_type_is_a_usage_error(key: str, value: str, says: str) -> None:
    with pytest.raises(client.UsageError, match=f"argument {key} must be {says}"):
        client.coerce_arguments(TOOL, {key: value})


def test_key_value_pairs_split_at_the_first_equals_sign() -> None:
    assert client.parse_pairs(["pattern=a=b", "content="]) == {"pattern": "a=b", "content": ""}
    with pytest.raises(client.UsageError):
        client.parse_pairs(["=x"])


def test_preview_notes_what_was_cut() -> None:
    assert printing.preview("short\n") == ("short\n", None)
    head, note = printing.preview("x" * 10_000, max_chars=100)
    assert head == "x" * 100 + "\n"
    assert note == "[cut: 1 more lines, 9,900 more characters; --full shows everything]"


def test_rendering_is_coloured_only_when_asked() -> None:
    error = failed(NotFound("x does not exist"))
    assert printing.render(error, printing.Style(color=False)) == "error: NOT_FOUND (404): x does not exist\n"
    assert printing.render(error, printing.Style(color=True)).startswith("\x1b[31merror: NOT_FOUND")
    long = CallToolResult(content=[TextContent(type="text", text="y\n" * 100)])
    assert printing.render(long, printing.Style(color=False), full=True) == "y\n" * 100
    assert "\x1b[" in printing.render(long, printing.Style(color=True))
    assert not printing.use_color(plain=True)


# --- retries --------------------------------------------------------------------------------


class FakeClient:
    def __init__(self, tool: Tool, failure: BaseException | None) -> None:
        self.tool = tool
        self.failure = failure
        self.calls = 0

    async def list_tools(self) -> Any:
        return type("Listing", (), {"tools": [self.tool]})()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        self.calls += 1
        if self.failure:
            raise self.failure
        return CallToolResult(content=[TextContent(type="text", text=f"{name} {arguments}")])


class Flaky:
    """Connections that fail ``connect_failures`` times, then calls that fail ``call_failures`` times."""

    def __init__(self, tool: Tool, connect_failures: int = 0, call_failures: int = 0) -> None:
        self.tool = tool
        self.connect_failures = connect_failures
        self.call_failures = call_failures
        self.connects = 0
        self.calls = 0
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    @asynccontextmanager
    async def connect(self, target: client.Target, token: str | None) -> AsyncIterator[Any]:
        self.connects += 1
        if self.connects <= self.connect_failures:
            raise ExceptionGroup("unhandled errors in a TaskGroup", [httpx2.ConnectError("refused")])
        failing = self.calls < self.call_failures
        fake = FakeClient(self.tool, httpx2.ReadError("dropped") if failing else None)
        try:
            yield fake
        finally:
            self.calls += fake.calls

    async def call(self, target: client.Target = "http://127.0.0.1:1/mcp", retries: int = 3) -> client.Outcome:
        return await client.call_tool(
            target, self.tool.name, {"path": "a"}, retries=retries, sleep=self.sleep, connect=self.connect
        )


def read_only(name: str) -> Tool:
    return Tool(name=name, input_schema=SCHEMA, annotations=ToolAnnotations(read_only_hint=True))


async def test_transient_connection_failures_are_retried_with_backoff() -> None:
    flaky = Flaky(read_only("read_file"), connect_failures=2)
    outcome = await flaky.call()
    assert outcome.result is not None and not outcome.result.is_error
    assert flaky.connects == 3
    assert flaky.sleeps == [0.5, 1.0]


async def test_retries_run_out() -> None:
    flaky = Flaky(read_only("read_file"), connect_failures=10)
    with pytest.raises(
        client.TransportFailure,
        match=r"cannot connect to http://127.0.0.1:1/mcp: connection refused .* \(after 3 tries\)",
    ):
        await flaky.call(retries=2)
    assert flaky.sleeps == [0.5, 1.0]


async def test_a_dropped_call_is_repeated_only_for_tools_that_allow_it() -> None:
    reader = Flaky(read_only("read_file"), call_failures=1)
    assert (await reader.call()).result is not None
    assert reader.calls == 2

    writer = Flaky(Tool(name="write_file", input_schema=SCHEMA, annotations=ToolAnnotations(destructive_hint=True)))
    writer.call_failures = 1
    with pytest.raises(client.TransportFailure, match="dropped"):
        await writer.call()
    assert writer.calls == 1 and writer.sleeps == []


async def test_a_stdio_server_that_exits_is_not_restarted() -> None:
    closed = MCPError(CONNECTION_CLOSED, "Connection closed")
    assert client.transient(ExceptionGroup("g", [closed]), over_http=True)
    assert not client.transient(ExceptionGroup("g", [closed]), over_http=False)
    assert not client.transient(FileNotFoundError("no such command"), over_http=False)
    stdio = StdioServerParameters(command="vfs-mcp")

    @asynccontextmanager
    async def exits(target: client.Target, token: str | None) -> AsyncIterator[Any]:
        raise ExceptionGroup("g", [closed])
        yield

    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    with pytest.raises(client.TransportFailure, match="closed the connection"):
        await client.call_tool(stdio, "read_file", connect=exits, sleep=sleep)
    assert sleeps == []
