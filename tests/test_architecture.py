"""docs/architecture.md stays true: every module it names exists, and its import rules hold."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTE = ROOT / "docs" / "architecture.md"


def named_modules() -> set[str]:
    """Every ``path/to/module.py`` or ``package/`` the note names in backticks (globs aside)."""
    return set(re.findall(r"`([\w/.]+(?:\.py|/))`", NOTE.read_text()))


def resolve(name: str) -> Path:
    """A name as the note writes it: a path from the repository root, or a bare module name
    inside the package the same sentence is about (found anywhere under the two packages)."""
    if "/" in name:
        return ROOT / name
    found = sorted((ROOT / "vfs_mcp").rglob(name)) + sorted((ROOT / "backends").rglob(name))
    return found[0] if found else ROOT / name


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_the_note_names_modules() -> None:
    assert len(named_modules()) > 20


@pytest.mark.parametrize("name", sorted(named_modules()))
def test_every_module_the_architecture_note_names_exists(name: str) -> None:
    path = resolve(name)
    assert path.is_dir() if name.endswith("/") else path.is_file(), (
        f"docs/architecture.md names {name}, which does not exist"
    )


def test_stores_import_nothing_from_the_server() -> None:
    for path in (ROOT / "backends" / "vfs_mcp_backends").glob("*.py"):
        wrong = {m for m in imports_of(path) if m == "vfs_mcp" or m.startswith("vfs_mcp.")}
        assert not wrong, f"{path.name} imports {wrong}"


def test_operations_import_neither_mcp_nor_the_layers_above_them() -> None:
    above = ("vfs_mcp.profiles", "vfs_mcp.server", "vfs_mcp.cli", "vfs_mcp.tooling")
    for path in (ROOT / "vfs_mcp" / "ops").glob("*.py"):
        wrong = {m for m in imports_of(path) if m == "mcp" or m.startswith(("mcp.", *above))}
        assert not wrong, f"ops/{path.name} imports {wrong}"


def test_the_policy_layer_imports_no_profile_and_only_the_glob_matcher_from_operations() -> None:
    for name in ("filesystem.py", "reads.py", "jail.py"):
        found = imports_of(ROOT / "vfs_mcp" / name)
        wrong = {
            m
            for m in found
            if m.startswith("vfs_mcp.profiles") or (m.startswith("vfs_mcp.ops") and m != "vfs_mcp.ops.globs")
        }
        assert not wrong, f"{name} imports {wrong}"


MAX_MODULE_LINES = 420


def test_no_module_is_longer_than_a_reader_holds_at_once() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in [*(ROOT / "vfs_mcp").rglob("*.py"), *(ROOT / "backends").rglob("*.py")]
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these by job: {long}"


def test_operations_reach_the_filesystem_only_through_its_methods() -> None:
    for path in (ROOT / "vfs_mcp" / "ops").glob("*.py"):
        source = path.read_text()
        assert ".jail." not in source and "vfs.jail" not in source, f"ops/{path.name} reaches into the jail"
        assert "realpath(" not in source, f"ops/{path.name} resolves host paths itself (ask vfs.host_path)"


WRITES = re.compile(
    r"\.(pipe_file|rm_file|cp_file|put_if|hold|exclusive|symlink|chmod|makedirs|rmdir)\(|\.fs\.(rm|mv|mkdir)\("
    r"|fcntl\.|\bflock\b"
)
"""A store written to, a lock taken or a conditional put made: what only the write path does."""
SETS_UP_STORES = {"vfs_mcp/testing/harness.py", "vfs_mcp/testing/faults.py", "vfs_mcp/pytest_plugin.py"}
"""Test support that sets stores up around the jail (and the faults in front of them)."""


def test_only_the_write_path_writes_locks_or_makes_conditional_puts() -> None:
    """Every tool plans; vfs_mcp/changes commits (docs/architecture.md, "The write path")."""
    found = {
        f"{rel}:{number}: {line.strip()}"
        for path in (ROOT / "vfs_mcp").rglob("*.py")
        if not (rel := str(path.relative_to(ROOT))).startswith("vfs_mcp/changes/") and rel not in SETS_UP_STORES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if WRITES.search(line.split("#")[0]) and not line.lstrip().startswith(("def ", '"', "'"))
    }
    assert not found, "writes, locks or conditional puts outside vfs_mcp/changes:\n" + "\n".join(sorted(found))


def test_no_tool_retries_a_write_itself() -> None:
    """Re-planning a change that met another writer is the write path's (``changes.run``)."""
    for path in [*(ROOT / "vfs_mcp" / "ops").glob("*.py"), *(ROOT / "vfs_mcp" / "profiles").rglob("*.py")]:
        source = path.read_text()
        assert "RETRIES" not in source and "except Stale" not in source, f"{path.relative_to(ROOT)} retries itself"
