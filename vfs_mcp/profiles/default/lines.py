"""Default profile: reading lines of text files, from an offset, the head or the tail."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.files import lines as line_ops
from vfs_mcp.ops.text.names import plural
from vfs_mcp.profiles.args import PathArg, TextCoding
from vfs_mcp.profiles.results import answer
from vfs_mcp.settings import Settings


def lines_footer(meta: line_ops.LinesResult, tail: bool = False) -> str:
    """The line after the text of a line read: which lines these are, and how to go on."""
    of = f" of {meta.total_lines}" if meta.total_lines is not None else ""
    if tail:
        where = f"last {plural(meta.lines_returned, 'line')}{of}"
        more = "; more precede" if meta.has_more else ""
    else:
        where = f"offset {meta.start_line}, {plural(meta.lines_returned, 'line')}{of}"
        more = f"; more: offset={meta.next_offset}" if meta.has_more else "; end of file"
    cut = f"; cut at the {meta.lines_returned}th line by the byte limit" if meta.truncated else ""
    return f"[{meta.path}: {where}{more}{cut}]"


def read_file_lines(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int | None, Field(ge=1)] = None,
    encoding: TextCoding = "utf-8",
) -> CallToolResult:
    text, meta = line_ops.read_file_lines(vfs, path, offset, limit, encoding, settings.max_read_bytes)
    return answer(text, lines_footer(meta), data=meta)


def head_file(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    lines: Annotated[int, Field(ge=1)] = 10,
    encoding: TextCoding = "utf-8",
) -> CallToolResult:
    text, meta = line_ops.head_file(vfs, path, lines, encoding, settings.max_read_bytes)
    return answer(text, lines_footer(meta), data=meta)


def tail_file(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    lines: Annotated[int, Field(ge=1)] = 10,
    encoding: TextCoding = "utf-8",
) -> CallToolResult:
    text, meta = line_ops.tail_file(vfs, path, lines, encoding, settings.max_read_bytes)
    return answer(text, lines_footer(meta, tail=True), data=meta)
