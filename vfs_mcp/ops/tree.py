"""Name search and directory trees, each from one listing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument, VfsError
from vfs_mcp.filesystem import JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.ops.globs import caller_globs, name_glob
from vfs_mcp.ops.walk import below, select, skipped_note
from vfs_mcp.reads import Listing

DEFAULT_TREE_ENTRIES = 1000
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


def search_files(
    vfs: JailedFS,
    path: str,
    pattern: str,
    recursive: bool = True,
    exclude_patterns: list[str] | None = None,
    content_match: str | None = None,
    max_results: int = 100,
) -> SearchFilesResult:
    """Paths under ``path`` whose name matches ``pattern`` (and whose text holds ``content_match``)."""
    if max_results < 1:
        raise InvalidArgument("max_results must be 1 or more")
    matches = name_matcher(pattern)
    root = vfs.resolve(path)
    depth = None if recursive else 1
    if exclude_patterns:
        # On a local disk the walk skips each entry's lstat; the few files that match are measured after.
        measured = not root.mount.capabilities.local_io
        listed = _listing(vfs, root, depth, exclude_patterns, metadata=measured).items
        items = [item for item in listed if matches(item[0].rpartition("/")[2], below(root, item[0]))]
    else:  # the walk keeps the matches only, and measures those (on a local disk, those alone)
        measured, items = True, vfs.names(root, depth, keep=matches).items
    found: list[FoundPath] = []
    more = False
    for rel, kind, size in items:
        target = Target(root.mount, rel)
        if content_match is not None and (kind != "file" or not _contains(vfs, target, content_match)):
            continue
        if len(found) == max_results:
            more = True
            break
        shown = None if kind != "file" else size if measured else _size(vfs, target)
        found.append(FoundPath(path=target.display, type=kind, size=shown))
    return SearchFilesResult(path=root.display, pattern=pattern, results=found, has_more=more)


def _listing(
    vfs: JailedFS, root: Target, max_depth: int | None, exclude: list[str] | None, *, metadata: bool = True
) -> Listing:
    """The paths below ``root``, as tuples; through ``select`` only when exclude globs prune them."""
    if not exclude:
        return vfs.names(root, max_depth, metadata=metadata)
    selection = select(vfs, root, max_depth=max_depth, exclude=exclude, skip_git_dir=False, metadata=metadata)
    return Listing(
        [(e.target.rel, e.type, e.size) for e in selection.entries], [e.target.rel for e in selection.skipped]
    )


def _size(vfs: JailedFS, target: Target) -> int | None:
    """A file's size, looked up (None if it went since the walk)."""
    try:
        return vfs.info(target, follow=False).size
    except VfsError:
        return None


def _contains(vfs: JailedFS, target: Target, needle: str) -> bool:
    try:
        data = vfs.cat(target)
    except VfsError:
        return False
    return b"\x00" not in data[:8192] and needle in data.decode("utf-8", "replace")


TreeNode = dict[str, Any]
"""One entry of a tree, a plain dict (a tree may hold 100,000): name, type, ``size`` for files,
``children`` for directories (None on the others)."""


def tree_node(name: str, kind: str, size: int | None, children: list[TreeNode] | None) -> TreeNode:
    return {"name": name, "type": kind, "size": size, "children": children}


class TreeResult(BaseModel):
    path: str
    tree: TreeNode = Field(description="Nested nodes: name, type, size (files), children (directories)")
    directories: int
    files: int
    truncated: bool = Field(description="True when max_entries cut the tree; see omitted")
    omitted: int = Field(description="Entries left out by max_entries")
    skipped: list[str] = Field(default_factory=list, description="Folders that could not be read (contents left out)")


def directory_tree(
    vfs: JailedFS,
    path: str = ".",
    max_depth: int = 3,
    include_files: bool = True,
    pattern: str | None = None,
    exclude_patterns: list[str] | None = None,
    max_entries: int = DEFAULT_TREE_ENTRIES,
    progress: Callable[[int, int | None, str], None] | None = None,
) -> TreeResult:
    """A nested tree of ``path`` to ``max_depth`` levels from one listing, capped at ``max_entries``."""
    if max_depth < 1 or max_entries < 1:
        raise InvalidArgument("max_depth and max_entries must be 1 or more")
    root = vfs.resolve(path)
    listing = _listing(vfs, root, max_depth, exclude_patterns)
    matches = name_matcher(pattern) if pattern else None
    top = tree_node(root.name, "directory", None, [])
    nodes = {root.rel: top}  # each kept directory by its mount-relative path
    counts = {"directory": 0, "file": 0}
    kept = omitted = 0
    total = len(listing.items)
    for done, (rel, kind, size) in enumerate(listing.items, 1):
        if progress and (done % PROGRESS_EVERY == 0 or done == total):
            progress(done, total, root.mount.display(rel))
        folder, _, name = rel.rpartition("/")
        if kind != "directory" and (not include_files or (matches is not None and not matches(name, below(root, rel)))):
            continue
        parent = nodes.get(folder)
        if parent is None or kept >= max_entries:
            omitted += 1  # over the cap, or inside a directory that was
            continue
        node = tree_node(name, kind, size if kind == "file" else None, [] if kind == "directory" else None)
        siblings = parent["children"]
        assert siblings is not None  # only directories are in `nodes`
        siblings.append(node)
        kept += 1
        if kind == "directory":
            nodes[rel] = node
            counts["directory"] += 1
        elif kind == "file":
            counts["file"] += 1
    return TreeResult(
        path=root.display,
        tree=top,
        directories=counts["directory"],
        files=counts["file"],
        truncated=omitted > 0,
        omitted=omitted,
        skipped=[root.mount.display(rel) for rel in listing.skipped],
    )


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

    def walk(node: TreeNode, prefix: str) -> None:
        children = node["children"] or []
        for i, child in enumerate(children):
            last = i == len(children) - 1
            suffix = "/" if child["type"] == "directory" else ""
            lines.append(f"{prefix}{'└── ' if last else '├── '}{name(child['name'])}{suffix}")
            if child["children"] is not None:
                walk(child, prefix + ("    " if last else "│   "))

    walk(result.tree, "")
    summary = f"{result.directories} directories, {result.files} files"
    if result.truncated:
        summary += f"; {result.omitted} more entries not shown (raise max_entries or narrow the path)"
    summary += skipped_note(result.skipped)
    lines.append(summary)
    return "\n".join(lines)
