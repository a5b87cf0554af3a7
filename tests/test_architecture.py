"""docs/architecture.md stays true: every module it names exists, the layers it lists are the
folders' import direction (down only, no circles), and its other rules hold."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTE = ROOT / "docs" / "architecture.md"
PACKAGES = {"vfs_mcp": ROOT / "vfs_mcp", "vfs_mcp_backends": ROOT / "backends" / "vfs_mcp_backends"}


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


def section(title: str) -> str:
    """The text of the note's section ``## title`` (up to the next ``## ``)."""
    text = NOTE.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def layers() -> list[list[str]]:
    """The note's numbered list of layers, bottom first: the paths (files and folders) of each."""
    found = re.findall(r"^\d+\. (.*)$", section("Import direction (checked)"), flags=re.M)
    return [re.findall(r"`(vfs_mcp/[\w/.]*)`", line) for line in found]


def sources() -> Iterator[Path]:
    for package in PACKAGES.values():
        yield from sorted(package.rglob("*.py"))


def module_of(path: Path) -> str:
    for name, package in PACKAGES.items():
        if path.is_relative_to(package):
            parts = [name, *path.relative_to(package).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise AssertionError(path)


@cache
def file_of(module: str) -> Path | None:
    top, _, rest = module.partition(".")
    if top not in PACKAGES:
        return None
    base = PACKAGES[top].joinpath(*rest.split(".")) if rest else PACKAGES[top]
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def imports_of(path: Path) -> frozenset[str]:
    """The modules ``path`` imports, anywhere in it (inside functions too): ``from pkg import
    mod`` counts as ``pkg.mod`` where that is a module."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                out.add(inner if file_of(inner) else node.module)
    return frozenset(out)


def edges() -> dict[Path, set[Path]]:
    """File -> the files of this project it imports."""
    return {
        path: {found for module in imports_of(path) if (found := file_of(module)) and found != path}
        for path in sources()
    }


def layer_of(path: Path) -> int:
    rel = str(path.relative_to(ROOT))
    best = max(
        ((len(entry), number) for number, entries in enumerate(layers()) for entry in entries if rel.startswith(entry)),
        default=None,
    )
    assert best is not None, f"{rel} is in no layer of docs/architecture.md"
    return best[1]


NAMED_AT_LEAST = 20
"""Modules the note names, at the least: fewer, and the names were not found (the check that
each exists would pass on none)."""


def test_the_note_names_modules() -> None:
    assert len(named_modules()) >= NAMED_AT_LEAST


@pytest.mark.parametrize("name", sorted(named_modules()))
def test_every_module_the_architecture_note_names_exists(name: str) -> None:
    path = resolve(name)
    assert path.is_dir() if name.endswith("/") else path.is_file(), (
        f"docs/architecture.md names {name}, which does not exist"
    )


def test_every_module_of_the_package_is_in_one_layer() -> None:
    assert len(layers()) >= 8
    for path in (ROOT / "vfs_mcp").rglob("*.py"):
        layer_of(path)


def test_every_import_goes_down_the_layers_or_stays_in_its_own() -> None:
    """cli → testing → transports → server → profiles → settings → ops → changes → jail → the
    shared modules → backends: a module imports its own layer's and those below, never one above."""
    wrong = [
        f"{path.relative_to(ROOT)} imports {target.relative_to(ROOT)}"
        for path, targets in edges().items()
        if path.is_relative_to(ROOT / "vfs_mcp")
        for target in targets
        if target.is_relative_to(ROOT / "vfs_mcp") and layer_of(target) > layer_of(path)
    ]
    assert not wrong, "imports running up the layers:\n" + "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = edges()
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    circles: list[list[str]] = []

    def visit(node: Path) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(str(member.relative_to(ROOT)))
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    assert not circles, f"modules that import each other: {circles}"


MAX_TOP_MODULES = 8


def test_the_package_top_holds_only_its_face_and_what_every_layer_shares() -> None:
    top = sorted(path.name for path in (ROOT / "vfs_mcp").glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"vfs_mcp/ holds {len(top)} modules; give each its layer's folder: {top}"


def test_stores_import_nothing_from_the_server() -> None:
    for path in (ROOT / "backends" / "vfs_mcp_backends").glob("*.py"):
        wrong = {m for m in imports_of(path) if m == "vfs_mcp" or m.startswith("vfs_mcp.")}
        assert not wrong, f"{path.name} imports {wrong}"


def test_operations_and_profiles_never_import_the_mcp_sdk() -> None:
    """Operations are plain Python; profiles are tables of tools and renderers of results (the
    wire's types, ``mcp_types``, and no more): the server registers them on the SDK."""
    for folder in ("ops", "profiles"):
        for path in (ROOT / "vfs_mcp" / folder).rglob("*.py"):
            wrong = {m for m in imports_of(path) if m == "mcp" or m.startswith("mcp.")}
            assert not wrong, f"{path.relative_to(ROOT)} imports {wrong}"


def test_operations_and_profiles_reach_the_filesystem_only_through_its_methods() -> None:
    for folder in ("ops", "profiles"):
        for path in (ROOT / "vfs_mcp" / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            jail = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "jail"]
            assert not jail, f"{path.relative_to(ROOT)}:{jail[0]} reaches into the jail (ask the JailedFS)"
            assert "realpath(" not in path.read_text(), f"{path.relative_to(ROOT)} resolves host paths itself"


def test_one_real_path_asked_of_the_store() -> None:
    """Host paths are resolved by the store (``BackendMount.host_path``), nowhere else."""
    found = [
        str(path.relative_to(ROOT))
        for path in sources()
        if re.search(r"realpath\(|/proc/self/fd", path.read_text())
        and path.relative_to(ROOT).as_posix() not in HOST_PATHS
    ]
    assert not found, f"host paths resolved outside the store: {found}"


HOST_PATHS = {
    "backends/vfs_mcp_backends/hostpaths.py",
    "vfs_mcp/testing/harness.py",
    "vfs_mcp/changes/private.py",
    "vfs_mcp/jail/state_place.py",
}
"""The store's one resolver, the harness making a temporary folder, and the state store's place: checked
outside the served folders, and private up to a safe folder (none of them a path a tool was given)."""


MAX_MODULE_LINES = 600
"""Past it, a module's docstring says why it is one job (``STYLE.md``: size follows the job)."""
SAYS_WHY = re.compile(r"^Why its lines are one job: \S+(?:\s+\S+){7,}", re.M)
"""How it says so: a paragraph of its docstring opens with these words and gives a reason (eight words
or more), so a docstring that only happens to hold the word "lines" is no answer."""
MAX_PROFILE_LINES = 250
"""A profile is a table and the renderers of its dialect: no operation logic."""


def test_a_module_past_six_hundred_lines_says_why_in_its_docstring() -> None:
    long = {}
    for path in [*(ROOT / "vfs_mcp").rglob("*.py"), *(ROOT / "backends").rglob("*.py")]:
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            docstring = ast.get_docstring(ast.parse(text)) or ""
            if not SAYS_WHY.search(docstring):
                long[str(path.relative_to(ROOT))] = len(text.splitlines())
    assert not long, (
        f"split these by job, or give their docstring a paragraph 'Why its lines are one job: <the reason>': {long}"
    )


def test_no_profile_module_holds_more_than_a_table_and_its_renderers() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / "vfs_mcp" / "profiles").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_PROFILE_LINES
    }
    assert not long, f"move the operation logic to vfs_mcp/ops: {long}"


