"""Backends for vfs-mcp: a mount URL plus options becomes a configured fsspec filesystem.

Each backend is a function ``create(url, options) -> BackendMount``; every store is an fsspec
filesystem (local folders too: ``localfs.DescriptorFileSystem``). The registry maps
URL schemes to such functions by dotted name, imported only when a mount needs one.
Third parties add schemes through the ``vfs_mcp.backends`` entry-point group::

    [project.entry-points."vfs_mcp.backends"]
    gdrive = "my_package.backend:create"

This package never imports ``vfs_mcp``: it knows nothing about jails, tools or MCP.
"""

from __future__ import annotations

from vfs_mcp_backends.base import (
    BackendMount,
    BackendUnavailable,
    Capabilities,
    Keep,
    NotRegularFile,
    Options,
    PreconditionFailed,
)
from vfs_mcp_backends.descriptors import OutsideRoot
from vfs_mcp_backends.folder_locks import LockBusy
from vfs_mcp_backends.registry import create_mount, known_schemes, scheme_of
from vfs_mcp_backends.scopes import Abandoned, commit_scope, ensure_wanted
from vfs_mcp_backends.staged_files import COPY_CHUNK

__all__ = [
    "COPY_CHUNK",
    "Abandoned",
    "BackendMount",
    "BackendUnavailable",
    "Capabilities",
    "Keep",
    "LockBusy",
    "NotRegularFile",
    "Options",
    "OutsideRoot",
    "PreconditionFailed",
    "commit_scope",
    "create_mount",
    "ensure_wanted",
    "known_schemes",
    "scheme_of",
]
