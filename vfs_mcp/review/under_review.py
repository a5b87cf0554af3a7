"""Mounts under review: a mount's store wrapped in an ``OverlayMount`` whose pending layer lives
in the state store, and the two sides of a layer a review compares (the view and the store)."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable, Sequence
from typing import Any

from vfs_mcp import changes
from vfs_mcp.changes import images, store
from vfs_mcp.changes.log import default_log
from vfs_mcp.changes.state import StateStore
from vfs_mcp.config import DEFAULT_SERVER_UNDO_BYTES
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp_backends.layers import Layer
from vfs_mcp_backends.overlay import OverlayMount


def under_review(mounts: Sequence[Mount], state: StateStore, *, every: bool = False) -> list[Mount]:
    """``mounts``, those under review (``Mount.review``; all with ``every``) served with their
    pending layer in ``state``: new ``Mount`` objects; the others as they are."""
    out = []
    for mount in mounts:
        if mount.layer is not None or not (every or mount.review):
            out.append(mount)
            continue
        layer = state.layer(mount.url)
        overlay = OverlayMount.over(mount.backend, layer, recorder(mount), local=state.on_this_machine)
        out.append(dataclasses.replace(mount, backend=overlay, review=True))
    return out


def jailed_under_review(
    mounts: Sequence[Mount],
    *,
    state: str | None,
    deny: Sequence[str] = (),
    every: bool = False,
    undo_bytes: int = DEFAULT_SERVER_UNDO_BYTES,
) -> JailedFS:
    """The jailed filesystem a server (or the ``vfs`` protocol) serves ``mounts`` as, those
    under review (all with ``every``) with their pending layers in the state store ``state``
    (None: the default one of these mounts), whose change log records its changes (what a
    dead server left under way there finished first)."""
    changelog = default_log(list(mounts), state, undo_bytes)
    vfs = JailedFS(Jail(under_review(mounts, changelog.store, every=every), deny=list(deny)))
    changes.attach(vfs, changelog)
    return vfs


def recorder(mount: Mount) -> Callable[[str], Any]:
    """What ``mount``'s store holds at a path, as a layer keeps it (``Node.was``): an empty
    fingerprint where nothing is; else its fingerprint by content (``images.fingerprint``: an ETag or a sha256
    each file, a folder with all it holds), and a link's text. Read raw: what the deny list
    hides is in it, as a change's check sees it."""
    vfs = JailedFS(Jail([mount]))

    def record(rel: str) -> Any:
        target = Target(mount, rel)
        entry = store.probe(vfs, target)
        if entry is None:
            return {"fp": []}
        spelt: dict[str, Any] = {"fp": [list(item) for item in images.fingerprint(vfs, target, contents=True)]}
        if entry.type == "symlink":
            spelt["to"] = store.readlink(vfs, target)
        return spelt

    return record


@dataclasses.dataclass(frozen=True)
class Sides:
    """One layer's two sides, at the root the layer was made for: the mount with the layer
    applied (``view``) and the store as it is (``base``)."""

    layer: Layer
    view: Mount
    base: Mount

    @property
    def overlay(self) -> OverlayMount:
        assert isinstance(self.view.backend, OverlayMount)
        return self.view.backend

    def at(self, rel: str) -> Target:
        return Target(self.view, rel)

    def display(self, rel: str) -> str:
        return self.view.display(rel)


def sides_of(mount: Mount) -> Sides:
    """The two sides of the layer of a mount served under review (narrowed by a client's roots
    or not: a layer's paths are below the root it was made for)."""
    overlay = mount.backend
    assert isinstance(overlay, OverlayMount)
    top = overlay.overlay.top
    layer = overlay.layer
    view_backend = dataclasses.replace(overlay, root=top)
    base_backend = overlay.under
    real = mount.real_root
    if overlay.root != top:  # a narrowed mount: its real root is the layer's below a few folders
        extra = posixpath.relpath(overlay.root, top)
        real = real[: -len(extra) - 1] if real.endswith("/" + extra) else real
    view = dataclasses.replace(mount, url=layer.url, backend=view_backend, real_root=real)
    base = dataclasses.replace(mount, url=layer.url, backend=base_backend, real_root=real, review=False)
    return Sides(layer, view, base)
