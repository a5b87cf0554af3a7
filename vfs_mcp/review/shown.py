"""How a pending difference reads for a person: a unified diff of a text file, a line for the rest."""

from __future__ import annotations

from vfs_mcp.ops.diff.unified import unified_diff
from vfs_mcp.ops.text.encoding import looks_binary
from vfs_mcp.review.differences import PathDifference, Side
from vfs_mcp.review.under_review import Sides

MAX_SHOWN = 256 * 1024
"""Bytes of a file past which its diff is not shown (its sizes are)."""
NO_FILE = "/dev/null"


def rendered(sides: Sides, difference: PathDifference) -> str:
    """The diff of one difference (a unified diff, git style), or a line that says what changes."""
    view, base = difference.view, difference.base
    shown = sides.display(difference.rel)
    if difference.status == "blocked":
        return f"(cannot be read now: {difference.why}; it cannot be applied, `vfs-mcp review --discard` drops it)\n"
    if (view or base) and (view or base).kind == "directory":  # type: ignore[union-attr]
        what = {"deleted": "deleted", "moved": "moved", "added": "added"}.get(difference.status, difference.status)
        return f"(a folder, {difference.inside} file{'' if difference.inside == 1 else 's'} in it, {what})\n"
    if difference.status == "replaced":
        assert view is not None and base is not None
        return f"(a {base.kind} replaced by a {view.kind})\n"
    if (view is not None and view.kind == "symlink") or (base is not None and base.kind == "symlink"):
        return f"(a symbolic link{' to ' + _link(sides, difference) if view is not None else ''})\n"
    source = difference.moved_from
    if base is None and view is not None and source is not None:
        base = Side("file", source, None, None, view.size)  # a file moved: against its source
    old = _bytes(sides, base, base.source or difference.rel, view=False) if base is not None else b""
    new = _bytes(sides, view, difference.rel, view=True) if view is not None else b""
    if old is None or new is None:
        return f"({_size(base)} -> {_size(view)} bytes; too large to show)\n"
    try:
        if looks_binary(old) or looks_binary(new):
            raise UnicodeDecodeError("utf-8", b"", 0, 1, "binary")
        before, after = old.decode(), new.decode()
    except UnicodeDecodeError:
        return f"(binary: {len(old)} -> {len(new)} bytes)\n"
    if before == after:
        return "(its content unchanged)\n" if source is not None else "(its mode changed)\n"
    name = sides.display(source) if source is not None else shown
    old_name = NO_FILE if base is None and source is None else name
    new_name = NO_FILE if view is None else shown
    return unified_diff(before, after, old_name, new_name)


def _bytes(sides: Sides, side: Side | None, rel: str, *, view: bool) -> bytes | None:
    if side is None:
        return b""
    if side.size > MAX_SHOWN:
        return None
    mount = sides.view if view else sides.base
    data = mount.fs.cat_file(mount.fs_path(rel))
    return bytes(data) if len(data) <= MAX_SHOWN else None


def _size(side: Side | None) -> str:
    return "0" if side is None else f"{side.size:,}"


def _link(sides: Sides, difference: PathDifference) -> str:
    view = difference.view
    if view is not None and view.node is not None and view.node.kind == "link":
        return view.node.to
    return str(sides.view.fs.readlink(sides.view.fs_path(difference.rel)))
