"""Where a state store on this machine keeps the records that must be on disk before a change's
first step (``pending/<id>.<iid>.rec`` written ``durable``): in place, in a journal file of
its instance, one record a file, rewritten where it is — one ``fdatasync``, and no new name,
so no folder to fsync (SQLite's rollback journal, kept between changes). A change of N files
on local disk then costs the N files' fsyncs and one more, not two.

    instances/<iid>.<n>.journal    MAGIC | payload length | name length | sha256 | name | payload

The sha256 covers the name and the payload: a record torn by a crash while it was written (its
change's first step was not made: it waits for the fdatasync) reads as no record. Letting a
record go (the change made or taken back) zeroes the magic, with no sync, as moving or deleting
a pending file was (a crash before the next record written there may bring it back: recovery
then finds each step done or due, as it did the file). A journal file is made, and its folder
fsynced, once: the instance's first change of several steps pays for it; one made while another
change holds the first makes a second (changes of several steps at once). Other instances'
records, a dead one's above all, are read from their journals: recovery finds them in
``pending/``'s listing as it found the files."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import struct
import threading

MAGIC = b"VFSJRN1\n"
_HEAD = struct.Struct(">8sQH32s")
SUFFIX = ".journal"
_FLAGS = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


class Journals:
    """The journal files of one instance in the folder ``folder`` (a descriptor), and a look
    into the other instances' there. Descriptors it opens are added to ``fds`` (closed by the
    store when the instance ends)."""

    def __init__(self, folder: int, instance: str, fds: list[int]) -> None:
        self.folder, self.instance, self.fds = folder, instance, fds
        self._lock = threading.Lock()
        self._files: list[int] = []
        """This instance's journal files (descriptors), by number."""
        self._free: list[int] = []
        self._held: dict[str, tuple[int, int, int]] = {}
        """Records held: name -> (file number, where the payload starts, its length)."""

    @staticmethod
    def takes(name: str, instance: str) -> bool:
        """Whether ``name`` is a pending record of ``instance`` (what a journal holds)."""
        folder, _, base = name.partition("/")
        return folder == "pending" and base.endswith(f".{instance}.rec")

    def put(self, name: str, data: bytes) -> None:
        """``data`` as the record ``name``, on disk when this returns."""
        spelt = name.encode()
        head = _HEAD.pack(MAGIC, len(data), len(spelt), hashlib.sha256(spelt + data).digest())
        with self._lock:
            made = not self._free
            number = len(self._files) if made else self._free.pop()
            if made:
                fd = os.open(self._file(number), os.O_RDWR | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600, dir_fd=self.folder)
                self.fds.append(fd)
                self._files.append(fd)
        fd = self._files[number]
        try:
            _write_at(fd, b"".join([head, spelt, data]))
            os.fdatasync(fd)
            if made:
                os.fsync(self.folder)
        except BaseException:
            with self._lock:
                self._free.append(number)
            raise
        with self._lock:
            self._held[name] = (number, _HEAD.size + len(spelt), len(data))

    def get(self, name: str) -> bytes | None:
        """The record ``name`` (this instance's, or another's from its journal), or None."""
        with self._lock:
            held = self._held.get(name)
        if held is not None:
            number, start, size = held
            return _read_at(self._files[number], start, size)
        for file, found in self._others(name):
            if found == name:
                record = _record(self.folder, file, whole=True)
                return record[1] if record is not None else None
        return None

    def read(self, name: str) -> bytes:
        """The record ``name`` (``FileNotFoundError`` when no journal holds it)."""
        found = self.get(name)
        if found is None:
            raise FileNotFoundError(errno.ENOENT, "no such record", name)
        return found

    def drop(self, name: str) -> bool:
        """Let the record ``name`` go (a dead instance's journal file goes with it); whether one was held."""
        with self._lock:
            held = self._held.pop(name, None)
        if held is not None:
            os.pwrite(self._files[held[0]], bytes(len(MAGIC)), 0)
            with self._lock:
                self._free.append(held[0])
            return True
        for file, found in self._others(name):
            if found == name:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(file, dir_fd=self.folder)
                return True
        return False

    def names(self) -> list[str]:
        """The records every journal in the folder holds (their names without ``pending/``)."""
        with self._lock:
            own = list(self._held)
        return [name.partition("/")[2] for name in [*own, *(found for _, found in self._others())]]

    def close(self) -> None:
        """The instance ends: its journal files that hold no record go (before their descriptors)."""
        with self._lock:
            for number in self._free:
                with contextlib.suppress(OSError):
                    os.unlink(self._file(number), dir_fd=self.folder)
            self._free.clear()

    def _others(self, name: str | None = None) -> list[tuple[str, str]]:
        """(journal file, the record name it holds) of the other instances' journals; only the
        files of ``name``'s instance when given (none when it is this one's, or no pending record)."""
        owner = None
        if name is not None:
            parts = name.split(".")
            if not name.startswith("pending/") or len(parts) != 3 or parts[2] != "rec" or parts[1] == self.instance:
                return []
            owner = parts[1]
        found = []
        for file in os.listdir(self.folder):
            if not file.endswith(SUFFIX) or file.startswith(f"{self.instance}."):
                continue
            if owner is not None and not file.startswith(f"{owner}."):
                continue
            with contextlib.suppress(FileNotFoundError):
                record = _record(self.folder, file, whole=False)
                if record is not None:
                    found.append((file, record[0]))
        return found

    def _file(self, number: int) -> str:
        return f"{self.instance}.{number}{SUFFIX}"


def sweep(folder: int, file: str) -> None:
    """Remove the dead instance's journal ``file`` unless it holds a whole record."""
    with contextlib.suppress(FileNotFoundError):
        if _record(folder, file, whole=True) is None:
            os.unlink(file, dir_fd=folder)


def _record(folder: int, file: str, *, whole: bool) -> tuple[str, bytes] | None:
    """(name, payload) of the record the journal ``file`` holds, None when it holds none; with
    ``whole`` False the payload is not read (nor its sha256 checked): b""."""
    fd = os.open(file, os.O_RDONLY | _FLAGS, dir_fd=folder)
    try:
        first = os.pread(fd, 4096, 0)
        if len(first) < _HEAD.size:
            return None
        magic, size, spelt, digest = _HEAD.unpack_from(first)
        if magic != MAGIC:
            return None
        name = _read_at(fd, _HEAD.size, spelt)
        if not whole:
            return name.decode(errors="replace"), b""
        data = _read_at(fd, _HEAD.size + spelt, size)
        if len(name) != spelt or len(data) != size or hashlib.sha256(name + data).digest() != digest:
            return None
        return name.decode(errors="replace"), data
    finally:
        os.close(fd)


def _write_at(fd: int, data: bytes) -> None:
    view, at = memoryview(data), 0
    while at < len(data):
        at += os.pwrite(fd, view[at:], at)


def _read_at(fd: int, start: int, size: int) -> bytes:
    chunks, at = [], start
    while at < start + size:
        chunk = os.pread(fd, min(start + size - at, 16 << 20), at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)
