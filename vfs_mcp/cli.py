"""Command line.

    vfs-mcp [ROOT ...] [options]          serve the mounts over stdio (by default the client's roots,
                                          or the current folder for a client that offers none)
    vfs-mcp xml [FILE] [--root ROOT ...]  run <mcp:filesystem> blocks from FILE or stdin (seed 004)
    vfs-mcp call TOOL [key=value ...]     call one tool on a server started over stdio, or --url
    vfs-mcp tools [--profile NAME]        list a profile's tools with one line each

A subcommand is recognised only as the first argument; a folder of the same name is
served as ``vfs-mcp ./xml``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer

from vfs_mcp.http import load_token
from vfs_mcp.mounts import Config, Mount, MountSpec, check_mounts, merge_specs, open_mount, open_mounts
from vfs_mcp.ops.read import DEFAULT_MAX_READ_BYTES
from vfs_mcp.profiles import PROFILES
from vfs_mcp.profiles.toolset import TOOLS_HELP, parse_tool_list
from vfs_mcp.server import VfsServer, build_server
from vfs_mcp.settings import Settings

EPILOG = """subcommands (as the first argument):
  xml [FILE]           run <mcp:filesystem> XML command blocks from FILE or stdin
  call TOOL [k=v ...]  call one tool on a server and print the result
  tools                list the tools of a profile
run `vfs-mcp SUBCOMMAND --help` for their options"""


def add_server_options(p: argparse.ArgumentParser) -> None:
    """The options that shape a server, shared by serving and ``xml``."""
    p.add_argument(
        "--profile",
        default="default",
        help=f"tool sets to list, comma-separated: {', '.join(PROFILES)} (default: default)",
    )
    p.add_argument("--tools", type=parse_tool_list, default=(), metavar="LIST", help=TOOLS_HELP)
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
    p.add_argument("--max-response-chars", type=int, metavar="N", help="cut any reply's text at N characters")
    p.add_argument(
        "--call-timeout", type=float, default=300.0, metavar="S", help="fail a call still running after S seconds"
    )
    p.add_argument("--audit-log", metavar="FILE", help="append one JSON line per call (no contents, no tokens)")
    p.add_argument(
        "--deny-hardlinked", action="store_true", help="refuse files with more than one hard link (local mounts)"
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=5.0,
        metavar="S",
        help="check subscribed files on S3 and other backends without change events every S seconds (default 5)",
    )
    p.add_argument(
        "--undo-limit",
        type=int,
        default=100,
        metavar="N",
        help="changes each session can undo (default 100; before-images of at most 64 MiB in all)",
    )
    p.add_argument(
        "--log-level",
        type=log_level,
        default=os.environ.get("VFS_MCP_LOG_LEVEL", "WARNING"),
        help=f"stderr log level: {', '.join(LOG_LEVELS)} (default WARNING)",
    )


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def log_level(value: str) -> str:
    """A log level name, in any case; argparse's error lists the valid ones."""
    if value.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"unknown log level {value!r}; choose one of {', '.join(LOG_LEVELS)}")
    return value.upper()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vfs-mcp",
        description="MCP filesystem server over local folders, memory:// and s3:// mounts, inside a root jail.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "roots",
        nargs="*",
        metavar="ROOT",
        help=(
            "mount roots: /dir, file:///dir, memory://name, s3://bucket/prefix (default: the client's roots over "
            "stdio, else the current folder); with ROOTs, client roots can only narrow them"
        ),
    )
    add_server_options(p)
    p.add_argument(
        "--ignore-client-roots",
        action="store_true",
        help="never ask the client for its roots: serve the ROOTs (or the current folder) as they are",
    )
    http = p.add_argument_group("transport")
    http.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="stdio (default) or streamable HTTP"
    )
    http.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1; others need a token)")
    http.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    http.add_argument("--stateless", action="store_true", help="HTTP without sessions, for replicas behind a balancer")
    http.add_argument(
        "--auth-token-file", metavar="FILE", help="bearer token clients must send (default: $VFS_MCP_TOKEN)"
    )
    http.add_argument(
        "--allowed-origin", action="append", default=[], metavar="ORIGIN", help="browser Origin to accept (repeatable)"
    )
    return p


def settings_from(args: argparse.Namespace, config: Config | None) -> Settings:
    max_read = args.max_read_bytes or (config.max_read_bytes if config else None)
    return Settings(
        profiles=tuple(p.strip() for p in args.profile.split(",") if p.strip()),
        tools=args.tools,
        tool_names=args.tool_names,
        deny=tuple([*(config.deny if config else []), *args.deny]),
        max_read_bytes=int(max_read) if max_read else DEFAULT_MAX_READ_BYTES,
        max_response_chars=args.max_response_chars,
        call_timeout=args.call_timeout if args.call_timeout and args.call_timeout > 0 else None,
        audit_log=args.audit_log,
        poll_interval=args.poll_interval,
        undo_limit=args.undo_limit,
    )


