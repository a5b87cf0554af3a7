"""Any other protocol fsspec knows (gcs://, az://, ...), with conservative capabilities."""

from __future__ import annotations

import fsspec
from fsspec.registry import known_implementations

from vfs_mcp_backends.base import BackendMount, BackendUnavailable, Capabilities, Options

CAPABILITIES = Capabilities(empty_dirs=False, timestamps=frozenset())


def create(url: str, options: Options) -> BackendMount:
    protocol, _, rest = url.partition("://")
    if protocol not in known_implementations:
        raise BackendUnavailable(f"no backend for {protocol}:// (fsspec does not know it either)")
    try:
        fs = fsspec.filesystem(protocol, **dict(options))
    except ImportError as exc:
        hint = known_implementations[protocol].get("err", f"install the fsspec implementation for {protocol}")
        raise BackendUnavailable(f"the {protocol} backend is not installed: {hint}") from exc
    return BackendMount(fs=fs, root=fs._strip_protocol(url).rstrip("/") or rest, capabilities=CAPABILITIES)
