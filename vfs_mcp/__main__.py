"""``vfs-mcp`` and ``python -m vfs_mcp``: the command line (``vfs_mcp.cli.main``), loaded with
Python's cycle collector paused.

Loading it builds some 90,000 objects that live as long as the process (most of them the MCP
SDK's models of two protocol eras), and the collector, run every 700 allocations, would scan
the young ones again and again while they are made: a noticeable part of a server's start.
What loading leaves is frozen instead (``gc.freeze``: never scanned again), as the server's
own start freezes what it builds (``cli.main.settle_memory``); the few hundred objects of
garbage among them stay, as they do there.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: the process's arguments); its exit status."""
    gc.disable()
    try:
        from vfs_mcp.cli.main import main as command_line
    finally:
        gc.freeze()
        gc.enable()
    return command_line(argv)


if __name__ == "__main__":
    raise SystemExit(main())
