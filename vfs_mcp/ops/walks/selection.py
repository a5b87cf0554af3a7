"""Choosing the paths a recursive tool looks at: depth, globs, ignore files and ``.git``.

Glob semantics are gitignore's (``*.py`` matches at any depth, ``src/*.py`` is anchored to
the search root), the same that ripgrep's ``-g`` uses, so both grep engines choose alike.
Exclude globs prune directories too; include globs choose files only.

Searches and walks leave out what ``.gitignore``/``.ignore``/``.rgignore`` files ignore and
every ``.git`` folder by default, as ripgrep does (docs/local-folders.md); ``respect_gitignore=False``
shows both. A search rooted inside ``.git`` sees its contents (only ``.git`` folders below
the root are skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import contains, itemgetter

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.jail.entries import Entry, Kind, Listing
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.globs import caller_globs
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.walks.ignore import IGNORE_SUFFIX, LAST_IGNORE_FILE, IgnoreRules

ALWAYS_SKIPPED = (".git",)
IGNORED, EXCLUDED = "ignored", "excluded"
Item = tuple[str, Kind, int]
"""A walked path as (mount-relative path, type, size)."""


class Sieve:
    """What a walk below ``root`` leaves out: ``.git`` folders, what ignore files ignore, and
    what the caller's exclude globs name, each folder with everything in it. Ask about paths
    relative to the root, after ``saw`` has been told of the ignore files among them."""

    def __init__(
        self,
        vfs: JailedFS,
        root: Target,
        *,
        exclude: Sequence[str] | None = None,
        respect_gitignore: bool = True,
        skip_git: bool | None = None,
    ) -> None:
        self.exclude = caller_globs(exclude, "exclude")
        self.rules = IgnoreRules.reading(vfs, root) if respect_gitignore else None
        self.skip_git = respect_gitignore if skip_git is None else skip_git
        self.ignored = 0
        """Entries left out for an ignore file or a ``.git`` folder (not for an exclude glob)."""
        self.tops: list[str] = []
        """Those of them not inside another (folders with a trailing slash)."""
        self._folders: dict[str, str | None] = {"": None}  # why a folder is left out (None: it is not)

    @property
    def active(self) -> bool:
        """Whether the sieve can leave anything out."""
        return self.skip_git or self.exclude is not None or self.rules is not None

    def saw(self, rel: str, kind: str) -> None:
        """Tell the sieve of a listed path (it notes the ignore files)."""
        if self.rules is not None and kind == "file":
            self.rules.saw(rel)

    def leaves_none_of(self, items: list[Item]) -> bool:
        """Whether the sieve keeps every one of ``items``, known without asking about each: no
        exclude glob, no ignore file seen, and no ``.git`` in any path (most walks)."""
        if self.exclude is not None or (self.rules is not None and self.rules.any):
            return False
        # In compiled code (map, not a generator): a tree of 20,000 items asks it once.
        return not self.skip_git or not any(map(contains, map(itemgetter(0), items), repeat(".git")))

    def keeps(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` stays: neither it nor a folder holding it is left out."""
        if ".git" not in rel and self.exclude is None and (self.rules is None or not self.rules.any):
            return True  # nothing else could leave it out (a walk asks this of every entry)
        inherited = self._folder(rel.rpartition("/")[0])
        reason = inherited or self._reason(rel, is_dir)
        if reason is None:
            return True
        if reason == IGNORED:
            self.ignored += 1
            if inherited is None:  # left out itself, not inside a folder that was
                self.tops.append(rel + "/" if is_dir else rel)
        return False

    def _folder(self, folder: str) -> str | None:
        if folder in self._folders:
            return self._folders[folder]
        reason = self._folder(folder.rpartition("/")[0]) or self._reason(folder, True)
        self._folders[folder] = reason
        return reason

    def _reason(self, rel: str, is_dir: bool) -> str | None:
        """Why ``rel`` itself is left out (IGNORED or EXCLUDED), or None."""
        if self.skip_git and rel.rpartition("/")[2] in ALWAYS_SKIPPED:
            return IGNORED
        if self.exclude is not None and self.exclude.match_file(rel + "/" if is_dir else rel):
            return EXCLUDED
        if self.rules is not None and self.rules.decide(rel, is_dir):
            return IGNORED
        return None


