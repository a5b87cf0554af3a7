"""S3 and S3-compatible stores: ``s3://bucket`` or ``s3://bucket/prefix``.

Credentials come from the usual AWS chain; the endpoint from the ``endpoint_url``
option or ``AWS_ENDPOINT_URL`` (MinIO, R2, moto). Other options go to ``S3FileSystem``.
"""

from __future__ import annotations

import os
from typing import Any

from vfs_mcp_backends.base import BackendMount, BackendUnavailable, Capabilities, Options

CAPABILITIES = Capabilities(empty_dirs=False, timestamps=frozenset({"modified"}))
MAX_POOL = 64


def create(url: str, options: Options) -> BackendMount:
    try:
        import s3fs
    except ImportError as exc:  # pragma: no cover - s3fs is a declared dependency
        raise BackendUnavailable("the s3 backend needs s3fs: pip install s3fs") from exc
    kwargs: dict[str, Any] = dict(options)
    endpoint = kwargs.pop("endpoint_url", None) or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        kwargs.setdefault("endpoint_url", endpoint)
    kwargs.setdefault("skip_instance_cache", True)
    # Concurrent fetches (grep, duplicates) need more than botocore's 10 pooled connections.
    config = dict(kwargs.pop("config_kwargs", None) or {})
    config.setdefault("max_pool_connections", MAX_POOL)
    kwargs["config_kwargs"] = config
    fs = s3fs.S3FileSystem(**kwargs)
    root = url.split("://", 1)[1].strip("/")
    if not root:
        raise ValueError("an s3 mount needs a bucket: s3://bucket[/prefix]")
    return BackendMount(fs=fs, root=root, capabilities=CAPABILITIES)
