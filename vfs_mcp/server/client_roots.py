"""Client roots: which mounts a client's ``roots/list`` answer leaves the server with.

Three modes (``Settings.client_roots``):

- ``off``: the client's roots are never asked for; the mounts are the operator's.
- ``narrow`` (ROOTs given on the command line): a client root that lies inside an operator
  mount, by the jail's own rules (whole components, ``..``, symbolic links, deny patterns),
  narrows the mounts to that folder, with the policy (read-only, hard links) of the mount it
  lies in. A root outside every mount is refused and reported. When at least one root is
  usable the mounts are exactly the usable roots; when none is, the operator's mounts stay:
  client roots can only narrow the set, never widen it.
- ``mount`` (no ROOT given): the client's ``file://`` roots become local mounts. When the
  client offers none that is usable, tools answer ACCESS_DENIED saying why; a client without
  the roots capability gets the fallback mount (the current folder).

In every mode a root that holds the server's state store, or lies inside it, is refused
(``vfs_mcp.jail.state_place``): the store holds what the deny list hides, and undo's records.

Nothing here speaks MCP: the server fetches the roots and hands the URIs to ``ClientRoots``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote, urlsplit

from vfs_mcp.errors import AccessDenied, InvalidArgument, NotFound, VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.jail.state_place import Place, why_refused

Mode = Literal["off", "narrow", "mount"]

log = logging.getLogger("vfs_mcp")


@dataclass(frozen=True)
class Refusal:
    """A client root the server cannot use, and why."""

    uri: str
    reason: str

    def __str__(self) -> str:
        return f"{self.uri} ({self.reason})"


@dataclass(frozen=True)
class RootsPlan:
    """The mounts the client's roots leave (empty: none usable) and the roots refused."""

    mounts: list[Mount]
    refused: list[Refusal]


def narrowed(mount: Mount, target: Target) -> Mount:
    """The mount ``mount`` cut down to the folder ``target`` inside it, with the same policy."""
    if target.is_root:
        return mount
    backend = mount.backend.narrowed(target.fs_path)
    real = backend.host_path(backend.root) or backend.root
    return Mount(
        url=target.display,
        backend=backend,
        scheme=mount.scheme,
        read_only=mount.read_only,
        real_root=real
        if mount.layer is None
        else mount.real_root.rstrip("/") + target.fs_path[len(mount.backend.root) :],
        deny_hardlinked=mount.deny_hardlinked,
        review=mount.review,
    )


def _narrow(uri: str, vfs: JailedFS) -> Mount:
    target = vfs.resolve(uri)  # the jail decides: outside every mount is ACCESS_DENIED
    vfs.require_dir(target)
    return narrowed(target.mount, target)


def _local(uri: str, policy: Mount) -> Mount:
    split = urlsplit(uri)
    if split.scheme.lower() != "file":
        raise InvalidArgument("only file:// roots can become mounts")
    if split.netloc not in ("", "localhost"):
        raise AccessDenied("names another host")
    path = unquote(split.path)
    if not path.startswith("/") or "\x00" in path:
        raise InvalidArgument("is not an absolute path")
    try:
        return open_mount(MountSpec(path, read_only=policy.read_only, deny_hardlinked=policy.deny_hardlinked))
    except ValueError as exc:
        raise NotFound("is not an existing folder") from exc


def plan_mounts(
    uris: Sequence[str], mode: Mode, operator: Sequence[Mount], deny: Sequence[str] = (), store: Place | None = None
) -> RootsPlan:
    """The mounts a client's root URIs give in ``mode`` over the operator's mounts.

    ``narrow``: roots must lie inside ``operator``; ``mount``: roots become local mounts with
    the policy of ``operator[0]`` (the fallback mount, carrying --read-only and the like).
    Either way a root that holds the state store (``store``) or lies inside it is refused.
    """
    vfs = JailedFS(Jail(operator, deny=deny))
    mounts: list[Mount] = []
    refused: list[Refusal] = []
    for uri in dict.fromkeys(uris):
        try:
            mount = _narrow(uri, vfs) if mode == "narrow" else _local(uri, operator[0])
        except VfsError as err:
            refused.append(Refusal(uri, _reason(err, uri)))
            continue
        why = None if store is None else why_refused(store, mount)
        if why is not None:  # Defense in depth: the store holds what the deny list hides, and undo's records
            refused.append(Refusal(uri, f"ACCESS_DENIED: {why}"))
            continue
        if all(m.url != mount.url for m in mounts):
            mounts.append(mount)
    return RootsPlan(mounts, refused)


