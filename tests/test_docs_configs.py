"""The configuration examples in README and docs/ work as written.

Every TOML config block loads and its mounts open (S3 ones against moto's server); every
Claude Desktop JSON block and every `claude mcp add` / `vfs-mcp` command line parses with
the real command-line parser.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from vfs_mcp.cli import parser
from vfs_mcp.mounts import Config, merge_specs, open_mounts

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
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


@pytest.mark.parametrize(("where", "text"), blocks("toml"), ids=[w for w, _ in blocks("toml")])
def test_toml_configs_load_and_their_mounts_open(where: str, text: str, tmp_path: Path, s3_endpoint: str) -> None:
    import s3fs

    config_file = tmp_path / "config.toml"
    # Point every endpoint at the test S3 server and make the buckets the examples name.
    config_file.write_text(re.sub(r'endpoint_url = "[^"]*"', f'endpoint_url = "{s3_endpoint}"', text))
    config = Config.load(config_file)
    admin = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)
    for spec in config.mounts:
        if spec.root.startswith("s3://"):
            bucket = spec.root[5:].split("/")[0]
            if not admin.exists(bucket):
                admin.mkdir(bucket)
    specs = [
        s.__class__(root=s.root, read_only=s.read_only, options={"endpoint_url": s3_endpoint, **s.options})
        for s in merge_specs([], config)
    ]
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
    if args and args[0] in ("call", "xml", "tools"):
        return  # subcommands have their own parsers, exercised by their tests
    parser().parse_args(args)