def sifted(
    sieve: Sieve, root: Target, pages: Iterable[Listing], wanted: Callable[[str, str], bool] | None = None
) -> Iterator[list[Item]]:
    """The items of a listing that ``sieve`` keeps (of those ``wanted`` accepts by path and
    type, when given: only those count as ignored), a list a page. An item is decided once
    every ignore file that could decide it has been listed: at the end of a one-page walk,
    and on a store that lists in key order (S3) once the listing has passed its folders'
    ignore files, so items can come out of key order (a folder's ``.cache/`` waits for its
    ``.gitignore``)."""
    held: list[Item] = []
    for page in pages:
        if sieve.rules is not None:
            for path, kind, _ in page.items:
                if path.endswith(IGNORE_SUFFIX):  # (a quick test first: a walk holds few ignore files)
                    sieve.saw(below(root, path), kind)
        if page.last or sieve.rules is None:
            ready, held = held + page.items, []
        else:
            until = below(root, page.until)
            ready, held = [], held + page.items
            waiting: list[Item] = []
            for item in held:
                (ready if _decidable(below(root, item[0])) <= until else waiting).append(item)
            held = waiting
        if wanted is not None:
            ready = [item for item in ready if wanted(item[0], item[1])]
        if not sieve.leaves_none_of(ready):
            ready = [item for item in ready if sieve.keeps(below(root, item[0]), item[1] == "directory")]
        yield ready


def _decidable(rel: str) -> str:
    """The key a listing in key order has passed once it has shown every ignore file of the
    folders holding ``rel``."""
    folders = rel.split("/")[:-1]
    return max("/".join([*folders[:depth], LAST_IGNORE_FILE]) for depth in range(len(folders) + 1))


@dataclass
class Selection:
    """The search root and the entries under it, relative paths included."""

    root: Target
    entries: list[Entry]
    skipped: list[Entry] = field(default_factory=list)
    """Folders the walk could not read: their contents are missing (see ``skipped_note``)."""
    ignored: int = 0
    """Entries left out because an ignore file ignores them or they are in ``.git``."""

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
    skip_git_dir: bool | None = None,
    metadata: bool = True,
) -> Selection:
    """Every entry under ``target`` that the filters keep, in depth-first name order.
    ``skip_git_dir`` defaults to ``respect_gitignore``. ``metadata=False``: the caller needs
    names and types only (see ``JailedFS.find``)."""
    if max_depth is not None and max_depth < 1:
        raise InvalidArgument("max_depth must be 1 or more")
    include_spec = caller_globs(include, "include")
    sieve = Sieve(vfs, target, exclude=exclude, respect_gitignore=respect_gitignore, skip_git=skip_git_dir)
    everything = vfs.find(target, max_depth, metadata=metadata)
    if not (sieve.active or include_spec):
        return Selection(target, everything, everything.skipped)  # nothing to filter: no pass over it
    selection = Selection(target, [], everything.skipped)
    if sieve.rules is not None:
        for entry in everything:
            sieve.saw(selection.relative(entry), entry.type)
    for entry in everything:
        rel = selection.relative(entry)
        is_dir = entry.type == "directory"
        if not sieve.keeps(rel, is_dir):
            continue
        if include_spec is not None and not is_dir and not include_spec.match_file(rel):
            continue
        selection.entries.append(entry)
    selection.ignored = sieve.ignored
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


IGNORED_HINT = "respect_gitignore=false shows them"


def ignored_note(sieve: Sieve, what: str | None = None) -> str | None:
    """The note a result adds when ignore files or ``.git`` left entries out: ``what`` (as
    ``"matches"``) counted, or else the paths left out, up to five (None when nothing was)."""
    if not sieve.ignored:
        return None
    if what is not None:
        left = f"{sieve.ignored:,} ignored {what}"
    else:
        left = ", ".join(sieve.tops[:5]) + (f" and {len(sieve.tops) - 5:,} more" if len(sieve.tops) > 5 else "")
    return f"left out as ignored (.gitignore/.ignore, .git): {left}; {IGNORED_HINT}"
