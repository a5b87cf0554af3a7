"""The hostile diffs of issue 37, each made in one store and sent to its tool through a server in
this process: what ``test_diff_bounds`` runs in a child process, its CPU time and peak memory
measured (``processes.run_limited``).

    python hostile_diffs.py CASE URL OPTIONS_JSON MAX_RESPONSE_CHARS

(CASE: a name of ``CASES``, or the JSON of a random case for ``generated``) prints one JSON
line: the size of what the call read (files and request, in characters and lines), whether
the call failed, its text, the sizes of both views of the reply
(the text blocks, the fields in ``_meta``) and the fields themselves but for the diff, the
matching work the server counted for it (``steps``: ``vfs://metrics``' ``match_steps``), and the
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
from vfs_mcp.server.resources import METRICS_URI
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


def generated(spec: dict[str, Any]) -> tuple[dict[str, str], str, dict[str, Any]]:
    """A random case: ``spec["lines"]`` lines, a share of them (``spec["repeat"]``) among
    ``spec["distinct"]`` values repeated all over, the others each its own, and
    ``spec["changes"]`` changes made by ``spec["tool"]`` (edits, line edits, a patch's hunks, or
    a second file's differences)."""
    pick = random.Random(spec["seed"])
    filler = "x" * spec["pad"]

    def line() -> str:
        if pick.random() < spec["repeat"]:
            return f"common {pick.randrange(spec['distinct'])} {filler}"
        return f"{pick.randrange(1 << 40)} {filler}"

    old = [line() for _ in range(spec["lines"])]
    changes, tool, dry_run = spec["changes"], spec["tool"], spec["dry_run"]
    text = "".join(f"{value}\n" for value in old)
    if tool == "compare_files":
        new = list(old)
        for _ in range(changes):
            at = pick.randrange(len(new) + 1)
            kind = pick.randrange(3)
            if kind == 0 or not new:
                new.insert(at, line())
            elif kind == 1:
                del new[min(at, len(new) - 1)]
            else:
                new[min(at, len(new) - 1)] = line()
        files = {"a.txt": text, "b.txt": "".join(f"{value}\n" for value in new)}
        return files, tool, {"file1": "a.txt", "file2": "b.txt"}
    if tool == "edit_file":  # each edit replaces a line everywhere: the common ones many times
        count = max(1, min(changes, 1000))
        common = [f"common {k} {filler}" for k in range(min(spec["distinct"], count))]
        values = sorted({*common, *pick.sample(old, min(len(old), count - len(common)))})
        edits = [{"oldText": value, "newText": f"new {k}", "replace_all": True} for k, value in enumerate(values)]
        return {"f.txt": text}, tool, {"path": "f.txt", "edits": edits, "dry_run": dry_run}
    if tool == "edit_file_at_line":
        numbers = pick.sample(range(1, len(old) + 1), min(len(old), max(1, changes)))
        actions = ("replace", "insert_before", "insert_after", "delete")
        edits = [{"line_number": n, "action": pick.choice(actions), "content": f"new {n}\nand more"} for n in numbers]
        return {"f.txt": text}, tool, {"path": "f.txt", "line_edits": edits, "dry_run": dry_run}
    hunks, end = [], 0  # apply_patch: a hunk changing each line picked, with its context
    for at in sorted(pick.sample(range(len(old)), min(len(old), changes))):
        if at - 3 < end:
            continue
        before, after = old[at - 3 : at], old[at + 1 : at + 4]
        body = [f" {v}\n" for v in before] + [f"-{old[at]}\n", f"+changed {at}\n"] + [f" {v}\n" for v in after]
        size = len(before) + 1 + len(after)
        hunks.append(f"@@ -{at - 2},{size} +{at - 2},{size} @@\n" + "".join(body))
        end = at + 4
    patch = "--- a/f.txt\n+++ b/f.txt\n" + "".join(hunks)
    return {"f.txt": text}, tool, {"patch": patch, "dry_run": dry_run}


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
        metrics = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    texts = [block.text for block in result.content if block.type == "text"]
    fields = (result.meta or {}).get(META_RESULT) or {}
    return {
        "is_error": result.is_error,
        "steps": metrics["tools"][tool]["match_steps"],
        "text": "".join(texts),
        "text_chars": sum(map(len, texts)),
        "meta_chars": len(compact_json(fields)),
        "fields": {key: value for key, value in fields.items() if key not in ("diff", "hunks", "edits", "matches")},
    }


MEM_PER_LINE = 240
"""Bytes a line of what a call read and answered may hold over its characters: a line held as
a Python string costs 49 bytes beyond them and 8 in its list, and an edit and its diff hold the
lines of both texts at once (a file of 100,000 short lines is 5 MB of lines for 1 MB of text)."""
MEM_PER_OBJECT = 1024
"""Bytes a JSON object of the request may hold: the in-process client's dict of it, the server's
and the model it is validated into (some 1.1 KB for a line edit of 80 characters, measured)."""


def peak_allowed_mb(reply: dict[str, Any]) -> float:
    """The bound of a call's peak memory: 150 MB, four times what it read and answered,
    ``MEM_PER_LINE`` a line of it and ``MEM_PER_OBJECT`` an object of its request (linear in
    what it read and answered, as its CPU time is)."""
    read_and_answered = reply["inputs"] + reply["text_chars"] + reply["meta_chars"]
    return 150 + (4 * read_and_answered + MEM_PER_LINE * reply["lines"] + MEM_PER_OBJECT * reply["objects"]) / MiB


def peak_mb() -> float:
    """This process's peak resident memory since it was last reset (``VmHWM``)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def main() -> None:
    case, url, options, cap = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    mount = open_mount(MountSpec(url, options=options))
    files, tool, arguments = CASES[case]() if case in CASES else generated(json.loads(case))
    written(mount, files)
    request = json.dumps(arguments)
    inputs = sum(len(text) for text in files.values()) + len(request)
    lines = sum(text.count("\n") for text in files.values()) + request.count("\\n") + 1
    objects = request.count("{")
    del files, request
    Path("/proc/self/clear_refs").write_text("5")  # the peak from here on: the call's, not the setup's
    reply = asyncio.run(call(mount, cap, tool, arguments))
    print(json.dumps({"inputs": inputs, "lines": lines, "objects": objects, "peak_mb": peak_mb(), **reply}))


if __name__ == "__main__":
    main()
