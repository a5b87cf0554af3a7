"""S3 and S3-compatible stores: ``s3://bucket`` or ``s3://bucket/prefix``.

Credentials come from the usual AWS chain; the endpoint from the ``endpoint_url``
option or ``AWS_ENDPOINT_URL`` (MinIO, R2, moto). Other options go to ``S3FileSystem``.
"""

from __future__ import annotations

import os
from typing import Any

import s3fs

from vfs_mcp_backends.base import BackendMount, Capabilities, Options

CAPABILITIES = Capabilities(empty_dirs=False, native_copy=True, timestamps=frozenset({"modified"}))
MAX_POOL = 64


class StagedS3File(s3fs.core.S3File):  # type: ignore[misc]  # s3fs is untyped
    """A staged write (``autocommit=False``) small enough for one part is one PUT at
    ``commit``: s3fs alone would start a multipart upload at ``close`` (three requests).
    """

    def _initiate_upload(self) -> None:
        if not (self.forced and not self.append_block and self.tell() < self.blocksize):
            super()._initiate_upload()

    def _upload_chunk(self, final: bool = False) -> Any:
        if final and self.mpu is None and not self.append_block and not self.autocommit:
            return False  # keep the buffer: commit sends it in one PUT
        return super()._upload_chunk(final)


class S3Store(s3fs.S3FileSystem):  # type: ignore[misc]
    """s3fs, listing a tree in one paged request cut to depth here (s3fs's own ``maxdepth``
    lists each "directory" separately), and staging small writes in one PUT.
    """

    async def _find(
        self, path: str, maxdepth: int | None = None, withdirs: bool | None = None, detail: bool = False, **kw: Any
    ) -> Any:
        base = self._strip_protocol(path).rstrip("/")
        if maxdepth == 1:
            found = {str(raw["name"]): raw for raw in await self._ls(base, detail=True)}
        else:
            found = await super()._find(base, withdirs=withdirs, detail=True, **kw)
            if maxdepth is not None:
                cut = len(base) + 1
                found = {k: v for k, v in found.items() if str(k)[cut:].rstrip("/").count("/") < maxdepth}
        return found if detail else sorted(found)

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        handle = super()._open(path, mode, *args, **kwargs)
        if mode in ("wb", "xb") and not kwargs.get("autocommit", True):
            handle.__class__ = StagedS3File  # the same file; two of its steps overridden
        return handle


def create(url: str, options: Options) -> BackendMount:
    kwargs: dict[str, Any] = dict(options)
    endpoint = kwargs.pop("endpoint_url", None) or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        kwargs.setdefault("endpoint_url", endpoint)
    kwargs.setdefault("skip_instance_cache", True)
    # Concurrent fetches (grep, duplicates) need more than botocore's 10 pooled connections.
    config = dict(kwargs.pop("config_kwargs", None) or {})
    config.setdefault("max_pool_connections", MAX_POOL)
    kwargs["config_kwargs"] = config
    fs = S3Store(**kwargs)
    root = url.split("://", 1)[1].strip("/")
    if not root:
        raise ValueError("an s3 mount needs a bucket: s3://bucket[/prefix]")
    return BackendMount(fs=fs, root=root, capabilities=CAPABILITIES)
