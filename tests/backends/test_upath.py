"""universal-pathlib's own ``BaseTests`` on the local store (``UPath("vfslocal:///...")``).

The suite ships only in universal-pathlib's sdist (``upath/tests/cases.py``), so it is fetched
once from PyPI with pip, for the installed version, into the test cache
(``~/.cache/vfs-mcp-tests/upath``; ``VFS_MCP_TEST_CACHE`` moves it). Where it cannot be had,
one test skips saying why. The cases that fail are the store's deliberate differences
(docs/architecture.md), expected to fail strictly so a change shows up.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
import tarfile
import types
from pathlib import Path
from typing import Any

import pytest
from emulators import _locked, cache_dir, unavailable

INSTALL_TIMEOUT = 300


def _fetch_cases() -> tuple[Path | None, str]:
    """The sdist's ``upath/tests`` folder (fetched once), or None and why it cannot be had."""
    try:
        version = importlib.metadata.version("universal-pathlib")
    except importlib.metadata.PackageNotFoundError:
        return None, "universal-pathlib is not installed (it is in the test extra)"
    folder = cache_dir() / "upath"
    tests = folder / f"universal_pathlib-{version}" / "upath" / "tests"
    with _locked(folder / ".fetch.lock"):
        if (tests / "cases.py").exists():
            return tests, ""
        spec = f"universal-pathlib=={version}"
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            spec,
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
            str(folder),
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return None, f"pip download {spec} did not finish in {INSTALL_TIMEOUT} s"
        archive = folder / f"universal_pathlib-{version}.tar.gz"
        if done.returncode != 0 or not archive.exists():
            return None, f"pip download {spec} (the sdist holding upath/tests) failed: {done.stderr.strip()[-300:]}"
        with tarfile.open(archive) as sdist:
            sdist.extractall(
                folder, members=[m for m in sdist.getmembers() if "/upath/tests/" in m.name], filter="data"
            )
    return tests, ""


def _import_cases(tests: Path) -> Any:
    """``upath.tests.cases`` from the fetched folder (the installed wheel has no tests package)."""
    package = types.ModuleType("upath.tests")
    package.__path__ = [str(tests)]
    sys.modules.setdefault("upath.tests", package)
    return importlib.import_module("upath.tests.cases")


CASES_DIR, UNAVAILABLE = _fetch_cases()

if CASES_DIR is None:

    def test_universal_pathlib_base_tests() -> None:
        unavailable(UNAVAILABLE)

else:
    from upath import UPath

    cases = _import_cases(CASES_DIR)

    OUTSIDE = "deliberate: a path outside the store's root (here the parent of the root) is refused"

    @pytest.fixture
    def local_testdir(tmp_path: Path) -> str:
        """The tree universal-pathlib's cases expect under the path they test."""
        (tmp_path / "folder1").mkdir()
        for name in ("file1.txt", "file2.txt"):
            (tmp_path / "folder1" / name).write_text(name)
        (tmp_path / "file1.txt").write_text("hello world")
        (tmp_path / "file2.txt").write_bytes(b"hello world")
        return str(tmp_path)

    @pytest.fixture
    def pathlib_base(local_testdir: str) -> Path:
        return Path(local_testdir)

    @pytest.fixture
    def clear_fsspec_memory_cache() -> Any:
        from fsspec.implementations.memory import MemoryFileSystem

        store, pseudo_dirs = dict(MemoryFileSystem.store), list(MemoryFileSystem.pseudo_dirs)
        yield
        MemoryFileSystem.store.clear()
        MemoryFileSystem.store.update(store)
        MemoryFileSystem.pseudo_dirs[:] = pseudo_dirs

    class TestLocalStoreUPath(cases.BaseTests):  # type: ignore[misc]
        """The local store rooted at the test folder, through ``UPath("vfslocal://...")``."""

        @pytest.fixture(autouse=True)
        def path(self, local_testdir: str) -> None:
            self.path = UPath(f"vfslocal://{local_testdir}", root=local_testdir)

        def test_is_correct_class(self) -> None:
            assert self.path.protocol == "vfslocal"
            assert type(self.path.fs).__name__ == "DescriptorFileSystem"

        @pytest.mark.xfail(reason=OUTSIDE, raises=NotADirectoryError, strict=True)
        def test_iterdir_parent_iteration(self) -> None:
            super().test_iterdir_parent_iteration()
