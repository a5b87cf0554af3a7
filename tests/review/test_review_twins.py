"""A mount under review answers every call as the mount itself would, and shows the same files:
500 seeded random tool calls (writes, appends, edits, patches, moves, copies, deletes, folders,
undo, and the reads that show what they did) against a mount under review and the same calls
against a plain twin, on memory, a local folder and S3 (moto; 200 calls). The store under review keeps its
bytes until the person applies; a file changed behind the agent's back makes the apply refuse
whole, naming it; once applied, the store holds what the twin holds."""

from __future__ import annotations

import hashlib
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox
from mcp import Client

from vfs_mcp import build_server
from vfs_mcp.errors import Conflict
from vfs_mcp.review import Review
from vfs_mcp.settings import Settings
from vfs_mcp_backends import BackendMount
from vfs_mcp_backends.overlay import OverlayMount

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FILES = ["a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "g/h.txt", "k/l/m.txt"]
FOLDERS = ["d", "d/e", "g", "k", "k/l", "n"]
WORDS = ["alpha", "beta", "gamma", "delta", "eps"]
CALLS = int(os.environ.get("VFS_REVIEW_CALLS", "500"))
"""Calls to each twin; on S3 (moto) two in five of them: the layer's logic is the same on every store
and runs the full count on memory and a local folder, S3 adds only the store's reads and writes, and
its 200 calls still call every tool (asserted)."""
WRITES = ["write", "write", "append", "edit", "edit", "patch", "move", "copy", "delete", "mkdir", "undo", "undo"]
READS = ["read", "list", "tree", "grep", "search", "info", "lines", "compare", "size", "empty"]
TOOLS = {
    *("write_file", "edit_file", "apply_patch", "move_file", "copy_file", "delete_path", "create_directory", "undo"),
    *("read_file", "list_directory", "directory_tree", "grep_files", "search_files", "get_file_info"),
    *("read_file_lines", "compare_files", "calculate_directory_size", "find_empty_directories"),
}
"""The tools ``choose`` calls."""

Tree = dict[str, Any]


def tree_of(backend: BackendMount) -> Tree:
    """What a store holds: path -> bytes, or "dir" for a folder (where it has folders of its own)."""
    root = backend.root.rstrip("/")
    backend.invalidate_tree(root)
    tree: Tree = {}
    files: dict[str, str] = {}
    for path, info in backend.fs.find(root, withdirs=True, detail=True).items():
        rel = str(path)[len(root) :].strip("/")
        if not rel or str(path).endswith("/"):
            continue
        if info["type"] == "directory":
            if backend.capabilities.empty_dirs:
                tree[rel] = "dir"
        else:
            files[rel] = str(path)
    contents = backend.fs.cat(list(files.values())) if files else {}  # one batch: concurrent on S3
    return tree | {rel: bytes(contents[path]) for rel, path in files.items()}


def raw_tree(box: Sandbox) -> Tree:
    """What the store holds, read around the jail and around any layer."""
    backend = box.mount.backend
    return tree_of(backend.under if isinstance(backend, OverlayMount) else backend)


def view_tree(served: Any) -> Tree:
    """What a server's mount shows (the layer applied where it has one)."""
    return tree_of(served.vfs.mounts[0].backend)


def digest(tree: Tree) -> str:
    return hashlib.sha256(repr(sorted(tree.items())).encode()).hexdigest()


MASKS = [
    (re.compile(r"(?<![\w-])[\w-]{22}(?![\w-])"), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r'(etag|ETag)"?[:=] ?"?[0-9a-fA-F"]+'), r"\1 <etag>"),
]


def normal(text: str, root: str) -> str:
    text = text.replace(root, "<root>")
    for pattern, mask in MASKS:
        text = pattern.sub(mask, text)
    return text


