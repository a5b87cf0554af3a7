"""Builds of vfs-mcp for a benchmark to start side by side, each in a venv of its own that
holds what a user's install holds (not the test tools of ``.venv``: the distributions
installed change what a start costs, fsspec reading every one's entry points).

- another revision (``built``): ``git archive REV`` into ``~/.cache/vfs-mcp-bench/<commit>/src``
  and ``venv`` beside it, into which pip installs that source (not editable: pip writes the
  bytecode, as for a user);
- the working tree (``working_tree``): a venv with its dependencies and the tree installed
  editable, made again when ``pyproject.toml`` changes; ``compile_working_tree`` writes its
  bytecode.

A folder whose install did not finish is made again. ``VFS_BENCH_CACHE`` moves the cache.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("VFS_BENCH_CACHE") or Path.home() / ".cache" / "vfs-mcp-bench")
INSTALLED = ".installed"


def commit_of(rev: str, repo: Path) -> str:
    """The full commit id ``rev`` names in ``repo``; ValueError when it names none."""
    found = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise ValueError(f"{rev!r} is not a commit of {repo}")
    return found.stdout.strip()


def built(rev: str, repo: Path) -> Path:
    """The interpreter of ``rev``'s own install (made the first time; a few minutes at most),
    whose ``-m vfs_mcp`` serves that revision from any folder but a checkout's."""
    commit = commit_of(rev, repo)
    folder = CACHE / commit
    python = folder / "venv" / "bin" / "python"
    if (folder / INSTALLED).exists():
        return python
    shutil.rmtree(folder, ignore_errors=True)
    source = folder / "src"
    source.mkdir(parents=True)
    print(f"building {rev} ({commit[:12]}) in {folder} ...", file=sys.stderr, flush=True)
    archive = subprocess.Popen(["git", "-C", str(repo), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(source)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {commit} failed")
    base = getattr(sys, "_base_executable", sys.executable)  # the interpreter this venv was made from
    subprocess.run([base, "-m", "venv", str(folder / "venv")], check=True)
    _install(python, rev, str(source / "backends"), str(source))
    (folder / INSTALLED).touch()
    return python


def working_tree(repo: Path) -> Path:
    """The interpreter of a venv that holds the working tree ``repo`` installed editable and
    its dependencies, nothing else (made the first time, and again when a ``pyproject.toml``
    changes)."""
    key = hashlib.sha256(str(repo.resolve()).encode())
    for name in ("pyproject.toml", "backends/pyproject.toml"):
        key.update((repo / name).read_bytes())
    folder = CACHE / f"tree-{key.hexdigest()[:16]}"
    python = folder / "venv" / "bin" / "python"
    if (folder / INSTALLED).exists():
        return python
    shutil.rmtree(folder, ignore_errors=True)
    print(f"installing the working tree in {folder} ...", file=sys.stderr, flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(folder / "venv")], check=True)
    _install(python, "the working tree", "-e", str(repo / "backends"), "-e", str(repo))
    (folder / INSTALLED).touch()
    return python


def _install(python: Path, what: str, *targets: str) -> None:
    install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *targets]
    installed = subprocess.run(install, capture_output=True, text=True)
    if installed.returncode != 0:
        raise RuntimeError(f"pip could not install {what}:\n{installed.stdout}{installed.stderr}")


def compile_working_tree() -> None:
    """The working tree's bytecode written, as an install writes it (pip compiles what it
    installs; an editable install under ``PYTHONDONTWRITEBYTECODE`` never does): its servers
    then load our modules as a user's would, instead of compiling them at each start."""
    import vfs_mcp
    import vfs_mcp_backends

    for package in (vfs_mcp, vfs_mcp_backends):
        assert package.__file__ is not None
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)
