"""Server log records reach a client that asked, as ``notifications/message``, at its level.

Through 2025-11-25 the client asks with ``logging/setLevel`` (for the connection); on
2026-07-28 each request opts in with its ``_meta`` log level (``Client(log_level=...)``).
Nothing is sent to a client that did not ask, and nothing ever goes to stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import Sandbox
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import LoggingLevel, LoggingMessageNotificationParams

from vfs_mcp.server.client_logs import mcp_level

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]


class Log:
    def __init__(self) -> None:
        self.entries: list[LoggingMessageNotificationParams] = []

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.entries.append(params)

    @property
    def lines(self) -> list[tuple[str, str | None, str]]:
        return [(e.level, e.logger, str(e.data)) for e in self.entries]


async def ask(client: Client, mode: str, level: LoggingLevel) -> None:
    if mode == "legacy":
        with pytest.warns(MCPDeprecationWarning):
            await client.set_logging_level(level)


@pytest.mark.parametrize("mode", MODES)
async def test_tool_error_log_lines_reach_a_client_that_asked(local_sandbox: Sandbox, mode: str) -> None:
    log = Log()
    server = local_sandbox.server()
    async with Client(server, mode=mode, logging_callback=log, log_level="info") as client:  # type: ignore[arg-type]
        await ask(client, mode, "info")
        await client.call_tool("read_file", {"path": local_sandbox.path("missing.txt")})
        await client.call_tool("list_directory", {"path": local_sandbox.path()})
    assert log.lines == [("info", "vfs_mcp.calls", "read_file failed: NOT_FOUND")]


@pytest.mark.parametrize("mode", MODES)
async def test_records_below_the_clients_level_are_not_sent(local_sandbox: Sandbox, mode: str) -> None:
    log = Log()
    async with Client(local_sandbox.server(), mode=mode, logging_callback=log, log_level="warning") as client:  # type: ignore[arg-type]
        await ask(client, mode, "warning")
        await client.call_tool("read_file", {"path": local_sandbox.path("missing.txt")})
    assert log.lines == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_did_not_ask_gets_no_log_messages(local_sandbox: Sandbox, mode: str) -> None:
    log = Log()
    async with Client(local_sandbox.server(), mode=mode, logging_callback=log) as client:  # type: ignore[arg-type]
        await client.call_tool("read_file", {"path": local_sandbox.path("missing.txt")})
    assert log.lines == []


@pytest.mark.parametrize("mode", MODES)
async def test_the_logging_capability_is_advertised(local_sandbox: Sandbox, mode: str) -> None:
    async with Client(local_sandbox.server(), mode=mode) as client:
        assert client.server_capabilities.logging is not None


def test_python_levels_map_onto_the_mcp_levels() -> None:
    assert [mcp_level(n) for n in (5, 10, 20, 25, 30, 40, 50, 60)] == [
        "debug",
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "emergency",
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_over_stdio_log_messages_go_to_the_client_and_stderr_keeps_its_level(
    tmp_path: Path, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    log = Log()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "vfs_mcp", str(tmp_path), "--ignore-client-roots"]
    )
    with (tmp_path / "stderr.txt").open("w") as stderr:
        async with Client(
            stdio_client(params, errlog=stderr), mode=mode, logging_callback=log, log_level="debug"
        ) as client:
            await ask(client, mode, "debug")
            result = await client.call_tool("read_file", {"path": str(tmp_path / "missing.txt")})
    assert result.is_error
    assert ("info", "vfs_mcp.calls", "read_file failed: NOT_FOUND") in log.lines
    assert "read_file failed" not in (tmp_path / "stderr.txt").read_text()  # stderr stays at WARNING
    assert capfd.readouterr().out == ""