def choose(rng: random.Random, tree: Tree) -> tuple[str, dict[str, Any]]:
    """One call, its arguments drawn from what the (plain) tree holds."""
    files = sorted(p for p, v in tree.items() if v != "dir")
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) + "\n"
    kind = rng.choice([*WRITES, *READS])
    anyfile = rng.choice(FILES)
    anyfolder = rng.choice(FOLDERS)
    if kind in ("write", "append"):
        return "write_file", {
            "path": anyfile,
            "content": text,
            "create_dirs": rng.random() < 0.8,
            "append": kind == "append",
        }
    if kind == "edit" and files:
        word = rng.choice(WORDS)
        return "edit_file", {"path": rng.choice(files), "edits": [{"oldText": word, "newText": word.upper()}]}
    if kind == "patch" and files:
        path = rng.choice(files)
        old = tree[path].decode(errors="replace").splitlines()
        if old:
            line = rng.randrange(len(old))
            body = f"--- a/{path}\n+++ b/{path}\n@@ -{line + 1} +{line + 1} @@\n-{old[line]}\n+{old[line]} {rng.choice(WORDS)}\n"
            return "apply_patch", {"patch": body}
    if kind == "move":
        source = rng.choice(FILES + FOLDERS)
        dest = rng.choice([*FILES, "k/moved", "d/e/z.txt", "n/o", "p.txt"])
        return "move_file", {
            "source": source,
            "destination": dest,
            "overwrite": rng.random() < 0.3,
            "create_dirs": rng.random() < 0.5,
        }
    if kind == "copy":
        source = rng.choice(FILES + FOLDERS)
        dest = rng.choice([*FILES, "k/copied", "d/e/y.txt", "n/q"])
        return "copy_file", {"source": source, "destination": dest, "recursive": True, "overwrite": rng.random() < 0.3}
    if kind == "delete":
        return "delete_path", {"path": rng.choice(FILES + FOLDERS), "recursive": rng.random() < 0.7}
    if kind == "mkdir":
        return "create_directory", {"path": rng.choice([*FOLDERS, "n/r/s"])}
    if kind == "undo":
        return "undo", {}
    if kind == "read":
        return "read_file", {"path": anyfile}
    if kind == "list":
        return "list_directory", {"path": rng.choice([".", *FOLDERS])}
    if kind == "tree":
        return "directory_tree", {"path": "."}
    if kind == "grep":
        return "grep_files", {"path": ".", "pattern": rng.choice(WORDS)}
    if kind == "search":
        return "search_files", {"path": ".", "pattern": rng.choice(["*.txt", "c", "e"])}
    if kind == "info":
        return "get_file_info", {"path": rng.choice(FILES + FOLDERS)}
    if kind == "lines":
        return "read_file_lines", {"path": anyfile, "offset": 0, "limit": 2}
    if kind == "compare":
        return "compare_files", {"file1": anyfile, "file2": rng.choice(FILES)}
    if kind == "size":
        return "calculate_directory_size", {"path": anyfolder}
    return "find_empty_directories", {"path": "."}


def answer_of(result: Any, root: str) -> tuple[bool, str]:
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    return bool(result.is_error), normal(text, root)


SEED = {"a.txt": "alpha beta\ngamma\n", "d/c.txt": "delta\nalpha\n", "g/h.txt": "eps beta\n"}


@pytest.mark.parametrize("kind", ["memory", "local", "s3"])
async def test_a_review_mount_answers_and_shows_what_its_plain_twin_does_until_applied(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "reviewed").mkdir()
    plain = make_sandbox(kind, tmp_path / "plain", request)
    reviewed = make_sandbox(kind, tmp_path / "reviewed", request)
    for box in (plain, reviewed):
        box.seed(SEED)
        box.mkdir("k")
    untouched = digest(raw_tree(reviewed))
    twin = build_server([plain.mount], Settings(call_timeout=None))
    under = build_server([reviewed.mount], Settings(review=True, state=str(tmp_path / "state"), call_timeout=None))
    rng = random.Random(f"review-twins-{kind}")
    shown = raw_tree(plain)  # what the plain twin holds: read again after every call but a read
    called: set[str] = set()
    async with Client(twin) as one, Client(under) as other:
        for step in range(CALLS * 2 // 5 if kind == "s3" else CALLS):
            tool, args = choose(rng, shown)
            called.add(tool)
            expected = answer_of(await one.call_tool(tool, args), plain.root)
            got = answer_of(await other.call_tool(tool, args), reviewed.root)
            assert got == expected, f"call {step}: {tool} {args}\n{got[1]}\n----\n{expected[1]}"
            if tool not in ("read_file", "list_directory", "directory_tree", "grep_files", "search_files"):
                shown = raw_tree(plain)
                assert view_tree(under) == shown, f"call {step}: {tool} {args} left another view"
    assert called == TOOLS, f"tools never called: {sorted(TOOLS - called)}"
    assert digest(raw_tree(reviewed)) == untouched, "the store under review changed before it was applied"

    # A file the agent changed, changed again behind its back: the apply is refused whole, naming it.
    review = Review(under.vfs)
    behind = next(item.path for item in review.pending() if item.status == "modified" and item.moved_from is None)
    (rel,) = [rel for rel in raw_tree(reviewed) if reviewed.path(rel) == behind]
    kept = reviewed.get(rel)
    reviewed.put(rel, b"changed behind the agent's back\n")
    changed = digest(raw_tree(reviewed))
    with pytest.raises(Conflict, match=rf"{re.escape(behind)} changed since the agent read it.*nothing was applied"):
        review.apply()
    assert digest(raw_tree(reviewed)) == changed, "a refused apply wrote something"

    reviewed.put(rel, kept)
    review.apply()
    assert raw_tree(reviewed) == raw_tree(plain)
    assert review.pending() == []
