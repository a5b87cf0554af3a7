"""A text file held for editing: decoded once, newline style and encoding remembered.

Edits work on ``\\n`` text; ``encode`` puts the file's own line endings back, so CRLF
stays CRLF and nothing else about the bytes changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, AnyStr

from vfs_mcp.changes import Expect, Op, Put
from vfs_mcp.config import DEFAULT_MAX_EDIT_BYTES as DEFAULT_MAX_EDIT_BYTES  # the operations' bound, kept in config
from vfs_mcp.errors import BinaryContent, Conflict, TooLarge
from vfs_mcp.jail.filesystem import JailedFS, sha256, sha256_aside
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops import linediff
from vfs_mcp.ops.codings import all_crlf
from vfs_mcp.ops.literal import newlines
from vfs_mcp.ops.text import check_encoding, decode, encode, looks_binary, split_lines


@dataclass
class TextFile:
    target: Target
    data: bytes
    """The bytes as read: a save checks the file still holds them."""
    encoding: str
    crlf: bool
    token: str | None
    """The version token read (an ETag), on stores that have one."""
    errors: str = "strict"
    """"surrogateescape" for a UTF-8 file holding invalid bytes: they survive an edit untouched."""
    mode: int | None = None
    decoded: str | None = None
    """The text, once decoded: an ASCII file read as UTF-8 is decoded only when ``text`` is asked for."""

    @functools.cached_property
    def sha256(self) -> str:
        return sha256(self.data)

    @classmethod
    def load(cls, vfs: JailedFS, target: Target, encoding: str, max_bytes: int = DEFAULT_MAX_EDIT_BYTES) -> TextFile:
        entry, read = vfs.read_whole(target, max_bytes)  # one open, or one GET with its ETag
        if read is None:
            raise TooLarge(f"{target.display} is {entry.size} bytes, over the {max_bytes}-byte edit limit")
        data = read
        if check_encoding(encoding) == "utf-8" and data.isascii() and not looks_binary(data):
            # Valid UTF-8 already (``isascii`` is a word at a time, no copy): an exact edit works on
            # the bytes and never needs the text (``plain``).
            return cls(target, data, encoding, all_crlf(data), entry.token, mode=entry.mode)
        errors = "strict"
        try:
            raw = decode(data, encoding, target.display)
        except BinaryContent:
            if check_encoding(encoding) != "utf-8" or looks_binary(data):
                raise
            # Mostly UTF-8 with a few invalid bytes: edit around them, write them back as they were.
            raw, errors = data.decode("utf-8", "surrogateescape"), "surrogateescape"
        crlf = all_crlf(raw)
        text = raw.replace("\r\n", "\n") if crlf else raw
        return cls(target, data, encoding, crlf, entry.token, errors, entry.mode, text)

    @property
    def text(self) -> str:
        """The decoded text, with ``\\n`` line ends where the file's are all CRLF."""
        if self.decoded is None:
            raw = self.data.decode("ascii")  # only an ASCII file is left undecoded by ``load``
            self.decoded = raw.replace("\r\n", "\n") if self.crlf else raw
        return self.decoded

    @property
    def chars(self) -> int:
        """``len(text)``, without decoding an ASCII file for it."""
        return len(self.data) if self.decoded is None else len(self.decoded)

    @property
    def plain(self) -> bool:
        """Whether the bytes are the text as it is edited: strict UTF-8 read as "utf-8", its line
        ends left as they are. Then an edit may find and splice the bytes themselves."""
        return self.errors == "strict" and not self.crlf and check_encoding(self.encoding) == "utf-8"

    @property
    def raw(self) -> str:
        """The decoded text with its own line endings."""
        return self.text.replace("\n", "\r\n") if self.crlf else self.text

    def normalise(self, text: str) -> str:
        """Text from the model, in the \\n form the file is edited in."""
        return text.replace("\r\n", "\n") if self.crlf else text

    def encode(self, text: str) -> bytes:
        return self.encode_raw(text.replace("\n", "\r\n") if self.crlf else text)

    def encode_raw(self, text: str) -> bytes:
        """Text with its own line endings, in the file's encoding (foreign bytes kept)."""
        if self.errors == "surrogateescape":
            return text.encode("utf-8", "surrogateescape")
        return encode(text, self.encoding)

    def check_hash(self, expected: str | None) -> None:
        """CONFLICT when the caller's ``expected_hash`` is not the content read."""
        if expected is not None and expected.lower() != self.sha256:
            raise Conflict(f"{self.target.display} changed since it was read (sha256 differs); read it again")

    def saved(self, text: str) -> list[Op]:
        """The step that writes ``text`` over the file (``saved_bytes``)."""
        return self.saved_bytes(self.encode(text))

    def saved_bytes(self, data: bytes) -> list[Op]:
        """The step that writes ``data`` over the file, if it still holds the bytes read (a size
        and a modification time can repeat within the clock's step, the content cannot lie; the
        ETag is compared too, by the store itself where it has conditional writes). Its bytes
        are hashed on another thread while they are written (``hashed_into``)."""
        expect = Expect("file", token=self.token, content=self.data)
        return [Put(self.target, data, expect=expect, digest=sha256_aside(data))]


