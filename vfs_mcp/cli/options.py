"""The server's command-line options, and the server they describe."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence

from mcp.server.mcpserver import MCPServer

from vfs_mcp.config import DEFAULT_MAX_READ_BYTES, DEFAULT_SERVER_UNDO_BYTES, MAX_SESSIONS, MAX_SESSIONS_PER_PEER, size
from vfs_mcp.jail.mounts import Config, Mount, check_mounts, merge_specs, open_mounts
from vfs_mcp.profiles import PROFILES
from vfs_mcp.server import tools
from vfs_mcp.server.build import VfsServer, build_server
from vfs_mcp.server.client_logs import calls
from vfs_mcp.server.toolset import TOOLS_HELP, parse_tool_list
from vfs_mcp.settings import DEFAULT_MAX_WRITE_BYTES, Settings
from vfs_mcp_backends import scheme_of

EPILOG = """subcommands (as the first argument):
  xml [FILE]           run <mcp:filesystem> XML command blocks from FILE or stdin
  call TOOL [k=v ...]  call one tool on a server and print the result
  tools                list the tools of a profile
  replay FILE -- ROOT  replay a recorded session (vfs_mcp.testing) and report the first difference
  review [MOUNT ...]   what an agent left pending on mounts under review; --apply or --discard it
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
        help="safe: names match ^[a-zA-Z0-9_-]{1,64}$ (fs_read_file); seed: the originals' spellings (fs.read_file)",
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
        "--memory-max-bytes",
        type=size,
        metavar="SIZE",
        help="what each memory:// mount's files may hold in all, e.g. 256MiB (default 1 GiB; a [[mount]]'s "
        "max_bytes option wins)",
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
        help="changes undo() takes back in each session, newest first (default 100; before-images of at most "
        "64 MiB a session; any change can be undone by its id while the log holds it)",
    )
    p.add_argument(
        "--undo-bytes",
        type=size,
        default=DEFAULT_SERVER_UNDO_BYTES,
        metavar="SIZE",
        help="before-images the change log keeps, e.g. 1GiB (default 256 MiB; the oldest change goes first)",
    )
    p.add_argument(
        "--state",
        metavar="URL",
        help="where changes are recorded, to undo by id and finish after a crash: a folder or any fsspec URL, "
        "e.g. s3://bucket/.vfs-mcp-state for replicas (default: a private folder per user and set of mounts)",
    )
    p.add_argument(
        "--review",
        action="store_true",
        help="keep every change pending in the state store, shown to the model only, until a person applies "
        "it with `vfs-mcp review --apply` (one mount: review = true in its [[mount]])",
    )
    p.add_argument(
        "--agent-may-apply",
        action="store_true",
        help="with mounts under review: the model may apply the pending changes itself (review_ready apply=true)",
    )
    p.add_argument(
        "--confirm",
        choices=["auto", "never", "destructive", "writes"],
        help="ask the person, in the client's dialog, before a change: destructive (recursive deletes, "
        "overwrites, blind rewrites, large restores), writes (every change) or never; default auto: destructive "
        "where the client can show a form (elicitation), never where it cannot",
    )
    p.add_argument(
        "--task-after",
        type=_seconds_or_never,
        metavar="S",
        help="a long call (a bucket-wide size or search, a recursive copy, ...) still running after S seconds "
        "becomes a task the client polls, where it declared the tasks extension; never: no tasks (default 2)",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="grep reads every object of an object-store folder, keeping no content index in the state store",
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
        "--max-sessions",
        type=int,
        default=MAX_SESSIONS,
        metavar="N",
        help=f"HTTP sessions held at once; past it the least recently used ends (default {MAX_SESSIONS})",
    )
    http.add_argument(
        "--max-sessions-per-peer",
        type=int,
        default=MAX_SESSIONS_PER_PEER,
        metavar="N",
        help=f"HTTP sessions one client address (and token) holds at once (default {MAX_SESSIONS_PER_PEER})",
    )
    http.add_argument(
        "--auth-token-file", metavar="FILE", help="bearer token clients must send (default: $VFS_MCP_TOKEN)"
    )
    http.add_argument(
        "--request-state-key-file",
        metavar="FILE",
        help="a secret of 32+ bytes replicas share, so any of them finishes a call another asked the client "
        "about (2026-07-28 input rounds: roots, confirmations; default: $VFS_MCP_REQUEST_STATE_KEY, else a key "
        "of this process's own)",
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
        max_write_bytes=config.max_write_bytes if config and config.max_write_bytes else DEFAULT_MAX_WRITE_BYTES,
        max_response_chars=args.max_response_chars,
        call_timeout=args.call_timeout if args.call_timeout and args.call_timeout > 0 else None,
        audit_log=args.audit_log,
        poll_interval=args.poll_interval,
        undo_limit=args.undo_limit,
        undo_bytes=args.undo_bytes,
        state=args.state or (config.state if config else None),
        review=args.review,
        agent_may_apply=args.agent_may_apply,
        confirm=args.confirm or (config.confirm if config and config.confirm else "auto"),  # type: ignore[arg-type]
        task_after=_task_after(args.task_after, config.task_after if config else None),
        request_state_key=request_state_key(getattr(args, "request_state_key_file", None)),
        index=not args.no_index and (config.index if config else True),
    )