def _reason(err: VfsError, uri: str) -> str:
    """The error's code and text, without the URI it may start with (the refusal names it)."""
    return f"{err.code}: {err.message.removeprefix(uri).strip()}"


def swap(jail: Jail, mounts: Sequence[Mount]) -> bool:
    """Replace the jail's mounts in one step, keeping the working directory where it still exists.

    The working directory moves first, into the new mounts, so a resolve running meanwhile in
    a worker thread sees either the old table or the new one, never a directory of a mount
    that is gone. Returns whether anything changed.
    """
    new = list(mounts)
    if new == jail.mounts:
        return False
    try:
        cwd = Jail(new, deny=jail.deny).resolve(jail.default_cwd.display)
    except VfsError:
        cwd = Target(new[0], "")
    jail.default_cwd = cwd
    jail.mounts = new
    return True


@dataclass
class ClientRoots:
    """The server's view of the client's roots: when to ask again, and what the last answer gave.

    ``operator`` are the mounts the server was started with (in ``mount`` mode, the fallback).
    ``refresh`` bounds how long an answer is trusted on a 2026-07-28 connection, which has no
    ``roots/list_changed``; older connections ask again only after that notification.
    """

    mode: Mode
    operator: list[Mount]
    refresh: float = 30.0
    store: Place | None = None
    """Where the server's state store is: no root of the client may reach it."""
    fetched_at: float | None = None
    known: bool = False
    """Whether this client's roots were settled at least once (they may be due again)."""
    denied: str | None = None
    """Why no mount is usable (``mount`` mode): requests for files are refused with it (``check``)."""
    refused: list[Refusal] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def due(self, modern: bool) -> bool:
        """Whether the roots must be asked for before serving a request."""
        if self.mode == "off":
            return False
        if self.fetched_at is None:
            return True
        return modern and time.monotonic() - self.fetched_at >= self.refresh

    def check(self) -> None:
        """ACCESS_DENIED, saying why, when the client's roots leave no mount (``mount`` mode)."""
        if self.denied:
            raise AccessDenied(self.denied)

    def reset(self, jail: Jail) -> None:
        """A new client: forget the last one's roots; they are asked for at its first request."""
        self.fetched_at, self.known, self.denied, self.refused = None, False, None, []
        swap(jail, self.operator)

    def changed(self) -> None:
        """The client said its roots changed: ask again before the next request."""
        self.fetched_at = None

    def settle(self, jail: Jail, uris: Sequence[str] | None) -> None:
        """Apply the client's answer (``None``: the client offers no roots) to the jail.

        Each refusal and change of mounts is logged once, not at every refresh. Runs in a
        worker thread (it touches the disk), one answer at a time.
        """
        with self._lock:
            self._settle(jail, uris, first=not self.known)
            self.fetched_at, self.known = time.monotonic(), True

    def _settle(self, jail: Jail, uris: Sequence[str] | None, first: bool) -> None:
        if uris is None:
            self.denied, self.refused = None, []
            changed = swap(jail, self.operator) or first
            if changed and self.mode == "mount":
                log.info("the client offers no roots; serving %s", _urls(self.operator))
            return
        plan = plan_mounts(uris, self.mode, self.operator, jail.deny, self.store)
        news = plan.refused != self.refused
        self.refused = plan.refused
        if news:
            for refusal in plan.refused:
                log.warning("client root %s refused: %s", refusal.uri, refusal.reason)
        if plan.mounts:
            self.denied = None
            if swap(jail, plan.mounts):
                log.info("mounts from the client's roots: %s", _urls(plan.mounts))
        elif self.mode == "mount":
            offered = "; ".join(str(r) for r in plan.refused) or "none"
            self.denied = (
                f"the client offered no usable roots (refused: {offered}); add a folder as a root in the "
                "client, or start vfs-mcp with ROOT arguments"
            )
        else:
            self.denied = None
            swap(jail, self.operator)
            if plan.refused and news:
                log.warning("no client root lies inside the server's mounts; keeping %s", _urls(self.operator))


def _urls(mounts: Sequence[Mount]) -> str:
    return ", ".join(m.url for m in mounts)
