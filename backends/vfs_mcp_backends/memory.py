"""In-memory mounts: ``memory://name``, each with a store of its own.

Options: ``files`` (a mapping of relative path -> str | bytes) and/or ``seed_dir``
(a local folder copied in at start); ``max_bytes``, what the mount's files may hold in all
(``DEFAULT_MAX_BYTES`` by default): its bytes live in the server's memory.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
from collections.abc import Mapping
from typing import Any

from fsspec.implementations.memory import MemoryFile, MemoryFileSystem
from pydantic import Field

from vfs_mcp_backends.base import BackendMount, Capabilities, Options
from vfs_mcp_backends.store_options import StoreOptions

CAPABILITIES = Capabilities(
    empty_dirs=True,
    native_copy=True,
    atomic_rename=True,
    timestamps=frozenset({"created"}),
    locked_writes=True,
    local_io=True,
)


DEFAULT_MAX_BYTES = 1 << 30
"""What a memory mount's files may hold in all, unless its ``max_bytes`` option says otherwise."""


class MemoryStore(MemoryFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """fsspec's memory filesystem, with staged writes, private readers and a size limit.

    ``_open(path, "wb", autocommit=False)`` returns a file that only enters the store at
    ``commit`` (fsspec's own memory files enter it when opened). ``_open(path, "rb")``
    returns a reader of its own rather than the stored file object, whose one position
    every concurrent reader would share.

    ``max_bytes`` bounds what the files hold in all (None: no bound). A write that would pass
    it fails with ``OSError(EFBIG)`` as it passes, before it takes the memory, whichever way
    it writes (a file written in pieces, ``pipe_file``, ``cp_file``); a staged file checks
    again when it commits, against what other writers committed meanwhile.
    """

    def __init__(self, *args: Any, max_bytes: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_bytes = max_bytes

    def room(self, path: str) -> int | None:
        """The bytes a file at ``path`` may hold: the limit less what every other file holds
        (None: no limit). Linear in the number of files, as fsspec's ``info`` of a memory store is."""
        if self.max_bytes is None:
            return None
        others: int = sum(file.size for name, file in tuple(self.store.items()) if name != path)
        return self.max_bytes - others

    def check_room(self, path: str, size: int, room: int | None = None) -> int | None:
        """The room at ``path`` (``room`` if known); OSError(EFBIG) when ``size`` bytes pass it."""
        room = self.room(path) if room is None else room
        if room is not None and size > room:
            raise OSError(
                errno.EFBIG, f"a memory mount holds at most {self.max_bytes} bytes (its max_bytes option)", path
            )
        return room

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        if mode in ("wb", "xb"):
            path = self._strip_protocol(path)
            if path in self.pseudo_dirs:
                raise IsADirectoryError(path)
            if "x" in mode and self.exists(path):
                raise FileExistsError(path)
            parent = self._parent(path)
            while len(parent) > 1:  # as fsspec's memory store checks: no file inside a file
                if parent in self.store:
                    raise FileExistsError(parent)
                parent = self._parent(parent)
            data = kwargs.get("data")
            file = _Bounded(self, path, data, self.check_room(path, len(data) if data else 0))
            if autocommit and not self._intrans:
                file.commit()  # visible at once, as fsspec's memory files are
            return file
        found = super()._open(path, mode, block_size, autocommit, cache_options, **kwargs)
        if isinstance(found, _Bounded):
            found.limit = self.room(path)  # appended to in place: as much as the store has room for now
        return _Reader(found) if mode == "rb" else found

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        path1, path2 = self._strip_protocol(path1), self._strip_protocol(path2)
        if path1 in self.store:
            room = self.check_room(path2, self.store[path1].size)
            self.store[path2] = _Bounded(self, path2, self.store[path1].getvalue(), room)
            return
        super().cp_file(path1, path2, **kwargs)

    def mv(self, path1: str, path2: str, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        """Rename a file or a folder (with everything in it) in one step of the store's tables:
        no copy, so no room needed twice, and nothing half moved."""
        source, dest = self._strip_protocol(path1), self._strip_protocol(path2)
        if source not in self.store and source not in self.pseudo_dirs:
            raise FileNotFoundError(errno.ENOENT, "no such file or folder", path1)
        if dest == source or dest.startswith(source.rstrip("/") + "/"):
            raise OSError(errno.EINVAL, "cannot move a folder into itself", path2)
        if dest in self.pseudo_dirs:  # an empty folder is replaced, as rename(2) does; a full one is not
            if any(n.startswith(dest.rstrip("/") + "/") for n in [*self.store, *self.pseudo_dirs]):
                raise OSError(errno.ENOTEMPTY, "folder not empty", path2)
            self.pseudo_dirs.remove(dest)
        if source in self.store:
            moved = self.store.pop(source)
            moved.path = dest
            self.store[dest] = moved
            return
        prefix = source.rstrip("/") + "/"
        for name in [n for n in self.store if n.startswith(prefix)]:
            moved = self.store.pop(name)
            moved.path = dest + name[len(source) :]
            self.store[moved.path] = moved
        for name in [n for n in self.pseudo_dirs if n == source or n.startswith(prefix)]:
            self.pseudo_dirs.remove(name)
            self.pseudo_dirs.append(dest + name[len(source) :])


class _Bounded(MemoryFile):  # type: ignore[misc]  # fsspec is untyped
    """A memory file that refuses to grow past what its store has room for (OSError(EFBIG)),
    before the bytes are taken in."""

    def __init__(self, fs: MemoryStore, path: str, data: bytes | None, limit: int | None) -> None:
        super().__init__(fs, path, data)
        self.limit = limit

    def write(self, data: Any) -> int:
        if self.limit is not None:
            self.fs.check_room(self.path, max(self.size, self.tell() + memoryview(data).nbytes), self.limit)
        written: int = super().write(data)
        return written

    def commit(self) -> None:
        self.fs.check_room(self.path, self.size)
        super().commit()


class _Reader(io.RawIOBase):
    """A read-only view of one stored file, with its own position."""

    def __init__(self, stored: MemoryFile) -> None:
        super().__init__()
        self._stored = stored
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        with self._stored.getbuffer() as view:
            chunk = view[self._pos : self._pos + len(buffer)]
            count = len(chunk)
            buffer[:count] = chunk
        self._pos += count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        size = self._stored.size
        self._pos = max(0, {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: size}[whence] + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos


def _name(url: str) -> str:
    name = url.split("://", 1)[1].strip("/")
    return name or "default"


def seed(fs: MemoryFileSystem, root: str, files: Mapping[str, str | bytes]) -> None:
    """Write each relative path's content under ``root``."""
    for rel, content in files.items():
        data = content.encode() if isinstance(content, str) else bytes(content)
        fs.pipe_file(f"{root}/{rel.strip('/')}", data)


def seed_from_dir(fs: MemoryFileSystem, root: str, folder: str) -> None:
    """Copy a local folder's regular files (links are not followed) under ``root``."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        rel_dir = os.path.relpath(dirpath, folder)
        prefix = root if rel_dir == "." else f"{root}/{rel_dir.replace(os.sep, '/')}"
        fs.makedirs(prefix, exist_ok=True)
        for filename in filenames:
            source = os.path.join(dirpath, filename)
            if os.path.isfile(source) and not os.path.islink(source):
                with open(source, "rb") as handle, fs.open(f"{prefix}/{filename}", "wb") as copy:
                    shutil.copyfileobj(handle, copy)  # in pieces: a file over max_bytes fails at the limit


class MemoryOptions(StoreOptions):
    store = "memory"
    files: dict[str, str | bytes] = Field(default_factory=dict)
    seed_dir: str | None = None
    max_bytes: int = Field(DEFAULT_MAX_BYTES, ge=1, strict=True)
    """What the mount's files may hold in all."""


def create(url: str, options: Options) -> BackendMount:
    checked = MemoryOptions.parse(options)
    fs = MemoryStore(global_store=False, skip_instance_cache=True, max_bytes=checked.max_bytes)
    root = "/" + _name(url)
    fs.makedirs(root, exist_ok=True)
    if checked.seed_dir:
        seed_from_dir(fs, root, checked.seed_dir)
    if checked.files:
        seed(fs, root, checked.files)
    return BackendMount(fs=fs, root=root, capabilities=CAPABILITIES)
