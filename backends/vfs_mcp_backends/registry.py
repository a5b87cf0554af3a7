"""Scheme -> backend factory, imported lazily; plug-ins come from an entry-point group."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from importlib.metadata import entry_points

from vfs_mcp_backends.base import BackendMount, BackendUnavailable, Options

Factory = Callable[[str, Options], BackendMount]

ENTRY_POINT_GROUP = "vfs_mcp.backends"

_BUILTIN: dict[str, str] = {
    "file": "vfs_mcp_backends.local:create",
    "local": "vfs_mcp_backends.local:create",
    "memory": "vfs_mcp_backends.memory:create",
    "s3": "vfs_mcp_backends.s3:create",
    "s3a": "vfs_mcp_backends.s3:create",
    "gs": "vfs_mcp_backends.gcs:create",
    "gcs": "vfs_mcp_backends.gcs:create",
    "az": "vfs_mcp_backends.azure:create",
    "abfs": "vfs_mcp_backends.azure:create",
    "abfss": "vfs_mcp_backends.azure:create",
}
_FALLBACK = "vfs_mcp_backends.generic:create"
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


def scheme_of(url: str) -> str:
    """The URL's scheme, or ``file`` for a plain host path."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else "file"


def _plugins() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_schemes() -> list[str]:
    """Schemes with a dedicated backend, built in or from a plug-in."""
    return sorted({*_BUILTIN, *_plugins()})


def _load(target: str) -> Factory:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(f"backend {module_name} cannot be imported ({exc.name} is missing): {exc}") from exc
    factory: Factory = getattr(module, attr)
    return factory


def create_mount(url: str, options: Options | None = None) -> BackendMount:
    """Build the filesystem for one mount root URL (operator input, never a tool argument)."""
    scheme = scheme_of(url)
    target = _plugins().get(scheme) or _BUILTIN.get(scheme) or _FALLBACK
    return _load(target)(url, dict(options or {}))
