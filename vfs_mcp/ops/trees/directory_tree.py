"""Name search and directory trees: listings that stop at their caps."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument, VfsError
from vfs_mcp.jail.entries import Listing
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.globs import caller_globs, minimatch, name_glob
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.trees.breadth_first import TreeListing, breadth_first_cut, tree_listing
from vfs_mcp.ops.walks.ignore import IGNORE_FILES
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import Item, Sieve, below, ignored_note, select, sifted, skipped_note

DEFAULT_TREE_ENTRIES = 1000
MAX_TREE_DEPTH = 100
MAX_TREE_ENTRIES = 100_000
MAX_SEARCH_RESULTS = 10_000
"""The most a tree or a name search walks and shows: more asked for is used as this, with a note."""
GLOB_CHARS = set("*?[")
PROGRESS_EVERY = 100
"""Entries between two progress notifications of directory_tree."""


def name_matcher(pattern: str) -> Callable[[str, str], bool]:
    """Case-insensitive glob on names; a pattern without glob characters matches as a substring.

    A pattern with '/' matches the path relative to the search root instead of the name.
    """
    if not pattern:
        raise InvalidArgument("pattern is empty")
    lowered = pattern.lower()
    glob = lowered if GLOB_CHARS & set(lowered) else f"*{lowered}*"
    if lowered.startswith("**/") and lowered[3:] and "/" not in lowered[3:]:
        return name_glob(glob[3:])  # `**/x` is `x` at any depth: the name alone decides
    if "/" in lowered:
        # Gitignore glob rules like every other glob here: `*` stays within one component.
        spec = caller_globs([glob.lstrip("/")], "name")
        assert spec is not None
        return lambda name, rel: spec.match_file(rel.lower())
    return name_glob(glob)  # the name alone decides: the test ignores the path it is given


class FoundPath(BaseModel):
    path: str
    type: str
    size: int | None = None


class SearchFilesResult(BaseModel):
    path: str
    pattern: str
    results: list[FoundPath]
    has_more: bool
    notes: list[str] = Field(default_factory=list, description="Bounds applied, paths left out as ignored")


def bounded(value: int, bound: int, name: str, notes: list[str]) -> int:
    """``value`` within ``bound``, noting in ``notes`` when it was over (a model asking for
    "everything" gets the most there is, not an error)."""
    if value <= bound:
        return value
    notes.append(f"{name}={value:,} is over its bound: used {bound:,}")
    return bound


def search_files(
    vfs: JailedFS,
    path: str,
    pattern: str,
    recursive: bool = True,
    exclude_patterns: list[str] | None = None,
    content_match: str | None = None,
    max_results: int = 100,
    respect_gitignore: bool = True,
    progress: Progress | None = None,
) -> SearchFilesResult:
    """Paths under ``path`` whose name matches ``pattern`` (and whose text holds
    ``content_match``), in depth-first name order. The listing stops once there are more
    matches than ``max_results``: on S3 no page after the one holding them is asked for."""
    if max_results < 1:
        raise InvalidArgument("max_results must be 1 or more")
    notes: list[str] = []
    max_results = bounded(max_results, MAX_SEARCH_RESULTS, "max_results", notes)
    matches = name_matcher(pattern)
    root = vfs.resolve(path)
    sieve = Sieve(vfs, root, exclude=exclude_patterns, respect_gitignore=respect_gitignore)
    # The walk keeps the matches (on a local disk it measures those alone) and the ignore files.
    keep = matches if sieve.rules is None else lambda name, rel: name in IGNORE_FILES or matches(name, rel)
    wanted = None if sieve.rules is None else lambda rel, kind: matches(rel.rpartition("/")[2], below(root, rel))
    found: list[Item] = []
    more = False
    pages = _reported(vfs.pages(root, None if recursive else 1, keep=keep), progress)
    for batch in sifted(sieve, root, pages, wanted):
        for rel, kind, size in batch:
            target = Target(root.mount, rel)
            if content_match is not None and (kind != "file" or not _contains(vfs, target, content_match)):
                continue
            if len(found) == max_results:
                more = True
                break
            found.append((rel, kind, size))
        if more:
            break
    found.sort(key=_depth_first)
    if note := ignored_note(sieve, "matches"):
        notes.append(note)
    return SearchFilesResult(
        path=root.display,
        pattern=pattern,
        results=[
            FoundPath(path=root.mount.display(rel), type=kind, size=size if kind == "file" else None)
            for rel, kind, size in found
        ],
        has_more=more,
        notes=notes,
    )


def _reported(pages: Iterable[Listing], progress: Progress | None) -> Iterator[Listing]:
    """``pages``, with a progress notification (which also stops a cancelled call) after each."""
    listed = 0
    for page in pages:
        listed += page.listed
        if progress and not page.last:
            progress(listed, None, f"{listed:,} entries listed")
        yield page


def _contains(vfs: JailedFS, target: Target, needle: str) -> bool:
    try:
        data = vfs.cat(target)
    except VfsError:
        return False
    return b"\x00" not in data[:8192] and needle in data.decode("utf-8", "replace")


TreeNode = dict[str, Any]
"""One entry of a tree, a plain dict (a tree may hold 100,000): name, type, ``size`` for files,
``children`` for directories (None on the others); ``nest`` makes them."""


class TreeResult(BaseModel):
    path: str
    tree: TreeNode = Field(
        description="Nested nodes: name, type, size (files, with format='json'), children (directories)"
    )
    directories: int
    files: int
    truncated: bool = Field(description="True when max_entries cut the tree (breadth-first); see notes")
    omitted: int = Field(description="Entries left out by max_entries (at least; see notes)")
    skipped: list[str] = Field(default_factory=list, description="Folders that could not be read (contents left out)")
    notes: list[str] = Field(default_factory=list, description="Where the cap cut the tree, bounds, ignored paths")


def directory_tree(
    vfs: JailedFS,
    path: str = ".",
    max_depth: int = 3,
    include_files: bool = True,
    pattern: str | None = None,
    exclude_patterns: list[str] | None = None,
    max_entries: int = DEFAULT_TREE_ENTRIES,
    progress: Progress | None = None,
    respect_gitignore: bool = True,
    sizes: bool = True,
) -> TreeResult:
    """A nested tree of ``path`` to ``max_depth`` levels, capped at ``max_entries`` and cut
    breadth-first: every level complete before the next, the cut level's first entries in
    name order (see ``levels``). ``sizes=False``: files are not measured (their ``size`` is
    None), which on a local disk saves an lstat a file, most of a big tree's time."""
    if max_depth < 1 or max_entries < 1:
        raise InvalidArgument("max_depth and max_entries must be 1 or more")
    notes: list[str] = []
    max_depth = bounded(max_depth, MAX_TREE_DEPTH, "max_depth", notes)
    max_entries = bounded(max_entries, MAX_TREE_ENTRIES, "max_entries", notes)
    root = vfs.resolve(path)
    matches = name_matcher(pattern) if pattern else None
    sieve = Sieve(vfs, root, exclude=exclude_patterns, respect_gitignore=respect_gitignore)

    def shown(rel: str, kind: str) -> bool:
        if kind == "directory":
            return True
        return include_files and (matches is None or matches(rel.rpartition("/")[2], below(root, rel)))

    every = include_files and matches is None
    listing = tree_listing(vfs, root, max_depth, max_entries, sieve, None if every else shown, progress, sizes)
    kept, where = capped(listing, root, max_entries)
    top: TreeNode = {"name": root.name, "type": "directory", "size": None, "children": []}
    told = None if progress is None else lambda done, rel: progress(done, len(kept), root.mount.display(rel))
    directories, files = nest(kept, root.rel, top, told, sizes)
    omitted = len(listing.items) - len(kept)
    if where:
        notes.insert(0, where)
    if note := ignored_note(sieve):
        notes.append(note)
    return TreeResult(
        path=root.display,
        tree=top,
        directories=directories,
        files=files,
        truncated=omitted > 0 or not listing.complete,
        omitted=omitted,
        skipped=[root.mount.display(rel) for rel in listing.skipped],
        notes=notes,
    )


