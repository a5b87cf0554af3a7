"""Another revision of vfs-mcp, installed once as a user installs it, for a benchmark to start
beside the working tree: ``git archive REV`` into ``~/.cache/vfs-mcp-bench/<commit>/src``
and a venv of its own beside it (``venv``), into which pip installs that source (not
editable: pip writes the bytecode, as for a user). A folder whose install did not finish is
made again. ``VFS_BENCH_CACHE`` moves the cache.
"""

from __future__ import annotations

import compileall
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
    install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    installed = subprocess.run([*install, str(source / "backends"), str(source)], capture_output=True, text=True)
    if installed.returncode != 0:
        raise RuntimeError(f"pip could not install {rev}:\n{installed.stdout}{installed.stderr}")
    (folder / INSTALLED).touch()
    return python


def compile_working_tree() -> None:
    """The working tree's bytecode written, as an install writes it (pip compiles what it
    installs; an editable install under ``PYTHONDONTWRITEBYTECODE`` never does): its servers
    then load our modules as a user's would, instead of compiling them at each start."""
    import vfs_mcp
    import vfs_mcp_backends

    for package in (vfs_mcp, vfs_mcp_backends):
        assert package.__file__ is not None
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)
