"""Bytes <-> text for every tool: codecs, base64, binary detection."""

from __future__ import annotations

import base64
import binascii
import codecs
import re

from vfs_mcp.errors import BinaryContent, InvalidArgument, echoed

BASE64 = "base64"
SNIFF_BYTES = 8192


def check_encoding(encoding: str) -> str:
    """The canonical codec name, or INVALID_ARGUMENT for an unknown one."""
    if encoding.lower() == BASE64:
        return BASE64
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise InvalidArgument(
            f"unknown encoding {echoed(encoding)}; use a Python codec name such as 'utf-8' or 'base64'"
        ) from None


def _wide(encoding: str) -> bool:
    return encoding.startswith(("utf-16", "utf-32"))


def looks_binary(data: bytes, encoding: str = "utf-8") -> bool:
    """A NUL byte in the first 8 KiB marks binary content (except for UTF-16/32 text)."""
    return not _wide(encoding) and b"\x00" in data[:SNIFF_BYTES]


def decode(data: bytes, encoding: str, shown: str) -> str:
    """Text of ``data``; BINARY_CONTENT when it is not text in that encoding."""
    encoding = check_encoding(encoding)
    if encoding == BASE64:
        return base64.b64encode(data).decode("ascii")
    if looks_binary(data, encoding):
        raise BinaryContent(f"{shown} looks binary; read it with encoding='base64'")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise BinaryContent(
            f"{shown} is not valid {encoding} text; pass the right encoding (e.g. 'latin-1') or encoding='base64'"
        ) from None


def encode(text: str, encoding: str) -> bytes:
    """Bytes to write for ``text``; INVALID_ARGUMENT when it cannot be encoded."""
    encoding = check_encoding(encoding)
    if encoding == BASE64:
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgument("content is not valid base64") from None
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise InvalidArgument(
            f"content cannot be encoded as {encoding} (character {exc.object[exc.start]!r} at {exc.start}); "
            "choose another encoding"
        ) from None


def decode_range(data: bytes, encoding: str, shown: str, *, at_start: bool, at_end: bool) -> tuple[str, int, int]:
    """Decode a byte window without splitting a character.

    Returns (text, bytes skipped at the front, bytes decoded). Leading UTF-8 continuation
    bytes (when the window starts mid-character) are skipped, and an incomplete character
    at the end is left for the next window.
    """
    encoding = check_encoding(encoding)
    if encoding == BASE64:
        return base64.b64encode(data).decode("ascii"), 0, len(data)
    skipped = 0
    if encoding == "utf-8" and not at_start:
        while skipped < min(3, len(data)) and data[skipped] & 0xC0 == 0x80:
            skipped += 1
    window = data[skipped:]
    if looks_binary(window, encoding):
        raise BinaryContent(f"{shown} looks binary; read it with encoding='base64'")
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        text = decoder.decode(window, final=at_end)
    except UnicodeDecodeError:
        raise BinaryContent(f"{shown} is not valid {encoding} text in this range; try encoding='base64'") from None
    pending = len(decoder.getstate()[0])
    return text, skipped, len(window) - pending


_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""What ``str.splitlines`` ends a line at besides "\\n"."""


def split_lines(text: str) -> list[str]:
    """Lines with their newline kept, ended only by "\\n" (never by \\f, \\r or U+2028)."""
    if _OTHER_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)  # the same lines, each made once
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def printable(text: str) -> str:
    """Text safe to send: bytes kept by surrogateescape shown as U+FFFD."""
    if text.isascii():  # known to the string itself: no copy
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
