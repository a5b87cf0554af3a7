"""The command line helps a person: one tool's arguments, the profiles and log levels in
--help, the valid levels on a wrong one, and what to do when a server refuses a call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vfs_mcp.cli.main import main

pytestmark = pytest.mark.slow


def test_tools_name_shows_one_tools_arguments_with_types_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "read_file", "--plain"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("read_file\n")
    assert "  path (string, required)" in shown
    assert "  encoding (string, optional)" in shown and "  max_bytes (integer, optional)" in shown


def test_tools_with_an_unknown_name_says_how_to_list_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "read_fiel"]) == 2
    assert "there is no tool named 'read_fiel'; did you mean 'read_file'?" in capsys.readouterr().err


def test_help_lists_the_profiles_and_log_levels(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "default, official, fs, ide" in shown
    assert "DEBUG, INFO, WARNING, ERROR, CRITICAL" in shown


def test_a_wrong_log_level_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--log-level", "LOUD"])
    assert "unknown log level 'LOUD'; choose one of DEBUG, INFO, WARNING, ERROR, CRITICAL" in capsys.readouterr().err


def test_a_call_refused_for_its_token_names_the_option_that_gives_one(tmp_path: Path) -> None:
    from processes import vfs_mcp_http

    token = tmp_path / "token"
    token.write_text("s3cr3t")
    with vfs_mcp_http(str(tmp_path), {}, "--auth-token-file", str(token)) as port:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "vfs_mcp",
                "call",
                "list_allowed_directories",
                "--url",
                f"http://127.0.0.1:{port}/mcp",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert "answered 401 Unauthorized: give the server's token with --auth-token-file FILE" in done.stderr


def test_a_wrong_token_is_refused_once_and_named_by_where_it_came_from(tmp_path: Path) -> None:
    from processes import vfs_mcp_http

    (tmp_path / "token").write_text("s3cr3t")
    (tmp_path / "wrong").write_text("guess")
    with vfs_mcp_http(str(tmp_path), {}, "--auth-token-file", str(tmp_path / "token")) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        wrong = ["--auth-token-file", str(tmp_path / "wrong")]
        done = subprocess.run(
            [sys.executable, "-m", "vfs_mcp", "call", "list_allowed_directories", "--url", url, *wrong],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr == (
        f"vfs-mcp call: {url} answered 401 Unauthorized to the token from --auth-token-file {tmp_path / 'wrong'}: "
        "it is not the server's token\n"
    )  # once: no "(after 4 tries)"
