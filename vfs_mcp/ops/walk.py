"""Choosing the paths a recursive tool looks at: one listing, then depth, globs and ignore rules.

Glob semantics are gitignore's (``*.py`` matches at any depth, ``src/*.py`` is anchored to
the search root), the same that ripgrep's ``-g`` uses, so both grep engines choose alike.
Exclude globs prune directories too; include globs choose files only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.filesystem import Entry, JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.ops.globs import caller_globs
from vfs_mcp.ops.ignore import IgnoreRules

ALWAYS_SKIPPED = (".git",)


@dataclass
class Selection:
    """The search root and the entries under it, relative paths included."""

    root: Target
    entries: list[Entry]
    skipped: list[Entry] = field(default_factory=list)
    """Folders the walk could not read: their contents are missing (see ``skipped_note``)."""

    def relative(self, entry: Entry) -> str:
        return below(self.root, entry.target.rel)

    def files(self) -> list[Entry]:
        return [e for e in self.entries if e.type == "file"]


def select(
    vfs: JailedFS,
    target: Target,
    *,
    max_depth: int | None = None,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    respect_gitignore: bool = False,
    skip_git_dir: bool = True,
    metadata: bool = True,
) -> Selection:
    """Every entry under ``target`` that the filters keep, in depth-first name order.
    ``metadata=False``: the caller needs names and types only (see ``JailedFS.find``)."""
    if max_depth is not None and max_depth < 1:
        raise InvalidArgument("max_depth must be 1 or more")
    include_spec, exclude_spec = caller_globs(include, "include"), caller_globs(exclude, "exclude")
    everything = vfs.find(target, max_depth, metadata=metadata)
    rules = IgnoreRules.load(vfs, target, everything) if respect_gitignore else None
    if not (skip_git_dir or include_spec or exclude_spec or rules):
        return Selection(target, everything, everything.skipped)  # nothing to filter: no pass over it
    selection = Selection(target, [], everything.skipped)
    filtered = include_spec or exclude_spec or rules
    pruned = None  # the directory being skipped: depth-first order keeps its insides together
    for entry in everything:
        path = entry.target.rel
        if pruned is not None and path.startswith(pruned):
            continue
        is_dir = entry.type == "directory"
        if skip_git_dir and path.rpartition("/")[2] in ALWAYS_SKIPPED:
            if is_dir:
                pruned = path + "/"
            continue
        if not filtered:
            selection.entries.append(entry)
            continue
        rel = selection.relative(entry)
        if (exclude_spec is not None and exclude_spec.match_file(rel + ("/" if is_dir else ""))) or (
            rules is not None and rules.ignored(rel, is_dir)
        ):
            if is_dir:
                pruned = path + "/"
            continue
        if include_spec is not None and not is_dir and not include_spec.match_file(rel):
            continue
        selection.entries.append(entry)
    return selection


def below(root: Target, rel: str) -> str:
    """The mount-relative path ``rel`` as a path relative to ``root`` (which holds it)."""
    return rel[len(root.rel) + 1 :] if root.rel else rel


def skipped_note(paths: Sequence[str]) -> str:
    """The words a result adds when a walk skipped unreadable folders ("" when none was)."""
    if not paths:
        return ""
    shown = ", ".join(paths[:5]) + (", ..." if len(paths) > 5 else "")
    plural = "s" if len(paths) > 1 else ""
    return f"; skipped {len(paths)} unreadable folder{plural} (contents not included): {shown}"
