"""S3 and S3-compatible stores: ``s3://bucket`` or ``s3://bucket/prefix``.

Credentials come from the usual AWS chain; the endpoint from the ``endpoint_url``
option or ``AWS_ENDPOINT_URL`` (MinIO, R2, moto). ``conditional_writes = false`` declares
an endpoint that ignores ``If-Match`` (s3rver does). Other options go to ``S3FileSystem``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import s3fs
from botocore.utils import parse_timestamp
from fsspec.asyn import sync, sync_wrapper
from pydantic import Field

from vfs_mcp_backends.base import (
    BackendMount,
    Capabilities,
    Child,
    Keep,
    Options,
    Page,
    PreconditionFailed,
    check_conditions,
)
from vfs_mcp_backends.store_errors import error_code
from vfs_mcp_backends.store_options import StoreOptions

CAPABILITIES = Capabilities(
    empty_dirs=False, native_copy=True, timestamps=frozenset({"modified"}), etags=True, conditional_writes=True
)
MAX_POOL = 64
# What S3 answers when a condition fails: 412, or 409 when a concurrent conditional write won.
_CONDITION_CODES = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}


@dataclass
class S3Mount(BackendMount):
    def pages(
        self, path: str, maxdepth: int | None = None, metadata: bool = True, keep: Keep | None = None
    ) -> Iterator[Page]:
        """The keys below ``path``, one list request (1,000 keys) a page, in key order, each
        folder derived from the keys under it (and from markers) the first time a key names
        it: a caller that stops early (a name search with its matches) sends no more requests,
        and a page holds at most 1,000 keys and their folders whatever the bucket's size."""
        fs: Any = self.fs
        if maxdepth == 1:  # a folder's own entries: its delimiter listing, not every key below it
            cursor: str | None = None
            while True:
                ((entries, cursor),) = self.ls_many([path], [cursor])
                kept = [entry for entry in entries if keep is None or keep(entry[0], entry[0])]
                yield Page(kept, [], cursor is None, len(entries), entries[-1][0] if entries else "")
                if cursor is None:
                    return
        bucket, key, _ = fs.split_path(path)
        prefix = key.rstrip("/") + "/" if key else ""
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, **fs.req_kw}
        folders_before: list[str] = []  # the folders of the key before: keys under a folder come together
        while True:
            out = sync(fs.loop, fs._call_s3, "list_objects_v2", **request)
            objects = out.get("Contents", [])
            items: list[tuple[str, str, int]] = []
            for obj in objects:
                rel = str(obj["Key"])[len(prefix) :]
                *folders, name = rel.split("/")
                if "" in folders:
                    continue  # an empty name ("a//b"): no path reaches it
                same = 0
                while same < min(len(folders), len(folders_before)) and folders[same] == folders_before[same]:
                    same += 1
                for depth in range(same, len(folders) if maxdepth is None else min(len(folders), maxdepth)):
                    folder = "/".join(folders[: depth + 1])
                    if keep is None or keep(folders[depth], folder):
                        items.append((folder, "directory", 0))
                folders_before = folders
                if name and (maxdepth is None or len(folders) < maxdepth) and (keep is None or keep(name, rel)):
                    items.append((rel, "file", int(obj.get("Size") or 0)))  # (no name: a folder's marker)
            token = out.get("NextContinuationToken") if out.get("IsTruncated") else None
            until = str(objects[-1]["Key"])[len(prefix) :] if objects else ""
            yield Page(items, [], token is None, len(objects), until)
            if token is None:
                return
            request["ContinuationToken"] = token

    def ls_many(self, paths: list[str], cursors: list[str | None]) -> list[tuple[list[Child], str | None]]:
        """One delimiter listing (a page of up to 1,000 entries) of each folder, all at once."""
        fs: Any = self.fs

        async def one(path: str, cursor: str | None) -> tuple[list[Child], str | None]:
            bucket, key, _ = fs.split_path(path)
            prefix = key.rstrip("/") + "/" if key else ""
            request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/", **fs.req_kw}
            if cursor:
                request["ContinuationToken"] = cursor
            try:
                out = await fs._call_s3("list_objects_v2", **request)
            except FileNotFoundError:
                return [], None
            entries: list[Child] = [
                (str(p["Prefix"])[len(prefix) : -1], "directory", 0) for p in out.get("CommonPrefixes", [])
            ]
            entries += [
                (str(o["Key"])[len(prefix) :], "file", int(o.get("Size") or 0)) for o in out.get("Contents", [])
            ]
            named = sorted(entry for entry in entries if entry[0])  # (no name: the folder's own marker)
            return named, out.get("NextContinuationToken") if out.get("IsTruncated") else None

        async def every() -> list[tuple[list[Child], str | None]]:
            return list(await asyncio.gather(*(one(p, c) for p, c in zip(paths, cursors, strict=True))))

        listed: list[tuple[list[Child], str | None]] = sync(fs.loop, every)
        return listed

    def _request(self, path: str, version: str | None = None) -> dict[str, Any] | None:
        """The arguments of a GET or HEAD of the object ``path`` (of the VersionId ``version``,
        or the one the path names on a version-aware store); None for a bucket."""
        fs: Any = self.fs
        bucket, key, named = fs.split_path(path)
        if not key:
            return None
        request: dict[str, Any] = {"Bucket": bucket, "Key": key, **fs.req_kw}
        if version or named:
            request["VersionId"] = version or named
        return request

    def read_whole(self, path: str, limit: int) -> tuple[dict[str, Any], bytes | None] | None:
        """One GET: the object's metadata from its answer (as ``info`` gives it: its ETag with
        it) and its body when it holds at most ``limit`` bytes (a larger one is left unread)."""
        fs: Any = self.fs
        request = self._request(path)
        if request is None:
            return None

        async def get() -> tuple[dict[str, Any], bytes | None]:
            out = await fs._call_s3("get_object", **request)
            body = out["Body"]
            try:
                size = int(out.get("ContentLength") or 0)
                return out, await body.read() if size <= limit else None
            finally:
                body.close()

        out, data = sync(fs.loop, get)
        return _answered(path, out), data

    def read_version(
        self, path: str, start: int | None = None, end: int | None = None, version: str | None = None
    ) -> tuple[dict[str, Any], bytes] | None:
        """One GET with a Range (a HEAD for an empty range), of the VersionId ``version`` when given."""
        fs: Any = self.fs
        request = self._request(path, version)
        if request is None:
            return None

        async def get() -> tuple[dict[str, Any], bytes]:
            size: int | None = None
            if (start is not None and start < 0 and end is not None) or (end is not None and end < 0):
                size = int((await fs._call_s3("head_object", **request))["ContentLength"])
            first = start + size if size is not None and start is not None and start < 0 else start
            last = end + size if size is not None and end is not None and end < 0 else end
            if first is not None and first == last:
                return await fs._call_s3("head_object", **request), b""
            if first is not None and first < 0:
                request["Range"] = f"bytes={first}"  # the last -first bytes
            elif first is not None or last is not None:
                request["Range"] = f"bytes={first or 0}-{'' if last is None else last - 1}"
            out = await fs._call_s3("get_object", **request)
            body = out["Body"]
            try:
                return out, await body.read()
            finally:
                body.close()

        out, data = sync(fs.loop, get)
        info = _answered(path, out)
        whole = str(out.get("ContentRange") or "").rpartition("/")[2]  # "bytes 0-9/1234": of a range
        if whole.isdigit():
            info["size"] = int(whole)
        return info, data

    def put_if(self, path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        check_conditions(if_match, create_only)
        if not self.capabilities.conditional_writes:
            raise NotImplementedError("this S3 endpoint is declared without conditional writes")
        condition = {"IfNoneMatch": "*"} if create_only else {"IfMatch": _quoted(if_match)} if if_match else {}
        try:
            out = self.fs.pipe_file(path, data, **condition)
        except OSError as exc:
            # With If-Match, S3 answers 404 NoSuchKey when the object is gone: the token no longer holds.
            gone = isinstance(exc, FileNotFoundError) and if_match is not None
            if gone or isinstance(exc, FileExistsError) or error_code(exc, status=True) in _CONDITION_CODES:
                raise PreconditionFailed(path) from exc
            raise
        finally:
            self.invalidate(path)
        etag = out.get("ETag") if isinstance(out, dict) else None
        return str(etag) if etag else None


def _answered(path: str, out: dict[str, Any]) -> dict[str, Any]:
    """A GET's or HEAD's answer as ``info`` gives an object's metadata."""
    return {
        "name": path,
        "type": "file",
        "size": int(out.get("ContentLength") or 0),
        "ETag": out.get("ETag"),
        "LastModified": out.get("LastModified"),
        "StorageClass": out.get("StorageClass", "STANDARD"),
        "VersionId": out.get("VersionId"),
        "ContentType": out.get("ContentType"),
    }


def _quoted(etag: str | None) -> str | None:
    # An ETag is a quoted string on the wire; vfs-mcp shows it without the quotes.
    return etag if etag is None or etag.startswith(('"', "W/")) else f'"{etag}"'


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


def timestamp(text: str) -> datetime:
    """A timestamp S3 sends (ISO 8601 in listings, RFC 1123 in headers), parsed by the standard
    library: botocore's dateutil parser took most of the time spent on a page of keys. Anything
    else goes to botocore's parser."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        try:
            return parsedate_to_datetime(text)
        except (TypeError, ValueError):
            parsed: datetime = parse_timestamp(text)
            return parsed


class S3Store(s3fs.S3FileSystem):  # type: ignore[misc]
    """s3fs, listing a tree in one paged request cut to depth here (s3fs's own ``maxdepth``
    lists each "directory" separately), staging small writes in one PUT, and parsing
    timestamps quickly (``timestamp``).
    """

    async def set_session(self, *args: Any, **kwargs: Any) -> Any:
        client = await super().set_session(*args, **kwargs)
        # Read by every response as it is parsed, so set after the client exists is in time.
        self.session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=timestamp)
        return client

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

    find = sync_wrapper(_find)  # s3fs binds ``find`` to its own ``_find``: rebind it to this one

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        handle = super()._open(path, mode, *args, **kwargs)
        if mode in ("wb", "xb") and not kwargs.get("autocommit", True):
            handle.__class__ = StagedS3File  # the same file; two of its steps overridden
        return handle


class S3Options(StoreOptions):
    """The options vfs-mcp reads itself; every other ``S3FileSystem`` argument passes on."""

    store = "s3"
    endpoint_url: str | None = None
    conditional_writes: bool = True
    config_kwargs: dict[str, Any] = Field(default_factory=dict)


def create(url: str, options: Options) -> BackendMount:
    kwargs = S3Options.parse(options, passes_to=s3fs.S3FileSystem).given()
    conditional = bool(kwargs.pop("conditional_writes", True))
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
    capabilities = CAPABILITIES if conditional else replace(CAPABILITIES, conditional_writes=False)
    return S3Mount(fs=fs, root=root, capabilities=capabilities)
