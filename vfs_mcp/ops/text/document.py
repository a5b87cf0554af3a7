"""A text file held for editing: decoded once, newline style and encoding remembered.

Edits work on ``\\n`` text; ``encode`` puts the file's own line endings back, so CRLF
stays CRLF and nothing else about the bytes changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vfs_mcp.changes import Expect, Put, Step
from vfs_mcp.config import DEFAULT_MAX_EDIT_BYTES as DEFAULT_MAX_EDIT_BYTES  # the operations' bound, kept in config
from vfs_mcp.errors import BinaryContent, Conflict, TooLarge
from vfs_mcp.jail.entries import Pieces, sha256, sha256s_aside
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.text.codings import all_crlf
from vfs_mcp.ops.text.encoding import check_encoding, decode, encode, looks_binary


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
    identity: tuple[int, ...] | None = None
    """The local file's identity when read (``Entry.identity``): a save that finds it the same need not compare the bytes."""

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
            return cls(target, data, encoding, all_crlf(data), entry.token, mode=entry.mode, identity=entry.identity)
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
        return cls(target, data, encoding, crlf, entry.token, errors, entry.mode, text, entry.identity)

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

    def saved(self, text: str) -> list[Step]:
        """The step that writes ``text`` over the file (``saved_bytes``)."""
        return self.saved_bytes(self.encode(text))

    def saved_bytes(self, data: bytes | Pieces) -> list[Step]:
        """The step that writes ``data`` over the file, if it still holds the bytes read (a size
        and a modification time can repeat within the clock's step, the content cannot lie; the
        ETag is compared too, by the store itself where it has conditional writes). Its bytes
        and those it replaces (for the undo record) are hashed on another thread while they are
        written, the head they share once (``sha256s_aside``, ``hashed_into``)."""
        written, replaced = sha256s_aside(data, self.data)
        expect = Expect("file", token=self.token, content=self.data, identity=self.identity, content_digest=replaced)
        return [Put(self.target, data, expect=expect, digest=written)]


def hashed_into(result: Any, ops: list[Step]) -> Callable[[], None] | None:
    """What sets ``result.sha256`` to the hash of the bytes ``ops`` (from ``saved``) wrote, once
    they are written: a ``Plan``'s ``after``."""
    if not ops or not isinstance(ops[0], Put) or ops[0].digest is None:
        return None
    digest = ops[0].digest

    def after() -> None:
        result.sha256 = digest()

    return after
