"""Scheme -> backend factory, imported lazily; plug-ins come from an entry-point group.

The built-in backends come first: a plug-in that claims a built-in scheme never replaces it,
and a mount of that scheme is refused naming both, so an installed package cannot silently
take over ``s3://``. The entry points are read once per process.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from importlib.metadata import EntryPoint, distributions

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


def family_of(scheme: str) -> str:
    """The scheme that names ``scheme``'s store for comparing places: one per built-in backend
    (``s3a`` and ``S3`` are ``s3``; ``gcs`` is ``gs``; ``local`` is ``file``), a plug-in's or an
    fsspec protocol's own scheme otherwise."""
    scheme = scheme.lower()
    target = _BUILTIN.get(scheme)
    if target is None:
        return scheme
    return next(name for name, value in _BUILTIN.items() if value == target)


@functools.cache
def plugins() -> dict[str, EntryPoint]:
    """The ``vfs_mcp.backends`` entry points by scheme, read once; of two installed copies of a
    plug-in, the first on the path (as ``entry_points`` does). Only the distributions whose
    entry points name the group are parsed: ``entry_points(group=...)`` parses every one's,
    which took more of a server's start than any of its own modules."""
    header = f"[{ENTRY_POINT_GROUP}]"
    found: dict[str, EntryPoint] = {}
    for dist in distributions():
        if header in (dist.read_text("entry_points.txt") or ""):
            for ep in dist.entry_points.select(group=ENTRY_POINT_GROUP):
                found.setdefault(ep.name.lower(), ep)
    return found


def known_schemes() -> list[str]:
    """Schemes with a dedicated backend, built in or from a plug-in."""
    return sorted({*_BUILTIN, *plugins()})


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
    plugin = plugins().get(scheme)
    if plugin is not None and scheme in _BUILTIN:
        where = f" (package {plugin.dist.name})" if plugin.dist is not None else ""
        raise BackendUnavailable(
            f"the plug-in {plugin.value}{where} claims {scheme}://, which the built-in {_BUILTIN[scheme]} "
            f"serves; a built-in backend is never replaced: give the plug-in a scheme of its own"
        )
    target = _BUILTIN.get(scheme) or (plugin.value if plugin is not None else _FALLBACK)
    return _load(target)(url, dict(options or {}))
