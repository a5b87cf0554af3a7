"""Where the state store may be: a private folder per user and set of mounts by default, and
never where a mount reaches it — not inside a served folder or prefix, not holding one — whoever
named the mount (the operator's ROOTs and config, a client's roots, at start or later). Light on
purpose: a server asks at start whether dead servers left work there without importing the
write path.

Places are compared as the jail compares paths (``vfs_mcp.jail.resolve``): the scheme by its
store (``S3://``, ``s3a://`` and ``s3://`` are one), ``file://localhost/x`` as ``/x``, ``.`` and
``..`` resolved, host folders by their real paths (links followed)."""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from vfs_mcp.errors import VfsError
from vfs_mcp.jail.resolve import canonical
from vfs_mcp.sessions import Slot
from vfs_mcp_backends.registry import family_of

_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


class StateUnavailable(OSError):
    """The state store cannot be used (not private, inside a served mount, unreachable)."""


@dataclass(frozen=True)
class Place:
    """A location as the jail sees it: its store's family (``file`` for host folders) and its
    canonical path parts (a host folder's real path; ``bucket/prefix`` on an object store)."""

    family: str
    parts: tuple[str, ...]

    def holds(self, other: Place) -> bool:
        """Whether ``other`` is this place or lies inside it."""
        return self.family == other.family and other.parts[: len(self.parts)] == self.parts

    def meets(self, other: Place) -> bool:
        """Whether either place holds the other (a mount there would reach the store)."""
        return self.holds(other) or other.holds(self)


def host_folder(location: str) -> str | None:
    """The absolute host path a location names (a path, ``~/x``, ``file:///x``,
    ``file://localhost/x``); None for a URL of another store. ``StateUnavailable`` for a
    ``file://`` URL of another host."""
    url = _URL.match(location)
    if url is None:
        return os.path.abspath(os.path.expanduser(location))
    if url.group(1).lower() != "file":
        return None
    split = urlsplit(location)
    if split.netloc not in ("", "localhost"):
        raise StateUnavailable(errno.EINVAL, f"{location} names another host; give a folder of this machine")
    return os.path.abspath(unquote(split.path))


def place_of(location: str) -> Place:
    """The place a location (a URL or a host path, as an operator writes it) names."""
    folder = host_folder(location)
    if folder is not None:
        return Place("file", tuple(part for part in os.path.realpath(folder).split("/") if part))
    url = _URL.match(location)
    assert url is not None
    try:
        parts = canonical(location[url.end() :].split("/"), 0, location)
    except VfsError as err:
        raise StateUnavailable(errno.EINVAL, f"{location}: {err.message}") from None
    return Place(family_of(url.group(1)), tuple(parts))


def places_of(mount: Any) -> list[Place]:
    """Where a mount (``vfs_mcp.jail.mounts.Mount``) reaches: its root as written, and on a
    host folder its real root too."""
    if mount.is_local:
        return [place_of(root) for root in dict.fromkeys([mount.real_root or mount.url, mount.url])]
    return [Place(family_of(mount.scheme), tuple(mount.root_parts()))]


def meeting(store: Place, mounts: Sequence[Any]) -> Any | None:
    """The first of ``mounts`` that holds the store's place or lies inside it."""
    for mount in mounts:
        if any(store.meets(place) for place in places_of(mount)):
            return mount
    return None


def why_refused(store: Place, mount: Any) -> str | None:
    """Why a mount a client offers cannot be served beside the store (None: it can). Names
    neither the store's host path nor its URL: a client never learns where it is."""
    for place in places_of(mount):
        if place.holds(store):
            return (
                "it holds this server's state store (the undo records, with the before-images of every change); "
                "offer a folder that does not hold it, or start vfs-mcp with --state elsewhere"
            )
        if store.holds(place):
            return "it lies inside this server's state store; offer a folder outside it"
    return None


def check_outside(location: str, served: Sequence[str], urls: Sequence[str]) -> Place:
    """The place of the store at ``location``, once it is neither inside nor around a served
    mount (``served``: the real host folders of the local mounts; ``urls``: every mount's root
    as written); ``StateUnavailable`` naming both otherwise. Asked before anything is written
    there."""
    store = place_of(location)
    for mount in [*served, *urls]:
        place = place_of(mount)
        if place.holds(store):
            raise StateUnavailable(
                errno.EPERM,
                f"the state store {location} is inside the served mount {mount} (a model could read it there); "
                "pass --state with a place outside every mount",
            )
        if store.holds(place):
            raise StateUnavailable(
                errno.EPERM,
                f"the served mount {mount} lies inside the state store {location} (a model could change its "
                "records there); pass --state with a place outside every mount",
            )
    return store


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
        try:
            check_outside(folder, served, urls)
        except StateUnavailable:
            continue
        return folder
    raise StateUnavailable(
        errno.EPERM,
        f"every default place for vfs-mcp's state ({', '.join(candidates)}) is inside a served folder; "
        "pass --state with a folder outside them",
    )


def decided(state: str | None, mounts: Sequence[Any]) -> str | None:
    """Where a server of ``mounts`` keeps its state: ``state`` (``--state``), else the default
    folder of these mounts; None for a server whose every mount is in memory (a store of its
    own, in memory)."""
    if state is not None:
        return state
    if all(mount.scheme == "memory" for mount in mounts):
        return None
    served = [mount.real_root for mount in mounts if mount.is_local and mount.real_root]
    return default_folder(served, [mount.url for mount in mounts])


OPENER: Slot[Callable[[], object]] = Slot("how the change log is opened")
"""Where a ``JailedFS`` keeps how to open its change log (a ``changes.log.ChangeLog``), when its
server decided where its state store is (``--state``): a server that only reads never opens it."""


def pending_in(mounts: Sequence[Any]) -> bool:
    """Whether the default state folder of ``mounts`` holds work a dead server left under way
    (a listing of ``pending/`` and of ``instances/``, where a server's journal keeps the record
    of a change of several steps: a server starts without opening the store when there is none)."""
    try:
        folder = decided(None, mounts)
        if folder is None:
            return False
        journals = (name.endswith(".journal") for name in os.listdir(os.path.join(folder, "instances")))
        return bool(os.listdir(os.path.join(folder, "pending"))) or any(journals)
    except OSError:
        return False
