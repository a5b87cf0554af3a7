"""The segments of the content index (``index.py``): immutable SQLite files, each an FTS5 trigram
table over the folded text of the objects it files and the ``docs`` it files them by (key,
version, size, whether binary); how one is written (``Writer``) and read (``Segment``)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from dataclasses import dataclass

from vfs_mcp.ops.search.trigrams import fold
from vfs_mcp.ops.search.utf8_view import as_searched
from vfs_mcp.ops.text.encoding import looks_binary

FORMAT = "1"
TEXT, BINARY = 0, 1
_SCHEMA = (
    "CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE docs(id INTEGER PRIMARY KEY, key TEXT, etag TEXT, size INTEGER, kind INTEGER)",
    "CREATE VIRTUAL TABLE grams USING fts5(text, tokenize='trigram case_sensitive 1', content='', detail=none)",
)


@dataclass(frozen=True)
class Filed:
    """An object's version as the index files it: its key (mount-relative), version (``MountIndex.version``),
    size, and folded text (None: binary, never searched)."""

    rel: str
    version: str
    size: int
    text: str | None

    @property
    def weight(self) -> int:
        """What keeping it costs, in characters (its text, and its key: a binary one has no text)."""
        return len(self.rel) + len(self.text or "")


class Segment:
    """One immutable SQLite file of the index, open read-only, and the objects it indexed."""

    def __init__(self, name: str, path: str, mount_id: str) -> None:
        self.name = name
        self.path = path
        self.db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        self.lock = threading.Lock()
        try:
            if self.db.execute("PRAGMA quick_check").fetchone() != ("ok",):
                raise ValueError("quick_check failed")
            meta = dict(self.db.execute("SELECT name, value FROM meta").fetchall())
            if meta.get("format") != FORMAT or meta.get("mount") != mount_id:
                raise ValueError("another format or mount")
            self.docs: dict[str, tuple[str, int, int, int]] = {
                str(key): (str(etag), int(size), int(rowid), int(kind))
                for rowid, key, etag, size, kind in self.db.execute("SELECT id, key, etag, size, kind FROM docs")
            }
        except Exception:
            self.db.close()
            raise

    def lookup(self, rel: str, version: str | None, size: int) -> tuple[int, int] | None:
        """(document id, kind) of the object at ``rel`` when this segment indexed it at that version and size."""
        found = self.docs.get(rel)
        if found is None or found[0] != version or found[1] != size:
            return None
        return found[2], found[3]

    def matching(self, expression: str) -> set[int]:
        with self.lock:
            return {row[0] for row in self.db.execute("SELECT rowid FROM grams WHERE grams MATCH ?", (expression,))}

    def close(self) -> None:
        with self.lock:
            self.db.close()


class Writer:
    """A segment being built: a SQLite file of this process's own, sealed once (``seal``)."""

    def __init__(self, path: str, mount_id: str) -> None:
        self.path = path
        self.mount_id = mount_id
        self.db: sqlite3.Connection | None = None
        self.count = 0

    def file(self, filed: Filed) -> None:
        """File one object (on the indexing thread)."""
        if self.db is None:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            for pragma in ("journal_mode=OFF", "synchronous=OFF"):
                self.db.execute(f"PRAGMA {pragma}")
            for statement in _SCHEMA:
                self.db.execute(statement)
            self.db.execute("BEGIN")
        self.count += 1
        self.db.execute(
            "INSERT INTO docs(id, key, etag, size, kind) VALUES (?, ?, ?, ?, ?)",
            (self.count, filed.rel, filed.version, filed.size, BINARY if filed.text is None else TEXT),
        )
        if filed.text:
            self.db.execute("INSERT INTO grams(rowid, text) VALUES (?, ?)", (self.count, filed.text))

    def seal(self) -> bytes | None:
        """The finished segment's bytes (None when it indexed nothing)."""
        if self.db is None:
            return None
        db = self.db
        self.db = None
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("mount", self.mount_id)])
        db.execute("INSERT INTO grams(grams) VALUES ('optimize')")
        db.execute("COMMIT")
        db.execute("VACUUM")
        db.close()
        with open(self.path, "rb") as file:
            data = file.read()
        os.unlink(self.path)
        return data

    def discard(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def text_of(data: bytes) -> str | None:
    """An object's bytes as the index holds them: searched text, folded (None: binary)."""
    return None if looks_binary(data) else fold(as_searched(data).decode("utf-8"))
