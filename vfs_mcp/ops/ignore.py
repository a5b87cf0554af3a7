"""Gitignore rules as git applies them: a ``.gitignore``/``.ignore`` in every directory.

pathspec's GitIgnoreSpec knows one file's rules; git's layering is ours: the rules of the
deepest directory that has a matching pattern decide, ``.ignore`` overrides ``.gitignore``
in the same directory, and a path inside an ignored directory stays ignored whatever a
deeper negation says. Ignore files are read through the jail, on every backend.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from pathspec import GitIgnoreSpec

from vfs_mcp.errors import VfsError
from vfs_mcp.filesystem import Entry, JailedFS
from vfs_mcp.jail import Target

IGNORE_FILES = (".gitignore", ".ignore")


class IgnoreRules:
    """The ignore decisions for paths under one search root (paths relative to it)."""

    def __init__(self, specs: dict[str, GitIgnoreSpec]) -> None:
        self.specs = specs  # directory (relative, "" for the root) -> its rules

    @classmethod
    def load(cls, vfs: JailedFS, root: Target, entries: Iterable[Entry]) -> IgnoreRules:
        """Read every ignore file among ``entries`` (a listing of ``root``)."""
        texts: dict[str, list[str]] = {}
        candidates = [e for e in entries if e.type == "file" and e.name in IGNORE_FILES]
        # .gitignore before .ignore in each folder, so .ignore's rules come later and win.
        for entry in sorted(candidates, key=lambda e: (e.target.parent().rel, IGNORE_FILES.index(e.name))):
            try:
                data = vfs.cat(entry.target)
            except VfsError:
                continue  # vanished since the listing
            folder = _relative(root, posixpath.dirname(entry.target.rel))
            texts.setdefault(folder, []).extend(data.decode("utf-8", "replace").splitlines())
        return cls({folder: GitIgnoreSpec.from_lines(lines) for folder, lines in texts.items()})

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the search root) is ignored, its ancestors considered."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if self._decide("/".join(parts[:depth]), True):
                return True  # an ignored directory hides everything inside it
        return self._decide(rel, is_dir)

    def _decide(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        for depth in range(len(parts) - 1, -1, -1):
            folder = "/".join(parts[:depth])
            spec = self.specs.get(folder)
            if spec is None:
                continue
            local = "/".join(parts[depth:]) + ("/" if is_dir else "")
            include = spec.check_file(local).include
            if include is not None:
                return include
        return False


def _relative(root: Target, rel: str) -> str:
    if not root.rel:
        return rel
    return rel[len(root.rel) + 1 :] if rel != root.rel else ""
