"""vfs-mcp as an MCP Bundle runs it (``manifest.json``; Claude Desktop's one-click install).

Its packages, ripgrep among them, are in ``lib/`` beside this file, built by ``./dev bundle``
for one platform and Python version. The folders chosen arrive as arguments; the other
settings as environment variables (a bundle cannot turn a checkbox into an option), which
become vfs-mcp's options here.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Mapping

LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")


def options(env: Mapping[str, str]) -> list[str]:
    """vfs-mcp's options for the bundle's settings: ``--read-only``, a ``--deny`` per pattern."""
    chosen = ["--read-only"] if env.get("VFS_MCP_BUNDLE_READ_ONLY", "").strip().lower() == "true" else []
    for pattern in env.get("VFS_MCP_BUNDLE_DENY", "").split(","):
        if pattern.strip():
            chosen += ["--deny", pattern.strip()]
    return chosen


def main() -> None:
    sys.path.insert(0, LIB)
    os.environ["PATH"] = os.path.join(LIB, "bin") + os.pathsep + os.environ.get("PATH", "")  # ripgrep
    sys.argv = [sys.argv[0], *sys.argv[1:], *options(os.environ)]
    runpy.run_module("vfs_mcp", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
