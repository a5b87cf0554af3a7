"""What both grep engines share (``grep``'s Python scan and ``ripgrep``): the query,
the collector that pages and bounds the matches, and the result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import re2
from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.jail.globs import caller_globs
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.search.regex import compile_regex

MAX_LINE_CHARS = 1000
"""Characters of one matched (or context) line a result carries; longer lines are cut around the match."""
DEFAULT_MAX_CHARS = 200_000
"""Characters of matched and context lines one reply carries unless the server sets --max-response-chars."""
MATCH_BUDGET_SECONDS = 5.0
"""Seconds one search may spend matching before it answers with what it found."""
MAX_FILE_SIZE = 1 << 40
MAX_CONTEXT = 1000


class GrepMatch(BaseModel):
    path: str
    line_number: int = Field(description="1-based")
    column: int = Field(description="1-based character column of the first match on the line")
    line: str
    context_before: list[str] = Field(default_factory=list)
    context_after: list[str] = Field(default_factory=list)


class FileCount(BaseModel):
    path: str
    count: int = Field(description="Matching lines in the file")


class GrepResult(BaseModel):
    path: str
    engine: Literal["ripgrep", "python"]
    matches: list[GrepMatch] = Field(default_factory=list)
    counts: list[FileCount] | None = Field(None, description="Per-file counts (count_only)")
    returned: int
    has_more: bool
    next_offset: int | None = Field(None, description="Pass as results_offset for the next page")
    notes: list[str] = Field(default_factory=list, description="What cut the search short or was skipped")


def mib(value: float) -> int:
    """``value`` MiB in bytes; INVALID_ARGUMENT for what no file can be (not finite, over 1 TiB)."""
    if not math.isfinite(value) or not 0 < value * 1024 * 1024 <= MAX_FILE_SIZE:
        raise InvalidArgument(f"max_file_size_mb must be more than 0 and at most {MAX_FILE_SIZE >> 20}")
    return int(value * 1024 * 1024)


@dataclass
class GrepQuery:
    pattern: str
    is_regex: bool = False
    case_sensitive: bool = True
    whole_word: bool = False
    include: list[str] | None = None
    exclude: list[str] | None = None
    before: int = 0
    after: int = 0
    offset: int = 0
    limit: int | None = None
    max_results: int = 1000
    max_file_size: int = 10 * 1024 * 1024
    max_depth: int | None = None
    count_only: bool = False
    respect_gitignore: bool = False
    """The tools pass True unless asked not to (docs/local-folders.md, "Ignored paths and .git"); False here: a query says what it wants."""
    max_chars: int = DEFAULT_MAX_CHARS
    budget: float = MATCH_BUDGET_SECONDS
    regex: re2._Regexp = field(init=False)

    def __post_init__(self) -> None:
        if not self.pattern:
            raise InvalidArgument("pattern is empty")
        if "\n" in self.pattern:
            raise InvalidArgument("pattern contains a newline; grep matches within one line")
        if min(self.before, self.after, self.offset) < 0 or self.max_results < 1 or (self.limit or 1) < 1:
            raise InvalidArgument("context and offsets must be 0 or more; limits 1 or more")
        if max(self.before, self.after) > MAX_CONTEXT or not 0 < self.max_file_size <= MAX_FILE_SIZE:
            raise InvalidArgument(
                f"context is at most {MAX_CONTEXT} lines and the file size limit at most {MAX_FILE_SIZE >> 20} MiB"
            )
        if self.max_depth is not None and not 1 <= self.max_depth <= 100_000:
            raise InvalidArgument("max_depth must be between 1 and 100000")
        self.regex = compile_regex(
            self.pattern, is_regex=self.is_regex, case_sensitive=self.case_sensitive, whole_word=self.whole_word
        )
        caller_globs(self.include, "include")
        caller_globs(self.exclude, "exclude")

    @property
    def wanted(self) -> int:
        """How many results the page needs, counted from the first."""
        end = self.offset + (self.limit if self.limit is not None else self.max_results)
        return min(end, self.max_results)


def line_window(line: str, column: int = 1) -> str:
    """``line`` within MAX_LINE_CHARS: a window around ``column`` (1-based), saying what was left out."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    start = max(0, min(column - 1 - MAX_LINE_CHARS // 4, len(line) - MAX_LINE_CHARS))
    end = start + MAX_LINE_CHARS
    head = f"…[cut {start:,} characters]…" if start else ""
    tail = f"…[cut {len(line) - end:,} characters]…" if end < len(line) else ""
    return head + line[start:end] + tail


class Collector:
    """Gathers matches in order and knows when the page (plus one, for has_more) is full."""

    def __init__(self, query: GrepQuery) -> None:
        self.query = query
        self.seen = 0
        self.chars = 0
        self.over_size = False
        self.matches: list[GrepMatch] = []
        self.counts: dict[str, int] = {}
        self.notes: list[str] = []

    @property
    def full(self) -> bool:
        return self.over_size or self.seen > self.query.wanted

    def add(self, path: str, line_no: int, column: int, line: str, ctx_b: list[str], ctx_a: list[str]) -> None:
        self.seen += 1
        if self.query.count_only:
            self.counts[path] = self.counts.get(path, 0) + 1
        elif self.query.offset < self.seen <= self.query.wanted:
            match = GrepMatch(
                path=path,
                line_number=line_no,
                column=column,
                line=line_window(line, column),
                context_before=[line_window(c) for c in ctx_b],
                context_after=[line_window(c) for c in ctx_a],
            )
            size = len(path) + len(match.line) + sum(len(c) + len(path) for c in (*ctx_b, *ctx_a)) + 16
            if self.matches and self.chars + size > self.query.max_chars:
                self.over_size = True
                return
            self.chars += size
            self.matches.append(match)

    def skipped(self, what: str, paths: list[str]) -> None:
        if paths:
            shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
            self.notes.append(f"{len(paths)} {what}: {shown}")

    def out_of_time(self, done: int | None, total: int | None) -> None:
        where = f" after {done} of {total} files" if done is not None and total else ""
        self.notes.append(
            f"matching stopped at its {self.query.budget:g} s budget{where}: the results are incomplete. "
            "Simplify the pattern, or narrow path or include_patterns"
        )

    def result(self, root: Target, engine: Literal["ripgrep", "python"], stopped: bool = False) -> GrepResult:
        q = self.query
        if q.count_only:
            files = [FileCount(path=p, count=c) for p, c in self.counts.items()]
            page_end = q.offset + (q.limit or len(files))
            page = files[q.offset : page_end]
            more = page_end < len(files) or self.full or stopped
            return GrepResult(
                path=root.display,
                engine=engine,
                counts=page,
                returned=len(page),
                has_more=more,
                next_offset=page_end if page_end < len(files) else None,
                notes=self.notes,
            )
        notes = list(self.notes)
        next_offset = q.wanted if self.full and q.wanted < q.max_results else None
        if self.over_size:
            next_offset = q.offset + len(self.matches)
            notes.insert(
                0,
                f"the reply reached its size budget ({q.max_chars:,} characters) after {len(self.matches)} matches: "
                f"continue with results_offset={next_offset}, or narrow (fewer context lines, include_patterns, "
                "a smaller path)",
            )
        return GrepResult(
            path=root.display,
            engine=engine,
            matches=self.matches,
            returned=len(self.matches),
            has_more=self.full or stopped,
            next_offset=None if stopped and not self.over_size else next_offset,
            notes=notes,
        )