def hashed_into(result: Any, ops: list[Op]) -> Callable[[], None] | None:
    """What sets ``result.sha256`` to the hash of the bytes ``ops`` (from ``saved``) wrote, once
    they are written: a ``Plan``'s ``after``."""
    if not ops or not isinstance(ops[0], Put) or ops[0].digest is None:
        return None
    digest = ops[0].digest

    def after() -> None:
        result.sha256 = digest()

    return after


@dataclass
class Hunk:
    """One hunk of a line diff; ``lines`` are (' ' | '-' | '+', line with its newline)."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: list[tuple[str, str]]


CHUNK = 1 << 16


def printable(text: str) -> str:
    """Text safe to send: bytes kept by surrogateescape shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@dataclass(frozen=True)
class Known:
    """What the caller of ``hunks`` knows already of the two texts (an edit knows where it
    changed them), so it is not found again by comparing and counting a whole file."""

    head: int
    """The texts start with at least this many equal characters,"""
    tail: int
    """and end with at least this many."""
    at: int
    """An index of the old text,"""
    lines: int
    """and the newlines before it."""


def _same_head(a: AnyStr, b: AnyStr, known: int = 0) -> int:
    """Length of the common prefix (at least ``known``): compared a chunk at a time, then
    halving the chunk that differs (every comparison a ``memcmp`` of a slice, none a
    character at a time)."""
    n = min(len(a), len(b))
    return _common(n, lambda i, k: a[i : i + k] == b[i : i + k], known)


def _same_tail(a: AnyStr, b: AnyStr, head: int, known: int = 0) -> int:
    """Length of the common suffix (at least ``known``) that does not overlap the common prefix."""
    n, la, lb = min(len(a), len(b)) - head, len(a), len(b)
    return _common(n, lambda i, k: a[la - i - k : la - i] == b[lb - i - k : lb - i], known)


def _common(n: int, same: Callable[[int, int], bool], known: int = 0) -> int:
    """The largest ``i <= n`` with ``same(0, i)``, where ``same(i, k)`` compares the ``k``
    characters from ``i`` on (counted from the end for a suffix); ``same(0, known)`` holds."""
    i = min(known, n)
    while i + CHUNK <= n and same(i, CHUNK):
        i += CHUNK
    size = min(CHUNK, n - i)  # the first difference lies in [i, i + size), or there is none
    while size > 0:
        half = (size + 1) // 2
        if same(i, half):
            i, size = i + half, size - half
        elif half == 1:
            break
        else:
            size = half
    return i


