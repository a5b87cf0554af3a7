"""Instructions a start costs, counted by valgrind (callgrind), which a loaded machine does not
change: ``python benchmarks/start_instructions.py [ROOT]``.

Compares ``import os, mcp.server; os._exit(0)`` (the SDK's own import, which no Python server
avoids) with our start in one process: the command line read, the server built over ROOT
(default: the current folder), ``tools/list`` answered, then the same exit. The stdio wire is
left out (the benchmark ``test_cold_start`` times it whole); bytecode is written first, as an
install writes it. Takes a minute or two per count (valgrind runs Python some 50x slower).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile

from builds import compile_working_tree

BASELINE = "import os, mcp.server; os._exit(0)"
OURS = """
import os, sys, anyio
from vfs_mcp.cli.main import parser, server_from, settle_memory, uses_client_roots
import vfs_mcp.transports.stdio
args = parser().parse_args(sys.argv[1:])
server = server_from(args, args.roots, uses_client_roots(args))
settle_memory()
assert len(anyio.run(server.list_tools)) > 20
os._exit(0)
"""


def instructions(code: str, *args: str) -> int:
    """Instructions ``python -c code args`` executed, as callgrind counts them."""
    with tempfile.TemporaryDirectory() as folder:
        run = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out", sys.executable, "-c", code, *args]
        report = subprocess.run(run, capture_output=True, text=True, check=True).stderr
    found = re.search(r"refs:\s+([\d,]+)", report)
    assert found, report
    return int(found.group(1).replace(",", ""))


def main() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt install valgrind)")
    compile_working_tree()
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    base, ours = instructions(BASELINE), instructions(OURS, root)
    print(f"import mcp.server: {base / 1e9:.3f} G instructions")
    print(f"vfs-mcp start + tools/list: {ours / 1e9:.3f} G ({ours / base:.3f}x; ours {(ours - base) / 1e6:.0f} M)")


if __name__ == "__main__":
    main()
