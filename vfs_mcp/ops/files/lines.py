"""Line-targeted reads: head, tail, and paging by line number over files of any size.

Reads stream in blocks and cut only at newline bytes, so a multi-byte character is never
split. ``read_file_lines`` keeps a sparse index per file version (a checkpoint about every
MiB: line number -> byte offset), so paging deep into a large file does not rescan it.
For UTF-16/32, where a newline is not one byte, the file is decoded whole (bounded).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from vfs_mcp.config import DEFAULT_MAX_READ_BYTES
from vfs_mcp.errors import InvalidArgument, TooLarge
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.text.encoding import check_encoding, decode, split_lines
from vfs_mcp.ops.text.find import LONG_LINE, newlines_in
from vfs_mcp.sessions import Slot

BLOCK = 1 << 20
TAIL_BLOCK = 64 << 10
FIRST_TAKE = 64 << 10
"""Bytes first read where the lines asked for start (then twice as many each read, up to
``BLOCK``): a page of lines found at a checkpoint costs a page, not a MiB read and counted."""
INDEXED_FILES = 64
LINE_INDEXES: Slot[OrderedDict[tuple[object, ...], LineIndex]] = Slot("line indexes of the files read")


class LinesResult(BaseModel):
    """Metadata of a line read; the lines themselves travel once, as the text block."""

    path: str
    encoding: str
    start_line: int | None = Field(description="0-based index of the first returned line (None: unknown)")
    lines_returned: int
    total_lines: int | None = Field(None, description="Lines in the file, when known")
    has_more: bool = Field(description="True when more lines follow (head/read_file_lines) or precede (tail)")
    next_offset: int | None = Field(None, description="Pass as offset to read on")
    truncated: bool = Field(False, description="True when the reply was cut at the byte limit before `limit` lines")


@dataclass
class LineIndex:
    """Known (line number, byte offset) pairs where a line starts; line 0 starts at 0."""

    lines: list[int] = field(default_factory=lambda: [0])
    offsets: list[int] = field(default_factory=lambda: [0])
    total_lines: int | None = None

    def nearest(self, line: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.lines, line) - 1
        return self.lines[i], self.offsets[i]

    def add(self, line: int, offset: int) -> None:
        i = bisect.bisect_left(self.lines, line)
        if i == len(self.lines) or self.lines[i] != line:
            self.lines.insert(i, line)
            self.offsets.insert(i, offset)


def _index(vfs: JailedFS, target: Target, entry: Entry) -> LineIndex:
    cache = vfs.kept.made(LINE_INDEXES, OrderedDict)
    key = vfs.version(target, entry)
    index = cache.pop(key, None) or LineIndex()
    cache[key] = index
    while len(cache) > INDEXED_FILES:
        cache.popitem(last=False)
    return index


def _wide(encoding: str) -> bool:
    return encoding.startswith(("utf-16", "utf-32"))


def last_ended_line(vfs: JailedFS, target: Target, size: int) -> bool:
    """Whether the file's last byte is a newline."""
    return vfs.cat(target, start=size - 1, end=size) == b"\n"


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def read_file_lines(
    vfs: JailedFS,
    path: str,
    offset: int = 0,
    limit: int | None = None,
    encoding: str = "utf-8",
    max_bytes: int = DEFAULT_MAX_READ_BYTES,
) -> tuple[str, LinesResult]:
    """Lines ``[offset, offset+limit)`` (0-based) with paging metadata."""
    if offset < 0:
        raise InvalidArgument("offset must be 0 or more")
    if limit is not None and limit < 1:
        raise InvalidArgument("limit must be 1 or more")
    encoding = check_encoding(encoding)
    target = vfs.resolve(path)
    if _wide(encoding):
        return _read_decoded(vfs, target, offset, limit, encoding, max_bytes)
    entry = vfs.require_file(target)
    size = entry.size
    index = _index(vfs, target, entry)
    line, pos = index.nearest(offset)
    chunks: list[bytes] = []
    taken = 0
    truncated = False
    at_eof = False
    with vfs.open_read(target) as handle:
        handle.seek(pos)
        block = b""
        long_lines = False  # the first block is counted by bytes.count, the rest as its lines say
        # Skip whole blocks with a fast count; leave checkpoints behind for the next call.
        while line < offset:
            block = handle.read(BLOCK)
            if not block:
                at_eof = True
                break
            newlines = newlines_in(block, long_lines)
            long_lines = newlines * LONG_LINE <= len(block)
            if line + newlines < offset:
                last = block.rfind(b"\n")
                if last >= 0:
                    index.add(line + newlines, pos + last + 1)
                line += newlines
                pos += len(block)
                continue
            cut = -1
            for _ in range(offset - line):
                cut = block.find(b"\n", cut + 1)
            pos += cut + 1
            block = block[cut + 1 :]
            line = offset
            index.add(line, pos)
        if not at_eof and line == offset:
            step = FIRST_TAKE
            if not block:
                block = handle.read(step)
            while block:
                want = None if limit is None else limit - taken
                newlines = block.count(b"\n")
                if want is not None and newlines >= want:
                    cut = -1
                    for _ in range(want):
                        cut = block.find(b"\n", cut + 1)
                    block = block[: cut + 1]
                if sum(map(len, chunks)) + len(block) > max_bytes:
                    room = max_bytes - sum(map(len, chunks))
                    last = block.rfind(b"\n", 0, room)
                    if last >= 0:
                        chunks.append(block[: last + 1])
                        taken += block[: last + 1].count(b"\n")
                    truncated = True
                    break
                chunks.append(block)
                taken += newlines if want is None or newlines < want else want
                if want is not None and taken >= limit:  # type: ignore[operator]
                    break
                step = min(2 * step, BLOCK)
                block = handle.read(step)
            else:
                at_eof = True
    data = b"".join(chunks)
    if data and not data.endswith(b"\n"):
        taken += 1  # a last line without a final newline
    if line < offset:  # the file ended before the offset: ``line`` counted its newlines
        index.total_lines = line + (1 if size and not last_ended_line(vfs, target, size) else 0)
    elif pos + len(data) >= size:
        at_eof = True
        index.total_lines = offset + taken
    text = decode(data, encoding, target.display)
    has_more = not at_eof
    return text, LinesResult(
        path=target.display,
        encoding=encoding,
        start_line=offset,
        lines_returned=taken,
        total_lines=index.total_lines,
        has_more=has_more,
        next_offset=offset + taken if has_more else None,
        truncated=truncated,
    )


