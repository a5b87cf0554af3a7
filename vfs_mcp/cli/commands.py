"""The subcommands: ``xml``, ``call``, ``tools``, ``replay`` and ``review`` (serving is ``cli``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from vfs_mcp.cli.options import add_server_options, parser, server_from
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.profiles import PROFILES
from vfs_mcp.server.build import VfsServer, build_server
from vfs_mcp.server.calls.known_tool import why_not_served
from vfs_mcp.server.toolset import TOOLS_HELP, parse_tool_list
from vfs_mcp.settings import Settings


def xml_parser() -> argparse.ArgumentParser:
    """``vfs-mcp xml``'s options (the docs' command lines are parsed with it too)."""
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
    return p


def xml_main(argv: Sequence[str]) -> int:
    import anyio

    from vfs_mcp.cli.xml_commands import run_and_print

    args = xml_parser().parse_args(argv)
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


def call_parser() -> argparse.ArgumentParser:
    """``vfs-mcp call``'s own options, before a ``--`` (the docs' command lines are parsed with it too)."""
    from vfs_mcp.cli import client, printing
    from vfs_mcp.transports.http import TOKEN_ENV

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
        help=f"print long content whole (default: the first {printing.PREVIEW_LINES} lines)",
    )
    p.add_argument("--json-out", action="store_true", help="print the whole MCP result as JSON")
    p.add_argument(
        "--retries",
        type=int,
        default=client.DEFAULT_RETRIES,
        metavar="N",
        help=f"extra tries after a transient transport failure (default {client.DEFAULT_RETRIES})",
    )
    return p


def call_main(argv: Sequence[str]) -> int:
    from mcp import StdioServerParameters

    from vfs_mcp.cli import client
    from vfs_mcp.transports.http import TOKEN_ENV, load_token

    own, server_args = _split(argv)
    args = call_parser().parse_intermixed_args(own)
    try:
        if args.tool == "undo" and not any(pair.startswith("change_id=") for pair in args.pairs):
            raise client.UsageError(UNDO_NEEDS_AN_ID)
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
        token_from=token and (f"--auth-token-file {args.auth_token_file}" if args.auth_token_file else f"${TOKEN_ENV}"),
    )


UNDO_NEEDS_AN_ID = (
    "each `vfs-mcp call` is a session of its own, so there is no newest change of its own to undo: name the change, "
    "`vfs-mcp call undo change_id=ID` (the call that made it printed `change ID`)"
)


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split at the first ``--``: our own arguments, then the server's."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def _json_object(text: str) -> dict[str, Any]:
    from vfs_mcp.cli.client import UsageError
    from vfs_mcp.server.replies import json_value

    try:
        value = json_value(text, object)
    except ValueError as exc:
        raise UsageError(f"--json is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--json must be a JSON object of arguments")
    return value


def tools_parser() -> argparse.ArgumentParser:
    """``vfs-mcp tools``'s options (the docs' command lines are parsed with it too)."""
    p = argparse.ArgumentParser(
        prog="vfs-mcp tools",
        description=(
            "List the tools a server with these options offers, one line each; with NAMEs, each one's arguments."
        ),
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="tools to show in full: arguments, types, defaults")
    p.add_argument("--profile", default="default", help=f"tool sets, comma-separated: {', '.join(PROFILES)}")
    p.add_argument("--tool-names", choices=["safe", "seed"], default="safe", help="name style, as for serving")
    p.add_argument("--tools", type=parse_tool_list, default=(), metavar="LIST", help=TOOLS_HELP)
    p.add_argument("--read-only", action="store_true", help="as a read-only server lists them (no tool that writes)")
    p.add_argument("--plain", action="store_true", help="no colour, even on a terminal")
    return p


def tools_main(argv: Sequence[str]) -> int:
    import anyio

    from vfs_mcp.cli import client, printing

    args = tools_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level="WARNING", format="%(levelname)s %(name)s: %(message)s")
    settings = Settings(
        profiles=tuple(x.strip() for x in args.profile.split(",") if x.strip()),
        tools=args.tools,
        tool_names=args.tool_names,
    )
    try:
        # A scratch mount, writable unless --read-only: the tools a server with these options lists.
        server = build_server([open_mount(MountSpec("memory://vfs-mcp-tools", read_only=args.read_only))], settings)
    except ValueError as exc:
        print(f"vfs-mcp tools: {exc}", file=sys.stderr)
        return 2
    tools = anyio.run(client.list_tools, server)
    style = printing.Style(printing.use_color(args.plain))
    if not args.names:
        sys.stdout.write(printing.render_tools(tools, style))
        return 0
    by_name = {tool.name: tool for tool in tools}
    unknown = [name for name in args.names if name not in by_name]
    if unknown:
        assert isinstance(server, VfsServer)
        for name in unknown:
            print(f"vfs-mcp tools: {why_not_served(server, name)}", file=sys.stderr)
        return 2
    sys.stdout.write("\n".join(printing.render_tool(by_name[name], style) for name in args.names))
    return 0


def replay_main(argv: Sequence[str]) -> int:
    import anyio

    from vfs_mcp.testing.harness import HarnessFS, recorded
    from vfs_mcp.testing.recording import Replay, load_calls, replay

    own, server_args = _split(argv)
    p = argparse.ArgumentParser(
        prog="vfs-mcp replay",
        usage="vfs-mcp replay FILE [--strict] [--pin-versions] [-- ROOT ... [server options]]",
        description=(
            "Make the tool calls of a recorded session (VfsClient.save_calls in vfs_mcp.testing) on a server built "
            "from the arguments after -- (as for serving; default: the current folder), whose first mount stands "
            "for the recording's ${root}. Stops at the first call whose outcome differs. Exit 0 when none "
            "differs, 1 when one does, 2 on a usage error."
        ),
        allow_abbrev=False,
    )
    p.add_argument("file", metavar="FILE", help="the recording: one JSON object per line")
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop too at the first call that read a file at another version than when it was recorded (naming "
        "the file and both versions: ETag, VersionId or sha256), and compare what the model saw, not only the outcome",
    )
    p.add_argument(
        "--pin-versions",
        action="store_true",
        help="read each file a call read at the version the recording names (a bucket that keeps versions: "
        "the VersionId of each read), so the session replays against the bucket as it was",
    )
    args = p.parse_args(own)
    try:
        calls = load_calls(args.file)
        serving = parser().parse_args(server_args)
        server = server_from(serving, serving.roots)
    except (OSError, ValueError) as exc:
        print(f"vfs-mcp replay: {exc}", file=sys.stderr)
        return 2
    assert isinstance(server, VfsServer) and server.vfs is not None
    mount = server.vfs.mounts[0]

    async def run() -> Replay | str:
        async with recorded(server, HarnessFS(mount)) as client:
            try:
                return await replay(calls, client, root=mount.url, strict=args.strict, pin_versions=args.pin_versions)
            except ValueError as exc:  # nothing to pin: said before the first call
                return str(exc)

    report = anyio.run(run)
    if isinstance(report, str):
        print(f"vfs-mcp replay: {report}", file=sys.stderr)
        return 2
    print(report)
    return 0 if report.same else 1


def review_main(argv: Sequence[str]) -> int:
    from vfs_mcp.cli.review import main

    return main(argv)


def history_main(argv: Sequence[str]) -> int:
    from vfs_mcp.cli.timeline import history_main as main

    return main(argv)


def checkpoint_main(argv: Sequence[str]) -> int:
    from vfs_mcp.cli.timeline import checkpoint_main as main

    return main(argv)


def undo_main(argv: Sequence[str]) -> int:
    from vfs_mcp.cli.timeline import undo_main as main

    return main(argv)
