"""Every command-line failure is one line on stderr and exit status 2: a recording that is
not one (its tool not a name, JSON nested too deeply) never ends in a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from vfs_mcp.cli.main import main

LINE = {"tool": "read_file", "arguments": {"path": "x.txt"}, "outcome": "ok", "digest": "sha256:0"}


def replayed(tmp_path: Path, line: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """What `vfs-mcp replay FILE -- FOLDER` exits with and prints on stderr, for a recording of ``line``."""
    recording = tmp_path / "session.jsonl"
    recording.write_text(json.dumps(LINE) + "\n" + line + "\n")
    (tmp_path / "x.txt").write_text("x\n")
    status = anyio.run(anyio.to_thread.run_sync, main, ["replay", str(recording), "--", str(tmp_path)])
    return status, capsys.readouterr().err


@pytest.mark.parametrize("tool", [None, 3, {"name": "read_file"}, ["read_file"], True])
def test_a_recorded_tool_that_is_not_a_name_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tool: object
) -> None:
    status, said = replayed(tmp_path, json.dumps({**LINE, "tool": tool}), capsys)
    assert (status, said.count("\n")) == (2, 1), said
    assert "line 2" in said and "tool" in said


@pytest.mark.parametrize(
    "line",
    [
        '{"tool": "read_file", "arguments": {"path": ' + "[" * 100_000 + "]" * 100_000 + '}, "outcome": "ok"}',
        '{"tool": "read_file", "arguments": {"path": ' + "[" * 500 + "]" * 500 + '}, "outcome": "ok", "digest": ""}',
        "[" * 100_000,
    ],
    ids=["deeper-than-the-parser", "deeper-than-a-request", "unclosed"],
)
def test_a_recording_nested_too_deeply_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    status, said = replayed(tmp_path, line, capsys)
    assert (status, said.count("\n")) == (2, 1), said[-500:]
    assert "line 2" in said


@pytest.mark.parametrize(
    "fields",
    [{"arguments": [1]}, {"arguments": None}, {"outcome": 7}, {"digest": None}],
    ids=["arguments-list", "arguments-null", "outcome-number", "digest-null"],
)
def test_a_recorded_field_of_the_wrong_type_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, object]
) -> None:
    status, said = replayed(tmp_path, json.dumps({**LINE, **fields}), capsys)
    assert (status, said.count("\n")) == (2, 1), said
    assert "line 2" in said


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "[" * 100_000 + "]" * 100_000],
        ["--json", '{"path": ' + "[" * 500 + "]" * 500 + "}"],
        ["--json", "null"],
    ],
    ids=["json-deeper-than-the-parser", "json-deeper-than-a-request", "json-not-an-object"],
)
def test_call_with_arguments_that_are_not_arguments_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(["call", "read_file", *argv, "--url", "http://127.0.0.1:9/mcp"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith("vfs-mcp call: --json"), said[-500:]