def hunks(old: str, new: str, context: int = 3, known: Known | None = None) -> list[Hunk]:
    """Line-diff hunks of two texts. Only the lines around the span where they differ are
    split and compared, so one edit in a large file costs about as much as the edit; with
    ``known`` the texts are compared and counted from what the caller knows, not from their ends.
    """
    head = _same_head(old, new, known.head if known else 0)
    tail = _same_tail(old, new, head, known.tail if known else 0)
    # Widen the differing span to whole lines plus `context` lines on each side.
    start = old.rfind("\n", 0, head) + 1
    for _ in range(context):
        if start == 0:
            break
        start = old.rfind("\n", 0, start - 1) + 1
    old_end, new_end = len(old) - tail, len(new) - tail
    for _ in range(context + 1):
        found = old.find("\n", old_end)
        if found < 0:
            old_end, new_end = len(old), len(new)
            break
        new_end += found + 1 - old_end
        old_end = found + 1
    a, b = split_lines(old[start:old_end]), split_lines(new[start:new_end])
    if known is None:
        lo = old.count("\n", 0, start)
    elif start <= known.at:
        lo = known.lines - old.count("\n", start, known.at)
    else:
        lo = known.lines + old.count("\n", known.at, start)
    out = []
    for group in linediff.matcher(a, b).get_grouped_opcodes(context):
        body: list[tuple[str, str]] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                body += [(" ", line) for line in a[i1:i2]]
                continue
            body += [("-", line) for line in a[i1:i2]]
            body += [("+", line) for line in b[j1:j2]]
        first, last = group[0], group[-1]
        out.append(
            Hunk(
                old_start=lo + first[1] + 1,
                old_lines=last[2] - first[1],
                new_start=lo + first[3] + 1,
                new_lines=last[4] - first[3],
                lines=body,
            )
        )
    return out


def line_range(start: int, count: int) -> str:
    # Unified-diff convention: an empty range names the line before it.
    if count == 0:
        return f"{start - 1},0"
    return f"{start}" if count == 1 else f"{start},{count}"


def unified_diff(
    old: str,
    new: str,
    name: str,
    new_name: str | None = None,
    context: int = 3,
    known: Known | None = None,
) -> str:
    """A unified diff of two texts, git style (empty when they are equal); ``known`` as for ``hunks``."""
    return rendered(hunks(old, new, context, known), name, new_name)


def rendered(found: list[Hunk], name: str, new_name: str | None = None) -> str:
    """``found`` hunks as a unified diff, git style (empty when there are none)."""
    if not found:
        return ""
    out = [f"--- {name}\n", f"+++ {new_name or name}\n"]
    for hunk in found:
        out.append(
            f"@@ -{line_range(hunk.old_start, hunk.old_lines)} +{line_range(hunk.new_start, hunk.new_lines)} @@\n"
        )
        for sign, line in hunk.lines:
            out.append(sign + line if line.endswith("\n") else f"{sign}{line}\n\\ No newline at end of file\n")
    return printable("".join(out))


def unified_diff_bytes(old: bytes, new: bytes, name: str, known: Known, context: int = 3) -> str:
    """``unified_diff`` of two UTF-8 texts given as their bytes, ``known`` counted in bytes:
    only the lines the diff shows are decoded and compared (the same diff as of the texts)."""
    head = _same_head(old, new, known.head)
    tail = _same_tail(old, new, head, known.tail)
    # The lines ``hunks`` would show of the texts: from `context` lines above the first
    # difference to `context` lines below the last (it finds the same ones inside them).
    start = old.rfind(b"\n", 0, head) + 1
    for _ in range(context):
        if start == 0:
            break
        start = old.rfind(b"\n", 0, start - 1) + 1
    old_end, new_end = len(old) - tail, len(new) - tail
    for _ in range(context + 1):
        found = old.find(b"\n", old_end)
        if found < 0:
            old_end, new_end = len(old), len(new)
            break
        new_end += found + 1 - old_end
        old_end = found + 1
    if start <= known.at:
        above = known.lines - newlines(old, start, known.at)
    else:
        above = known.lines + newlines(old, known.at, start)
    shown = old[start:old_end].decode(), new[start:new_end].decode()
    return unified_diff(*shown, name, context=context, known=Known(0, 0, 0, above))
