"""Local folders: ``/abs/dir``, ``./rel/dir`` or ``file:///abs/dir``, served by a filesystem
rooted at an open descriptor of the folder (``localfs.DescriptorFileSystem``).

Option: ``auto_mkdir`` (writes create their parent folders, as fsspec's
``LocalFileSystem(auto_mkdir=True)``; the jail makes folders itself and leaves it off).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from vfs_mcp_backends.base import BackendMount, Capabilities, Keep, Names, Options
from vfs_mcp_backends.folder_locks import Folders, LockBusy, deadline_of, held_here
from vfs_mcp_backends.localfs import DescriptorFileSystem
from vfs_mcp_backends.scopes import ensure_wanted
from vfs_mcp_backends.store_options import StoreOptions

CAPABILITIES = Capabilities(
    symlinks=True,
    host_paths=True,
    empty_dirs=True,
    native_grep=True,
    atomic_rename=True,
    append=True,
    modes=True,
    timestamps=frozenset({"created", "modified", "accessed"}),
    locked_writes=True,
    local_io=True,
)


def host_path(url: str) -> str:
    """The absolute host path a local root URL names (relative to the process cwd)."""
    if url.startswith("file://"):
        url = unquote(urlsplit(url).path)
    return os.path.abspath(os.path.expanduser(url))


LOCK_POLL = 0.002
"""Seconds between tries of a folder lock another process holds (a write's commit is short)."""


@dataclass
class LocalMount(BackendMount):
    """A local folder: host paths, narrowing by descriptor walk, temp files to sweep."""

    fs: DescriptorFileSystem

    def host_path(self, path: str) -> str | None:
        return self.fs.real_path(path)

    def read_whole(self, path: str, limit: int) -> tuple[dict[str, Any], bytes | None]:
        return self.fs.read_whole(path, limit)

    def walk(self, path: str, maxdepth: int | None = None, metadata: bool = True) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = self.fs.find(
            path, maxdepth=maxdepth, withdirs=True, detail=True, metadata=metadata
        )
        return found

    def names(self, path: str, maxdepth: int | None = None, metadata: bool = True, keep: Keep | None = None) -> Names:
        return self.fs.names(path, maxdepth, metadata, keep)

    def narrowed(self, root: str) -> BackendMount:
        return LocalMount(fs=self.fs.subtree(root), root=root, capabilities=self.capabilities)

    def sweep(
        self, older_than: float, folders: Sequence[str] | None = None, pause: Callable[[], object] | None = None
    ) -> int:
        return self.fs.sweep_temp_files(older_than, folders, pause)

    @contextlib.contextmanager
    def hold(self, folders: Folders, wait: float | None = None) -> Iterator[None]:
        """The in-process locks, then an advisory ``flock`` on each folder (its nearest existing
        ancestor, for one still to be made), shared or exclusive: another server on the same
        folder waits too, and the kernel drops the lock with the descriptor, so a crash leaves
        nothing behind. Folders are locked in (device, inode) order, the same in every process;
        each once, in its strongest mode, since two descriptors of one folder in one process
        would wait for each other."""
        wait, deadline = deadline_of(wait)
        with held_here(self.fs, folders, wait), contextlib.ExitStack() as stack:
            held: dict[tuple[int, int], tuple[int, str, bool]] = {}
            instead: dict[str, tuple[int, int]] = {}  # a folder still to be made -> the one locked for it
            for folder in sorted(folders):  # parents before children
                key = instead.get(folder.rpartition("/")[0])  # below a missing folder: the same, no lookup
                if key is None:
                    fd, exact = self.fs.lock_folder(folder)
                    stack.callback(os.close, fd)
                    st = os.fstat(fd)
                    key = (st.st_dev, st.st_ino)
                    held.setdefault(key, (fd, folder, False))
                    if not exact:
                        instead[folder] = key
                else:
                    instead[folder] = key
                fd, name, stronger = held[key]
                held[key] = (fd, name, stronger or folders[folder])
            for _, (fd, folder, exclusive) in sorted(held.items()):
                mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
                while True:
                    try:
                        fcntl.flock(fd, mode | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        ensure_wanted()  # a call given up while waiting stops waiting
                        if time.monotonic() >= deadline:
                            raise LockBusy(folder, wait) from None
                        time.sleep(LOCK_POLL)
            yield


class LocalOptions(StoreOptions):
    store = "local"
    auto_mkdir: bool = False


def create(url: str, options: Options) -> BackendMount:
    checked = LocalOptions.parse(options)
    root = host_path(url)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"local mount root is not a directory: {url}")
    fs = DescriptorFileSystem(root, auto_mkdir=checked.auto_mkdir)
    return LocalMount(fs=fs, root=root, capabilities=CAPABILITIES)
