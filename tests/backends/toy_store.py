"""A toy plug-in store: fsspec's memory filesystem under a scheme of its own (``toy://``),
staging its writes as the store contract asks. ``test_store_kit.py`` runs the kit on it and
installs it as a real plug-in (an entry point of a package on ``sys.path``)."""

from __future__ import annotations

from typing import Any

from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

from vfs_mcp_backends import BackendMount, Capabilities, Options


class ToyFileSystem(MemoryFileSystem):  # type: ignore[misc]  # fsspec is untyped
    protocol = ("toy",)

    def _open(self, path: str, mode: str = "rb", *args: Any, autocommit: bool = True, **kwargs: Any) -> Any:
        if mode == "wb" and not autocommit:
            return MemoryFile(self, self._strip_protocol(path))  # enters the store at commit
        return super()._open(path, mode, *args, autocommit=autocommit, **kwargs)


def create(url: str, options: Options) -> BackendMount:
    fs = ToyFileSystem(global_store=False, skip_instance_cache=True)
    root = "/" + url.split("://", 1)[1].strip("/")
    fs.makedirs(root, exist_ok=True)
    return BackendMount(fs=fs, root=root, capabilities=Capabilities(timestamps=frozenset({"created"})))
