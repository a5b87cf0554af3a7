"""In-memory mounts: ``memory://name``, each with a store of its own.

Options: ``files`` (a mapping of relative path -> str | bytes) and/or ``seed_dir``
(a local folder copied in at start).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from fsspec.implementations.memory import MemoryFileSystem

from vfs_mcp_backends.base import BackendMount, Capabilities, Options

CAPABILITIES = Capabilities(empty_dirs=True, timestamps=frozenset({"created"}))


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


def create(url: str, options: Options) -> BackendMount:
    fs = MemoryFileSystem(global_store=False, skip_instance_cache=True)
    root = "/" + _name(url)
    fs.makedirs(root, exist_ok=True)
    if options.get("seed_dir"):
        seed_from_dir(fs, root, str(options["seed_dir"]))
    if options.get("files"):
        seed(fs, root, options["files"])
    return BackendMount(fs=fs, root=root, capabilities=CAPABILITIES)
