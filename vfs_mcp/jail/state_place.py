"""Where the state store lives by default: a private folder per user and set of mounts,
never inside a served folder (a model could read it there). Light on purpose: a server
asks at start whether dead servers left work there without importing the write path."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Sequence
from typing import Any


class StateUnavailable(OSError):
    """The state store cannot be used (not private, inside a served mount, unreachable)."""


def default_folder(served: Sequence[str], urls: Sequence[str]) -> str:
    """A private folder per user and set of mounts, outside every served folder: under
    ``$XDG_STATE_HOME`` (or ``~/.local/state``), else ``/var/tmp``, else the temp folder."""
    digest = hashlib.sha256("\n".join(sorted(urls)).encode()).hexdigest()[:16]
    home = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    candidates = [
        os.path.join(home, "vfs-mcp"),
        os.path.join("/var/tmp", f"vfs-mcp-{os.geteuid()}"),
        os.path.join(os.environ.get("TMPDIR") or "/tmp", f"vfs-mcp-{os.geteuid()}"),
    ]
    for base in candidates:
        folder = os.path.join(base, digest)
        if not inside_any(os.path.realpath(folder), served):
            return folder
    raise StateUnavailable(
        errno.EPERM,
        f"every default place for vfs-mcp's state ({', '.join(candidates)}) is inside a served folder; "
        "pass --state with a folder outside them",
    )


def inside_any(path: str, folders: Sequence[str]) -> str | None:
    """The first of ``folders`` that ``path`` is (or is inside)."""
    for folder in folders:
        if path == folder or path.startswith(folder.rstrip("/") + "/"):
            return folder
    return None


def pending_in(mounts: Sequence[Any]) -> bool:
    """Whether the default state folder of ``mounts`` holds work a dead server left under way
    (one listing: a server starts without opening the store when there is none)."""
    if all(mount.scheme == "memory" for mount in mounts):
        return False
    served = [mount.real_root for mount in mounts if mount.is_local and mount.real_root]
    try:
        folder = default_folder(served, [mount.url for mount in mounts])
        return bool(os.listdir(os.path.join(folder, "pending")))
    except (OSError, StateUnavailable):
        return False
