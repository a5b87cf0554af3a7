"""Race-free local disk access: every path is opened by walking from the mount root's
descriptor, one component at a time, with ``O_NOFOLLOW``.

The jail's real-path check happens before an operation; between that check and the use, a
process that can write inside the mount could swap a directory for a symlink pointing out.
Here the use itself never follows a link it has not checked: a symlink met on the way is
read with ``readlink``, resolved lexically against the mount root (leaving it is
ACCESS_DENIED) and the walk starts again from the root, at most ``MAX_HOPS`` times. Every
change (create, rename, unlink, mkdir) is made relative to the directory descriptor that
was walked, so the directory checked is the directory changed.

Residual window (documented in docs/security.md): a directory already opened by the walk
and then moved outside the mount by someone with write access on both sides is followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import time
from collections.abc import Iterator
from typing import BinaryIO

from vfs_mcp.errors import AccessDenied

MAX_HOPS = 40
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LocalTree:
    """Descriptor-relative operations under one real mount root (a host path)."""

    def __init__(self, root: str, shown: str) -> None:
        self.root = root
        self.root_parts = [p for p in root.split("/") if p]
        self.shown = shown

    # -- walking ----------------------------------------------------------------------

    @contextlib.contextmanager
    def parent(self, rel: str, follow: bool = True) -> Iterator[tuple[int, str]]:
        """The open directory holding ``rel``'s last component, and that component's name.

        ``name`` is "" for the mount root itself (then the descriptor is the root). With
        ``follow``, a final symlink is resolved too, so ``name`` is never a link.
        """
        parts = [p for p in rel.split("/") if p]
        for _ in range(MAX_HOPS):
            fd = os.open(self.root, DIR_FLAGS)
            try:
                walked: list[str] = []
                redirect: list[str] | None = None
                for index, part in enumerate(parts[:-1]):
                    try:
                        child = os.open(part, DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or not _is_link(part, fd):
                            raise
                        redirect = self._through_link(fd, part, walked, parts[index + 1 :])
                        break
                    os.close(fd)
                    fd = child
                    walked.append(part)
                if redirect is None:
                    name = parts[-1] if parts else ""
                    if not (follow and name and _is_link(name, fd)):
                        yield fd, name
                        return
                    redirect = self._through_link(fd, name, walked, [])
            finally:
                os.close(fd)
            parts = redirect
        raise OSError(errno.ELOOP, "too many levels of symbolic links")

    def _through_link(self, fd: int, name: str, walked: list[str], rest: list[str]) -> list[str]:
        """The mount-relative components a link leads to, plus ``rest``; refuses leaving the mount."""
        target = os.readlink(name, dir_fd=fd)
        if target.startswith("/"):
            parts = _canonical(target.split("/"), self.shown)
            if parts[: len(self.root_parts)] != self.root_parts:
                raise AccessDenied(f"{self.shown} resolves outside its mount through a symbolic link; refused")
            inside = parts[len(self.root_parts) :]
        else:
            inside = _canonical([*walked, *target.split("/")], self.shown)
        return inside + rest

    @contextlib.contextmanager
    def directory(self, rel: str) -> Iterator[int]:
        """An open descriptor of the directory ``rel`` (links inside the mount followed)."""
        with self.parent(rel) as (fd, name):
            if not name:
                yield fd
                return
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
            try:
                yield child
            finally:
                os.close(child)

    # -- reading ----------------------------------------------------------------------

    def stat(self, rel: str, follow: bool = True) -> os.stat_result:
        with self.parent(rel, follow) as (fd, name):
            return os.stat(name, dir_fd=fd, follow_symlinks=False) if name else os.fstat(fd)

    def open_read(self, rel: str) -> BinaryIO:
        with self.parent(rel) as (fd, name):
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        return os.fdopen(handle, "rb")

    def read(self, rel: str, start: int | None = None, end: int | None = None) -> bytes:
        with self.open_read(rel) as handle:
            size = os.fstat(handle.fileno()).st_size
            first = 0 if start is None else (start if start >= 0 else max(0, size + start))
            last = size if end is None else (end if end >= 0 else max(0, size + end))
            if last <= first:
                return b""
            handle.seek(first)
            return handle.read(last - first)

    def scan(self, rel: str) -> list[tuple[str, os.stat_result]]:
        """Names and lstat results of a directory's entries."""
        with self.directory(rel) as fd, os.scandir(fd) as entries:
            return [(entry.name, entry.stat(follow_symlinks=False)) for entry in entries]

    def walk(self, rel: str, max_depth: int | None) -> Iterator[tuple[str, os.stat_result]]:
        """(path relative to ``rel``, lstat) of everything below; never crosses a link."""
        with self.directory(rel) as fd:
            yield from _walk_fd(fd, "", 1, max_depth)

    # -- writing ----------------------------------------------------------------------

    def write_atomic(self, rel: str, data: bytes, mode: int, temp_name: str) -> None:
        """Replace ``rel`` by a fully written, fsynced sibling temp file (rename is atomic)."""
        with self.parent(rel) as (fd, name):
            temp = os.open(
                temp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd
            )
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(temp, view) :]
                    os.fchmod(temp, mode)
                    os.fsync(temp)
                finally:
                    os.close(temp)
                os.replace(temp_name, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp_name, dir_fd=fd)
                raise
            with contextlib.suppress(OSError):
                os.fsync(fd)

    def append(self, rel: str, data: bytes) -> None:
        with self.parent(rel) as (fd, name):
            handle = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(handle, view) :]
                os.fsync(handle)
            finally:
                os.close(handle)

    def mkdir(self, rel: str) -> None:
        with self.parent(rel) as (fd, name):
            os.mkdir(name, dir_fd=fd)

    def remove(self, rel: str, recursive: bool) -> None:
        """Unlink a file or link (never its target), or remove a directory (tree)."""
        with self.parent(rel, follow=False) as (fd, name):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=fd)
            elif recursive:
                shutil.rmtree(name, dir_fd=fd)  # descriptor-based: never follows a link
            else:
                os.rmdir(name, dir_fd=fd)

    def sweep(self, prefix: str, older_than: float) -> int:
        """Delete files named ``prefix*`` left by writes that died, if older than ``older_than``
        seconds (younger ones may belong to a write in flight). Returns how many went.
        """
        cutoff = time.time() - older_than
        removed = 0
        for rel, st in self.walk("", None):
            name = rel.rsplit("/", 1)[-1]
            if name.startswith(prefix) and stat.S_ISREG(st.st_mode) and st.st_mtime <= cutoff:
                with contextlib.suppress(OSError), self.parent(rel, follow=False) as (fd, leaf):
                    os.unlink(leaf, dir_fd=fd)
                    removed += 1
        return removed

    def rename(self, source: str, dest: str) -> None:
        """Move ``source`` (a link itself, not its target) onto ``dest`` atomically."""
        with self.parent(source, follow=False) as (src_fd, src_name), self.parent(dest) as (dst_fd, dst_name):
            os.replace(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)


def _is_link(name: str, fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _canonical(parts: list[str], shown: str = "") -> list[str]:
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                raise AccessDenied(f"{shown} resolves outside its mount through a symbolic link; refused")
            out.pop()
        else:
            out.append(part)
    return out


def _walk_fd(fd: int, prefix: str, depth: int, max_depth: int | None) -> Iterator[tuple[str, os.stat_result]]:
    with os.scandir(fd) as scan:
        entries = [(entry.name, entry.stat(follow_symlinks=False)) for entry in scan]
    for name, st in entries:
        rel = f"{prefix}{name}"
        yield rel, st
        if stat.S_ISDIR(st.st_mode) and (max_depth is None or depth < max_depth):
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # replaced or removed since the scan: nothing to descend into
            try:
                yield from _walk_fd(child, rel + "/", depth + 1, max_depth)
            finally:
                os.close(child)
