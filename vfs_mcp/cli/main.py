"""Command line.

    vfs-mcp [ROOT ...] [options]          serve the mounts over stdio (by default the client's roots,
                                          or the current folder for a client that offers none)
    vfs-mcp xml [FILE] [--root ROOT ...]  run <mcp:filesystem> blocks from FILE or stdin (docs/xml-interface.md)
    vfs-mcp call TOOL [key=value ...]     call one tool on a server started over stdio, or --url
    vfs-mcp tools [--profile NAME]        list a profile's tools with one line each
    vfs-mcp replay FILE -- [ROOT ...]     replay a recorded session on a server; report the first difference
    vfs-mcp review [MOUNT ...]            what an agent left pending on mounts under review; --apply, --discard
    vfs-mcp history [MOUNT ...]           the changes made on the mounts, newest first, with their ids
    vfs-mcp checkpoint NAME [MOUNT ...]   name this point of the mounts' timeline
    vfs-mcp undo ID|NAME [MOUNT ...]      take a change back (--and-after: and every later one; --dry-run)

A subcommand is recognised only as the first argument; a folder of the same name is
served as ``vfs-mcp ./xml``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence

import anyio

from vfs_mcp.cli.options import parser, server_from, uses_client_roots
from vfs_mcp.server.build import VfsServer
from vfs_mcp.transports import stdio


def serve(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    try:
        server = server_from(args, args.roots, uses_client_roots(args), warm_up=True)
        if args.transport == "http":
            from vfs_mcp.transports.http import http_app, load_token
            from vfs_mcp.transports.http import serve as serve_http
            from vfs_mcp.transports.http_sessions import SessionLimits

            token = load_token(args.auth_token_file)
            sessions = SessionLimits(sessions=args.max_sessions, per_peer=args.max_sessions_per_peer)
            app = http_app(
                server,
                host=args.host,
                token=token,
                origins=args.allowed_origin,
                stateless=args.stateless,
                sessions=sessions,
            )
    except (OSError, ValueError) as exc:
        print(f"vfs-mcp: {exc}", file=sys.stderr)
        return 2
    served = (
        ", ".join(mount.url for mount in server.vfs.mounts) if isinstance(server, VfsServer) and server.vfs else "?"
    )
    settle_memory()
    if args.transport == "http":
        guard = "a bearer token is required" if token else "no token (loopback only)"
        banner = f"vfs-mcp: serving {served} at http://{args.host}:{args.port}/mcp; {guard}; Ctrl-C stops"
        return run_until_stopped(lambda: serve_http(app, args.host, args.port), banner)
    banner = (
        f"vfs-mcp: serving {served} to an MCP client on stdin/stdout: a client starts this command itself "
        "(add it to the client's MCP servers, see README); Ctrl-C stops"
    )
    return run_until_stopped(lambda: anyio.run(stdio.serve, server), banner if sys.stdin.isatty() else None)


GC_FIRST_GENERATION = 20_000
"""Container objects allocated between two young-generation collections (Python's default is
700): a walk of 20,000 entries makes about five objects each, all alive until the reply."""


MMAP_THRESHOLD = 4 * 1024 * 1024
"""Blocks at least this big are mapped, and given back to the system when freed. Fixed: by
default glibc raises it to the size of each big block freed (up to 32 MiB), so the copies of
a 10 MB reply stay in the heap and the process keeps them. Smaller blocks (1 MiB reads of a
line index, a 1 MB edit) stay in the heap, which is faster than mapping them each time."""


def settle_memory() -> None:
    """Once the server is built: its modules, tool schemas and models live as long as the process,
    so the collector stops scanning them (``gc.freeze``), and collects less often (a walk of a
    big tree allocated thousands of collections' worth of objects that all survive). Big
    blocks go back to the system when freed (``MMAP_THRESHOLD``). No collection first: it
    would take a noticeable part of every start to free a few hundred objects of import garbage."""
    gc.freeze()
    gc.set_threshold(GC_FIRST_GENERATION, *gc.get_threshold()[1:])
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6")  # glibc; not musl
            libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD)  # else fixed at 128 KiB: every free trims


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


def run_until_stopped(run: Callable[[], None], banner: str | None = None) -> int:
    """Run a server; Ctrl-C or SIGTERM end it quietly (exit 0), without waiting for the thread
    that blocks on reading stdin, and without a traceback. ``banner`` goes to stderr once a
    Ctrl-C is caught (a person reads it, and may press Ctrl-C at once). Over HTTP uvicorn
    takes both signals while it runs, stops, and raises the signal again: here. Raised wherever
    the server is, the interrupt may come out as another error (inside a worker thread's
    hand-over, anyio's cancel scope left out of turn): once stopping, any of them is the stop, and
    asyncio's report of the tasks it cut short (logged as ``asyncio.run`` shuts down) no news."""
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        logging.getLogger("asyncio").disabled = True
        raise KeyboardInterrupt

    # SIGINT too: left at Python's default, asyncio.run puts its own handler in, which only
    # cancels the main task, and that task then waits for the thread reading a terminal.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        if banner:
            print(banner, file=sys.stderr, flush=True)
        run()
    except BaseException:
        if not stopping:
            raise
        sys.stderr.flush()
        sys.stdout.flush()
        from vfs_mcp.changes import state

        state.close_all()  # what the finalizers that os._exit skips would do
        os._exit(0)  # the stdin reader thread would otherwise keep the process alive
    return 0


SUBCOMMANDS = ("xml", "call", "tools", "replay", "review", "history", "checkpoint", "undo")
"""Each is ``vfs_mcp.cli.commands.{name}_main``."""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        from vfs_mcp.cli import commands

        run: Callable[[Sequence[str]], int] = getattr(commands, f"{argv[0]}_main")
        return run(argv[1:])
    return serve(argv)
