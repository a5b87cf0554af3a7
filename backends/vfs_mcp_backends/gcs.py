"""Google Cloud Storage: ``gs://bucket`` or ``gs://bucket/prefix`` (``gcs://`` too), through gcsfs.

Credentials come from Google's usual chain (``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's
application-default login, the metadata server), or the ``token`` option. An emulator is
named by the ``endpoint_url`` option or ``STORAGE_EMULATOR_HOST``; with one, ``token``
defaults to ``"anon"``. Other options go to ``GCSFileSystem``. Needs ``vfs-mcp-backends[gcs]``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from vfs_mcp_backends.base import (
    BackendMount,
    BackendUnavailable,
    Capabilities,
    Options,
    PreconditionFailed,
    check_conditions,
)
from vfs_mcp_backends.store_options import StoreOptions

CAPABILITIES = Capabilities(empty_dirs=False, timestamps=frozenset({"modified"}), etags=True, conditional_writes=True)
_BOUNDARY = "vfs-mcp-boundary"


@dataclass
class GCSMount(BackendMount):
    """A GCS mount; its version token is the object's generation."""

    def version_token(self, info: Any) -> str | None:
        generation = info.get("generation")
        return str(generation) if generation else None

    def put_if(self, path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        check_conditions(if_match, create_only)
        condition = {"ifGenerationMatch": "0" if create_only else if_match} if create_only or if_match else {}
        bucket, key, _ = self.fs.split_path(path)
        # A multipart upload: one request that carries the condition (emulators honour it there).
        head = f"--{_BOUNDARY}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{json.dumps({'name': key})}\r\n"
        head += f"--{_BOUNDARY}\r\nContent-Type: application/octet-stream\r\n\r\n"
        body = head.encode() + data + f"\r\n--{_BOUNDARY}--".encode()
        try:
            out = self.fs.call(
                "POST",
                f"{self.fs._location}/upload/storage/v1/b/{quote(bucket)}/o",
                uploadType="multipart",
                headers={"Content-Type": f'multipart/related; boundary="{_BOUNDARY}"'},
                data=body,
                json_out=True,
                **condition,
            )
        except FileExistsError as exc:  # gcsfs's name for HTTP 412
            raise PreconditionFailed(path) from exc
        finally:
            self.invalidate(path)
        return str(out["generation"])


class GCSOptions(StoreOptions):
    """The options vfs-mcp reads itself; every other ``GCSFileSystem`` argument passes on."""

    store = "gcs"
    endpoint_url: str | None = None


def create(url: str, options: Options) -> BackendMount:
    try:
        # The core class: gcsfs's default adds a gRPC probe per bucket for zonal and
        # hierarchical buckets, which costs a round trip and hangs against emulators.
        from gcsfs.core import GCSFileSystem
    except ImportError as exc:
        raise BackendUnavailable("the gcs backend is not installed: pip install 'vfs-mcp-backends[gcs]'") from exc
    kwargs = GCSOptions.parse(options, passes_to=GCSFileSystem).given()
    if kwargs.get("endpoint_url") or os.environ.get("STORAGE_EMULATOR_HOST"):
        kwargs.setdefault("token", "anon")
    kwargs.setdefault("skip_instance_cache", True)
    fs = GCSFileSystem(**kwargs)
    root = url.split("://", 1)[1].strip("/")
    if not root:
        raise ValueError("a gcs mount needs a bucket: gs://bucket[/prefix]")
    return GCSMount(fs=fs, root=root, capabilities=CAPABILITIES)
