"""In-memory mounts: ``memory://name``, each with a store of its own.

Options: ``files`` (a mapping of relative path -> str | bytes) and/or ``seed_dir``
(a local folder copied in at start).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import Any

from fsspec.implementations.memory import MemoryFile, MemoryFileSystem
from pydantic import Field

from vfs_mcp_backends.base import BackendMount, Capabilities, Options
from vfs_mcp_backends.options import StoreOptions

CAPABILITIES = Capabilities(
    empty_dirs=True, native_copy=True, timestamps=frozenset({"created"}), locked_writes=True, local_io=True
)


class MemoryStore(MemoryFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """fsspec's memory filesystem, with staged writes and private readers.

    ``_open(path, "wb", autocommit=False)`` returns a file that only enters the store at
    ``commit`` (fsspec's own memory files enter it when opened). ``_open(path, "rb")``
    returns a reader of its own rather than the stored file object, whose one position
    every concurrent reader would share.
    """

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        if mode in ("wb", "xb") and not autocommit:
            path = self._strip_protocol(path)
            if path in self.pseudo_dirs:
                raise IsADirectoryError(path)
            if "x" in mode and self.exists(path):
                raise FileExistsError(path)
            return MemoryFile(self, path)
        found = super()._open(path, mode, block_size, autocommit, cache_options, **kwargs)
        return _Reader(found) if mode == "rb" else found


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
                with open(source, "rb") as handle:
                    fs.pipe_file(f"{prefix}/{filename}", handle.read())


class MemoryOptions(StoreOptions):
    store = "memory"
    files: dict[str, str | bytes] = Field(default_factory=dict)
    seed_dir: str | None = None


def create(url: str, options: Options) -> BackendMount:
    checked = MemoryOptions.parse(options)
    fs = MemoryStore(global_store=False, skip_instance_cache=True)
    root = "/" + _name(url)
    fs.makedirs(root, exist_ok=True)
    if checked.seed_dir:
        seed_from_dir(fs, root, checked.seed_dir)
    if checked.files:
        seed(fs, root, checked.files)
    return BackendMount(fs=fs, root=root, capabilities=CAPABILITIES)
