"""The root jail: every path a tool receives goes through ``Jail.resolve`` and nothing else.

Rules (docs/security.md, "What every backend guarantees"), in the order they are applied:

1. Input checks: a string, not empty, no NUL byte, no chained protocol (``zip::``).
2. Which mount: a URL goes to the mount of the same scheme whose root is a whole-component
   prefix (``s3://b/pre`` never admits ``s3://b/pre-evil``); an absolute host path to a local
   mount the same way; a relative path to the working directory.
3. ``.``, ``..``, empty components are resolved lexically; leaving the mount is ACCESS_DENIED.
4. Deny patterns and our temp-file names make a path invisible (NOT_FOUND). Deny patterns
   are gitignore patterns on the mount-relative path (``*.pem`` and ``.env`` at any depth,
   ``private/*`` and ``/x`` anchored to the mount root, ``dir/`` a folder, ``**`` any
   depth); a folder they hide hides everything in it. They are matched by RE2 (linear time).
5. On backends with symlinks, the real path of the target (or of its deepest existing
   ancestor, for a path to be created) must lie inside the real path of the mount root.

User strings never reach ``fsspec.open``/``url_to_fs``/``filesystem()``: the filesystem is
chosen by the mount, and only canonical mount-relative paths are joined to its root.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from vfs_mcp import sessions
from vfs_mcp.errors import AccessDenied, InvalidArgument, NotFound, ReadOnly, VfsError
from vfs_mcp.jail.denylist import deny_spec
from vfs_mcp.jail.globs import nfc
from vfs_mcp.jail.mounts import Mount
from vfs_mcp_backends.tempfiles import TEMP_PREFIX as TEMP_PREFIX  # re-exported: our temp files' names begin so
from vfs_mcp_backends.tempfiles import is_temp_name

MAX_PATH_CHARS = 4096
MAX_PATH_DEPTH = 512
"""Folders a path may lie below: a deeper one costs every step of a walk from its mount's root
(locks, lookups) that many times over, for no folder anyone works in."""

_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_CHAIN = re.compile(r"^[a-zA-Z][a-zA-Z0-9+._-]*::")

HOST_FOLDERS = frozenset(
    [
        "bin",
        "boot",
        "dev",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "media",
        "mnt",
        "opt",
        "proc",
        "root",
        "run",
        "sbin",
        "srv",
        "sys",
        "tmp",
        "usr",
        "var",
        "Applications",
        "Library",
        "System",
        "Users",
        "Volumes",
        "private",
        "cores",
        "nix",
        "snap",
    ]
)
"""Top-level folders of Unix and macOS hosts: on a server without a local mount, "/tmp/x" is a
host path that no mount holds, not a path in the working mount. A fixed list, so the answer
never depends on (or reveals) what the host has."""


@dataclass(frozen=True, slots=True)
class Target:
    """A resolved path: its mount, canonical mount-relative path, and how to name it."""

    mount: Mount
    rel: str

    @property
    def fs_path(self) -> str:
        return self.mount.fs_path(self.rel)

    @property
    def display(self) -> str:
        return self.mount.display(self.rel)

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1] if self.rel else self.mount.url

    @property
    def is_root(self) -> bool:
        return not self.rel

    def child(self, name: str) -> Target:
        return Target(self.mount, f"{self.rel}/{name}" if self.rel else name)

    def parent(self) -> Target:
        return Target(self.mount, self.rel.rpartition("/")[0])


def _check_text(path: str) -> None:
    if "\x00" in path:
        raise InvalidArgument("path contains a NUL byte")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument("path is not valid Unicode (it holds a lone surrogate)") from None


def canonical(parts: Sequence[str], floor: int, shown: str) -> list[str]:
    """Resolve ``.``/``..``/empty components; popping below ``floor`` leaves the jail."""
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if len(out) <= floor:
                raise AccessDenied(f"{shown} leaves its mount through '..'; use a path inside a mount")
            out.pop()
        else:
            out.append(part)
    return out


class Jail:
    """The mount table plus the working directory, resolving every user path."""

    def __init__(self, mounts: Sequence[Mount], deny: Sequence[str] = ()) -> None:
        """ValueError for no mounts, or for a deny pattern that can never hide anything."""
        if not mounts:
            raise ValueError("a jail needs at least one mount")
        self.mounts = list(mounts)
        self.deny = tuple(deny)
        self._deny_spec = deny_spec(self.deny, self.mounts) if self.deny else None
        self._hidden_folder = functools.lru_cache(maxsize=16384)(self._matches_folder)
        self.default_cwd = Target(self.mounts[0], "")
        """Where relative paths start for a session that has not changed directory."""

    @property
    def mounts(self) -> list[Mount]:
        """The mounts served, in the order given (the client's roots replace them: ``roots``)."""
        return self._mounts

    @mounts.setter
    def mounts(self, mounts: Sequence[Mount]) -> None:
        self._mounts = list(mounts)
        # Deepest root first: a path belongs to the most specific mount holding it.
        self._deepest_first = sorted(self._mounts, key=lambda m: len(m.root_parts()), reverse=True)
        self._below: dict[int, tuple[Mount, list[Mount]]] = {}

    def served(self, url: str) -> Mount:
        """The mount served as ``url`` (how a record or a buffer names its mount); NOT_FOUND when
        this jail serves none."""
        for mount in self._mounts:
            if mount.url == url:
                return mount
        raise NotFound(f"the mount {url} is not served here; go through a server that serves it")

    # -- resolution -------------------------------------------------------------------

    def resolve(
        self, path: str, *, follow: bool = True, write: bool = False, written: dict[str, str] | None = None
    ) -> Target:
        """Map a user path to a Target inside a mount, or raise.

        follow: when False, a final symlink is itself the target (delete, move source,
            info); its parent must still resolve inside the mount.
        write: refuse with READ_ONLY when the mount is read-only.
        written: the call's paths as the mount names them -> as its caller wrote them
            (``CallContext.written``): ``path`` is noted there, for ``as_written``.
        """
        target = self._locate(path)
        if target.rel.count("/") >= MAX_PATH_DEPTH:
            raise InvalidArgument(
                f"path lies {target.rel.count('/')} folders deep; at most {MAX_PATH_DEPTH} are served"
            )
        if written is not None and path != target.display:
            written.setdefault(target.display, path)
        self._check_visible(target.rel, path)
        landing = self._check_real(target, follow, path) if target.mount.capabilities.symlinks else target
        if write:
            self._check_writable(target, landing)
        return target

    def locate(self, path: str) -> Target:
        """Where ``path`` is spelt to lie: its mount and canonical path inside, the deny list
        applied, links neither followed nor checked. Only for naming what a store keeps of a
        path (a pending layer's entries), never for reading or writing it: that is ``resolve``."""
        target = self._locate(path)
        self._check_visible(target.rel, path)
        return target

    def _locate(self, raw: str) -> Target:
        if not isinstance(raw, str) or raw == "":
            raise InvalidArgument("path is empty; use '.' for the working directory")
        _check_text(raw)
        if len(raw) > MAX_PATH_CHARS:
            raise InvalidArgument(f"path is longer than {MAX_PATH_CHARS} characters")
        if _CHAIN.match(raw):
            raise AccessDenied(f"{raw} chains protocols ('::'), which is not allowed; use a path inside a mount")
        url = _URL.match(raw)
        if url:
            scheme = url.group(1).lower()
            if scheme == "file":
                split = urlsplit(raw)
                if split.netloc not in ("", "localhost"):
                    raise AccessDenied(f"{raw} names another host; use a path inside a mount")
                host = unquote(split.path)
                _check_text(host)  # percent-encoding must not smuggle what the raw check refused
                return self._match_host_path(host, raw)
            return self._match_url(scheme, raw[url.end() :], raw)
        if raw == "~" or raw.startswith("~/"):
            return self._match_host_path(os.path.expanduser(raw), raw)
        if raw.startswith("/"):
            try:
                return self._match_host_path(raw, raw)
            except AccessDenied:
                if self.cwd.mount.is_local:
                    raise
                first = next((part for part in raw.split("/") if part), "")
                if first in HOST_FOLDERS:
                    mounts = ", ".join(m.url for m in self.mounts[:5]) + (", ..." if len(self.mounts) > 5 else "")
                    raise AccessDenied(
                        f"no mount holds {raw}; mounts are: {mounts}. Use a path relative to the working "
                        "directory or a mount's URL"
                    ) from None
            # On a memory or object-store working mount, "/x" means that mount's root.
            return self._relative_to(Target(self.cwd.mount, ""), raw, raw)
        return self._relative_to(self.cwd, raw, raw)

    def _relative_to(self, base: Target, raw: str, shown: str) -> Target:
        base_parts = base.rel.split("/") if base.rel else []
        parts = canonical([*base_parts, *raw.split("/")], 0, shown)
        return self.most_specific(Target(base.mount, "/".join(parts)))

    def most_specific(self, target: Target) -> Target:
        """``target`` as the deepest mount holding it sees it: a mount inside another one
        decides for its paths (read-only, say), whatever mount the path was spelt from."""
        mount = target.mount
        inner_mounts = self._mounts_below(mount)
        if not inner_mounts:  # the usual case: no mount inside this one, nothing to compare
            return target
        parts = [*mount.root_parts(), *(target.rel.split("/") if target.rel else [])]
        for inner in inner_mounts:
            root = inner.root_parts()
            if parts[: len(root)] == root:
                return Target(inner, "/".join(parts[len(root) :]))
        return target

    def _mounts_below(self, mount: Mount) -> list[Mount]:
        """The mounts of ``mount``'s kind whose roots lie below its root, deepest first (made
        once per mount while the mounts stay)."""
        known = self._below.get(id(mount))
        if known is not None and known[0] is mount:
            return known[1]
        outer = mount.root_parts()
        below = [
            inner
            for inner in self._deepest_first
            if inner.is_local == mount.is_local
            and inner.scheme == mount.scheme
            and len(inner.root_parts()) > len(outer)
            and inner.root_parts()[: len(outer)] == outer
        ]
        self._below[id(mount)] = (mount, below)
        return below

    def _match_host_path(self, host: str, shown: str) -> Target:
        if not host.startswith("/"):
            raise InvalidArgument(f"{shown} is not an absolute path")
        parts = canonical(host.split("/"), 0, shown)
        for mount in self._by_depth(lambda m: m.is_local):
            for root in (mount.root_parts(), [p for p in mount.real_root.split("/") if p]):
                if parts[: len(root)] == root:
                    return Target(mount, "/".join(parts[len(root) :]))
        raise AccessDenied(f"{shown} is outside every mount; call list_allowed_directories")

    def _match_url(self, scheme: str, rest: str, shown: str) -> Target:
        parts = canonical(rest.split("/"), 0, shown)
        for mount in self._by_depth(lambda m: not m.is_local and m.scheme == scheme):
            root = mount.root_parts()
            if parts[: len(root)] == root:
                return Target(mount, "/".join(parts[len(root) :]))
        raise AccessDenied(f"{shown} is outside every mount; call list_allowed_directories")

    def _by_depth(self, keep: Callable[[Mount], bool]) -> list[Mount]:
        return [m for m in self._deepest_first if keep(m)]

    # -- policy -----------------------------------------------------------------------

    def is_hidden(self, rel: str) -> bool:
        """Whether a mount-relative path is invisible to every tool (deny list, temp files)."""
        # The substring test first: a walk asks this of every entry, however deep.
        if TEMP_PREFIX in rel and any(is_temp_name(part) for part in rel.split("/")):
            return True
        if self._deny_spec is None or not rel:
            return False
        rel = nfc(rel)
        parts = rel.split("/")
        # A hidden folder hides what is inside it, whatever a later negation says (as in git).
        if any(self._hidden_folder("/".join(parts[:depth])) for depth in range(1, len(parts))):
            return True
        # The path itself may be a file or a folder: either reading hides it.
        return self._deny_spec.match_file(rel) or self._hidden_folder(rel)

    def _matches_folder(self, rel: str) -> bool:
        assert self._deny_spec is not None
        return bool(self._deny_spec.match_file(rel + "/"))

    def check_write(self, target: Target) -> None:
        """The policy of a path a change is about to write, asked again when it commits (the
        mounts, the deny list or a link may have changed since it was resolved): its mount is
        still served and writable (and so is the most specific mount holding it, and the mount
        its folders' links lead into), the deny list does not hide it, and no link leads its
        folders out of the mount or somewhere hidden."""
        if target.mount not in self.mounts:
            raise NotFound(f"{target.display} is on a mount that is no longer served")
        self._check_visible(target.rel, target.display)
        landing = self._check_real(target, False, target.display) if target.mount.capabilities.symlinks else target
        self._check_writable(target, landing)

    def _check_writable(self, target: Target, landing: Target) -> None:
        """READ_ONLY unless the mount ``target`` is spelt in, the most specific mount holding
        it and the mount it lands in through links (``landing``) are all writable: the policy
        of the mount a path resolves into decides, however it is spelt."""
        if target.mount.read_only or self.most_specific(target).mount.read_only:
            raise ReadOnly(f"{target.display} is on a read-only mount; see list_allowed_directories")
        if landing.mount.read_only:
            raise ReadOnly(
                f"{target.display} leads through a symbolic link into the read-only mount {landing.mount.url}; "
                "see list_allowed_directories"
            )

    def check_tree(self, target: Target) -> None:
        """The policy of a folder a change takes whole (deletes, moves, fills, puts back): it
        holds no other mount's root, which no change through this mount may reach into, as it
        is spelt nor where its links lead."""
        self._check_holds_no_mount(target)
        if target.mount.capabilities.symlinks:
            landing = self._check_real(target, False, target.display)
            if landing.mount is not target.mount or landing.rel != target.rel:
                self._check_holds_no_mount(landing, shown=target.display)

    def _check_holds_no_mount(self, target: Target, shown: str | None = None) -> None:
        mount = target.mount
        parts = [*mount.root_parts(), *(target.rel.split("/") if target.rel else [])]
        for other in self.mounts:
            if other is mount or other.is_local != mount.is_local or other.scheme != mount.scheme:
                continue
            root = other.root_parts()
            if len(root) > len(parts) and root[: len(parts)] == parts:
                error = ReadOnly if other.read_only else AccessDenied
                raise error(f"{shown or target.display} holds the mount {other.url}; a change to all of it is refused")

    def _check_visible(self, rel: str, shown: str) -> None:
        if rel and self.is_hidden(rel):
            raise NotFound(f"{shown} does not exist; list its folder to check the name")

    def _check_real(self, target: Target, follow: bool, shown: str) -> Target:
        """Where ``target`` lands once links are followed (all of them, or all but a final one
        when not ``follow``): inside its mount's real root, not hidden, in the deepest mount
        whose real root holds it. ACCESS_DENIED for a link that leads out, NOT_FOUND for one
        that leads somewhere the deny list hides."""
        # Defense in depth: the lexical check above cannot see symlinks; the real path can.
        mount = target.mount
        path = target.fs_path
        real = mount.backend.resolve_links(path, follow)
        if not _holds(mount.real_root, real):
            raise AccessDenied(f"{shown} resolves outside its mount through a symbolic link; refused")
        landing = mount
        for other in self.mounts:
            if other.is_local and len(other.real_root) > len(landing.real_root) and _holds(other.real_root, real):
                landing = other
        rel = real[len(landing.real_root) :].strip("/")
        if rel and self.is_hidden(rel):
            raise NotFound(f"{shown} does not exist; list its folder to check the name")
        # No link on the way (the usual case): the landing is the target itself, not a copy of it.
        return target if landing is mount and rel == target.rel else Target(landing, rel)

    # -- working directory ------------------------------------------------------------

    @property
    def cwd(self) -> Target:
        """Where relative paths start: the current session's working directory (see ``sessions``)."""
        state = sessions.current.get()
        cwd = state.cwd if state is not None else None
        return cwd if isinstance(cwd, Target) and cwd.mount in self.mounts else self.default_cwd

    def chdir(self, target: Target) -> None:
        """Change the current session's working directory (the default one outside sessions);
        INVALID_ARGUMENT in a request without a session, which nothing could keep it for."""
        state = sessions.current.get()
        if state is not None and state.sessionless:
            raise InvalidArgument(
                "this request has no session (MCP 2026-07-28 over HTTP), so no working directory outlives it: "
                f"relative paths start at {self.default_cwd.display}; pass absolute paths or URLs instead"
            )
        if state is not None:
            state.cwd = target
        else:
            self.default_cwd = target


def _holds(root: str, real: str) -> bool:
    """Whether the host path ``real`` is ``root`` or lies below it."""
    return real == root or real.startswith(root.rstrip("/") + "/")


@contextmanager
def as_written(written: dict[str, str]) -> Iterator[None]:
    """Within, an error naming a path the caller wrote another way (``missing_dir``, named
    ``/home/me/proj/missing_dir``) names it both ways: ``missing_dir (/home/me/proj/missing_dir)``.
    The model finds its own words, and where they led. ``written``: the call's paths, as
    ``Jail.resolve`` noted them (``CallContext.written``)."""
    try:
        yield
    except VfsError as err:
        err.message = name_as_written(err.message, written)
        err.args = (err.message,)
        raise


def name_as_written(message: str, written: dict[str, str]) -> str:
    """``message`` with the first mention of each path in ``written`` (as the mount names it,
    longest first, as a whole word) followed by how the caller wrote it."""
    for display in sorted(written, key=len, reverse=True):
        found = re.search(re.escape(display) + r"(?=$|[\s:;,)'\"])", message)
        if found:
            both = f"{written[display]} ({display})"
            message = message[: found.start()] + both + message[found.end() :]
    return message
