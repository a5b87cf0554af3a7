"""What a pending layer changes: the mount as it shows with the layer (the view) against its
store as it is, path by path, below the paths the layer covers.

A layer's nodes cover *regions*: each node not below another node is a region's root, and
nothing outside the regions differs. Two regions a move joins (its source's and its
destination's) are one *group*: a group is applied or discarded whole (``group_of``). Each
``PathDifference`` is one path that differs, collapsed to the top of what differs with it (a
folder deleted is one difference, not one per file in it).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from vfs_mcp.changes.steps import ABSENT, ANYTHING, Expect
from vfs_mcp.jail.entries import KINDS, sha256
from vfs_mcp.review.under_review import Sides
from vfs_mcp_backends.layers import Node, parent_of

Status = Literal["added", "modified", "deleted", "moved", "replaced", "blocked"]
"""``blocked``: a region the store no longer lets be read where the layer covers it (its folder
became a link that leads out of the mount, ...): listed and discarded, never applied."""


@dataclass(frozen=True)
class Side:
    """What one side shows at a path: its kind, where its content is (a store path, or the
    layer's node), its mode (stores with modes)."""

    kind: str
    source: str | None = None
    node: Node | None = None
    mode: int | None = None
    size: int = 0


@dataclass
class PathDifference:
    """One path the view shows otherwise than the store holds it."""

    rel: str
    status: Status
    view: Side | None
    base: Side | None
    group: int
    inside: int = 0
    """Files below a folder deleted, moved or added whole."""
    changes: list[str] = field(default_factory=list)
    moved: bool = False
    """A deletion that is the source of a move (shown with the move, not on its own)."""
    why: str = ""
    """Why a ``blocked`` region cannot be read."""

    @property
    def moved_from(self) -> str | None:
        if self.view is not None and self.view.source is not None and self.view.source != self.rel:
            return self.view.source
        return None


class Groups:
    """The regions of a layer, joined into groups by the moves between them."""

    def __init__(self, nodes: dict[str, Node]) -> None:
        self.roots = sorted(rel for rel in nodes if not _covered(nodes, parent_of(rel)) and rel)
        self._up = {root: root for root in self.roots}
        for rel, node in nodes.items():
            if node.kind == "moved":
                source = self.root_of(node.source)
                if source is not None:
                    self._join(self.root_of(rel) or rel, source)
        ordered = sorted({self._find(root) for root in self.roots})
        self._number = {leader: number for number, leader in enumerate(ordered)}
        self._members: dict[int, list[str]] = {}
        for root in self.roots:
            self._members.setdefault(self._number[self._find(root)], []).append(root)

    def root_of(self, rel: str) -> str | None:
        """The region root at or above ``rel``."""
        path = rel
        while True:
            if path in self._up:
                return path
            if not path:
                return None
            path = parent_of(path)

    def every(self) -> set[int]:
        return set(self._number.values())

    def group_of(self, rel: str) -> int:
        root = self.root_of(rel)
        return -1 if root is None else self._number[self._find(root)]

    def members(self, group: int) -> list[str]:
        return self._members.get(group, [])

    def _find(self, root: str) -> str:
        while self._up[root] != root:
            self._up[root] = self._up[self._up[root]]
            root = self._up[root]
        return root

    def _join(self, a: str, b: str) -> None:
        if a in self._up and b in self._up:
            self._up[self._find(a)] = self._find(b)


def join(parent: str, sub: str) -> str:
    """A path below ``parent`` (itself for an empty ``sub``)."""
    return f"{parent}/{sub}" if parent and sub else parent or sub


def _covered(nodes: dict[str, Node], rel: str) -> bool:
    """Whether a node lies at ``rel`` or above it."""
    while True:
        if rel in nodes:
            return True
        if not rel:
            return False
        rel = parent_of(rel)


def differences(sides: Sides) -> tuple[list[PathDifference], Groups]:
    """Every path the layer of ``sides`` makes differ, in path order, and its groups."""
    sides.layer.fresh(force=True)
    nodes = dict(sides.layer.nodes)
    groups = Groups(nodes)
    found: list[PathDifference] = []
    for root in groups.roots:
        try:
            view, base = _view_tree(sides, root), _base_tree(sides, root)
            found += _compare(sides, root, view, base, groups.group_of(root))
        except OSError as err:  # nothing below it is read, nor ever written through it
            found.append(_blocked(root, nodes[root], groups.group_of(root), err))
    moved_away = {d.moved_from for d in found if d.moved_from is not None}
    for difference in found:
        # A store path whose content the view shows elsewhere: the source of a move, shown with it.
        difference.moved = difference.status == "deleted" and difference.rel in moved_away
        difference.changes = _labels(sides, nodes, difference)
    return found, groups


def _blocked(root: str, node: Node, group: int, err: OSError) -> PathDifference:
    kind = {"dir": "directory", "link": "symlink", "moved": node.shows or "file"}.get(node.kind, "file")
    why = err.strerror or type(err).__name__  # never the host path the error names
    return PathDifference(root, "blocked", Side(kind, None, node), None, group, why=why)


def blocked_groups(found: list[PathDifference]) -> set[int]:
    """The groups of ``found`` that hold a blocked region: applied never, discarded whole."""
    return {difference.group for difference in found if difference.status == "blocked"}


def _labels(sides: Sides, nodes: dict[str, Node], difference: PathDifference) -> list[str]:
    """The ids of the changes that wrote a difference: the nodes at its path, above it, below it."""
    labels: dict[str, None] = {}
    rel = difference.rel
    path = rel
    while True:
        node = nodes.get(path)
        if node is not None:
            labels.update(dict.fromkeys(node.changes))
        if not path:
            break
        path = parent_of(path)
    for _, node in sides.layer.below(rel):
        labels.update(dict.fromkeys(node.changes))
    if difference.moved_from is not None:
        source = nodes.get(difference.moved_from)
        if source is not None:
            labels.update(dict.fromkeys(source.changes))
    return list(labels)


def _view_tree(sides: Sides, root: str) -> dict[str, Side]:
    """What the view shows at ``root`` and below: path below it -> side."""
    fs = sides.overlay.overlay
    seen = fs._lookup(root)
    if seen is None:
        return {}
    out = {"": _view_side(sides, root, seen.kind, seen.info)}
    if seen.kind == "directory":
        for sub, info in fs._walk(root, None):
            out[sub] = _view_side(sides, join(root, sub), str(info.get("type")), info)
    return out


def _view_side(sides: Sides, rel: str, kind: str, info: dict[str, Any]) -> Side:
    node, mapped = sides.overlay.overlay._where(rel)
    if node is not None and node.kind == "moved":
        mapped = node.source
    elif node is not None and node.kind in ("file", "link"):
        mapped = None
    return Side(KINDS.get(kind, "file"), mapped, node, _mode(info), int(info.get("size") or 0))


def _base_tree(sides: Sides, root: str) -> dict[str, Side]:
    """What the store holds at ``root`` and below: path below it -> side."""
    backend = sides.base.backend
    path = sides.base.fs_path(root)
    backend.invalidate_tree(path)
    try:
        raw = backend.fs.info(path, follow=False) if sides.base.capabilities.symlinks else backend.fs.info(path)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    kind = KINDS.get(str(raw.get("type")), "file")
    out = {"": Side(kind, root, None, _mode(raw), int(raw.get("size") or 0))}
    if kind == "directory":
        for sub, inner in backend.entries(path):
            inner_kind = KINDS.get(str(inner.get("type")), "file")
            out[sub] = Side(inner_kind, join(root, sub), None, _mode(inner), int(inner.get("size") or 0))
    return out


def _mode(info: dict[str, Any]) -> int | None:
    mode = info.get("mode")
    return mode & 0o7777 if isinstance(mode, int) else None


def _compare(sides: Sides, root: str, view: dict[str, Side], base: dict[str, Side], group: int) -> list[PathDifference]:
    """The paths below ``root`` the two trees differ at, each collapsed to the top of what differs with it."""
    found: list[PathDifference] = []
    whole: list[str] = []  # folders reported whole: what is below them is theirs
    modes = sides.base.capabilities.modes
    for sub in sorted(set(view) | set(base), key=lambda p: p.replace("/", "\x00")):
        if _inside(whole, sub):
            continue
        rel = join(root, sub)
        mine, theirs = view.get(sub), base.get(sub)
        if mine is not None and theirs is not None:
            if mine.kind != theirs.kind:
                found.append(PathDifference(rel, "replaced", mine, theirs, group))
                whole.append(sub)
            elif mine.kind == "directory" or _same(sides, rel, mine, theirs, modes):
                continue
            else:
                found.append(PathDifference(rel, "modified", mine, theirs, group))
        elif mine is not None:
            moved = mine.source is not None and mine.source != rel
            inside = _files_below(view, sub)
            if mine.kind == "directory" and not moved and inside:
                continue  # a folder made for files added: the files are the differences
            found.append(PathDifference(rel, "moved" if moved else "added", mine, None, group, inside))
            if mine.kind == "directory":
                whole.append(sub)  # a folder moved, or of empty folders only: made whole
            if mine.kind == "directory" and moved:
                found += _moved_inside(sides, rel, sub, view, group)
        else:
            assert theirs is not None
            found.append(PathDifference(rel, "deleted", None, theirs, group, _files_below(base, sub)))
            whole.append(sub)
    return found


def _inside(whole: list[str], sub: str) -> bool:
    return any(sub.startswith(top + "/") or (not top and sub) for top in whole)


def _files_below(tree: dict[str, Side], sub: str) -> int:
    prefix = sub + "/" if sub else ""
    return sum(1 for path, side in tree.items() if path.startswith(prefix) and path != sub and side.kind != "directory")


def _moved_inside(sides: Sides, rel: str, sub: str, view: dict[str, Side], group: int) -> list[PathDifference]:
    """What a moved folder shows otherwise than its source holds (files changed or added in it
    after the move; files deleted from it)."""
    top = view[sub]
    assert top.source is not None
    source_tree = _base_tree(sides, top.source)
    prefix = sub + "/" if sub else ""
    mine = {path[len(prefix) :]: side for path, side in view.items() if path.startswith(prefix) and path != sub}
    found: list[PathDifference] = []
    for inner in sorted(set(mine) | (set(source_tree) - {""})):
        if _inside([d.rel[len(rel) + 1 :] for d in found if d.status == "deleted"], inner):
            continue
        here, there = mine.get(inner), source_tree.get(inner)
        at = join(rel, inner)
        if here is not None and there is not None:
            if here.kind == there.kind and (here.source == join(top.source, inner) or here.kind == "directory"):
                continue
            found.append(PathDifference(at, "modified", here, there, group))
        elif here is not None:
            if here.kind != "directory" or not _files_below(mine, inner):
                found.append(PathDifference(at, "added", here, None, group))
        else:
            assert there is not None
            found.append(PathDifference(at, "deleted", None, there, group, _files_below(source_tree, inner)))
    return found


def _same(sides: Sides, rel: str, mine: Side, theirs: Side, modes: bool) -> bool:
    """Whether the view's file, link or other at ``rel`` is the store's."""
    if modes and mine.mode != theirs.mode:
        return False
    if mine.source == rel:
        return True
    if mine.node is None or mine.node.kind != "file" or mine.size != theirs.size:
        return mine.node is not None and mine.node.kind == "link" and mine.node.to == _link_text(sides, rel)
    # A file written back as the store holds it (an undo in the layer): no difference.
    version = _recorded_version(sides, rel)
    if version is not None:
        return version == mine.node.blob
    return sha256(bytes(sides.base.fs.cat_file(sides.base.fs_path(rel)))) == mine.node.blob


def _link_text(sides: Sides, rel: str) -> str | None:
    try:
        return str(sides.base.fs.readlink(sides.base.fs_path(rel)))
    except OSError:
        return None


def _recorded_version(sides: Sides, rel: str) -> str | None:
    """The sha256 the store's file at ``rel`` had when the layer first covered it, where it
    was kept (local folders, memory) and the store's file has the size kept."""
    expect = expect_at(sides.layer.nodes, rel)
    fingerprint = expect.fingerprint
    if not fingerprint or len(fingerprint) != 1 or fingerprint[0][1] != "file":
        return None
    version = fingerprint[0][3]
    return version if isinstance(version, str) and len(version) == 64 else None


# -- what a path must hold for a change planned on the layer --------------------------------------


def expect_at(nodes: dict[str, Node], rel: str) -> Expect:
    """What the store held at ``rel`` when the layer first covered it (the version the agent
    read): the record of the node at ``rel``, else the part of the nearest record above it."""
    path = rel
    while True:
        node = nodes.get(path)
        if node is not None and node.was is not None:
            return _expected(node.was, posixpath.relpath(rel, path) if rel != path else "")
        if not path:
            return ANYTHING
        path = parent_of(path)


def _expected(was: dict[str, Any], sub: str) -> Expect:
    fingerprint = [tuple(item) for item in was.get("fp", [])]
    if not fingerprint:
        return ABSENT
    if sub:
        prefix = sub + "/"
        fingerprint = [
            (item[0][len(prefix) :] if item[0] != sub else "", *item[1:])
            for item in fingerprint
            if item[0] == sub or item[0].startswith(prefix)
        ]
        if not fingerprint:
            return ABSENT
    kind = str(fingerprint[0][1])
    return Expect(kind, fingerprint=tuple(fingerprint), points_to=was.get("to") if not sub else None)  # type: ignore[arg-type]


def recorded(nodes: Iterable[tuple[str, Node]]) -> Iterator[tuple[str, Expect]]:
    """Each of ``nodes`` (path, node) that keeps what the store held there, and what it held."""
    for rel, node in nodes:
        if node.was is not None:
            yield rel, _expected(node.was, "")
