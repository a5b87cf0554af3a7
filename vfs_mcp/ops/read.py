"""Reading whole files, byte ranges, and several files at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument, TooLarge, VfsError
from vfs_mcp.filesystem import JailedFS, sha256
from vfs_mcp.ops.text import check_encoding, decode, decode_range

DEFAULT_MAX_READ_BYTES = 10 * 1024 * 1024
DEFAULT_RANGE_BYTES = 64 * 1024
READ_CONCURRENCY = 8
MAX_CHAR_BYTES = 4  # the longest UTF-8 sequence


class ReadResult(BaseModel):
    """Metadata of a read; the content itself travels once, as the text block."""

    path: str
    encoding: str
    size: int = Field(description="Size of the whole file in bytes")
    offset_bytes: int = Field(description="Byte offset where the returned content starts")
    bytes_read: int = Field(description="Bytes of the file the content covers")
    has_more: bool = Field(description="True when the file continues after this content")
    next_offset_bytes: int | None = Field(None, description="Pass as offset_bytes to read on")
    sha256: str | None = Field(None, description="Hash of the whole file (whole reads); use as expected_hash")


def read_file(
    vfs: JailedFS,
    path: str,
    encoding: str = "utf-8",
    offset_bytes: int | None = None,
    max_bytes: int | None = None,
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
) -> tuple[str, ReadResult]:
    """Read a whole file, or ``max_bytes`` from ``offset_bytes``; returns (content, metadata).

    Raises TOO_LARGE for a whole read above ``max_read_bytes``, BINARY_CONTENT for
    binary data requested as text.
    """
    encoding = check_encoding(encoding)
    target = vfs.resolve(path)
    entry = vfs.require_file(target)
    if offset_bytes is None and max_bytes is None:
        if entry.size > max_read_bytes:
            raise TooLarge(
                f"{target.display} is {entry.size} bytes, over the {max_read_bytes}-byte limit for whole reads; "
                "read a range with offset_bytes/max_bytes, or use read_file_lines, head_file or tail_file"
            )
        data = vfs.cat(target)
        text = decode(data, encoding, target.display)
        meta = ReadResult(
            path=target.display,
            encoding=encoding,
            size=len(data),
            offset_bytes=0,
            bytes_read=len(data),
            has_more=False,
            sha256=sha256(data),
        )
        return text, meta
    start = offset_bytes or 0
    if start < 0:
        raise InvalidArgument("offset_bytes must be 0 or more")
    length = DEFAULT_RANGE_BYTES if max_bytes is None else max_bytes
    if length <= 0:
        raise InvalidArgument("max_bytes must be 1 or more")
    length = min(length, max_read_bytes)
    end = min(start + length, entry.size)
    data = vfs.cat(target, start=start, end=end) if start < end else b""
    text, skipped, used = decode_range(data, encoding, target.display, at_start=start == 0, at_end=end >= entry.size)
    if used == 0 and end < entry.size:
        # The window is smaller than one character: widen it to hold one, so paging advances.
        end = min(start + skipped + MAX_CHAR_BYTES, entry.size)
        data = vfs.cat(target, start=start, end=end)
        text, skipped, used = decode_range(
            data, encoding, target.display, at_start=start == 0, at_end=end >= entry.size
        )
    first = min(start + skipped, entry.size)
    stop = first + used
    more = stop < entry.size
    return text, ReadResult(
        path=target.display,
        encoding=encoding,
        size=entry.size,
        offset_bytes=first,
        bytes_read=used,
        has_more=more,
        next_offset_bytes=stop if more else None,
    )


class FileRead(BaseModel):
    path: str
    ok: bool
    size: int | None = None
    sha256: str | None = None
    error: dict[str, str | int] | None = None


class MultiReadResult(BaseModel):
    files: list[FileRead]
    succeeded: int
    failed: int


def read_multiple_files(
    vfs: JailedFS,
    paths: list[str],
    encoding: str = "utf-8",
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
) -> tuple[list[str | None], MultiReadResult]:
    """Read files concurrently; each path gets its content or its own error, in the order given."""
    if not paths:
        raise InvalidArgument("paths is empty; give at least one path")

    def one(path: str) -> tuple[str | None, FileRead]:
        try:
            text, meta = read_file(vfs, path, encoding, max_read_bytes=max_read_bytes)
        except VfsError as err:
            return None, FileRead(path=path, ok=False, error=err.to_dict())
        return text, FileRead(path=path, ok=True, size=meta.size, sha256=meta.sha256)

    with ThreadPoolExecutor(max_workers=min(READ_CONCURRENCY, len(paths))) as pool:
        outcomes = list(pool.map(one, paths))
    files = [meta for _, meta in outcomes]
    ok = sum(1 for f in files if f.ok)
    return [text for text, _ in outcomes], MultiReadResult(files=files, succeeded=ok, failed=len(files) - ok)
