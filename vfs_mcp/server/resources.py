"""MCP resources: every mount's files (one template per mount), the metrics and the timeline.

Subscriptions to file resources are served by ``vfs_mcp.server.watch``.

Local files are ``file:///abs/path``, others their backend URL (``s3://b/k``,
``memory://m/x``). A read resolves the URI through the same jail as the tools: the SDK's
template checks are a first filter, the jail decides. A read passes the steps of every request
(``calls.serve``: its session, the client's roots, the error boundary). Text comes back as text, anything
else (binary, not UTF-8) as a blob.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import Resource
from pydantic import PrivateAttr

from vfs_mcp import sessions
from vfs_mcp.config import DEFAULT_MAX_READ_BYTES
from vfs_mcp.errors import VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.text.encoding import looks_binary
from vfs_mcp.ops.text.names import uri_of
from vfs_mcp.server.metrics import Metrics

METRICS_URI = "vfs://metrics"
PENDING_URI = "vfs://pending"
HISTORY_URI = "vfs://history"
HISTORY = "The changes made here, newest first (as the history tool's first page); its fields in _meta"


class HistoryResource(Resource):
    """``vfs://history``: the newest page of the timeline as the history tool shows it, its
    fields in the contents' ``_meta`` (the SDK reads ``meta`` right after ``read``, with no
    await between: one read's page is never another's)."""

    _vfs: JailedFS = PrivateAttr()

    def __init__(self, vfs: JailedFS, **fields: Any) -> None:
        super().__init__(**fields)
        self._vfs = vfs

    async def read(self) -> str:
        from vfs_mcp.changes import log_of
        from vfs_mcp.ops.files.history import history
        from vfs_mcp.profiles.default.writes import history_text, pending_ids
        from vfs_mcp.profiles.results import META_RESULT

        page = history(self._vfs, log_of(self._vfs), pending=pending_ids(self._vfs))
        self.meta = {META_RESULT: page.model_dump(mode="json")}
        return history_text(page)


def base_uri(mount: Mount) -> str:
    """The URI prefix of a mount's files, spelt as results spell a file's URI (``uri_of``:
    percent-encoded on local mounts), so a file's URI is its mount's template filled in."""
    return uri_of(Target(mount, "")).rstrip("/")


def read(vfs: JailedFS, uri: str, max_bytes: int = DEFAULT_MAX_READ_BYTES) -> str | bytes:
    """A file's content for a resource read: text when it is UTF-8 text, else bytes. Raises
    VfsError (the read's error boundary, ``calls.boundary``, makes it a JSON-RPC error)."""
    target = vfs.resolve(uri)
    entry = vfs.require_file(target)
    if entry.size > max_bytes:
        raise VfsError(f"{target.display} is over {max_bytes} bytes; read it with read_file ranges")
    data = vfs.cat(target)
    if looks_binary(data):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _reader(vfs: JailedFS, mount: Mount | None, max_bytes: int) -> Callable[[str], str | bytes]:
    """A template's reader: ``path`` comes percent-decoded, so it is read as a path inside its
    mount (a host path for ``mount=None``, the template of every local file), not as a URI."""

    def read_file(path: str) -> str | bytes:
        return read(vfs, "/" + path if mount is None else mount.display(path), max_bytes)

    return read_file


def register(
    server: MCPServer,
    vfs: JailedFS,
    metrics: Metrics,
    max_bytes: int = DEFAULT_MAX_READ_BYTES,
    *,
    any_local: bool = False,
    pending: bool = False,
) -> None:
    """A template per mount for its files, the metrics resource, and (``pending``: some mount is
    under review) what is pending on the review mounts.

    any_local: one ``file:///{+path}`` template for every local file instead of one per local
        mount, for mounts that come and go with the client's roots (the jail still decides).
    """
    if any_local:
        server.resource(
            "file:///{+path}",
            name="local files",
            description="Any file under the client's roots (see list_allowed_directories), by its absolute path",
        )(_reader(vfs, None, max_bytes))
    for mount in vfs.mounts:
        if any_local and mount.is_local:
            continue
        server.resource(
            f"{base_uri(mount)}/{{+path}}",
            name=f"files in {mount.url}",
            description=f"Any file under the mount {mount.url}, by its path inside it",
        )(_reader(vfs, mount, max_bytes))

    if pending:

        @server.resource(
            PENDING_URI,
            name="pending changes",
            mime_type="text/x-diff",
            description="What the review mounts hold pending: one unified diff a file, with the ids of the changes",
        )
        def pending_resource() -> str:
            from vfs_mcp.review import Review

            return Review(vfs).diff()

    if any(not mount.read_only for mount in vfs.mounts):
        server.add_resource(HistoryResource(vfs, uri=HISTORY_URI, name="history", description=HISTORY))

    @server.resource(
        METRICS_URI,
        name="metrics",
        mime_type="application/json",
        description="Per-tool calls, errors by code, latency percentiles; bytes read and written",
    )
    def metrics_resource() -> str:
        # The SDK calls a resource's function with no request of ours: the session is the
        # one the read's session step made current (``vfs_mcp.sessions``).
        return json.dumps(metrics.snapshot(sessions.current.get()), indent=1)
