"""A pending layer's groups applied to the store through the one write path, all or nothing:
one change of ``Put``, ``Remove``, ``Restore`` and ``MakeDir`` steps, each expecting what the
store held when the layer first covered its path (the version the agent read).

Before the steps are made, every node of the groups that kept what the store held is checked
against the store as it is now: a file changed behind the agent's back is CONFLICT naming it,
and nothing is applied. The steps then check the same again as they commit, under the
change's locks (``changes.make``)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from vfs_mcp import changes
from vfs_mcp.changes import images, store
from vfs_mcp.changes.steps import (
    ABSENT,
    DirImage,
    Expect,
    FileImage,
    Image,
    LinkImage,
    MakeDir,
    Put,
    Remove,
    Restore,
    Step,
)
from vfs_mcp.errors import Conflict
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.review.differences import Groups, PathDifference, Side, differences, expect_at, join, recorded
from vfs_mcp.review.under_review import Sides

Planned = tuple[list[Step], list[str], dict[str, dict[str, object]]]
"""The steps, the paths they apply, and the nodes they apply (by path, as planned)."""


Chooser = Callable[[list[PathDifference], Groups], set[int]]
"""Which groups of a layer's (numbers, ``Groups.group_of``) an apply or a discard takes."""


def plan_apply(vfs: JailedFS, sides: Sides, chosen: Chooser) -> Planned:
    """The steps that make the store show what the view shows for the groups ``chosen`` picks
    (CONFLICT, naming the file, where the store changed since the agent read it)."""
    found, groups = differences(sides)
    picked = chosen(found, groups)
    roots = [root for group in sorted(picked) for root in groups.members(group)]
    nodes = sides.layer.nodes
    chosen_nodes = [(rel, node) for root in roots for rel, node in [(root, nodes[root]), *sides.layer.below(root)]]
    for rel, expect in recorded(chosen_nodes):
        target = Target(sides.base, rel)
        try:
            images.check(vfs, target, store.probe(vfs, target), expect)
        except images.Changed as changed:
            how = "its content differs" if changed.how == "its size or time differs" else changed.how
            raise Conflict(
                f"{changed.path} changed since the agent read it ({how}): nothing was applied; "
                "look at it, then apply again, or discard what the agent did to it"
            ) from None
    mine = [d for d in found if d.group in picked]
    steps = _steps(sides, mine)
    planned = {rel: node.dump() for rel, node in chosen_nodes}
    return steps, [sides.display(d.rel) for d in mine if not d.moved], planned


def _steps(sides: Sides, found: list[PathDifference]) -> list[Step]:
    """The steps for ``found``: folders made, files written, paths replaced, then deletions (a
    move's source last: its copy reads it first)."""
    made: list[Step] = []
    written: list[Step] = []
    replaced: list[Step] = []
    deleted: list[Step] = []
    nodes = sides.layer.nodes
    moved = [d.rel for d in found if d.status == "moved" and d.view is not None and d.view.kind == "directory"]
    for difference in found:
        rel, view = difference.rel, difference.view
        if any(rel.startswith(folder + "/") for folder in moved):
            continue  # a moved folder is written whole from what the view shows in it
        target = Target(sides.base, rel)
        expect = expect_at(nodes, rel)
        if difference.status == "deleted":
            deleted.append(Remove(target, expect, recursive=True))
        elif difference.status == "replaced":
            assert view is not None
            replaced.append(Restore(target, _image(sides, rel, view), expect))
        elif view is not None and view.kind == "directory":
            made += _folder(sides, rel, view, expect)
        elif view is not None:
            written.append(_written(sides, rel, view, expect))
    made.sort(key=lambda op: op.target.rel.count("/") if isinstance(op, MakeDir) else 0)
    return [*made, *written, *replaced, *deleted]