def _seconds_or_never(text: str) -> float | str:
    if text == "never":
        return text
    seconds = float(text)
    if seconds < 0:
        raise ValueError(text)
    return seconds


def _task_after(given: float | str | None, configured: float | str | None) -> float | None:
    """``--task-after``, else the config's ``task_after``, else 2 s; "never": None."""
    chosen = given if given is not None else configured if configured is not None else Settings.task_after
    return None if chosen == "never" or chosen is None else float(chosen)


def request_state_key(path: str | None) -> str | None:
    """The secret input rounds are sealed under: the file's first line, else the environment's;
    ValueError when it is too short to be one."""
    if path:
        with open(path, encoding="utf-8") as handle:
            key: str | None = handle.readline().strip()
    else:
        key = os.environ.get("VFS_MCP_REQUEST_STATE_KEY") or None
    if key is not None and len(key.encode()) < 32:
        raise ValueError("the request-state key must be at least 32 bytes of secret randomness")
    return key


def server_from(
    args: argparse.Namespace, roots: Sequence[str], client_roots: bool = False, *, warm_up: bool = False
) -> MCPServer:
    """The server the options describe; ValueError naming what is wrong.

    client_roots: the one client's roots count (stdio): with ROOTs (or config mounts) they can
        only narrow them; without, they become the mounts, the current folder being the
        fallback for a client that offers none.
    warm_up: a server process of its own (``Settings.warm_up``).
    """
    # stdout is the protocol channel in stdio mode (and the results channel for xml): logs go to stderr only.
    # The level sits on the handler too: a client asking for MCP log messages lowers the vfs_mcp
    # logger's level, and that must not make stderr chattier.
    level = args.log_level.upper()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(level)
    logging.basicConfig(handlers=[stderr], level=level, format="%(levelname)s %(name)s: %(message)s")
    calls.setLevel(logging.NOTSET)  # at --log-level INFO, an operator reads each call's outcome on stderr
    config = Config.load(args.config) if args.config else None
    # Under review the mounts are the operator's (the current folder by default): a client's
    # roots only narrow them, never become mounts of their own that nothing reviews.
    operator = bool(roots or (config and config.mounts) or args.review)
    specs = merge_specs(roots or (["."] if not (config and config.mounts) else []), config)
    if args.memory_max_bytes:
        specs = [
            dataclasses.replace(spec, options={"max_bytes": args.memory_max_bytes, **spec.options})
            if scheme_of(spec.root) == "memory"
            else spec
            for spec in specs
        ]
    mounts = open_mounts(specs, read_only=args.read_only or bool(config and config.read_only))
    check_mounts(mounts, waiting=lambda news: print(f"vfs-mcp: {news}", file=sys.stderr, flush=True))
    for mount in mounts:
        mount.deny_hardlinked = mount.deny_hardlinked or args.deny_hardlinked
    settings = dataclasses.replace(settings_from(args, config), warm_up=warm_up)
    if client_roots:
        settings = dataclasses.replace(settings, client_roots="narrow" if operator else "mount")
    server = build_server(mounts, settings)
    sweep = functools.partial(sweep_temp_files, mounts)
    if warm_up and isinstance(server, VfsServer):
        # A walk of the whole tree: once the server is up and idle, not beside its start and first calls.
        server.housekeeping = functools.partial(sweep_temp_files, mounts, tools.between_calls)
    else:
        threading.Thread(target=sweep, name="vfs-mcp-sweep", daemon=True).start()
    return server


def uses_client_roots(args: argparse.Namespace) -> bool:
    """Whether the client's roots count: over stdio, unless --ignore-client-roots.

    Over HTTP one server serves every client: one client's roots must not move another's mounts.
    """
    return bool(args.transport == "stdio" and not args.ignore_client_roots)


def sweep_temp_files(mounts: Sequence[Mount], pause: Callable[[], object] | None = None) -> None:
    """Remove the temp files that killed writes left behind (older than a minute) in the
    writable ``mounts``; ``pause``: called now and then on the way, and may wait."""
    for mount in mounts:
        if not mount.read_only:
            try:
                mount.sweep_temp_files(older_than=60, pause=pause)
            except OSError:
                logging.getLogger("vfs_mcp").warning("could not sweep temp files in %s", mount.url)
