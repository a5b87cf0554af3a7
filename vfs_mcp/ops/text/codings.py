"""Which coding a text file is in: BOM, UTF-8, then charset-normalizer for the rest; and its
line endings. Shared by everything that opens a text file in a coding it must keep."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from vfs_mcp.errors import BinaryContent, InvalidArgument
from vfs_mcp.ops.text.encoding import BASE64, check_encoding, looks_binary

_BOMS = (  # UTF-32 first: its little-endian BOM begins with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32", "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32", "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig", "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16", "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16", "utf-16-be"),
)
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Coding:
    """How a file's bytes become buffer text and back: codec, byte-order mark, line endings.

    ``name`` is what results report: a Python codec name, with the BOM forms named the way
    Python decodes them (``utf-8-sig``, ``utf-16``, ``utf-32``).
    """

    name: str
    codec: str
    bom: bytes = b""
    crlf: bool = False

    def decode(self, data: bytes, shown: str) -> str:
        """Buffer text (``\\n`` line ends when the file is all CRLF); BINARY_CONTENT if it is not text."""
        try:
            text = data[len(self.bom) :].decode(self.codec)
        except UnicodeDecodeError:
            raise BinaryContent(f"{shown} is not valid {self.name} text; open it with another encoding") from None
        return text.replace("\r\n", "\n") if self.crlf else text

    def encode(self, text: str, shown: str) -> bytes:
        """The file's bytes for buffer text; INVALID_ARGUMENT when a character has no place in the coding."""
        if self.crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        try:
            return self.bom + text.encode(self.codec)
        except UnicodeEncodeError as exc:
            raise InvalidArgument(
                f"{shown} is {self.name} and cannot hold {exc.object[exc.start]!r} (character {exc.start}); "
                "replace that character, or file_open with encoding='utf-8' to change the file's encoding"
            ) from None


UTF8 = Coding("utf-8", "utf-8")


def all_crlf(text: str | bytes) -> bool:
    """Whether every newline is CRLF: only then is a file edited as CRLF (mixed files stay as
    they are). A lone "\r" is looked for first: a memchr, where "\r\n" is a scan that stops at
    every "\n". Text or its bytes (in an ASCII-compatible coding: the same answer)."""
    if isinstance(text, bytes):
        return b"\r" in text and b"\r\n" in text and text.count(b"\r\n") == text.count(b"\n")
    return "\r" in text and "\r\n" in text and text.count("\r\n") == text.count("\n")


def _western(data: bytes) -> str | None:
    """``iso8859-1`` or ``cp1252`` when the bytes read as Western European text, else None.

    Statistical detectors misjudge short Western text (charset-normalizer calls
    "café naïve" cp1250). In Latin-script text, words with accented letters also hold
    plain ASCII letters; text of other scripts in a single-byte code page (Cyrillic,
    Greek, Hebrew) read as cp1252 gives words made of accented letters only.
    """
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    accented = [w for w in _WORD.findall(text) if not w.isascii()]
    if sum(1 for w in accented if any(c.isascii() for c in w)) * 2 < len(accented):
        return None
    return "cp1252" if any(0x80 <= b <= 0x9F for b in data) else "iso8859-1"


def detect(data: bytes, shown: str, complete: bool = True) -> Coding:
    """The coding of a file's bytes (or of its first bytes, ``complete=False``).

    Order: a byte-order mark; UTF-8 (ASCII included); UTF-16/32 without a mark; Western
    European (cp1252 / iso8859-1); charset-normalizer's best guess. BINARY_CONTENT when
    nothing fits.
    """
    for bom, name, codec in _BOMS:
        if data.startswith(bom):
            return _with_endings(Coding(name, codec, bom), data, complete)
    if not looks_binary(data):
        try:
            codecs.getincrementaldecoder("utf-8")().decode(data, final=complete)
        except UnicodeDecodeError:
            pass
        else:
            return _with_endings(UTF8, data, complete)
    from charset_normalizer import from_bytes  # imported only for files that are not UTF-8

    best = from_bytes(data).best()
    if best is None:
        raise BinaryContent(f"{shown} looks binary (no text encoding fits); it cannot be opened as text")
    guess = codecs.lookup(best.encoding).name
    if looks_binary(data):
        if not guess.startswith(("utf-16", "utf-32")):
            raise BinaryContent(f"{shown} looks binary (it holds NUL bytes); it cannot be opened as text")
        return _with_endings(Coding(guess, guess), data, complete)
    name = _western(data) or guess
    return _with_endings(Coding(name, name), data, complete)


def _with_endings(coding: Coding, data: bytes, complete: bool) -> Coding:
    decoder = codecs.getincrementaldecoder(coding.codec)(errors="replace")
    text = decoder.decode(data[len(coding.bom) :], final=complete)
    return Coding(coding.name, coding.codec, coding.bom, all_crlf(text))


def chosen(encoding: str, data: bytes) -> Coding:
    """The coding the caller named on open (overriding detection); its line endings are detected."""
    name = check_encoding(encoding)
    if name == BASE64:
        raise InvalidArgument("encoding='base64' cannot be edited as text; name a text encoding such as 'utf-8'")
    return _with_endings(Coding(name, name), data, True)
