"""The configuration examples in README and docs/ work as written.

Every TOML config block loads and its mounts open (S3 ones against moto's server, GCS and Azure
ones against their emulators); every Claude Desktop JSON block and every `claude mcp add` / `vfs-mcp`
command line parses with the real command-line parser (a subcommand's, `call`, `xml`, `tools` and
`review`, with its own).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from vfs_mcp.cli.commands import call_parser, tools_parser, xml_parser
from vfs_mcp.cli.options import parser
from vfs_mcp.cli.review import parser as review_parser
from vfs_mcp.cli.timeline import checkpoint_parser, history_parser, undo_parser
from vfs_mcp.jail.mounts import Config, merge_specs, open_mounts
from vfs_mcp_backends import create_mount

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMELINE = {"history": history_parser, "checkpoint": checkpoint_parser, "undo": undo_parser}
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.M | re.S)


def blocks(language: str) -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for match in FENCE.finditer(doc.read_text(encoding="utf-8")):
            if match.group(1) == language:
                line = doc.read_text(encoding="utf-8")[: match.start()].count("\n") + 1
                found.append((f"{doc.name}:{line}", match.group(2)))
    return found


def vfs_args(argv: list[str]) -> list[str]:
    """The arguments after the vfs-mcp executable in a command line."""
    for i, word in enumerate(argv):
        if word.endswith("vfs-mcp") or word.endswith("/vfs-mcp"):
            return argv[i + 1 :]
    raise AssertionError(f"no vfs-mcp in {argv}")


def server_options(scheme: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    """Options that point a documented mount at this session's server for its scheme."""
    if scheme in ("s3", "s3a"):
        return {"endpoint_url": request.getfixturevalue("s3_endpoint")}
    if scheme in ("gs", "gcs"):
        return {"endpoint_url": request.getfixturevalue("gcs_endpoint")}
    if scheme in ("az", "abfs", "abfss"):
        return {"connection_string": request.getfixturevalue("azure_connection_string")}
    return {}


@pytest.mark.parametrize(("where", "text"), blocks("toml"), ids=[w for w, _ in blocks("toml")])
def test_toml_configs_load_and_their_mounts_open(
    where: str, text: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text(text)
    config = Config.load(config_file)
    # Point every object-store mount at the test server for its scheme and make its bucket.
    specs = []
    for spec in merge_specs([], config):
        scheme = spec.root.split("://")[0] if "://" in spec.root else "file"
        options = {**spec.options, **server_options(scheme, request)}
        if options:
            fs = create_mount(spec.root, options).fs
            bucket = spec.root.split("://")[1].split("/")[0]
            if not fs.exists(bucket):
                fs.mkdir(bucket)
        specs.append(spec.__class__(root=spec.root, read_only=spec.read_only, options=options))
    mounts = open_mounts(specs, read_only=config.read_only)
    assert [m.read_only for m in mounts] == [s.read_only or config.read_only for s in config.mounts], where


def desktop_configs() -> list[tuple[str, dict[str, object]]]:
    """Claude Desktop configurations (JSON blocks with mcpServers) that start vfs-mcp."""
    found = []
    for where, text in blocks("json"):
        if '"mcpServers"' in text:
            for name, server in json.loads(text)["mcpServers"].items():
                if str(server["command"]).endswith("vfs-mcp"):
                    found.append((f"{where}:{name}", server))
    return found


@pytest.mark.parametrize(("where", "server"), desktop_configs(), ids=[w for w, _ in desktop_configs()])
def test_claude_desktop_configs_parse_with_the_real_command_line(where: str, server: dict[str, object]) -> None:
    args = parser().parse_args(server["args"])  # type: ignore[arg-type]
    assert args.transport == "stdio"


def test_the_docs_show_claude_desktop_configs() -> None:
    assert len(desktop_configs()) >= 3


def command_lines() -> list[tuple[str, list[str]]]:
    lines = []
    for where, text in blocks("sh"):
        for line in text.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if any(word.endswith("vfs-mcp") for word in argv) and "./dev" not in argv[0]:
                lines.append((where, argv))
    return lines


@pytest.mark.parametrize(("where", "argv"), command_lines(), ids=[w for w, _ in command_lines()])
def test_documented_command_lines_parse(where: str, argv: list[str]) -> None:
    args = vfs_args(argv)
    if args and args[0] == "review":
        review_parser().parse_args(args[1:])
        return
    if args and args[0] == "call":
        own, server_args = (
            (args[1 : args.index("--")], args[args.index("--") + 1 :]) if "--" in args else (args[1:], [])
        )
        assert call_parser().parse_intermixed_args(own).tool
        parser().parse_args(server_args)
        return
    if args and args[0] in ("xml", "tools"):
        (xml_parser if args[0] == "xml" else tools_parser)().parse_args(args[1:])
        return
    if args and args[0] in TIMELINE:
        TIMELINE[args[0]]().parse_args(args[1:])
        return
    parser().parse_args(args)
