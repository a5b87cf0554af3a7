"""Each rule of tests/test_architecture.py fails on a violation planted in a small tree of its
own (a note, a package, a store), and the same tree without the plant passes every rule: a rule
that could not fail would pass here too, and this test would say so."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import test_architecture as arch

NOTE = """# Architecture

`vfs_mcp/errors.py` and `vfs_mcp/jail/resolve.py`.

## The layers, bottom up

- `vfs_mcp/ops/files/`: whole files.

## Import direction (checked)

1. `vfs_mcp/errors.py`, `vfs_mcp/__init__.py`
2. `vfs_mcp/jail/`
3. `vfs_mcp/changes/`
4. `vfs_mcp/ops/`
5. `vfs_mcp/profiles/`
6. `vfs_mcp/server/`
7. `vfs_mcp/transports/`
8. `vfs_mcp/cli/`

## Per-call context

| variable | set by | read by | why ambient |
|---|---|---|---|
| `vfs_mcp/jail/resolve.py` `_here` | the server | the jail | no argument reaches it |

## Long functions, and why

- `vfs_mcp/server/serve.py:serve`: one piece.

## The end
"""

LONG = "def serve() -> None:\n" + "    x = 1\n" * 60

TREE = {
    "docs/architecture.md": NOTE,
    "vfs_mcp/__init__.py": "",
    "vfs_mcp/errors.py": "class VfsError(Exception):\n    pass\n",
    "vfs_mcp/jail/__init__.py": "",
    "vfs_mcp/jail/resolve.py": "from contextvars import ContextVar\n\nfrom vfs_mcp.errors import VfsError\n\n"
    "_here: ContextVar[str | None] = ContextVar('here', default=None)\n",
    "vfs_mcp/changes/__init__.py": "",
    "vfs_mcp/changes/commit.py": "def commit(fs, path):\n    fs.pipe_file(path, b'')\n",
    "vfs_mcp/ops/__init__.py": "",
    "vfs_mcp/ops/files/__init__.py": "",
    "vfs_mcp/ops/files/read.py": "from vfs_mcp.jail import resolve\n\n\ndef read(vfs, path):\n    return vfs.cat(path)\n",
    "vfs_mcp/profiles/__init__.py": "",
    "vfs_mcp/profiles/table.py": "from vfs_mcp.ops.files import read\n",
    "vfs_mcp/server/__init__.py": "",
    "vfs_mcp/server/serve.py": "import mcp\n\n\n" + LONG,
    "vfs_mcp/transports/__init__.py": "",
    "vfs_mcp/cli/__init__.py": "",
    "backends/vfs_mcp_backends/__init__.py": "",
    "backends/vfs_mcp_backends/local.py": "import os\n",
}


def every_named_module_exists() -> None:
    for name in arch.named_modules():
        arch.test_every_module_the_architecture_note_names_exists(name)


def many_lines(docstring: str) -> str:
    return f'"""{docstring}"""\n' + "x = 1\n" * 600


PLANTS: dict[str, tuple[Callable[..., None], dict[str, str]]] = {
    "a note whose module names are not found": (
        arch.test_the_note_names_modules,
        {"docs/architecture.md": NOTE.replace("`vfs_mcp/", "vfs_mcp/")},
    ),
    "a module the note names is gone": (
        every_named_module_exists,
        {"docs/architecture.md": NOTE.replace("`vfs_mcp/jail/resolve.py`", "`vfs_mcp/jail/gone.py`")},
    ),
    "a folder in no layer": (arch.test_every_module_of_the_package_is_in_one_layer, {"vfs_mcp/stray/x.py": ""}),
    "an import up the layers": (
        arch.test_every_import_goes_down_the_layers_or_stays_in_its_own,
        {"vfs_mcp/jail/resolve.py": "from vfs_mcp.server import serve\n"},
    ),
    "two modules importing each other": (
        arch.test_no_modules_import_each_other_in_a_circle,
        {
            "vfs_mcp/ops/files/write.py": "from vfs_mcp.ops.files import read\n",
            "vfs_mcp/ops/files/read.py": "from vfs_mcp.ops.files import write\n",
        },
    ),
    "a crowded package top": (
        arch.test_the_package_top_holds_only_its_face_and_what_every_layer_shares,
        {f"vfs_mcp/{name}.py": "" for name in "abcdefgh"},
    ),
    "a store importing the server": (
        arch.test_stores_import_nothing_from_the_server,
        {"backends/vfs_mcp_backends/local.py": "from vfs_mcp.errors import VfsError\n"},
    ),
    "an operation importing the SDK": (
        arch.test_operations_and_profiles_never_import_the_mcp_sdk,
        {"vfs_mcp/ops/files/read.py": "from mcp.server import Server\n"},
    ),
    "a profile reaching into the jail": (
        arch.test_operations_and_profiles_reach_the_filesystem_only_through_its_methods,
        {"vfs_mcp/profiles/table.py": "def where(vfs, path):\n    return vfs.jail.resolve(path)\n"},
    ),
    "a host path resolved outside the store": (
        arch.test_one_real_path_asked_of_the_store,
        {"vfs_mcp/server/places.py": "import os\n\nplace = os.path.realpath('.')\n"},
    ),
    "a long module that only mentions lines": (
        arch.test_a_module_past_six_hundred_lines_says_why_in_its_docstring,
        {"vfs_mcp/server/big.py": many_lines("Reads lines.\n\nIts lines are many.")},
    ),
    "a long profile module": (
        arch.test_no_profile_module_holds_more_than_a_table_and_its_renderers,
        {"vfs_mcp/profiles/big.py": "x = 1\n" * 251},
    ),
    "a long function the note does not list": (
        arch.test_every_long_function_is_one_the_note_says_why_of,
        {"vfs_mcp/server/other.py": LONG.replace("serve", "other")},
    ),
    "a function the note lists that is short now": (
        arch.test_every_long_function_is_one_the_note_says_why_of,
        {"vfs_mcp/server/serve.py": "def serve() -> None:\n    pass\n"},
    ),
    "a write outside the write path": (
        arch.test_only_the_write_path_writes_locks_or_makes_conditional_puts,
        {"vfs_mcp/ops/files/write.py": "def write(fs, path):\n    fs.pipe_file(path, b'')\n"},
    ),
    "a tool retrying a write": (
        arch.test_no_tool_retries_a_write_itself,
        {"vfs_mcp/ops/files/write.py": "try:\n    pass\nexcept Stale:\n    pass\n"},
    ),
    "two classes of one name": (
        arch.test_one_class_for_each_concept_across_the_packages,
        {"vfs_mcp/ops/files/write.py": "class VfsError:\n    pass\n"},
    ),
    "an ambient variable the note does not name": (
        arch.test_every_ambient_variable_is_one_the_note_says_why_of,
        {"vfs_mcp/ops/files/read.py": "import contextvars\n\nreading = contextvars.ContextVar('reading')\n"},
    ),
    "a row naming an ambient variable that is gone": (
        arch.test_every_ambient_variable_is_one_the_note_says_why_of,
        {"vfs_mcp/jail/resolve.py": "from vfs_mcp.errors import VfsError\n"},
    ),
    "a flat module among the operation families": (
        arch.test_operations_are_family_packages_only,
        {"vfs_mcp/ops/flat.py": ""},
    ),
    "a family the note does not list": (
        arch.test_operations_are_family_packages_only,
        {"vfs_mcp/ops/trees/__init__.py": ""},
    ),
}


def planted(root: Path, files: dict[str, str]) -> None:
    for name, text in {**TREE, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The rules pointed at ``tmp_path`` instead of the repository."""
    monkeypatch.setattr(arch, "ROOT", tmp_path)
    monkeypatch.setattr(arch, "NOTE", tmp_path / "docs" / "architecture.md")
    packages = {"vfs_mcp": tmp_path / "vfs_mcp", "vfs_mcp_backends": tmp_path / "backends" / "vfs_mcp_backends"}
    monkeypatch.setattr(arch, "PACKAGES", packages)
    monkeypatch.setattr(arch, "NAMED_AT_LEAST", 10)  # the small note names 13
    arch.file_of.cache_clear()
    arch.imports_of.cache_clear()
    yield tmp_path
    arch.file_of.cache_clear()
    arch.imports_of.cache_clear()


def test_the_small_tree_keeps_every_rule(tree: Path) -> None:
    planted(tree, {"vfs_mcp/server/big.py": many_lines("Big.\n\nWhy its lines are one job: " + "a reason " * 5)})
    for rule, _ in PLANTS.values():
        rule()


def test_every_rule_of_the_architecture_test_is_planted_here() -> None:
    rules = {name for name in vars(arch) if name.startswith("test_")}
    planted = {rule.__name__ for rule, _ in PLANTS.values()} - {every_named_module_exists.__name__}
    assert rules == planted | {"test_every_module_the_architecture_note_names_exists"}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_each_rule_fails_on_a_planted_violation(tree: Path, plant: str) -> None:
    rule, files = PLANTS[plant]
    planted(tree, files)
    with pytest.raises(AssertionError):
        rule()