def _decoded_lines(vfs: JailedFS, target: Target, encoding: str, max_bytes: int) -> list[str]:
    """All lines of a UTF-16/32 file (a newline is not one byte there, so it is decoded whole)."""
    if vfs.require_file(target).size > max_bytes:
        raise TooLarge(f"{target.display} is over {max_bytes} bytes; line reads of {encoding} files decode it whole")
    return split_lines(decode(vfs.cat(target), encoding, target.display))


def _read_decoded(
    vfs: JailedFS, target: Target, offset: int, limit: int | None, encoding: str, max_bytes: int
) -> tuple[str, LinesResult]:
    lines = _decoded_lines(vfs, target, encoding, max_bytes)
    chosen = lines[offset : None if limit is None else offset + limit]
    more = offset + len(chosen) < len(lines)
    return "".join(chosen), LinesResult(
        path=target.display,
        encoding=encoding,
        start_line=offset,
        lines_returned=len(chosen),
        total_lines=len(lines),
        has_more=more,
        next_offset=offset + len(chosen) if more else None,
    )


def head_file(
    vfs: JailedFS, path: str, lines: int = 10, encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_READ_BYTES
) -> tuple[str, LinesResult]:
    """The first ``lines`` lines."""
    return read_file_lines(vfs, path, 0, lines, encoding, max_bytes)


def tail_file(
    vfs: JailedFS, path: str, lines: int = 10, encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_READ_BYTES
) -> tuple[str, LinesResult]:
    """The last ``lines`` lines, read backwards from the end: the cost does not grow with the file."""
    if lines < 1:
        raise InvalidArgument("lines must be 1 or more")
    encoding = check_encoding(encoding)
    target = vfs.resolve(path)
    if _wide(encoding):
        all_lines = _decoded_lines(vfs, target, encoding, max_bytes)
        chosen = all_lines[-lines:]
        start = len(all_lines) - len(chosen)
        return "".join(chosen), LinesResult(
            path=target.display,
            encoding=encoding,
            start_line=start,
            lines_returned=len(chosen),
            total_lines=len(all_lines),
            has_more=start > 0,
        )
    entry = vfs.require_file(target)
    size = entry.size
    data = b""
    pos = size
    cut = None
    while pos > 0:
        start = max(0, pos - TAIL_BLOCK)
        data = vfs.cat(target, start=start, end=pos) + data
        pos = start
        # The final newline ends the last line; count the ones before it.
        body = data[:-1] if pos + len(data) == size and data.endswith(b"\n") else data
        if body.count(b"\n") >= lines:
            cut = len(body)
            for _ in range(lines):
                cut = body.rfind(b"\n", 0, cut)
            break
        if len(data) > max_bytes:
            raise TooLarge(f"the last {lines} lines of {target.display} are over {max_bytes} bytes; ask for fewer")
    tail = data if cut is None else data[cut + 1 :]
    if len(tail) > max_bytes:
        raise TooLarge(f"the last {lines} lines of {target.display} are over {max_bytes} bytes; ask for fewer")
    text = decode(tail, encoding, target.display)
    returned = _count_lines(tail)
    index = _index(vfs, target, entry)
    if cut is None:  # the whole file was read
        index.total_lines = returned
    total = index.total_lines
    return text, LinesResult(
        path=target.display,
        encoding=encoding,
        start_line=None if total is None else total - returned,
        lines_returned=returned,
        total_lines=total,
        has_more=cut is not None,
    )