def capped(listing: TreeListing, root: Target, cap: int) -> tuple[list[Item], str | None]:
    """``listing``'s items cut breadth-first at ``cap`` (every level whole while it fits, then
    the first entries of the next in depth-first order), and a note of what was left out
    (None when nothing was)."""
    if listing.complete and len(listing.items) <= cap:
        return listing.items, None
    base = root.rel.count("/") + 1 if root.rel else 0
    depths = [rel.count("/") + 1 - base for rel, _, _ in listing.items]
    if not listing.complete:  # the listing stopped at the cap: how much more there is is not known
        level, kept = listing.stopped_at, listing.items
        there = depths.count(level)
        at_cut = f"the first {there:,} entries at level {level} shown" if there else f"level {level} not shown"
        at_cut += "; the listing stopped there, so more entries were not counted"
    else:
        keep, level, room = breadth_first_cut(depths, cap)
        if not level:
            return listing.items, None
        kept = [item for item, stays in zip(listing.items, keep, strict=True) if stays]
        left = len(listing.items) - len(kept)
        at_cut = f"{room:,} of {depths.count(level):,} entries at level {level} shown; {left:,} more entries not shown"
    whole = f"levels 1-{level - 1} complete" if level > 2 else "level 1 complete" if level == 2 else "no level complete"
    return kept, (
        f"cut breadth-first at max_entries={cap:,}: {whole}, {at_cut}; "
        "raise max_entries, lower max_depth or narrow the path"
    )