def server_from(args: argparse.Namespace, roots: Sequence[str], client_roots: bool = False) -> MCPServer:
    """The server the options describe; ValueError naming what is wrong.

    client_roots: the one client's roots count (stdio): with ROOTs (or config mounts) they can
        only narrow them; without, they become the mounts, the current folder being the
        fallback for a client that offers none.
    """
    # stdout is the protocol channel in stdio mode (and the results channel for xml): logs go to stderr only.
    # The level sits on the handler too: a client asking for MCP log messages lowers the vfs_mcp
    # logger's level, and that must not make stderr chattier.
    level = args.log_level.upper()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(level)
    logging.basicConfig(handlers=[stderr], level=level, format="%(levelname)s %(name)s: %(message)s")
    config = Config.load(args.config) if args.config else None
    operator = bool(roots or (config and config.mounts))
    specs = merge_specs(roots if operator else ["."], config)
    mounts = open_mounts(specs, read_only=args.read_only or bool(config and config.read_only))
    check_mounts(mounts)
    for mount in mounts:
        mount.deny_hardlinked = mount.deny_hardlinked or args.deny_hardlinked
    sweep_in_background(mounts)
    settings = settings_from(args, config)
    if client_roots:
        settings = dataclasses.replace(settings, client_roots="narrow" if operator else "mount")
    return build_server(mounts, settings)


def uses_client_roots(args: argparse.Namespace) -> bool:
    """Whether the client's roots count: over stdio, unless --ignore-client-roots.

    Over HTTP one server serves every client: one client's roots must not move another's mounts.
    """
    return bool(args.transport == "stdio" and not args.ignore_client_roots)


def sweep_in_background(mounts: Sequence[Mount]) -> None:
    """Remove temp files that killed writes left behind (older than a minute), without delaying start."""

    def sweep() -> None:
        for mount in mounts:
            if not mount.read_only:
                try:
                    mount.sweep_temp_files(older_than=60)
                except OSError:
                    logging.getLogger("vfs_mcp").warning("could not sweep temp files in %s", mount.url)

    threading.Thread(target=sweep, name="vfs-mcp-sweep", daemon=True).start()


