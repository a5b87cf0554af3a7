"""The state store's names are spelt in one package: nothing outside ``vfs_mcp/changes/state/``
builds a record's, a mark's or a folder's name of the store itself (``layout.py`` does)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from vfs_mcp.changes.state import layout

ROOT = Path(__file__).resolve().parent.parent.parent
STATE = ROOT / "vfs_mcp" / "changes" / "state"
BELOW_THE_WRITE_PATH = {
    "vfs_mcp/jail/state_place.py": "a server that only reads looks for work under way without loading the write path",
    "vfs_mcp/ops/search/index.py": "the content index loads with a first grep, which loads no part of the write path",
}
"""Modules that name a folder of the store without importing ``layout``, and why (importing any
module of ``vfs_mcp.changes`` loads the whole write path)."""
METHODS = {"tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list"}
"""The tasks extension's JSON-RPC methods: spelt like a path below the store's ``tasks`` folder,
named nothing in it."""


def spelt_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, text) of each place ``tree`` spells a name of the state store: a literal (or an
    f-string) that starts with one of its folders and a slash or ends as a record or an undo's
    mark does; a folder's bare name listed, joined to a path or given a name of its own."""
    folders = set(layout.FOLDERS)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [part.value for part in node.values if isinstance(part, ast.Constant)]
            first = node.values[0] if node.values else None
            last = node.values[-1] if node.values else None
            text = "".join(str(part) for part in parts)
            if (
                isinstance(first, ast.Constant)
                and str(first.value).split("/", 1)[0] in folders
                and "/" in str(first.value)
            ) or (isinstance(last, ast.Constant) and str(last.value).endswith((layout.RECORD, layout.UNDO))):
                yield node.lineno, text
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value not in METHODS:
            value = node.value
            if ("/" in value and value.split("/", 1)[0] in folders) or value.endswith((layout.RECORD, layout.UNDO)):
                yield node.lineno, value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("listing", "join")
        ):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and arg.value in folders:
                    yield node.lineno, f"{node.func.attr}({arg.value!r})"
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and node.value.value in folders
            and all(isinstance(target, ast.Name) and target.id.isupper() for target in node.targets)
        ):
            yield node.lineno, f"= {node.value.value!r}"


def spellings(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((root / "vfs_mcp").rglob("*.py")):
        if path.is_relative_to(root / "vfs_mcp" / "changes" / "state"):
            continue
        hits = [f"{line}: {text}" for line, text in spelt_names(ast.parse(path.read_text()))]
        if hits:
            found[str(path.relative_to(root))] = hits
    return found


def test_no_module_outside_the_state_package_spells_a_name_of_the_state_store() -> None:
    found = spellings(ROOT)
    allowed = {rel: hits for rel, hits in found.items() if rel in BELOW_THE_WRITE_PATH}
    assert not {rel: hits for rel, hits in found.items() if rel not in allowed}, (
        "ask vfs_mcp/changes/state/layout.py for these names"
    )
    assert set(allowed) == set(BELOW_THE_WRITE_PATH), "an allowed module spells none now: take it off the list"


def test_the_scan_finds_each_way_a_name_was_spelt() -> None:
    planted = """
name = f"changes/{change_id}.rec"
mark = f"{PENDING}/{change_id}.undo"
gone = "quarantine/x"
store.listing("pending")
os.path.join(folder, "pending")
FOLDER = "index"
words = "the changes were made"
"""
    assert sorted({line for line, _ in spelt_names(ast.parse(planted))}) == [2, 3, 4, 5, 6, 7]
