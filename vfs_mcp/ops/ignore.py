"""Ignore files as ripgrep and git apply them: one set of rules per directory.

pathspec's GitIgnoreSpec knows one file's rules; the layering is ours, following the
``ignore`` crate that ripgrep uses (and git, where only ``.gitignore`` files exist):

- ``.rgignore`` beats ``.ignore``, which beats ``.gitignore``, whatever their depth;
- within one kind, the deepest directory with a matching pattern decides, and within
  one file the last matching pattern;
- a path inside an ignored directory stays ignored whatever a deeper negation says;
- a directory is matched by its path without a trailing slash, plus the directory-only
  patterns (``build/``), so ``logs/**`` covers what is inside ``logs``, not ``logs``.

Ignore files are read through the jail, on every backend. Those above the search root
are not read (as ripgrep's ``--no-ignore-parent``).
"""

from __future__ import annotations

from collections.abc import Iterable

from pathspec import GitIgnoreSpec

from vfs_mcp.errors import VfsError
from vfs_mcp.filesystem import Entry, JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.ops.globs import ignore_file, nfc

IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")
"""In order of precedence."""


class IgnoreRules:
    """The ignore decisions for paths under one search root (paths relative to it)."""

    def __init__(self, specs: dict[tuple[str, str], GitIgnoreSpec]) -> None:
        self.specs = specs  # (directory relative to the root, ignore file name) -> its rules

    @classmethod
    def load(cls, vfs: JailedFS, root: Target, entries: Iterable[Entry]) -> IgnoreRules:
        """Read every ignore file among ``entries`` (a listing of ``root``)."""
        specs: dict[tuple[str, str], GitIgnoreSpec] = {}
        for entry in entries:
            if entry.type != "file" or entry.name not in IGNORE_FILES:
                continue
            try:
                data = vfs.cat(entry.target)
            except VfsError:
                continue  # vanished since the listing
            folder = _relative(root, entry.target.parent().rel)
            specs[(nfc(folder), entry.name)] = ignore_file(nfc(data.decode("utf-8", "replace")))
        return cls(specs)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the search root) is ignored, its ancestors considered."""
        parts = nfc(rel).split("/")
        for depth in range(1, len(parts)):
            if self._decide("/".join(parts[:depth]), True):
                return True  # an ignored directory hides everything inside it
        return self._decide("/".join(parts), is_dir)

    def _decide(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        for kind in IGNORE_FILES:
            for depth in range(len(parts) - 1, -1, -1):
                spec = self.specs.get(("/".join(parts[:depth]), kind))
                if spec is None:
                    continue
                decided = _match(spec, "/".join(parts[depth:]), is_dir)
                if decided is not None:
                    return decided
        return False


def _match(spec: GitIgnoreSpec, local: str, is_dir: bool) -> bool | None:
    """The last matching pattern's verdict (True: ignore), or None when none matches."""
    plain = spec.check_file(local)
    if not is_dir:
        return plain.include
    slashed = spec.check_file(local + "/")
    # With a trailing slash pathspec also lets `dir/**` match `dir` itself; git does not.
    # Only directory-only patterns (`build/`) may decide through the slashed form.
    dir_only = slashed.index is not None and str(spec.patterns[slashed.index].pattern).endswith("/")
    if dir_only and (plain.index is None or (slashed.index or 0) > plain.index):
        return slashed.include
    return plain.include


def _relative(root: Target, rel: str) -> str:
    if not root.rel:
        return rel
    return rel[len(root.rel) + 1 :] if rel != root.rel else ""