MAX_FUNCTION_LINES = 60


def long_functions() -> set[str]:
    out = set()
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text())):
            is_function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_function and node.end_lineno and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                out.add(f"{path.relative_to(ROOT).as_posix()}:{node.name}")
    return out


def test_every_long_function_is_one_the_note_says_why_of() -> None:
    explained = set(re.findall(r"`([\w/.]+\.py:\w+)`", section("Long functions, and why")))
    assert long_functions() <= explained, (
        f"split these, or say why in docs/architecture.md: {long_functions() - explained}"
    )
    assert explained <= long_functions(), (
        f"no longer long: take them off the note's list: {explained - long_functions()}"
    )


WRITES = re.compile(
    r"\.(pipe_file|rm_file|cp_file|put_if|hold|exclusive|symlink|chmod|makedirs|rmdir)\(|\.fs\.(rm|mv|mkdir)\("
    r"|fcntl\.(?:flock|lockf)\(|\bF_(?:OFD_)?SETLKW?\b|\bflock\b"
)
"""A store written to, a lock taken or a conditional put made: what only the write path does
(``fcntl`` also sizes a pipe: only its locks count)."""
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
    """Re-planning a change that met another writer is the write path's (``changes.make``)."""
    for path in [*(ROOT / "vfs_mcp" / "ops").rglob("*.py"), *(ROOT / "vfs_mcp" / "profiles").rglob("*.py")]:
        source = path.read_text()
        assert "RETRIES" not in source and "except Stale" not in source, f"{path.relative_to(ROOT)} retries itself"


def test_one_class_for_each_concept_across_the_packages() -> None:
    """Two classes of one name are two copies of a concept (three ``Hunk``, two ``ReadResult``,
    two ``Budget`` once): a dialect words one operation's result, it does not copy it."""
    where: dict[str, list[str]] = {}
    for path in [*(ROOT / "vfs_mcp").rglob("*.py"), *(ROOT / "backends").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    twice = {name: places for name, places in where.items() if len(places) > 1}
    assert not twice, f"one class per concept; these names have several: {twice}"


def test_operations_are_family_packages_only() -> None:
    """``vfs_mcp/ops/`` holds its ``__init__.py`` and one package a family, nothing flat
    (docs/architecture.md, "Operations"), so a reader finds an operation by its family."""
    flat = sorted(path.name for path in (ROOT / "vfs_mcp" / "ops").glob("*.py") if path.name != "__init__.py")
    assert not flat, f"put these in the package of their family: {flat}"
    families = sorted(path.name for path in (ROOT / "vfs_mcp" / "ops").iterdir() if (path / "__init__.py").is_file())
    named = set(re.findall(r"`vfs_mcp/ops/(\w+)/`", section("The layers, bottom up")))
    assert set(families) == named, f"families the note does not list, or lists and are gone: {set(families) ^ named}"


def ambient_named() -> set[str]:
    """The ambient variables the note's "Per-call context" table names, as ``path name``: the
    first cell of a row, a module and its variables (``vfs_mcp/sessions.py`` ``current``)."""
    named = set()
    for row in re.findall(r"^\| (`[^|]*)\|", section("Per-call context"), flags=re.M):
        path, *names = re.findall(r"`([^`]+)`", row)
        named |= {f"{path} {name}" for name in names}
    return named


def test_every_ambient_variable_is_one_the_note_says_why_of() -> None:
    """Per-call state is passed down (``CallContext`` on the call's ``JailedFS`` view): a
    ``ContextVar`` carries it only where no argument can, each one named in the note's table
    with who sets it, who reads it and why; a row whose variable is gone goes too."""
    found = {
        f"{path.relative_to(ROOT)} {target.id}"
        for path in sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", getattr(node.value.func, "attr", None)) == "ContextVar"
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    named = ambient_named()
    assert found <= named, f"ambient variables the note's Per-call context does not name: {sorted(found - named)}"
    assert named <= found, f"the note names ambient variables that are gone: {sorted(named - found)}"
