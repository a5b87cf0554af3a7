"""A text file held for editing: decoded once, newline style and encoding remembered.

Edits work on ``\\n`` text; ``encode`` puts the file's own line endings back, so CRLF
stays CRLF and nothing else about the bytes changes.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from vfs_mcp.errors import TooLarge
from vfs_mcp.filesystem import JailedFS, sha256
from vfs_mcp.jail import Target
from vfs_mcp.ops.text import decode, encode

DEFAULT_MAX_EDIT_BYTES = 64 * 1024 * 1024


@dataclass
class TextFile:
    target: Target
    text: str
    encoding: str
    crlf: bool
    sha256: str

    @classmethod
    def load(cls, vfs: JailedFS, target: Target, encoding: str, max_bytes: int = DEFAULT_MAX_EDIT_BYTES) -> TextFile:
        entry = vfs.require_file(target)
        if entry.size > max_bytes:
            raise TooLarge(f"{target.display} is {entry.size} bytes, over the {max_bytes}-byte edit limit")
        data = vfs.cat(target)
        raw = decode(data, encoding, target.display)
        # Only a file whose every newline is CRLF is treated as CRLF; mixed files are edited as they are.
        crlf = "\r\n" in raw and raw.count("\r\n") == raw.count("\n")
        return cls(target, raw.replace("\r\n", "\n") if crlf else raw, encoding, crlf, sha256(data))

    def normalise(self, text: str) -> str:
        """Text from the model, in the \\n form the file is edited in."""
        return text.replace("\r\n", "\n") if self.crlf else text

    def encode(self, text: str) -> bytes:
        return encode(text.replace("\n", "\r\n") if self.crlf else text, self.encoding)

    def save(self, vfs: JailedFS, text: str, expected_hash: str | None) -> str:
        """Write the new text atomically (CONFLICT if the file changed since load); returns its sha256."""
        data = self.encode(text)
        vfs.write(self.target, data, expected_hash=expected_hash or self.sha256)
        return sha256(data)


def unified_diff(old: str, new: str, name: str, new_name: str | None = None, context: int = 3) -> str:
    """A git-style unified diff of two texts (empty when they are equal)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=name,
        tofile=new_name or name,
        n=context,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
