"""One word per concept: module names say which module they are, and the words the glossary
of docs/architecture.md retired stay retired outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTE = ROOT / "docs" / "architecture.md"

ADAPTERS = ("vfs_mcp/profiles/", "vfs_mcp/cli/")
"""Thin adapters, each named after what it fronts: ``profiles/default/analytics.py`` is the
tools of ``ops/trees/analytics.py``, ``cli/review.py`` the command of ``vfs_mcp/review/``."""

RETIRED = {
    r"\bseed_name\b|\bSEED_[A-Z]+\b|\b[Ss]eeds?'|\b[Ss]eed \d{3}\b|\bthe seeds?\b": (
        "the server a profile reproduces is its original (``Tool.original_name``); "
        "'seed' is the harness's files put in a mount (and ``--tool-names seed``)"
    ),
    r"(?<![-\w])compat\b|\bdialects[./]reference\b|\bcli[./]reference\b": (
        "the official profile is 'official' (``ops/dialects/official.py``, ``profiles/official/render.py``)"
    ),
    r"\bchanges\.run\b|\b[Pp]lan(?:ned)?\.ops\b|\bOp\b|\w\.caches\b|\bSTEPS\b|\bnext_step\b|\bpipeline step\b": (
        "a change is made by ``changes.make`` from a plan's steps (``Plan.steps``); what a server keeps is in "
        "typed slots (``JailedFS.kept``); a request runs through the pipeline's stages (``calls.STAGES``)"
    ),
    r"\bide_buffers\b": "buffers are an operation family of their own (``vfs_mcp/ops/buffers/``)",
}


PACKAGES = (ROOT / "vfs_mcp", ROOT / "backends" / "vfs_mcp_backends")
"""The server and its stores: one ``locks.py`` in each would read as one module."""


def modules() -> list[Path]:
    return sorted(
        p for package in PACKAGES for p in package.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )


def shared_basenames(paths: list[Path]) -> dict[str, list[str]]:
    """Basenames that more than one of ``paths`` has, adapters aside when they front a module
    of their name in a lower layer of the server (a store is fronted by no adapter)."""
    where: dict[str, list[str]] = {}
    for path in paths:
        where.setdefault(path.name, []).append(path.relative_to(ROOT).as_posix())
    twice = {}
    for name, places in where.items():
        kept = [p for p in places if not p.startswith(ADAPTERS)]
        fronted = any(p.startswith("vfs_mcp/") for p in kept) or (ROOT / "vfs_mcp" / name.removesuffix(".py")).is_dir()
        if len(kept) > 1 or (len(places) > 1 and not fronted):
            twice[name] = places
    return twice


def test_no_two_modules_of_the_packages_share_a_name() -> None:
    """Two ``roots.py`` (the client's roots, and the call stage that asks for them) read as one
    module in a traceback, a call graph or a search, in one package or across the two; an
    adapter may share the name it fronts."""
    twice = shared_basenames(modules())
    assert not twice, f"give each module a name of its own: {twice}"


def test_two_modules_of_one_name_are_found() -> None:
    """The rule above fails on a planted pair, and lets an adapter share its operation's name."""
    planted = [ROOT / "vfs_mcp/server/roots.py", ROOT / "vfs_mcp/server/calls/roots.py"]
    assert shared_basenames(planted) == {"roots.py": ["vfs_mcp/server/roots.py", "vfs_mcp/server/calls/roots.py"]}
    across = [ROOT / "vfs_mcp/changes/locks.py", ROOT / "backends/vfs_mcp_backends/locks.py"]
    assert shared_basenames(across) == {"locks.py": ["vfs_mcp/changes/locks.py", "backends/vfs_mcp_backends/locks.py"]}
    beside_a_store = [ROOT / "vfs_mcp/cli/options.py", ROOT / "backends/vfs_mcp_backends/options.py"]
    assert shared_basenames(beside_a_store) == {"options.py": [p.relative_to(ROOT).as_posix() for p in beside_a_store]}
    assert {path.parent.name for path in modules()} >= {"vfs_mcp_backends", "changes"}
    fronting = [ROOT / "vfs_mcp/ops/trees/analytics.py", ROOT / "vfs_mcp/profiles/default/analytics.py"]
    assert shared_basenames(fronting) == {}


def retired_in(text: str) -> list[str]:
    return [match.group(0) for pattern in RETIRED for match in re.finditer(pattern, text)]


def split_note() -> tuple[str, str]:
    """The note's glossary section, and the rest of it."""
    text = NOTE.read_text()
    start = text.index("## Glossary\n")
    end = text.index("\n## ", start + 1)
    return text[start:end], text[:start] + text[end:]


def written() -> list[Path]:
    """The code of both packages, the tests, the README and the docs (the note and this file
    aside: they name the retired words)."""
    code = [p for folder in (*PACKAGES, ROOT / "tests") for p in sorted(folder.rglob("*.py"))]
    docs = [ROOT / "README.md", ROOT / "backends" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in code + docs if p not in (NOTE, Path(__file__).resolve())]


def test_retired_words_stay_out_of_the_code_the_tests_the_docs_and_the_note() -> None:
    """The glossary names each retired word once, with the word that replaced it."""
    found = {path.relative_to(ROOT).as_posix(): retired_in(path.read_text()) for path in written()}
    found["docs/architecture.md"] = retired_in(split_note()[1])
    found = {path: words for path, words in found.items() if words}
    assert not found, f"retired words (the glossary says what replaced them): {found}"


def test_each_retired_word_is_caught_and_the_harness_seed_is_not() -> None:
    caught = (
        "Tool(seed_name='fs.x'); SEED_EXACT; the seed's text; seed 004; as compat; ops.dialects.reference; "
        "changes.run(vfs, plan); plan.ops; vfs.caches; calls.STEPS; next_step; the pipeline step; list[Op]; "
        "dialects/ide_buffers.py"
    )
    assert len(retired_in(caught)) == 14
    assert (
        retired_in("fs.seed(files): a seeded mount; --tool-names seed; Fault.flaky(seed=7); C10-forward-compat") == []
    )
    scanned = {p.relative_to(ROOT).as_posix() for p in written()}
    assert scanned >= {
        "README.md",
        "docs/xml-interface.md",
        "tests/ops/test_edit.py",
        "backends/vfs_mcp_backends/s3.py",
    }


def test_the_glossary_names_every_retired_word() -> None:
    glossary = split_note()[0]
    for pattern, replaced_by in RETIRED.items():
        assert re.search(pattern, glossary), f"the glossary names no word of {pattern} ({replaced_by})"
