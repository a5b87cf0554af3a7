"""Command line: ``vfs-mcp [ROOT ...]`` serves the mounts over stdio (the current folder by default)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from vfs_mcp.mounts import Config, merge_specs, open_mounts
from vfs_mcp.server import build_server
from vfs_mcp.ops.read import DEFAULT_MAX_READ_BYTES
from vfs_mcp.settings import Settings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vfs-mcp",
        description="MCP filesystem server over local folders, memory:// and s3:// mounts, inside a root jail.",
    )
    p.add_argument(
        "roots",
        nargs="*",
        metavar="ROOT",
        help="mount roots: /dir, file:///dir, memory://name, s3://bucket/prefix (default: the current folder)",
    )
    p.add_argument("--profile", default="default", help="tool sets to list, comma-separated (default: default)")
    p.add_argument(
        "--tool-names",
        choices=["safe", "seed"],
        default="safe",
        help="safe: names match ^[a-zA-Z0-9_-]{1,64}$ (fs_read_file); seed: the seeds' spellings (fs.read_file)",
    )
    p.add_argument("--read-only", action="store_true", help="make every mount read-only (write tools are not listed)")
    p.add_argument("--config", metavar="FILE", help="TOML file with [[mount]] entries (root, read_only, options)")
    p.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="GLOB",
        help="hide names matching GLOB from every tool (repeatable)",
    )
    p.add_argument("--max-read-bytes", type=int, metavar="N", help="largest whole-file read (default 10 MiB)")
    p.add_argument("--log-level", default=os.environ.get("VFS_MCP_LOG_LEVEL", "WARNING"), help="stderr log level")
    return p


def settings_from(args: argparse.Namespace, config: Config | None) -> Settings:
    max_read = args.max_read_bytes or (config.max_read_bytes if config else None)
    return Settings(
        profiles=tuple(p.strip() for p in args.profile.split(",") if p.strip()),
        tool_names=args.tool_names,
        deny=tuple([*(config.deny if config else []), *args.deny]),
        max_read_bytes=int(max_read) if max_read else DEFAULT_MAX_READ_BYTES,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # stdout is the protocol channel in stdio mode: logs go to stderr only.
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        config = Config.load(args.config) if args.config else None
        specs = merge_specs(args.roots or ([] if config and config.mounts else ["."]), config)
        mounts = open_mounts(specs, read_only=args.read_only or bool(config and config.read_only))
        server = build_server(mounts, settings_from(args, config))
    except ValueError as exc:
        print(f"vfs-mcp: {exc}", file=sys.stderr)
        return 2
    server.run("stdio")
    return 0