def serve(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    try:
        server = server_from(args, args.roots, uses_client_roots(args))
        if args.transport == "http":
            from vfs_mcp.http import http_app
            from vfs_mcp.http import serve as serve_http

            token = load_token(args.auth_token_file)
            app = http_app(server, host=args.host, token=token, origins=args.allowed_origin, stateless=args.stateless)
    except (OSError, ValueError) as exc:
        print(f"vfs-mcp: {exc}", file=sys.stderr)
        return 2
    served = (
        ", ".join(mount.url for mount in server.vfs.mounts) if isinstance(server, VfsServer) and server.vfs else "?"
    )
    if args.transport == "http":
        guard = "a bearer token is required" if token else "no token (loopback only)"
        print(
            f"vfs-mcp: serving {served} at http://{args.host}:{args.port}/mcp; {guard}; Ctrl-C stops", file=sys.stderr
        )
        serve_http(app, args.host, args.port)
        return 0
    if sys.stdin.isatty():
        print(
            f"vfs-mcp: serving {served} to an MCP client on stdin/stdout: a client starts this command itself "
            "(add it to the client's MCP servers, see README); Ctrl-C stops",
            file=sys.stderr,
        )
    return run_until_stopped(lambda: server.run("stdio"))


def run_until_stopped(run: Callable[[], None]) -> int:
    """Run a stdio server; Ctrl-C or SIGTERM end it at once and quietly (exit 0), without
    waiting for the thread that blocks on reading stdin, and without a traceback."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        run()
    except KeyboardInterrupt:
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(0)  # the stdin reader thread would otherwise keep the process alive
    return 0


def xml_main(argv: Sequence[str]) -> int:
    import anyio

    from vfs_mcp.xml_commands import run_and_print

    p = argparse.ArgumentParser(
        prog="vfs-mcp xml",
        description=(
            "Run the commands of every <mcp:filesystem> block in FILE (or stdin) in order, with one working "
            "directory, and print one <result> per command with its HTTP-like status. Exit 0 when all succeeded, "
            "1 when any failed."
        ),
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="text holding the blocks (default or '-': stdin)")
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="ROOT",
        help="a mount root, as for serving (repeatable; default: the current folder)",
    )
    add_server_options(p)
    args = p.parse_args(argv)
    try:
        if args.file in (None, "-"):
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"vfs-mcp xml: cannot read {args.file or 'stdin'}: {exc}", file=sys.stderr)
        return 2
    try:
        server = server_from(args, args.root)
    except ValueError as exc:
        print(f"vfs-mcp xml: {exc}", file=sys.stderr)
        return 2
    return anyio.run(run_and_print, text, server)


def call_main(argv: Sequence[str]) -> int:
    from mcp import StdioServerParameters

    from vfs_mcp import client
    from vfs_mcp.http import TOKEN_ENV, load_token

    own, server_args = _split(argv)
    p = argparse.ArgumentParser(
        prog="vfs-mcp call",
        usage="vfs-mcp call TOOL [key=value ...] [--json ARGS] [options] [--url URL | -- SERVER ARGS]",
        description=(
            "Call one tool and print its result. The server is `vfs-mcp SERVER ARGS` started over stdio (the "
            "current folder without them), or the one at --url. key=value arguments are converted to the tool's "
            'types (true, 5, ["a", "b"]). Exit 0 on success, 1 on a tool error, 2 on a usage error.'
        ),
    )
    p.add_argument("tool", metavar="TOOL", help="tool name (see `vfs-mcp tools`)")
    p.add_argument("pairs", nargs="*", metavar="key=value", help="arguments as text, converted to the tool's types")
    p.add_argument("--json", dest="json_args", metavar="ARGS", help="arguments as a JSON object (key=value wins)")
    p.add_argument("--url", help="connect to a server over streamable HTTP instead of starting one")
    p.add_argument(
        "--auth-token-file",
        metavar="FILE",
        help=f"bearer token for --url (first line of FILE; default: ${TOKEN_ENV} when set)",
    )
    p.add_argument("--plain", action="store_true", help="no colour, even on a terminal")
    p.add_argument(
        "--full",
        action="store_true",
        help=f"print long content whole (default: the first {client.PREVIEW_LINES} lines)",
    )
    p.add_argument("--json-out", action="store_true", help="print the whole MCP result as JSON")
    p.add_argument(
        "--retries",
        type=int,
        default=client.DEFAULT_RETRIES,
        metavar="N",
        help=f"extra tries after a transient transport failure (default {client.DEFAULT_RETRIES})",
    )
    args = p.parse_intermixed_args(own)
    try:
        if args.url and server_args:
            raise client.UsageError("give either --url or -- SERVER ARGS, not both")
        if args.retries < 0:
            raise client.UsageError("--retries must be 0 or more")
        arguments = _json_object(args.json_args) if args.json_args else {}
        raw = client.parse_pairs(args.pairs)
        token = load_token(args.auth_token_file) if args.url else None
    except (OSError, ValueError) as exc:  # UsageError is a ValueError
        print(f"vfs-mcp call: {exc}", file=sys.stderr)
        return 2
    # The server gets our whole environment: an s3:// root needs the AWS_* variables.
    target: client.Target = args.url or StdioServerParameters(
        command=sys.executable, args=["-m", "vfs_mcp", *server_args], env=dict(os.environ)
    )
    return client.run_call(
        target,
        args.tool,
        arguments,
        raw,
        plain=args.plain,
        full=args.full,
        json_out=args.json_out,
        retries=args.retries,
        token=token,
    )


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split at the first ``--``: our own arguments, then the server's."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def _json_object(text: str) -> dict[str, Any]:
    from vfs_mcp.client import UsageError

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--json is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise UsageError("--json must be a JSON object of arguments")
    return value


def tools_main(argv: Sequence[str]) -> int:
    import anyio

    from vfs_mcp import client

    p = argparse.ArgumentParser(
        prog="vfs-mcp tools",
        description="List the tools a profile offers, one line each; with NAMEs, each one's arguments.",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="tools to show in full: arguments, types, defaults")
    p.add_argument("--profile", default="default", help=f"tool sets, comma-separated: {', '.join(PROFILES)}")
    p.add_argument("--tool-names", choices=["safe", "seed"], default="safe", help="name style, as for serving")
    p.add_argument("--plain", action="store_true", help="no colour, even on a terminal")
    args = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level="WARNING", format="%(levelname)s %(name)s: %(message)s")
    settings = Settings(
        profiles=tuple(x.strip() for x in args.profile.split(",") if x.strip()), tool_names=args.tool_names
    )
    try:
        # A writable scratch mount, so the write tools are listed too.
        server = build_server([open_mount(MountSpec("memory://vfs-mcp-tools"))], settings)
    except ValueError as exc:
        print(f"vfs-mcp tools: {exc}", file=sys.stderr)
        return 2
    tools = anyio.run(client.list_tools, server)
    style = client.Style(client.use_color(args.plain))
    if not args.names:
        sys.stdout.write(client.render_tools(tools, style))
        return 0
    by_name = {tool.name: tool for tool in tools}
    unknown = [name for name in args.names if name not in by_name]
    if unknown:
        print(f"vfs-mcp tools: no tool named {', '.join(unknown)}; `vfs-mcp tools` lists them", file=sys.stderr)
        return 2
    sys.stdout.write("\n".join(client.render_tool(by_name[name], style) for name in args.names))
    return 0


SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {"xml": xml_main, "call": call_main, "tools": tools_main}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    return serve(argv)
