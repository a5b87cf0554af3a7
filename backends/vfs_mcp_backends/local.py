"""Local folders: ``/abs/dir``, ``./rel/dir`` or ``file:///abs/dir``."""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from fsspec.implementations.local import LocalFileSystem

from vfs_mcp_backends.base import BackendMount, Capabilities, Options

CAPABILITIES = Capabilities(
    symlinks=True,
    host_paths=True,
    empty_dirs=True,
    native_grep=True,
    timestamps=frozenset({"created", "modified", "accessed"}),
)


def host_path(url: str) -> str:
    """The absolute host path a local root URL names (relative to the process cwd)."""
    if url.startswith("file://"):
        url = unquote(urlsplit(url).path)
    return os.path.abspath(os.path.expanduser(url))


def create(url: str, options: Options) -> BackendMount:
    root = host_path(url)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"local mount root is not a directory: {url}")
    return BackendMount(fs=LocalFileSystem(auto_mkdir=True), root=root, capabilities=CAPABILITIES)
