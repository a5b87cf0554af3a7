"""Reading whole files, byte ranges, images and audio, and several files at once."""

from __future__ import annotations

import contextvars
import functools
import mimetypes
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from vfs_mcp.config import DEFAULT_MAX_READ_BYTES as DEFAULT_MAX_READ_BYTES  # the operations' bound, kept in config
from vfs_mcp.errors import InvalidArgument, TooLarge, VfsError
from vfs_mcp.jail.entries import Entry, sha256_aside
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.text.encoding import BASE64, check_encoding, decode, decode_range

DEFAULT_RANGE_BYTES = 64 * 1024
READ_CONCURRENCY = 8
MAX_CHAR_BYTES = 4  # the longest UTF-8 sequence
T = TypeVar("T")

MEDIA_TYPES = {
    # What models take as images (the Anthropic and OpenAI APIs refuse other image types).
    "image/png": "image/png",
    "image/apng": "image/png",
    "image/jpeg": "image/jpeg",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
    "audio/mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wav": "audio/wav",
    "audio/ogg": "audio/ogg",
    "audio/x-flac": "audio/flac",
    "audio/flac": "audio/flac",
    "audio/mp4": "audio/mp4",
    "audio/aac": "audio/aac",
}
"""Media types a whole read returns as an image or audio block, with the name it is sent under."""


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
    mime_type: str | None = Field(None, description="An image or audio file: the content is its base64")


@functools.cache
def _media_matchers() -> list[Any]:
    import filetype  # here: most servers never read an image, and its 79 matchers take a while to import

    return [matcher for matcher in filetype.types if matcher.mime in MEDIA_TYPES]


def media_type(data: bytes, name: str) -> str | None:
    """The image/audio type a model can be shown ``data`` as: sniffed from the content, else
    (for data that is not text) guessed from the name; None for anything else."""
    head = data[:8192]
    # All of filetype's matchers cost more than the rest of a small read; the matchers of the
    # types above cost a tenth of that, and all are asked only when one of those matches.
    import filetype

    by_name = None
    if filetype.match(head, _media_matchers()) is None:
        by_name = MEDIA_TYPES.get(mimetypes.guess_type(name)[0] or "") if b"\x00" in head else None
        if by_name is None:
            return None
    kind = filetype.guess(head)
    if kind is not None:
        return MEDIA_TYPES.get(kind.mime)
    return by_name


def read_file(
    vfs: JailedFS,
    path: str,
    encoding: str = "utf-8",
    offset_bytes: int | None = None,
    max_bytes: int | None = None,
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
    *,
    media: bool = False,
) -> tuple[str, ReadResult]:
    """Read a whole file, or ``max_bytes`` from ``offset_bytes``; returns (content, metadata).

    With ``media``, a whole read of an image or audio file (not asked for as base64) returns
    its base64 with ``mime_type`` set. Raises TOO_LARGE for a whole read above
    ``max_read_bytes``, BINARY_CONTENT for other binary data requested as text.
    """
    encoding = check_encoding(encoding)
    target = vfs.resolve(path)
    if offset_bytes is None and max_bytes is None:
        entry, data = vfs.read_whole(target, max_read_bytes)
        return _decoded(target, _within(target, entry, data, max_read_bytes), encoding, media)
    entry = vfs.require_file(target)
    start = offset_bytes or 0
    if start < 0:
        raise InvalidArgument("offset_bytes must be 0 or more")
    length = DEFAULT_RANGE_BYTES if max_bytes is None else max_bytes
    if length <= 0:
        raise InvalidArgument("max_bytes must be 1 or more")
    text, first, stop = byte_window(vfs, target, entry.size, start, min(length, max_read_bytes), encoding)
    more = stop < entry.size
    return text, ReadResult(
        path=target.display,
        encoding=encoding,
        size=entry.size,
        offset_bytes=first,
        bytes_read=stop - first,
        has_more=more,
        next_offset_bytes=stop if more else None,
    )


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def byte_window(
    vfs: JailedFS, target: Target, size: int, start: int, length: int, encoding: str, *, by_first_byte: bool = False
) -> tuple[str, int, int]:
    """The text of the bytes ``[start, start+length)`` of a file of ``size`` bytes, never split
    inside a character; returns (text, the byte it starts at, the byte after it).

    A character that starts before the window is left to the window before (UTF-8 continuation
    bytes skipped). One that ends after it is left to the next window, which then starts at it
    (a window smaller than one character is widened to hold one, so paging advances); with
    ``by_first_byte`` (UTF-8 only) it is in this window instead: each character belongs to the
    window holding its first byte, so paging with ``start += length`` never splits, loses or
    repeats one.
    """
    end = min(start + length, size)
    reach = min(end + MAX_CHAR_BYTES - 1, size) if by_first_byte else end
    data = vfs.cat(target, start=start, end=reach) if start < end else b""
    if by_first_byte:
        stop = end - start
        while stop < len(data) and _continuation(data[stop]):
            stop += 1
        data, end = data[:stop], start + stop
    text, skipped, used = decode_range(data, encoding, target.display, at_start=start == 0, at_end=end >= size)
    if used == 0 and end < size and not by_first_byte:
        # The window is smaller than one character: widen it to hold one, so paging advances.
        end = min(start + skipped + MAX_CHAR_BYTES, size)
        data = vfs.cat(target, start=start, end=end)
        text, skipped, used = decode_range(data, encoding, target.display, at_start=start == 0, at_end=end >= size)
    first = min(start + skipped, size)
    return text, first, first + used


