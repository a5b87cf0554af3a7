"""Any other protocol fsspec knows (gcs://, az://, ...), with conservative capabilities."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import fsspec
from fsspec.registry import known_implementations

from vfs_mcp_backends.base import BackendMount, BackendUnavailable, Capabilities, Options

CAPABILITIES = Capabilities(empty_dirs=False, timestamps=frozenset())


def create(url: str, options: Options) -> BackendMount:
    protocol, _, rest = url.partition("://")
    if protocol not in known_implementations:
        raise BackendUnavailable(f"no backend for {protocol}:// (fsspec does not know it either)")
    problem = None
    with _quiet_teardown():
        try:
            fs = fsspec.filesystem(protocol, **dict(options))
        except ImportError as exc:
            hint = known_implementations[protocol].get("err", f"install the fsspec implementation for {protocol}")
            raise BackendUnavailable(f"the {protocol} backend is not installed: {hint}") from exc
        except (OSError, TypeError, ValueError) as exc:
            problem = f"{type(exc).__name__}: {exc}"  # its traceback, and the half-made filesystem, go here
        if problem is not None:
            gc.collect()  # a half-made filesystem in a reference cycle goes now, not at exit
    if problem is not None:
        raise BackendUnavailable(
            f"fsspec's {protocol} filesystem cannot be made from the URL alone ({problem}); give the options it "
            "needs (host, fo, ...) to a [[mount]] in a --config file"
        )
    return BackendMount(fs=fs, root=fs._strip_protocol(url).rstrip("/") or rest, capabilities=CAPABILITIES)


@contextmanager
def _quiet_teardown() -> Iterator[None]:
    """A filesystem whose ``__init__`` failed is freed here, and some fail again in ``__del__``
    on what ``__init__`` never set (FTPFileSystem's ``ftp``): that is no news to the operator."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        yield
    finally:
        sys.unraisablehook = hook