def nest(
    items: list[Item],
    top_rel: str,
    top: TreeNode,
    progress: Callable[[int, str], object] | None = None,
    sizes: bool = True,
) -> tuple[int, int]:
    """Put ``items`` (in depth-first order, each folder before what is in it, all below the
    folder ``top_rel``) into ``top`` as nodes, a dict each and nothing more per entry; how many
    are directories and files. ``progress(done, path)`` after every ``PROGRESS_EVERY`` and the
    last. ``sizes=False``: the files' sizes were not measured, and are None."""
    children: dict[str, list[TreeNode]] = {top_rel: top["children"]}
    directories = files = 0
    for start in range(0, len(items), PROGRESS_EVERY):
        chunk = items[start : start + PROGRESS_EVERY]
        for rel, kind, size in chunk:
            folder, _, name = rel.rpartition("/")
            if kind == "directory":
                directories += 1
                inside: list[TreeNode] = []
                children[folder].append({"name": name, "type": kind, "size": None, "children": inside})
                children[rel] = inside
            elif kind == "file":
                files += 1
                children[folder].append({"name": name, "type": kind, "size": size if sizes else None, "children": None})
            else:
                children[folder].append({"name": name, "type": kind, "size": None, "children": None})
        if progress:
            progress(start + len(chunk), chunk[-1][0])
    return directories, files


def _depth_first(item: Item) -> str:
    return item[0].replace("/", "\x00")  # "/" sorts before every character a name holds


def tree_fields(result: TreeResult) -> dict[str, Any]:
    """``result``'s fields as JSON data, its tree as it is: already JSON data, so 20,000 nodes
    are not copied by a ``model_dump``."""
    fields = result.model_dump(mode="json", exclude={"tree"})
    return {"path": fields.pop("path"), "tree": result.tree, **fields}


def names_in(node: TreeNode) -> Iterator[str]:
    """The name of every node below ``node``."""
    stack = [node]
    while stack:
        for child in stack.pop()["children"] or ():
            yield child["name"]
            if child["children"]:
                stack.append(child)


