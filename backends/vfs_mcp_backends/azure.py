"""Azure Blob Storage: ``az://container/prefix`` (``abfs://`` and ``abfss://`` too, and
``abfs://container@account.dfs.core.windows.net/prefix``), through adlfs.

Credentials come from adlfs's chain: the ``connection_string``, ``account_key`` or
``sas_token`` option or their ``AZURE_STORAGE_*`` variables, else ``DefaultAzureCredential``
(environment, managed identity, Azure CLI login). Azurite and other emulators are reached
with a ``connection_string`` naming their ``BlobEndpoint``. Needs ``vfs-mcp-backends[azure]``.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from vfs_mcp_backends.base import (
    BackendMount,
    BackendUnavailable,
    Capabilities,
    Options,
    PreconditionFailed,
    check_conditions,
)
from vfs_mcp_backends.store_options import StoreOptions

CAPABILITIES = Capabilities(
    empty_dirs=False, timestamps=frozenset({"created", "modified"}), etags=True, conditional_writes=True
)

_CONCURRENT_DELETES = 32  # one request per blob: Azurite refuses batch deletes (InvalidInput)
_LISTING_FOLDER: ContextVar[bool] = ContextVar("vfs_mcp_azure_listing_folder", default=False)
"""Set while ``find`` walks what its caller takes for a folder (see ``AzureMount.walk``)."""


@dataclass
class AzureMount(BackendMount):
    def walk(self, path: str, maxdepth: int | None = None, metadata: bool = True) -> dict[str, dict[str, Any]]:
        """``find`` without adlfs's look at whether ``path`` is a file (a HEAD before every
        listing): the walk's caller looks a path up only when its listing is empty."""
        found: dict[str, dict[str, Any]] = self.fs.find(
            path, maxdepth=maxdepth, withdirs=True, detail=True, folder=True
        )
        return found

    def put_if(self, path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceModifiedError

        check_conditions(if_match, create_only)
        condition: dict[str, Any] = {"overwrite": not create_only}
        if if_match:
            condition |= {"etag": _quoted(if_match), "match_condition": MatchConditions.IfNotModified}
        try:
            out = self.fs.pipe_file(path, data, **condition)
        except (FileExistsError, ResourceModifiedError) as exc:  # 409 BlobAlreadyExists, 412
            raise PreconditionFailed(path) from exc
        finally:
            self.invalidate(path)
        etag = out.get("etag") if isinstance(out, dict) else None
        return str(etag) if etag else None


def _quoted(etag: str) -> str:
    return etag if etag.startswith('"') else f'"{etag}"'


def _filesystem_class() -> type[Any]:
    from adlfs import AzureBlobFileSystem
    from adlfs.spec import AzureBlobFile
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobBlock
    from fsspec.asyn import sync, sync_wrapper

    class StagedBlobFile(AzureBlobFile):  # type: ignore[misc]
        """A staged write (``autocommit=False``): its blocks are uploaded as it is written and
        at ``close``, and become the blob only at ``commit`` (adlfs commits at ``close``);
        ``discard`` leaves them uncommitted, and Azure drops uncommitted blocks."""

        async def _async_upload_chunk(self, final: bool = False, **kwargs: Any) -> Any:
            return await super()._async_upload_chunk(final=final and self.autocommit, **kwargs)

        _upload_chunk = sync_wrapper(_async_upload_chunk)

        async def _commit(self) -> None:
            async with self.fs.service_client.get_blob_client(container=self.container_name, blob=self.blob) as blob:
                common = {"metadata": self.metadata, "content_settings": self._content_settings}
                try:
                    if self._block_list:
                        create_only = {"headers": {"If-None-Match": "*"}} if self.mode == "xb" else {}
                        await blob.commit_block_list([BlobBlock(b) for b in self._block_list], **common, **create_only)
                    else:  # nothing written: Azure refuses an empty block list for a new blob
                        await blob.upload_blob(b"", overwrite=self.mode == "wb", **common)
                except ResourceExistsError as exc:
                    raise FileExistsError(self.path) from exc
            self.fs.invalidate_cache(self.path)

        def commit(self) -> None:
            sync(self.fs.loop, self._commit)

        def discard(self) -> None:
            self._block_list: list[str] = []

    class BlobFileSystem(AzureBlobFileSystem):  # type: ignore[misc]
        """adlfs, with the timestamps under the names fsspec users read and S3-style markers.

        A directory marker (``key/``, empty) carries ``is_directory=true`` metadata, so adlfs
        lists it as the directory it stands for, not as a file named like it.
        """

        async def _details(self, contents: Any, *args: Any, **kwargs: Any) -> Any:
            out = await super()._details(contents, *args, **kwargs)
            for entry in out:
                if entry.get("last_modified") is not None:
                    entry.setdefault("mtime", entry["last_modified"])
                if entry.get("creation_time") is not None:
                    entry.setdefault("created", entry["creation_time"])
            return out

        async def _find(self, path: str, *args: Any, folder: bool = False, **kwargs: Any) -> Any:
            token = _LISTING_FOLDER.set(folder)
            try:
                return await super()._find(path, *args, **kwargs)
            finally:
                _LISTING_FOLDER.reset(token)

        async def _isfile(self, path: str) -> bool:
            return False if _LISTING_FOLDER.get() else bool(await super()._isfile(path))

        async def _pipe_file(self, path: str, value: bytes, *args: Any, **kwargs: Any) -> Any:
            if not (path.endswith("/") and not value):
                return await super()._pipe_file(path, value, *args, **kwargs)
            container, key, _ = self.split_path(path)
            async with self.service_client.get_blob_client(container=container, blob=key.rstrip("/") + "/") as blob:
                out = await blob.upload_blob(b"", overwrite=True, metadata={"is_directory": "true"})
            self.invalidate_cache(self._parent(path))
            return out

        pipe_file = sync_wrapper(_pipe_file)  # adlfs binds its own _pipe_file the same way

        def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
            handle = super()._open(path, mode, *args, **kwargs)
            if mode in ("wb", "xb") and not kwargs.get("autocommit", True):
                handle.__class__ = StagedBlobFile  # the same file; its last upload waits for commit
            return handle

        async def _rm(self, path: Any, recursive: bool = False, **kwargs: Any) -> Any:
            # adlfs deletes what its listing names, which leaves markers ("key/") behind.
            container, key, _ = self.split_path(path) if isinstance(path, str) else ("", "", None)
            if not (recursive and key):
                return await super()._rm(path, recursive=recursive, **kwargs)
            key = key.rstrip("/")
            async with self.service_client.get_container_client(container=container) as client:
                names = [blob.name async for blob in client.list_blobs(name_starts_with=key + "/")]
                if await self._isfile(f"{container}/{key}"):
                    names.append(key)
                for start in range(0, len(names), _CONCURRENT_DELETES):
                    await asyncio.gather(*(client.delete_blob(n) for n in names[start : start + _CONCURRENT_DELETES]))
            self.invalidate_cache(f"{container}/{key}")

        rm = sync_wrapper(_rm)

    return BlobFileSystem


class AzureOptions(StoreOptions):
    """Every option passes on to ``AzureBlobFileSystem`` (checked by name)."""

    store = "azure"


def create(url: str, options: Options) -> BackendMount:
    try:
        fs_class = _filesystem_class()
    except ImportError as exc:
        raise BackendUnavailable("the azure backend is not installed: pip install 'vfs-mcp-backends[azure]'") from exc
    given = AzureOptions.parse(options, passes_to=fs_class).given()
    kwargs: dict[str, Any] = {**fs_class._get_kwargs_from_urls(url), **given}
    kwargs.setdefault("skip_instance_cache", True)
    fs = fs_class(**kwargs)
    root = fs_class._strip_protocol(url).strip("/")
    if not root:
        raise ValueError("an azure mount needs a container: az://container[/prefix]")
    return AzureMount(fs=fs, root=root, capabilities=CAPABILITIES)
