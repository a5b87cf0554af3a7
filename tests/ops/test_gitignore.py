"""Ignore rules decide like git (SPEC §4 respect_gitignore, §5 fs profile; TECH-NOTES pathspec).

The oracle is git itself: a real repository is built from ``TREE`` and ``git ls-files
--others --ignored --exclude-standard`` / ``git check-ignore`` say which paths are ignored.
``select(..., respect_gitignore=True)`` and ``IgnoreRules.ignored`` must agree for every
file, on every backend (the same tree copied to memory and S3). ``.ignore`` files are not
git's: they are checked against ripgrep (whose semantics they come from, and which the
grep engine on local mounts uses) and against explicit expectations.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Sandbox
from emulators import ON_CI, unavailable

from vfs_mcp.ops.search.grep import GrepQuery, grep_files
from vfs_mcp.ops.search.ripgrep import rg_binary
from vfs_mcp.ops.walks.ignore import IgnoreRules
from vfs_mcp.ops.walks.selection import select

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None and not ON_CI, reason="git is not installed")

ROOT_GITIGNORE = "\n".join(
    [
        "# comments and blank lines are not patterns",
        "",
        "*.log",
        "!keep.log",
        "/build",
        "tmp/",
        "logs/**",
        "!logs/keep.txt",
        "docs/**/*.pdf",
        "secret/",
        "!secret/allowed.txt",
        "foo/bar.txt",
        "**/node_modules",
        "\\#hash.txt",
        "*.o",
        "!important.o",
        "[Bb]ackup*",
        "file?.dat",
        "a*/z.txt",
        "trail.txt   ",  # unescaped trailing spaces are dropped
        "",
    ]
)

TREE: dict[str, str] = {
    ".gitignore": ROOT_GITIGNORE,
    "app.log": "x",
    "keep.log": "x",
    "readme.md": "x",
    # /build is anchored to the root; sub/build is not matched
    "build/out.bin": "x",
    "sub/build/out.bin": "x",
    # tmp/ is directory-only, at any depth; a *file* named tmp stays
    "tmp/a.txt": "x",
    "sub/tmp/b.txt": "x",
    "other/tmp": "x",
    # logs/** ignores everything inside logs (not logs itself): keep.txt comes back,
    # but logs/sub/ is ignored as a directory, so nothing in it can come back
    "logs/x.txt": "x",
    "logs/keep.txt": "x",
    "logs/sub/keep.txt": "x",
    "logs/sub/y.txt": "x",
    # ** in the middle
    "docs/a.pdf": "x",
    "docs/x/y/b.pdf": "x",
    "docs/readme.md": "x",
    # an ignored directory: a negated file inside stays ignored
    "secret/allowed.txt": "x",
    "secret/other.txt": "x",
    # a pattern with a slash is anchored to its .gitignore's folder
    "foo/bar.txt": "x",
    "sub/foo/bar.txt": "x",
    "node_modules/a.js": "x",
    "deep/er/node_modules/b.js": "x",
    "#hash.txt": "x",
    "x.o": "x",
    "important.o": "x",
    "Backup1.txt": "x",
    "backup/inside.txt": "x",
    "file1.dat": "x",
    "file12.dat": "x",
    "abc/z.txt": "x",
    "abc/def/z.txt": "x",
    "trail.txt": "x",
    # a nested .gitignore: deeper rules win over the root's
    "sub/.gitignore": "!app.log\n*.txt\n!keep.txt\n/local.md\nnested/\n",
    "sub/app.log": "x",
    "sub/other.log": "x",
    "sub/a.txt": "x",
    "sub/keep.txt": "x",
    "sub/local.md": "x",
    "sub/deeper/local.md": "x",
    "sub/nested/n.txt": "x",
    # a .gitignore inside an ignored folder is never read
    "sub/nested/.gitignore": "!n.txt\n!*.md\n",
    "sub/nested/m.md": "x",
    # re-included below a folder whose parent ignores *.txt
    "sub/deeper/.gitignore": "!*.txt\n",
    "sub/deeper/d.txt": "x",
    "sub/deeper/keep.log": "x",
    "sub/deeper/more.log": "x",
}

# Directories and what git says about them (checked against git too).
IGNORED_DIRS = [
    "build",
    "tmp",
    "sub/tmp",
    "logs/sub",
    "secret",
    "node_modules",
    "deep/er/node_modules",
    "sub/nested",
    "backup",  # "[Bb]ackup*" has no slash: it matches directories too
]
KEPT_DIRS = ["sub", "sub/build", "logs", "docs", "docs/x/y", "other", "foo", "abc", "sub/deeper", "deep/er"]


def write_tree(root: Path, tree: dict[str, str]) -> None:
    for rel, text in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    assert GIT is not None
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    done = subprocess.run(
        [GIT, "-c", "core.excludesFile=/dev/null", *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def git_ignored_files(repo: Path) -> set[str]:
    out = git(repo, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
    return {p for p in out.split("\0") if p}


def git_check_ignore(repo: Path, paths: list[str]) -> set[str]:
    out = git(repo, "check-ignore", "--no-index", "-z", "--stdin", stdin="\0".join(paths) + "\0")
    return {p for p in out.split("\0") if p}


def all_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if GIT is None:
        unavailable("git is not installed")
    repo = tmp_path_factory.mktemp("gitignore") / "repo"
    repo.mkdir()
    write_tree(repo, TREE)
    git(repo, "init", "-q", ".")
    return repo


@pytest.fixture(scope="module")
def git_kept(git_repo: Path) -> set[str]:
    return all_files(git_repo) - git_ignored_files(git_repo)


def difference(got: set[str], expected: set[str]) -> dict[str, list[str]]:
    """What differs, named: {} when equal (a readable assertion on failure)."""
    out = {"kept but should be ignored": sorted(got - expected), "ignored but should be kept": sorted(expected - got)}
    return {k: v for k, v in out.items() if v}


def kept_files(sandbox: Sandbox, rel: str = "") -> set[str]:
    vfs = sandbox.vfs()
    root = vfs.resolve(sandbox.path(rel))
    selection = select(vfs, root, respect_gitignore=True)
    return {selection.relative(e) for e in selection.files()}


@needs_git
def test_the_tree_exercises_what_it_claims(git_repo: Path, git_kept: set[str]) -> None:
    """Sanity of the oracle: git really ignores and keeps the interesting paths."""
    ignored = all_files(git_repo) - git_kept
    for rel in ("app.log", "build/out.bin", "logs/x.txt", "logs/sub/keep.txt", "secret/allowed.txt", "sub/a.txt"):
        assert rel in ignored, rel
    for rel in ("keep.log", "sub/build/out.bin", "logs/keep.txt", "other/tmp", "sub/app.log", "sub/deeper/d.txt"):
        assert rel in git_kept, rel
    assert "sub/nested/m.md" in ignored and "trail.txt" in ignored and "#hash.txt" in ignored


@needs_git
def test_select_keeps_what_git_keeps_in_a_real_repo(local_sandbox: Sandbox, git_kept: set[str]) -> None:
    root = Path(local_sandbox.mount.fs_path(""))
    write_tree(root, TREE)
    git(root, "init", "-q", ".")
    assert (root / ".git").is_dir()
    kept = kept_files(local_sandbox)
    assert not any(p == ".git" or p.startswith(".git/") for p in kept)
    assert difference(kept, git_kept) == {}
    assert all_files(root) - git_ignored_files(root) == git_kept


@needs_git
def test_ignore_rules_decide_each_path_like_git_check_ignore(local_sandbox: Sandbox, git_repo: Path) -> None:
    root = Path(local_sandbox.mount.fs_path(""))
    write_tree(root, TREE)
    vfs = local_sandbox.vfs()
    target = vfs.resolve(local_sandbox.path(""))
    rules = IgnoreRules.load(vfs, target, vfs.find(target))
    files = sorted(all_files(git_repo))
    by_git = git_check_ignore(git_repo, files + IGNORED_DIRS + KEPT_DIRS)
    wrong = [p for p in files if rules.ignored(p, False) != (p in by_git)]
    assert wrong == [], "IgnoreRules disagrees with git check-ignore on these files"
    assert sorted(d for d in IGNORED_DIRS + KEPT_DIRS if d in by_git) == sorted(IGNORED_DIRS)
    assert [d for d in IGNORED_DIRS if not rules.ignored(d, True)] == []
    assert [d for d in KEPT_DIRS if rules.ignored(d, True)] == []
    # a file named like a directory-only pattern is not a directory
    assert rules.ignored("other/tmp", False) is False
    assert rules.ignored("other/tmp", True) is True


@needs_git
def test_same_selection_on_every_backend(sandbox: Sandbox, git_kept: set[str]) -> None:
    for rel, text in TREE.items():
        sandbox.put(rel, text)
    assert difference(kept_files(sandbox), git_kept) == {}


@needs_git
def test_selection_under_a_subfolder_uses_the_nested_rules(sandbox: Sandbox, git_kept: set[str]) -> None:
    """Searching sub/ applies sub/.gitignore and deeper ones (and keeps paths relative to sub/)."""
    for rel, text in TREE.items():
        sandbox.put(rel, text)
    sub = kept_files(sandbox, "sub")
    # sub's own rules agree with git for every path the root's rules leave alone
    from_git = {p.removeprefix("sub/") for p in git_kept if p.startswith("sub/")}
    assert from_git <= sub
    assert {"a.txt", "local.md", "nested/n.txt", "nested/m.md", "tmp/b.txt"}.isdisjoint(sub)


@needs_git
def test_grep_engines_honour_the_same_gitignore(local_sandbox: Sandbox, git_kept: set[str]) -> None:
    root = Path(local_sandbox.mount.fs_path(""))
    write_tree(root, {rel: text if rel.endswith("ignore") else f"needle in {rel}\n" for rel, text in TREE.items()})
    git(root, "init", "-q", ".")
    vfs = local_sandbox.vfs()
    prefix = local_sandbox.path("").rstrip("/") + "/"
    for engine in ("ripgrep", "python"):
        query = GrepQuery(pattern="needle", respect_gitignore=True, count_only=True, max_results=10000)
        result = grep_files(vfs, local_sandbox.path(""), query, engine=engine)
        assert result.engine == engine
        searched = {c.path.removeprefix(prefix) for c in result.counts or []}
        expected = {p for p in git_kept if not p.endswith("ignore")}
        assert (engine, difference(searched, expected)) == (engine, {})


# -- .ignore files (ripgrep's, not git's) ---------------------------------------------------

IGNORE_TREE: dict[str, str] = {
    ".gitignore": "*.dat\nbuild/\n",
    # .ignore beats .gitignore in the same folder, both ways
    ".ignore": "!special.dat\nscratch/\n*.bak\n",
    "a.dat": "x",
    "special.dat": "x",
    "scratch/s.txt": "x",
    "notes.bak": "x",
    "build/b.txt": "x",
    "keep.txt": "x",
    "sub/.gitignore": "!*.bak\n",
    "sub/.ignore": "*.md\n",
    "sub/r.md": "x",
    "sub/k.txt": "x",
    "sub/old.bak": "x",
    # a .ignore in a deeper folder re-includes what the root .gitignore ignores
    "deep/.ignore": "!*.dat\n",
    "deep/d.dat": "x",
    # an ignored folder (.ignore) whose files a deeper .gitignore negates stays ignored
    "scratch/.gitignore": "!s.txt\n",
}

IGNORE_KEPT = {
    ".gitignore",
    ".ignore",
    "special.dat",
    "keep.txt",
    "sub/.gitignore",
    "sub/.ignore",
    "sub/k.txt",
    "deep/.ignore",
    "deep/d.dat",
}


def test_dot_ignore_files_on_every_backend(sandbox: Sandbox) -> None:
    for rel, text in IGNORE_TREE.items():
        sandbox.put(rel, text)
    kept = kept_files(sandbox)
    # sub/old.bak: the root .ignore's *.bak vs sub/.gitignore's !*.bak — see the ripgrep test below
    assert difference(kept - {"sub/old.bak"}, IGNORE_KEPT) == {}


def rg_files(root: Path) -> set[str]:
    rg = rg_binary()
    assert rg is not None
    cmd = [rg, "--files", "--no-config", "--hidden", "--no-require-git", "--no-ignore-parent"]
    cmd += ["--no-ignore-global", "--no-ignore-exclude", "-g", "!.git"]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    return {line.removeprefix("./") for line in done.stdout.splitlines()}


def test_dot_ignore_selection_matches_ripgrep(local_sandbox: Sandbox) -> None:
    """The grep engine on local mounts is ripgrep, so select's .ignore semantics must be ripgrep's."""
    root = Path(local_sandbox.mount.fs_path(""))
    write_tree(root, IGNORE_TREE)
    assert rg_files(root) >= IGNORE_KEPT
    assert difference(kept_files(local_sandbox), rg_files(root)) == {}


def test_dot_ignore_grep_engines_agree(local_sandbox: Sandbox) -> None:
    root = Path(local_sandbox.mount.fs_path(""))
    write_tree(root, {rel: text if rel.endswith("ignore") else f"needle {rel}\n" for rel, text in IGNORE_TREE.items()})
    vfs = local_sandbox.vfs()
    results = []
    for engine in ("ripgrep", "python"):
        query = GrepQuery(pattern="needle", respect_gitignore=True, count_only=True, max_results=10000)
        result = grep_files(vfs, local_sandbox.path(""), query, engine=engine)
        results.append([c.model_dump() for c in result.counts or []])
    assert results[0] == results[1]


def test_gitignore_is_off_by_default(sandbox: Sandbox) -> None:
    for rel, text in IGNORE_TREE.items():
        sandbox.put(rel, text)
    vfs = sandbox.vfs()
    selection = select(vfs, vfs.resolve(sandbox.path("")))
    assert {selection.relative(e) for e in selection.files()} == set(IGNORE_TREE)