def render_tree(result: TreeResult, name: Callable[[str], str] = str) -> str:
    """The tree as indented text with box-drawing branches, each name (and the root's path)
    written as ``name`` writes it."""
    lines = [name(result.path)]
    add, plain = lines.append, name is str

    def walk(node: TreeNode, prefix: str) -> None:
        children = node["children"]
        if not children:
            return
        last = children[-1]
        branch, final = prefix + "├── ", prefix + "└── "
        for child in children:
            label = child["name"] if plain else name(child["name"])
            inside = child["children"]
            if inside is None:  # not a directory
                add((final if child is last else branch) + label)
                continue
            add(f"{final if child is last else branch}{label}/")
            if inside:
                walk(child, prefix + ("    " if child is last else "│   "))

    walk(result.tree, "")
    lines.append(f"{result.directories} directories, {result.files} files{skipped_note(result.skipped)}")
    lines += [f"({note})" for note in result.notes]
    return "\n".join(lines)


# -- the reference server's dialect (the official profile) ---------------------------------


def nested_tree(
    vfs: JailedFS, path: str, exclude_patterns: Sequence[str] = (), limit: int = DEFAULT_TREE_ENTRIES
) -> tuple[list[dict[str, Any]], int]:
    """Everything under ``path`` as nested ``{name, type, children}`` nodes (children on
    directories only), and how many entries the ``limit`` left out. Exclude patterns are
    gitignore globs: ``node_modules`` and ``*.log`` at any depth, ``src/*.js`` anchored to ``path``.
    """
    root = vfs.resolve(path)
    # The reference walks everything: no ignore files, .git included. Its tree has no cap;
    # ours is cut breadth-first, so a capped tree still shows the top levels whole.
    selection = select(
        vfs, root, exclude=list(exclude_patterns) or None, respect_gitignore=False, metadata=False
    )  # names and types: no lstat of each entry
    relative = [selection.relative(entry) for entry in selection.entries]
    keep, _, _ = breadth_first_cut([rel.count("/") + 1 for rel in relative], limit)
    top: list[dict[str, Any]] = []
    children = {"": top}  # each kept directory's child list, by its path relative to root
    for entry, rel, kept in zip(selection.entries, relative, keep, strict=True):
        if not kept:
            continue
        node: dict[str, Any] = {"name": entry.name, "type": "directory" if entry.type == "directory" else "file"}
        if entry.type == "directory":
            node["children"] = children[rel] = []
        children[rel.rpartition("/")[0]].append(node)
    return top, len(keep) - sum(keep)


def glob_search(
    vfs: JailedFS, path: str, pattern: str, exclude_patterns: Sequence[str] = (), limit: int = DEFAULT_TREE_ENTRIES
) -> tuple[list[str], int]:
    """Full paths of everything under ``path`` whose path relative to it matches ``pattern``
    (at most ``limit``), and how many more matched.

    Globs are minimatch's with dotfiles included: ``*.txt`` only directly in ``path``,
    ``**/*.txt`` at any depth, ``{a,b}``, ``?``, ``[abc]``; case-sensitive. A directory
    matching an exclude pattern is skipped with everything in it.
    """
    matches = minimatch(pattern)
    excluded = [minimatch(p) for p in exclude_patterns]
    root = vfs.resolve(path)
    selection = select(vfs, root, respect_gitignore=False, metadata=False)
    pruned = None  # the excluded directory being skipped: depth-first order keeps its insides together
    found: list[str] = []
    omitted = 0
    for entry in selection.entries:
        rel = selection.relative(entry)
        if pruned is not None and rel.startswith(pruned):
            continue
        if any(m(rel) for m in excluded):
            pruned = rel + "/"
            continue
        if matches(rel):
            if len(found) < limit:
                found.append(entry.path)
            else:
                omitted += 1
    return found, omitted
