"""Local folders: ``/abs/dir``, ``./rel/dir`` or ``file:///abs/dir``, served by a filesystem
rooted at an open descriptor of the folder (``localfs.DescriptorFileSystem``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import cast
from urllib.parse import unquote, urlsplit

from vfs_mcp_backends.base import BackendMount, Capabilities, Options
from vfs_mcp_backends.localfs import DescriptorFileSystem

CAPABILITIES = Capabilities(
    symlinks=True,
    host_paths=True,
    empty_dirs=True,
    native_grep=True,
    atomic_rename=True,
    append=True,
    modes=True,
    timestamps=frozenset({"created", "modified", "accessed"}),
)


def host_path(url: str) -> str:
    """The absolute host path a local root URL names (relative to the process cwd)."""
    if url.startswith("file://"):
        url = unquote(urlsplit(url).path)
    return os.path.abspath(os.path.expanduser(url))


@dataclass
class LocalMount(BackendMount):
    """A local folder: host paths, narrowing by descriptor walk, temp files to sweep."""

    @property
    def store(self) -> DescriptorFileSystem:
        return cast(DescriptorFileSystem, self.fs)

    def host_path(self, path: str) -> str | None:
        return self.store.real_path(path)

    def narrowed(self, root: str) -> BackendMount:
        return LocalMount(fs=self.store.subtree(root), root=root, capabilities=self.capabilities)

    def sweep(self, older_than: float) -> int:
        return self.store.sweep_temp_files(older_than)


def create(url: str, options: Options) -> BackendMount:
    root = host_path(url)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"local mount root is not a directory: {url}")
    return LocalMount(fs=DescriptorFileSystem(root), root=root, capabilities=CAPABILITIES)
