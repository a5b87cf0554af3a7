"""The hostile diffs of issue 37, each made in one store and sent to its tool through a server in
this process: what ``test_diff_bounds`` runs in a child process, its CPU time and peak memory
measured (``processes.run_limited``).

    python hostile_diffs.py CASE URL OPTIONS_JSON MAX_RESPONSE_CHARS

prints one JSON line: whether the call failed, its text, the sizes of both views of the reply
(the text blocks, the fields in ``_meta``) and the fields themselves but for the diff, and the
process's peak resident memory while it served the call (the files written before it aside).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client

from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.profiles.results import META_RESULT, compact_json
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

MiB = 1 << 20


def replace_all() -> tuple[dict[str, str], str, dict[str, Any]]:
    """200,000 lines, every other one ``old line``: one edit replacing each."""
    text = "".join("old line\n" if n % 2 else f"keep {n}\n" for n in range(200_000))
    edit = {"oldText": "old line", "newText": "new line", "replace_all": True}
    return {"f.txt": text}, "edit_file", {"path": "f.txt", "edits": [edit], "dry_run": True}


def line_edits() -> tuple[dict[str, str], str, dict[str, Any]]:
    """20,000 lines, every other one replaced by number: 10,000 line edits."""
    text = "".join(f"line {n}\n" for n in range(20_000))
    edits = [{"line_number": n, "action": "replace", "content": f"new {n}"} for n in range(1, 20_001, 2)]
    return {"f.txt": text}, "edit_file_at_line", {"path": "f.txt", "line_edits": edits, "dry_run": True}


def crlf() -> tuple[dict[str, str], str, dict[str, Any]]:
    """200,000 lines, and the same with CRLF on every other line."""
    lf = "".join(f"line {n}\n" for n in range(200_000))
    mixed = "".join(f"line {n}\r\n" if n % 2 else f"line {n}\n" for n in range(200_000))
    return {"a.txt": lf, "b.txt": mixed}, "compare_files", {"file1": "a.txt", "file2": "b.txt"}


def repeated() -> tuple[dict[str, str], str, dict[str, Any]]:
    """100,000 lines of 1,000 distinct ones repeated, and the same with 600 lines changed
    (half of them into other lines of the file)."""
    pick = random.Random(37)
    old = [f"distinct line {n % 1000}\n" for n in range(100_000)]
    new = list(old)
    for k, n in enumerate(pick.sample(range(100_000), 600)):
        new[n] = f"changed {n}\n" if k % 2 else old[pick.randrange(1000)]
    return {"a.txt": "".join(old), "b.txt": "".join(new)}, "compare_files", {"file1": "a.txt", "file2": "b.txt"}


def every_line() -> tuple[dict[str, str], str, dict[str, Any]]:
    """Two 50 MiB files that differ on every line."""
    lines = 50 * MiB // 64
    old = "".join(f"{n:>63}\n" for n in range(lines))
    new = "".join(f"{n:>62}+\n" for n in range(lines))
    return {"a.txt": old, "b.txt": new}, "compare_files", {"file1": "a.txt", "file2": "b.txt"}


CASES: dict[str, Callable[[], tuple[dict[str, str], str, dict[str, Any]]]] = {
    "replace_all": replace_all,
    "line_edits": line_edits,
    "crlf": crlf,
    "repeated": repeated,
    "every_line": every_line,
}


def written(mount: Mount, files: dict[str, str]) -> None:
    """The files, as their bytes, in the mount's store (its bucket made first on an object store)."""
    fs, root = mount.fs, mount.backend.root.rstrip("/")
    if mount.scheme in ("s3", "gs", "az"):
        fs.mkdir(root.split("/")[0])
    for name, text in files.items():
        fs.pipe_file(f"{root}/{name}", text.encode())


async def call(mount: Mount, cap: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    server = build_server([mount], Settings(max_response_chars=cap))
    async with Client(server) as client:  # type: ignore[arg-type]
        result = await client.call_tool(tool, arguments)
    texts = [block.text for block in result.content if block.type == "text"]
    fields = (result.meta or {}).get(META_RESULT) or {}
    return {
        "is_error": result.is_error,
        "text": "".join(texts),
        "text_chars": sum(map(len, texts)),
        "meta_chars": len(compact_json(fields)),
        "fields": {key: value for key, value in fields.items() if key not in ("diff", "hunks", "edits", "matches")},
    }


def peak_mb() -> float:
    """This process's peak resident memory since it was last reset (``VmHWM``)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def main() -> None:
    case, url, options, cap = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    mount = open_mount(MountSpec(url, options=options))
    files, tool, arguments = CASES[case]()
    written(mount, files)
    inputs = sum(len(text) for text in files.values())
    del files
    Path("/proc/self/clear_refs").write_text("5")  # the peak from here on: the call's, not the setup's
    reply = asyncio.run(call(mount, cap, tool, arguments))
    print(json.dumps({"inputs": inputs, "peak_mb": peak_mb(), **reply}))


if __name__ == "__main__":
    main()