def _within(target: Target, entry: Entry, data: bytes | None, limit: int) -> bytes:
    """The bytes of a whole read, or TOO_LARGE when the file holds more than ``limit`` (None:
    measured over it and not read)."""
    if data is None:
        raise TooLarge(
            f"{target.display} is {entry.size} bytes, over the {limit}-byte limit for whole reads; "
            "read a range with offset_bytes/max_bytes, or use read_file_lines, head_file or tail_file"
        )
    if len(data) > limit:  # it grew since it was measured
        raise TooLarge(f"{target.display} grew past the {limit}-byte limit while it was read; read a range")
    return data


def _decoded(target: Target, data: bytes, encoding: str, media: bool) -> tuple[str, ReadResult]:
    mime = media_type(data, target.rel) if media and encoding != BASE64 else None
    text, digest = _text_and_digest(target, data, BASE64 if mime else encoding)
    return text, ReadResult(
        path=target.display,
        encoding=BASE64 if mime else encoding,
        size=len(data),
        offset_bytes=0,
        bytes_read=len(data),
        has_more=False,
        sha256=digest,
        mime_type=mime,
    )


def _text_and_digest(target: Target, data: bytes, encoding: str) -> tuple[str, str]:
    """A whole file's text and the sha256 of its bytes (a big file hashed while it is decoded)."""
    digest = sha256_aside(data)
    return decode(data, encoding, target.display), digest()


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


def each_file(vfs: JailedFS, fn: Callable[..., T], *args: Iterable[object]) -> Iterator[T]:
    """``map(fn, *args)`` over files, in order: one after another when every mount answers
    from this machine (``local_io``), else ``READ_CONCURRENCY`` at a time, each mostly waiting
    (in the call's context: the bytes it reads are counted, the versions noted, as its own)."""
    if all(mount.capabilities.local_io for mount in vfs.mounts):
        return map(fn, *args)
    pool = ThreadPoolExecutor(max_workers=READ_CONCURRENCY)
    call = contextvars.copy_context()
    try:
        return iter(list(pool.map(lambda *one: call.copy().run(fn, *one), *args)))
    finally:
        pool.shutdown()


class Budget:
    """One byte budget for all the files of a reply, spent in the order they are given."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.left = total

    def spend(self, target: Target, entry: Entry) -> None:
        """Count a file in, or TOO_LARGE when it would take the reply over (a later, smaller
        one may still fit). A file over the whole budget spends nothing: its own read refuses it."""
        if self.total >= entry.size > self.left:
            raise TooLarge(
                f"{target.display} ({entry.size} bytes) would take this reply over its {self.total}-byte limit "
                f"for all files together ({self.total - self.left} bytes already); read it in another call"
            )
        if entry.size <= self.total:
            self.left -= entry.size


def admit(vfs: JailedFS, paths: list[str], budget: int) -> list[tuple[Target, Entry] | VfsError]:
    """Each path's file, or its error, within one byte budget for the whole reply.

    Files are measured concurrently and admitted in the order given (``Budget``), so a reply
    holding many large files stays bounded.
    """

    def measure(path: str) -> tuple[Target, Entry] | VfsError:
        try:
            target = vfs.resolve(path)
            return target, vfs.require_file(target)
        except VfsError as err:
            return err

    spent = Budget(budget)
    admitted: list[tuple[Target, Entry] | VfsError] = []
    for found in each_file(vfs, measure, paths):
        if isinstance(found, tuple):
            try:
                spent.spend(*found)
            except TooLarge as err:
                found = err
        admitted.append(found)
    return admitted


def fetch_all(vfs: JailedFS, paths: list[str], budget: int) -> Iterator[tuple[Target, bytes] | VfsError]:
    """Each path's bytes, or its error, within one byte budget for the whole reply (``Budget``).

    Where every mount answers from this machine (``local_io``) each file is measured and read
    in one open, one after another; elsewhere all are measured, then the admitted ones
    fetched, ``READ_CONCURRENCY`` at a time.
    """
    if not all(mount.capabilities.local_io for mount in vfs.mounts):

        def fetch(found: tuple[Target, Entry] | VfsError) -> tuple[Target, bytes] | VfsError:
            if isinstance(found, VfsError):
                return found
            target, entry = found
            try:
                data = vfs.cat(target) if entry.size <= budget else None
                return target, _within(target, entry, data, min(entry.size, budget))
            except VfsError as err:
                return err

        yield from each_file(vfs, fetch, admit(vfs, paths, budget))
        return
    spent = Budget(budget)
    for path in paths:
        try:
            target = vfs.resolve(path)
            entry, data = vfs.read_whole(target, spent.left)
            spent.spend(target, entry)
            yield target, _within(target, entry, data, budget)
        except VfsError as err:
            yield err


def read_multiple_files(
    vfs: JailedFS,
    paths: list[str],
    encoding: str = "utf-8",
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
) -> tuple[list[str | None], MultiReadResult]:
    """Read files; each path gets its content or its own error, in the order given.

    All of them together are bounded by ``max_read_bytes`` (see ``fetch_all``).
    """
    if not paths:
        raise InvalidArgument("paths is empty; give at least one path")
    encoding = check_encoding(encoding)

    def one(path: str, found: tuple[Target, bytes] | VfsError) -> tuple[str | None, FileRead]:
        try:
            if isinstance(found, VfsError):
                raise found
            target, data = found
            text, digest = _text_and_digest(target, data, encoding)
        except VfsError as err:
            return None, FileRead(path=path, ok=False, error=err.to_dict())
        return text, FileRead(path=path, ok=True, size=len(data), sha256=digest)

    outcomes = [one(path, found) for path, found in zip(paths, fetch_all(vfs, paths, max_read_bytes), strict=True)]
    files = [meta for _, meta in outcomes]
    ok = sum(1 for f in files if f.ok)
    return [text for text, _ in outcomes], MultiReadResult(files=files, succeeded=ok, failed=len(files) - ok)
