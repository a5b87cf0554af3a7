"""Which state store holds the pending layers of a set of mounts, for a person's review."""

from __future__ import annotations

import os
from collections.abc import Sequence

from vfs_mcp.changes.state import LocalState, StateStore, open_state
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.state_place import default_folder
from vfs_mcp_backends.layers import FOLDER, layer_key


def state_for(mounts: Sequence[Mount], url: str | None) -> StateStore:
    """The state store ``url``; without one, the default store of a server of exactly these
    mounts when it holds a layer of one of them, else another default store (of a server of
    more mounts) that does, else the default store of these mounts."""
    served = [mount.real_root for mount in mounts if mount.is_local and mount.real_root]
    urls = [mount.url for mount in mounts]
    if url is not None:
        return open_state(url, served=served, urls=urls)
    own = default_folder(served, urls)
    names = {f"{layer_key(mount.url)}.layer" for mount in mounts}
    for folder in [own, *_siblings(own)]:
        if any(os.path.exists(os.path.join(folder, FOLDER, name)) for name in names):
            return LocalState(folder)
    return open_state(None, served=served, urls=urls)


def _siblings(folder: str) -> list[str]:
    """The other default state folders beside ``folder`` (one per set of mounts served), newest first."""
    parent = os.path.dirname(folder)
    try:
        entries = [os.path.join(parent, name) for name in os.listdir(parent)]
    except OSError:
        return []
    found = [entry for entry in entries if entry != folder and os.path.isdir(os.path.join(entry, FOLDER))]
    return sorted(found, key=lambda entry: os.stat(entry).st_mtime, reverse=True)