def _written(sides: Sides, rel: str, view: Side, expect: Expect) -> Step:
    target = Target(sides.base, rel)
    mode = view.mode if sides.base.capabilities.modes else None
    if view.kind == "symlink":
        assert view.node is not None or view.source is not None
        text = view.node.to if view.node is not None else sides.base.fs.readlink(sides.base.fs_path(view.source or ""))
        return Restore(target, LinkImage(str(text)), expect)
    if view.node is not None and view.node.kind == "file":
        data = sides.layer.read_blob(view.node.blob)
        return Put(target, data=data, expect=_put_expect(expect), mode=mode, parents=True)
    assert view.source is not None
    return Put(target, source=Target(sides.base, view.source), expect=_put_expect(expect), mode=mode, parents=True)


def _put_expect(expect: Expect) -> Expect:
    return expect if expect.state in ("absent", "file") else Expect("file-or-absent")


def _folder(sides: Sides, rel: str, view: Side, expect: Expect) -> list[Step]:
    """A folder the view shows and the store has not: made, and, for a moved one, filled with
    what it shows."""
    ops: list[Step] = []
    fs = sides.overlay.overlay
    inside = sorted(fs._walk(rel, None), key=lambda item: item[0].replace("/", "\x00"))
    holds = {posixpath.dirname(sub) for sub, info in inside if info.get("type") != "directory"}
    if not inside or rel not in holds:
        ops.append(MakeDir(Target(sides.base, rel)))
    for sub, info in inside:
        at = join(rel, sub)
        node, mapped = fs._where(at)
        source = node.source if node is not None and node.kind == "moved" else mapped
        if node is not None and node.kind in ("file", "link"):
            source = None
        kind, mode = str(info.get("type")), info.get("mode")
        kind = kind if kind in ("directory", "symlink") else "file"
        side = Side(kind, source, node, mode & 0o7777 if isinstance(mode, int) else None)
        if side.kind == "directory":
            if not any(other.startswith(sub + "/") for other, _ in inside):
                ops.append(MakeDir(Target(sides.base, at)))
        else:
            ops.append(
                _written(sides, at, side, ABSENT if expect.state == "absent" else expect_at(sides.layer.nodes, at))
            )
    return ops


def _image(sides: Sides, rel: str, view: Side) -> Image:
    """What the view shows at ``rel``, as an image to restore in the store (a path whose kind changes)."""
    if view.kind == "symlink":
        op = _written(sides, rel, view, ABSENT)
        assert isinstance(op, Restore)
        return op.image
    if view.kind != "directory":
        return FileImage(bytes(sides.overlay.overlay.cat_file(sides.view.fs_path(rel))), view.mode)
    fs = sides.overlay.overlay
    inside: list[tuple[str, Image]] = []
    for sub, info in sorted(fs._walk(rel, None), key=lambda item: item[0].replace("/", "\x00")):
        mode = info.get("mode")
        bits = mode & 0o7777 if isinstance(mode, int) else None
        kind = str(info.get("type"))
        if kind == "directory":
            inside.append((sub, DirImage(bits)))
        elif kind == "symlink":
            inside.append((sub, LinkImage(str(fs.readlink(sides.view.fs_path(join(rel, sub)))))))
        else:
            inside.append((sub, FileImage(bytes(fs.cat_file(sides.view.fs_path(join(rel, sub)))), bits)))
    return DirImage(view.mode, tuple(inside))


def run_apply(vfs: JailedFS, chosen: list[tuple[Sides, Chooser]], touches: list[Target]) -> list[str]:
    """Apply the groups each chooser picks of its layer's, every layer in one change (see the
    module's docstring; ``touches``: the paths it writes as far as known, whose folders are
    locked for the first plan); the paths applied. The nodes applied leave their layers inside that
    change (``Plan.drops``: recorded with it, before its first step, dropped once its last is
    made, before its record is filed), so a crash leaves the store and the layers agreeing:
    all applied, or all pending."""

    def plan() -> changes.Plan[list[str]]:
        steps: list[Step] = []
        paths: list[str] = []
        drops: dict[str, dict[str, Any]] = {}
        for sides, chooser in chosen:
            more, shown, nodes = plan_apply(vfs, sides, chooser)
            steps += more
            paths += shown
            if nodes:
                drops[sides.layer.url] = nodes
        return changes.Plan(paths, steps, drops=drops)

    return changes.make(vfs, plan, touches=touches)
