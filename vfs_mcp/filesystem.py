"""The jailed filesystem the operations see: fsspec's verbs over user paths.

Every method takes user paths (or Targets from ``resolve``), goes through the jail, runs
the backend call under ``guard`` (the one place foreign errors are translated), and names
results the way the user addresses the mount. Operations never touch a backend directly.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import mimetypes
import os
import posixpath
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, BinaryIO, Literal

from vfs_mcp.errors import (
    AccessDenied,
    AlreadyExists,
    Conflict,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotFound,
    translate,
)
from vfs_mcp.jail import TEMP_PREFIX, Jail, Target
from vfs_mcp.mounts import Mount

Kind = Literal["file", "directory", "symlink", "other"]


@dataclass
class Entry:
    """Metadata of one path, the same fields on every backend (None where it has none)."""

    target: Target
    type: Kind
    size: int
    modified: float | None = None
    created: float | None = None
    accessed: float | None = None
    mode: int | None = None
    is_symlink: bool = False
    links: int | None = None
    etag: str | None = None
    storage_class: str | None = None

    @property
    def path(self) -> str:
        return self.target.display

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def mime_type(self) -> str | None:
        if self.type != "file":
            return None
        return mimetypes.guess_type(self.target.rel)[0] or "application/octet-stream"


def _timestamp(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class JailedFS:
    """One client's view: the jail (mounts, working directory) and the verbs over it."""

    def __init__(self, jail: Jail) -> None:
        self.jail = jail
        self.caches: dict[str, Any] = {}
        """Per-client caches the operations keep (line indexes), keyed by their owner."""
        self.bytes_read = 0
        self.bytes_written = 0

    @property
    def mounts(self) -> list[Mount]:
        return self.jail.mounts

    def resolve(self, path: str, *, follow: bool = True, write: bool = False) -> Target:
        return self.jail.resolve(path, follow=follow, write=write)

    @contextlib.contextmanager
    def guard(self, target: Target | str) -> Iterator[None]:
        """Translate any foreign exception raised inside into our error tree."""
        shown = target.display if isinstance(target, Target) else target
        try:
            yield
        except Exception as exc:  # this is the one translation boundary
            raise translate(exc, shown) from exc

    # -- metadata ---------------------------------------------------------------------

    def info(self, target: Target, *, follow: bool = True) -> Entry:
        """Metadata of a path; NOT_FOUND if it does not exist."""
        with self.guard(target):
            if target.mount.capabilities.host_paths:
                return self._local_info(target, follow)
            if not target.is_root:
                target.mount.backend.invalidate(target.fs_path)
            raw = target.mount.fs.info(target.fs_path)
            return self._entry(target, raw)

    def _local_info(self, target: Target, follow: bool) -> Entry:
        tree = target.mount.tree
        lst = tree.stat(target.rel, follow=False)
        is_link = stat.S_ISLNK(lst.st_mode)
        return _stat_entry(target, tree.stat(target.rel) if (follow and is_link) else lst, is_link)

    def _entry(self, target: Target, raw: dict[str, Any]) -> Entry:
        kind: Kind = "directory" if raw.get("type") == "directory" else "file"
        etag = raw.get("ETag") or raw.get("etag")
        return Entry(
            target=target,
            type=kind,
            size=int(raw.get("size") or 0) if kind == "file" else 0,
            modified=_timestamp(raw.get("LastModified") or raw.get("mtime")),
            created=_timestamp(raw.get("created")),
            etag=str(etag).strip('"') if etag else None,
            storage_class=raw.get("StorageClass"),
        )

    def exists(self, target: Target) -> bool:
        try:
            self.info(target, follow=False)
        except NotFound:
            return False
        return True

    def require_file(self, target: Target) -> Entry:
        entry = self.info(target)
        if entry.type == "directory":
            raise IsADirectory(f"{target.display} is a directory; use list_directory or directory_tree")
        if entry.type != "file":
            raise InvalidArgument(f"{target.display} is not a regular file")
        self._check_links(entry)
        return entry

    def _check_links(self, entry: Entry) -> None:
        # A hard link can share a file with a place outside the mount; the option refuses them.
        if entry.target.mount.deny_hardlinked and (entry.links or 1) > 1:
            raise AccessDenied(f"{entry.path} has other hard links; refused on this mount (deny_hardlinked)")

    def require_dir(self, target: Target) -> Entry:
        entry = self.info(target)
        if entry.type != "directory":
            raise NotADirectory(f"{target.display} is not a directory")
        return entry

    # -- reading ----------------------------------------------------------------------

    def cat(self, target: Target, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes of a file, or of ``[start, end)``; a start past the end gives ``b""``."""
        with self.guard(target):
            if target.mount.capabilities.host_paths:
                data: bytes = target.mount.tree.read(target.rel, start, end)
            else:
                # s3fs: the 2nd positional argument is version_id, so always by keyword.
                data = target.mount.fs.cat_file(target.fs_path, start=start, end=end)
            self.bytes_read += len(data)
            return data

    @contextlib.contextmanager
    def open_read(self, target: Target) -> Iterator[BinaryIO]:
        """A seekable binary reader that fetches only what is read (range requests on S3)."""
        with self.guard(target):
            if target.mount.capabilities.host_paths:
                handle = target.mount.tree.open_read(target.rel)
            else:
                handle = target.mount.fs.open(target.fs_path, "rb", cache_type="none")
        try:
            with self.guard(target):
                yield handle
        finally:
            handle.close()

    def version(self, target: Target, entry: Entry | None = None) -> tuple[Any, ...]:
        """What identifies one version of a file: its path, size and mtime or etag.

        ``entry``: the file's metadata when the caller has just read it (saves a lookup).
        """
        entry = entry or self.require_file(target)
        return (target.mount.url, target.rel, entry.size, entry.etag or entry.modified or entry.created)

    # -- listing ----------------------------------------------------------------------

    def ls(self, target: Target) -> list[Entry]:
        """The visible entries of a directory, sorted by name."""
        self.require_dir(target)
        with self.guard(target):
            if target.mount.capabilities.host_paths:
                entries = [_stat_entry(target.child(n), st) for n, st in target.mount.tree.scan(target.rel)]
            else:
                target.mount.backend.invalidate(target.fs_path)
                entries = []
                for raw in target.mount.fs.ls(target.fs_path, detail=True):
                    name = posixpath.basename(str(raw["name"]).rstrip("/"))
                    if name and str(raw["name"]).rstrip("/") != target.fs_path.rstrip("/"):
                        entries.append(self._entry(target.child(name), raw))
        visible = [e for e in entries if not self.jail.is_hidden(e.target.rel)]
        return sorted(visible, key=lambda e: e.name)

    def walk(self, target: Target, max_depth: int | None = None) -> Iterator[Entry]:
        """Every visible path below a directory, depth first in name order; never follows a link."""
        yield from self.find(target, max_depth)

    def find(self, target: Target, max_depth: int | None = None) -> list[Entry]:
        """Every visible path below a directory in one listing where the backend can (one paged
        listing on S3, not one per "directory"), in depth-first name order. Links are reported,
        never descended. ``max_depth=1`` lists direct children only.
        """
        self.require_dir(target)
        with self.guard(target):
            if target.mount.capabilities.host_paths:
                entries = self._local_find(target, max_depth)
            else:
                entries = self._remote_find(target, max_depth)
        visible = [e for e in entries if not self.jail.is_hidden(e.target.rel)]
        return sorted(visible, key=lambda e: e.target.rel.split("/"))

    def _local_find(self, target: Target, max_depth: int | None) -> list[Entry]:
        walk = target.mount.tree.walk(target.rel, max_depth)
        return [_stat_entry(Target(target.mount, f"{target.rel}/{rel}" if target.rel else rel), st) for rel, st in walk]

    def _remote_find(self, target: Target, max_depth: int | None) -> list[Entry]:
        mount = target.mount
        mount.backend.invalidate_tree(target.fs_path)
        base = target.fs_path.rstrip("/")
        if max_depth == 1:
            found = {str(raw["name"]): raw for raw in mount.fs.ls(base, detail=True)}
        else:
            # One paged listing of every key below (N/1000 requests on S3), cut to depth here:
            # s3fs's own maxdepth walks with one request per "directory".
            found = mount.fs.find(base, withdirs=True, detail=True)
        out: list[Entry] = []
        for key, raw in found.items():
            if str(key).endswith("/"):
                continue  # an S3 directory marker: the listing also reports it as a directory
            name = str(key)
            if name == base or not name.startswith(base + "/"):
                continue
            rel = name[len(base) + 1 :]
            if max_depth is not None and rel.count("/") >= max_depth:
                continue
            out.append(self._entry(Target(mount, f"{target.rel}/{rel}" if target.rel else rel), raw))
        return out

    # -- writing ----------------------------------------------------------------------

    def write(
        self,
        target: Target,
        data: bytes,
        *,
        append: bool = False,
        create_dirs: bool = False,
        expected_hash: str | None = None,
        expected_version: tuple[Any, ...] | None = None,
    ) -> bool:
        """Write a whole file (atomically on local disks) or append; returns whether it existed.

        Raises CONFLICT when ``expected_hash`` (sha256 hex of the current content) or
        ``expected_version`` (from ``version``: size and mtime/etag) no longer holds.
        """
        existing = self._existing_file(target)
        if expected_version is not None and (existing is None or self.version(target, existing) != expected_version):
            raise Conflict(f"{target.display} changed since it was read; read it again")
        if expected_hash is not None:
            current = sha256(self.cat(target)) if existing else ""
            if current != expected_hash.lower():
                raise Conflict(f"{target.display} changed since it was read (sha256 differs); read it again")
        if existing is None:
            self._ensure_parent(target, create_dirs)
        self.bytes_written += len(data)
        with self.guard(target):
            if target.mount.capabilities.host_paths:
                self._local_write(target, data, append, existing)
            else:
                if append and existing is not None:
                    data = self.cat(target) + data
                target.mount.fs.pipe_file(target.fs_path, data)
                target.mount.backend.invalidate(target.fs_path)
        return existing is not None

    def _existing_file(self, target: Target) -> Entry | None:
        try:
            return self.require_file(target)
        except NotFound:
            return None

    def _ensure_parent(self, target: Target, create_dirs: bool) -> None:
        if target.is_root:
            raise IsADirectory(f"{target.display} is a mount root")
        parent = target.parent()
        try:
            self.require_dir(parent)
        except NotFound:
            if not create_dirs:
                raise NotFound(
                    f"parent directory {parent.display} does not exist; pass create_dirs=true or create it first"
                ) from None
            self.mkdir(parent, parents=True, exist_ok=True)

    def _local_write(self, target: Target, data: bytes, append: bool, existing: Entry | None) -> None:
        tree = target.mount.tree
        if append and existing is not None:
            if (existing.links or 1) == 1:
                tree.append(target.rel, data)
                return
            # Shared through a hard link: never write into it, replace this name only.
            data = tree.read(target.rel) + data
        mode = existing.mode if existing and existing.mode is not None else 0o666 & ~_UMASK
        tree.write_atomic(target.rel, data, mode, f"{TEMP_PREFIX}{secrets.token_hex(8)}")

    def mkdir(self, target: Target, *, parents: bool = True, exist_ok: bool = True) -> bool:
        """Create a directory; returns False when it already existed."""
        try:
            entry = self.info(target)
        except NotFound:
            entry = None
        if entry is not None:
            if entry.type != "directory":
                raise AlreadyExists(f"{target.display} exists and is not a directory")
            if not exist_ok:
                raise AlreadyExists(f"{target.display} already exists")
            return False
        if not parents:
            self.require_dir(target.parent())
        elif not target.parent().is_root:
            self.mkdir(target.parent(), parents=True, exist_ok=True)
        with self.guard(target):
            fs = target.mount.fs
            if target.mount.capabilities.host_paths:
                target.mount.tree.mkdir(target.rel)
            elif target.mount.capabilities.empty_dirs:
                fs.mkdir(target.fs_path, create_parents=False)
            else:
                # Object stores have no directories: a "key/" marker object stands for one.
                fs.pipe_file(target.fs_path.rstrip("/") + "/", b"")
            target.mount.backend.invalidate(target.fs_path)
        return True

    def rm(self, target: Target, *, recursive: bool = False) -> Entry:
        """Delete a file, a link (never its target) or a directory tree; never a mount root."""
        if target.is_root:
            raise AccessDenied(f"{target.display} is a mount root and cannot be deleted")
        entry = self.info(target, follow=False)
        with self.guard(target):
            fs = target.mount.fs
            if target.mount.capabilities.host_paths:
                if entry.type == "directory" and not recursive and self._raw_children(target):
                    raise AlreadyExists(f"{target.display} is a directory that is not empty; pass recursive=true")
                target.mount.tree.remove(target.rel, recursive)
            elif entry.type != "directory":
                fs.rm_file(target.fs_path)
            elif recursive:
                self._rm_tree(target)
            elif any(True for _ in self._raw_children(target)):
                raise AlreadyExists(f"{target.display} is a directory that is not empty; pass recursive=true")
            else:
                self._rm_empty_dir(target)
            target.mount.backend.invalidate(target.fs_path)
        return entry

    def _raw_children(self, target: Target) -> list[str]:
        if target.mount.capabilities.host_paths:
            return [name for name, _ in target.mount.tree.scan(target.rel)]
        target.mount.backend.invalidate(target.fs_path)
        base = target.fs_path.rstrip("/")
        return [n for n in target.mount.fs.ls(target.fs_path, detail=False) if str(n).rstrip("/") != base]

    def _rm_empty_dir(self, target: Target) -> None:
        fs = target.mount.fs
        if target.mount.capabilities.empty_dirs:
            fs.rmdir(target.fs_path)
        else:
            with contextlib.suppress(FileNotFoundError):
                fs.rm_file(target.fs_path.rstrip("/") + "/")

    def _rm_tree(self, target: Target) -> None:
        target.mount.fs.rm(target.fs_path, recursive=True)

    # -- moving and copying -----------------------------------------------------------

    def prepare_destination(self, source: Target, dest: Target, overwrite: bool, create_dirs: bool) -> Entry | None:
        """Check a move/copy destination; returns the entry it would replace, if any."""
        if dest.is_root:
            raise AlreadyExists(f"{dest.display} is a mount root")
        if source.mount is dest.mount and (dest.rel + "/").startswith(source.rel + "/"):
            raise InvalidArgument(f"{dest.display} is inside {source.display}; choose a destination outside it")
        try:
            existing = self.info(dest)
        except NotFound:
            existing = None
        if existing is not None:
            if not overwrite:
                raise AlreadyExists(f"{dest.display} already exists; pass overwrite=true to replace it")
            if existing.type == "directory" and self._raw_children(dest):
                raise AlreadyExists(f"{dest.display} is a directory that is not empty; delete it first")
        else:
            self._ensure_parent(dest, create_dirs)
        return existing

    def move(self, source: Target, dest: Target, *, overwrite: bool = False) -> Entry:
        """Move or rename a file, link or directory; atomic within one local mount."""
        if source.is_root:
            raise AccessDenied(f"{source.display} is a mount root and cannot be moved")
        entry = self.info(source, follow=False)
        existing = self.prepare_destination(source, dest, overwrite, create_dirs=False)
        if existing is not None and (existing.type == "directory") != (entry.type == "directory"):
            raise Conflict(f"{dest.display} is a {existing.type}; cannot replace it with a {entry.type}")
        if source.mount is dest.mount and source.mount.capabilities.host_paths:
            try:
                with self.guard(source):
                    source.mount.tree.rename(source.rel, dest.rel)
                return entry
            except InvalidArgument as err:
                if not isinstance(err.__cause__, OSError) or err.__cause__.errno != errno.EXDEV:
                    raise
                # Another file system inside the mount: copy, then delete the source.
        if existing is not None:
            self.rm(dest, recursive=True)
        self.copy(source, dest, overwrite=False, recursive=True)
        self.rm(source, recursive=True)
        return entry

    def copy(self, source: Target, dest: Target, *, overwrite: bool = False, recursive: bool = False) -> int:
        """Copy a file or (recursive) directory, across mounts too; returns bytes copied.

        Links inside a copied tree are skipped, never followed.
        """
        entry = self.info(source)
        if entry.type == "directory":
            if not recursive:
                raise IsADirectory(f"{source.display} is a directory; pass recursive=true to copy it")
            self.prepare_destination(source, dest, overwrite, create_dirs=True)
            self.mkdir(dest, parents=True, exist_ok=True)
            copied = 0
            for item in list(self.walk(source)):
                to = Target(dest.mount, posixpath.join(dest.rel, item.target.rel[len(source.rel) :].lstrip("/")))
                if item.type == "directory":
                    self.mkdir(to, parents=True, exist_ok=True)
                elif item.type == "file":
                    copied += self._copy_file(item.target, to)
            return copied
        self.prepare_destination(source, dest, overwrite, create_dirs=True)
        return self._copy_file(source, dest)

    def _copy_file(self, source: Target, dest: Target) -> int:
        mount = source.mount
        if mount is dest.mount and not mount.capabilities.host_paths:
            # Same store: let the backend copy (server-side on S3), no bytes through us.
            size = self.require_file(source).size
            self._existing_file(dest)
            with self.guard(source):
                mount.fs.cp_file(source.fs_path, dest.fs_path)
                mount.backend.invalidate(dest.fs_path)
            return size
        data = self.cat(source)
        self.write(dest, data, create_dirs=True)
        return len(data)


def _stat_entry(target: Target, st: os.stat_result, is_link: bool | None = None) -> Entry:
    """An Entry from a stat result (lstat: a link is reported as a symlink)."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        kind: Kind = "directory"
    elif stat.S_ISREG(mode):
        kind = "file"
    elif stat.S_ISLNK(mode):
        kind = "symlink"
    else:
        kind = "other"
    return Entry(
        target=target,
        type=kind,
        size=st.st_size if kind == "file" else 0,
        modified=st.st_mtime,
        created=getattr(st, "st_birthtime", st.st_ctime),
        accessed=st.st_atime,
        mode=stat.S_IMODE(mode),
        is_symlink=kind == "symlink" if is_link is None else is_link,
        links=st.st_nlink,
    )


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once at import: os.umask is process-wide and not thread-safe
