"""Ignore files as ripgrep and git apply them: one set of rules per directory.

pathspec's GitIgnoreSpec knows one file's rules; the layering is ours, following the
``ignore`` crate that ripgrep uses (and git, where only ``.gitignore`` files exist):

- ``.rgignore`` beats ``.ignore``, which beats ``.gitignore``, whatever their depth;
- within one kind, the deepest directory with a matching pattern decides, and within
  one file the last matching pattern;
- a path inside an ignored directory stays ignored whatever a deeper negation says;
- a directory is matched by its path without a trailing slash, plus the directory-only
  patterns (``build/``), so ``logs/**`` covers what is inside ``logs``, not ``logs``.

Ignore files are read through the jail, on every backend, each the first time a decision
needs it: one inside an ignored folder (``.venv/.gitignore``) is never read. Those above
the search root are not read (as ripgrep's ``--no-ignore-parent``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from vfs_mcp.errors import VfsError
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.globs import ignore_file, nfc
from vfs_mcp.jail.resolve import Target

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec  # made by jail.globs.gitignore, which imports it

IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")
"""In order of precedence."""
IGNORE_SUFFIX = "ignore"
"""How every ignore file's name ends."""
LAST_IGNORE_FILE = max(IGNORE_FILES)
"""The ignore file name that sorts last: a listing in name order that has passed it in a
folder has shown every ignore file of that folder."""


class IgnoreRules:
    """The ignore decisions for paths under one search root (paths relative to it), from the
    ignore files a walk has shown (``saw``)."""

    def __init__(self, read: Callable[[str], bytes | None]) -> None:
        self._read = read  # an ignore file's bytes by its path below the root (None: unreadable)
        self._unread: dict[str, str] = {}
        """Ignore files seen and not read yet: their path in composed form (NFC, as patterns and
        names are matched) -> as the store spells it."""
        self.specs: dict[tuple[str, str], GitIgnoreSpec | None] = {}
        """(directory relative to the root, ignore file name) -> its rules, once read."""

    @classmethod
    def reading(cls, vfs: JailedFS, root: Target) -> IgnoreRules:
        """Rules whose ignore files are read through ``vfs`` below ``root``."""

        def read(rel: str) -> bytes | None:
            try:
                return vfs.cat(Target(root.mount, f"{root.rel}/{rel}" if root.rel else rel))
            except VfsError:
                return None  # vanished since the listing, or unreadable: no rules

        return cls(read)

    @classmethod
    def load(cls, vfs: JailedFS, root: Target, entries: Iterable[Entry]) -> IgnoreRules:
        """The rules of every ignore file among ``entries`` (a listing of ``root``)."""
        rules = cls.reading(vfs, root)
        for entry in entries:
            if entry.type == "file":
                rules.saw(_relative(root, entry.target.rel))
        return rules

    @property
    def any(self) -> bool:
        """Whether any ignore file has been seen."""
        return bool(self._unread or self.specs)

    def saw(self, rel: str) -> None:
        """Note the file ``rel`` (below the root) if it is an ignore file; it is read when a
        decision first needs it."""
        if rel.rpartition("/")[2] in IGNORE_FILES:
            self._unread[nfc(rel)] = rel

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` (relative to the search root) is ignored, its ancestors considered."""
        parts = nfc(rel).split("/")
        for depth in range(1, len(parts)):
            if self.decide("/".join(parts[:depth]), True):
                return True  # an ignored directory hides everything inside it
        return self.decide("/".join(parts), is_dir)

    def decide(self, rel: str, is_dir: bool) -> bool:
        """Whether the rules ignore ``rel`` itself (its folders are the caller's to ask about)."""
        if not self.any:
            return False
        parts = nfc(rel).split("/")
        for kind in IGNORE_FILES:
            for depth in range(len(parts) - 1, -1, -1):
                spec = self._spec("/".join(parts[:depth]), kind)
                if spec is None:
                    continue
                decided = _match(spec, "/".join(parts[depth:]), is_dir)
                if decided is not None:
                    return decided
        return False

    def _spec(self, folder: str, kind: str) -> GitIgnoreSpec | None:
        key = (folder, kind)
        if key in self.specs:
            return self.specs[key]
        path = f"{folder}/{kind}" if folder else kind
        spelt = self._unread.pop(path, None)
        if spelt is None:
            return None
        data = self._read(spelt)
        spec = ignore_file(nfc(data.decode("utf-8", "replace"))) if data is not None else None
        self.specs[key] = spec
        return spec


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
