"""Editor buffers for the ide profile (docs/profile-ide.md): open, read, save and close files by URI.

A ``Buffers`` holds one session's open files (one per MCP session: ``vfs_mcp.sessions``). A
buffer is a snapshot: the text as opened (or last saved), the coding it was decoded with, and
the version of the file it came from. Each buffer also has a handle (``file_open`` returns it):
the buffer is kept in the state store under it, so a call that passes the handle finds the
buffer from any request, connection or replica sharing the store — the only way to reach it
in a request without a session (the 2026-07-28 era over HTTP). ``read`` reads the buffer, not the
disk; when the file changed on disk since, results say ``externally_modified`` and ``save``
refuses to overwrite that change unless forced. A save whose write is refused or fails
keeps its content in the buffer as unsaved changes, which ``close`` saves or discards.

Encodings are detected on open (``vfs_mcp.ops.text.codings``) and kept on save,
BOM and CRLF line endings included.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
import stat
import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field

from vfs_mcp import changes
from vfs_mcp.changes import ANYTHING, Expect, Plan, Put, Step
from vfs_mcp.changes.state import layout
from vfs_mcp.errors import (
    BinaryContent,
    Conflict,
    InvalidArgument,
    IsADirectory,
    NotFound,
    TooLarge,
    VfsError,
    echoed,
)
from vfs_mcp.jail.entries import Entry, sha256
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.files.read import DEFAULT_MAX_READ_BYTES
from vfs_mcp.ops.files.write import writable_target
from vfs_mcp.ops.text.codings import UTF8, Coding, chosen, detect
from vfs_mcp.ops.text.encoding import split_lines
from vfs_mcp.ops.text.names import uri_of
from vfs_mcp_backends.staged_files import DEFAULT_MODE

DEFAULT_MAX_BUFFERS = 64
DEFAULT_MAX_SAVE_BYTES = 16 * 1024 * 1024
SNIFF_BYTES = 64 * 1024
"""How much of a file that is not open is read to learn its coding before a save."""

# -- URIs -------------------------------------------------------------------------------


def path_of(uri: str) -> str:
    """The path the jail resolves for a URI.

    The Emacs integration builds URIs (docs/profile-ide.md, "Rules") with ``url-hexify-string``, which escapes the slashes too
    (``file://%2Fhome%2Fme%2Fa.el``); that form is made standard, decoded once. Other
    ``file://`` URIs are percent-decoded by the jail; backend URLs are taken as written.
    """
    if uri[:7].lower() == "file://" and uri[7:10].lower() == "%2f":
        return "file://" + quote(unquote(uri[7:]), safe="/")
    return uri


# -- results ----------------------------------------------------------------------------


class OpenResult(BaseModel):
    success: bool = True
    buffer: str = Field(description="Buffer name: the file name, with <2>, <3>... when another open file has it")
    handle: str = Field(description="Pass as handle to the other ide tools: finds this buffer from any request")
    line: int = Field(description="Cursor line, 1-based, after clamping to the file")
    column: int = Field(description="Cursor column, 1-based, after clamping to the line")
    uri: str
    encoding: str = Field(description="Detected (or given) encoding; saves keep it")
    line_ending: Literal["lf", "crlf"]
    total_lines: int
    modified: bool = Field(description="The buffer holds unsaved content (it was not reloaded)")
    externally_modified: bool = Field(description="The file changed on disk since the buffer's content was loaded")


class BufferRead(BaseModel):
    model_config = ConfigDict(title="ReadResult")  # its name in the output schema
    content: str
    lines: int = Field(description="Lines in content")
    encoding: str
    uri: str
    start_line: int = Field(description="First line returned, 1-based, after clamping")
    end_line: int = Field(description="Last line returned (start_line - 1 when none)")
    total_lines: int
    modified: bool = Field(description="Content holds unsaved changes of the open buffer")
    externally_modified: bool = Field(description="The file changed on disk since it was opened or saved")


class SaveResult(BaseModel):
    success: bool = True
    bytes_written: int
    backup_created: bool
    uri: str
    encoding: str
    created: bool = Field(description="The file did not exist before")
    backup: str | None = Field(description="URI of the backup of the previous version")
    externally_modified: bool = Field(description="The save overwrote a change made on disk since open (force)")


class CloseResult(BaseModel):
    success: bool = True
    was_modified: bool = Field(description="The buffer held unsaved content")
    uri: str
    was_open: bool
    saved: bool = Field(description="The unsaved content was written (save_if_modified)")


# -- buffers ----------------------------------------------------------------------------


@dataclass
class Buffer:
    target: Target
    name: str
    coding: Coding
    text: str
    version: tuple[Any, ...] | None
    """Version of the file the text came from or was saved as; None if it vanished under us."""
    digest: str | None = None
    """sha256 of the bytes the text came from or was saved as: a save lands only over them."""
    unsaved: bool = False
    backup: bool = True
    """The backup choice of the save that left ``text`` unsaved."""
    handle: str = ""


MAX_STORED_BUFFERS = 256
"""Buffers the state store keeps for handles (the least recently opened go first)."""
HANDLE = re.compile(r"[A-Za-z0-9_-]{22}")


def _version(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """A file version as the state store keeps it (times as text where they are not numbers)."""
    return tuple(json.loads(json.dumps(value, default=str)))


class StoredBuffers:
    """Buffers kept under their handles in a state store (``changes.state``)."""

    def __init__(self, store: Any, vfs: JailedFS) -> None:
        self.store, self.vfs = store, vfs

    def put(self, buf: Buffer) -> None:
        fields = {key: value for key, value in asdict(buf).items() if key not in ("target", "coding")}
        fields["target"] = [buf.target.mount.url, buf.target.rel]
        fields["coding"] = {**asdict(buf.coding), "bom": buf.coding.bom.hex()}
        self.store.write(layout.buffer(buf.handle), json.dumps(fields).encode(), create=False)
        listed = self.store.listing(layout.BUFFERS)
        for old in sorted(listed, key=lambda item: item.modified)[: max(0, len(listed) - MAX_STORED_BUFFERS)]:
            self.store.delete(layout.buffer(old.name))

    def get(self, handle: str) -> Buffer | None:
        if not HANDLE.fullmatch(handle):
            raise InvalidArgument(f"{echoed(handle)} is not a buffer handle; pass the handle file_open returned")
        try:
            fields = json.loads(self.store.read(layout.buffer(handle)))
        except FileNotFoundError:
            return None
        url, rel = fields.pop("target")
        try:
            mount = self.vfs.served(url)
        except NotFound:
            return None
        coding = fields.pop("coding")
        coding["bom"] = bytes.fromhex(coding["bom"])
        fields["version"] = None if fields["version"] is None else _version(fields["version"])
        return Buffer(Target(mount, rel), coding=Coding(**coding), **fields)

    def delete(self, handle: str) -> None:
        self.store.delete(layout.buffer(handle))


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, high))


def _key(target: Target) -> tuple[str, str]:
    return (target.mount.url, target.rel)


class Buffers:
    """One session's open buffers over a jailed filesystem. Thread-safe: calls run one at a time."""

    def __init__(
        self,
        vfs: JailedFS,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_save_bytes: int = DEFAULT_MAX_SAVE_BYTES,
        max_buffers: int = DEFAULT_MAX_BUFFERS,
        stored: StoredBuffers | None = None,
    ) -> None:
        self.vfs = vfs
        self.stored = stored
        self.max_read_bytes = max_read_bytes
        self.max_save_bytes = max_save_bytes
        self.max_buffers = max_buffers
        self._open: dict[tuple[str, str], Buffer] = {}
        self._lock = threading.RLock()

    def on(self, vfs: JailedFS) -> Buffers:
        """These buffers, worked on by the call whose view of the filesystem ``vfs`` is (its
        changes are that call's); everything else shared."""
        worked = copy.copy(self)
        worked.vfs = vfs
        return worked

    # -- the four operations ----------------------------------------------------------

    def open(
        self, uri: str, line: int | None = None, column: int | None = None, encoding: str | None = None
    ) -> OpenResult:
        """Open (or reload) a file in a buffer and place the cursor, clamped to the text.

        A buffer with unsaved content is not reloaded (nor re-decoded with ``encoding``).
        Raises NOT_FOUND, IS_A_DIRECTORY,
        BINARY_CONTENT, TOO_LARGE (file or number of buffers) and the jail's errors.
        """
        with self._lock:
            target = self.vfs.resolve(path_of(uri))
            buf = self._open.get(_key(target))
            if buf is None or not buf.unsaved:
                if buf is None and len(self._open) >= self.max_buffers:
                    raise TooLarge(f"{self.max_buffers} buffers are open; close some with file_close first")
                version, coding, text, digest = self._load(target, encoding)
                name = buf.name if buf else self._unique_name(target.name)
                handle = buf.handle if buf else secrets.token_urlsafe(16)
                buf = self._open[_key(target)] = Buffer(target, name, coding, text, version, digest, handle=handle)
                self._keep(buf)
            lines = split_lines(buf.text)
            row = _clamp(1 if line is None else line, 1, max(len(lines), 1))
            width = len(lines[row - 1].rstrip("\n").removesuffix("\r")) if lines else 0
            col = _clamp(1 if column is None else column, 1, width + 1)
            return OpenResult(
                buffer=buf.name,
                handle=buf.handle,
                line=row,
                column=col,
                uri=uri_of(target),
                encoding=buf.coding.name,
                line_ending="crlf" if buf.coding.crlf else "lf",
                total_lines=len(lines),
                modified=buf.unsaved,
                externally_modified=buf.unsaved and self._changed(buf),
            )

    def read(
        self, uri: str, start_line: int | None = None, end_line: int | None = None, handle: str | None = None
    ) -> BufferRead:
        """Lines ``start_line..end_line`` (1-based, inclusive, clamped) of the open buffer (the
        one ``handle`` names, else the session's), or of the file when it is not open (nothing
        is kept then).

        Raises INVALID_ARGUMENT when end_line is before start_line.
        """
        if start_line is not None and end_line is not None and end_line < start_line:
            raise InvalidArgument(f"end_line {end_line} is before start_line {start_line}; give an ascending range")
        with self._lock:
            target = self.vfs.resolve(path_of(uri))
            buf = self._find(target, handle)
            if buf is not None:
                coding, text, unsaved, changed = buf.coding, buf.text, buf.unsaved, self._changed(buf)
            else:
                _, coding, text, _ = self._load(target, None)
                unsaved = changed = False
            lines = split_lines(text)
            first = _clamp(1 if start_line is None else start_line, 1, max(len(lines), 1))
            last = len(lines) if end_line is None else _clamp(end_line, first, len(lines))
            chosen_lines = lines[first - 1 : last]
            return BufferRead(
                content="".join(chosen_lines),
                lines=len(chosen_lines),
                encoding=coding.name,
                uri=uri_of(target),
                start_line=first,
                end_line=first + len(chosen_lines) - 1,
                total_lines=len(lines),
                modified=unsaved,
                externally_modified=changed,
            )

    def save(
        self,
        uri: str,
        content: str,
        create_if_not_exists: bool = False,
        force: bool = False,
        backup: bool = True,
        handle: str | None = None,
    ) -> SaveResult:
        """Replace a file's content, atomically on local disks, in its coding.

        The previous version is copied to ``name~`` first (``backup``). Raises CONFLICT when
        an open buffer's file changed on disk since it was opened or saved (unless
        ``force``), NOT_FOUND for a missing file without ``create_if_not_exists``,
        INVALID_ARGUMENT for text the coding cannot hold, TOO_LARGE, READ_ONLY.
        """
        with self._lock:
            target = self.vfs.resolve(path_of(uri), write=True)
            buf = self._find(target, handle)
            entry = self._existing(target)
            coding = buf.coding if buf is not None else self._sniff(target, entry)
            text = content.replace("\r\n", "\n") if coding.crlf else content
            data = coding.encode(text, target.display)
            if len(data) > self.max_save_bytes:
                raise TooLarge(f"content is {len(data)} bytes, over the {self.max_save_bytes}-byte limit for one save")
            if entry is None and buf is None and not create_if_not_exists:
                raise NotFound(f"{target.display} does not exist; pass create_if_not_exists=true to create it")
            # From here on a failure leaves the content in the open buffer, unsaved.
            try:
                return self._write(target, buf, coding, text, data, force=force, backup=backup)
            except VfsError:
                if buf is not None:
                    buf.text, buf.unsaved, buf.backup = text, True, backup
                    self._keep(buf)
                raise

    def close(self, uri: str, save_if_modified: bool = True, handle: str | None = None) -> CloseResult:
        """Close a buffer (the one ``handle`` names, else the session's); its unsaved content is
        saved (``save_if_modified``) or discarded.

        Closing a file that is not open succeeds with ``was_open`` false. A save that fails
        (CONFLICT when the file changed on disk) leaves the buffer open.
        """
        with self._lock:
            target = self.vfs.resolve(path_of(uri))
            buf = self._find(target, handle)
            if buf is None:
                return CloseResult(was_modified=False, uri=uri_of(target), was_open=False, saved=False)
            modified, saved = buf.unsaved, False
            if modified and save_if_modified:
                data = buf.coding.encode(buf.text, target.display)
                self._write(target, buf, buf.coding, buf.text, data, force=False, backup=buf.backup)
                saved = True
            del self._open[_key(target)]
            if self.stored is not None:
                self.stored.delete(buf.handle)
            return CloseResult(was_modified=modified, uri=uri_of(target), was_open=True, saved=saved)

    # -- helpers ----------------------------------------------------------------------

    def _find(self, target: Target, handle: str | None) -> Buffer | None:
        """The open buffer of ``target``: the one ``handle`` names (from any request, kept in
        the state store), else this session's."""
        buf = self._open.get(_key(target))
        if handle is None or (buf is not None and buf.handle == handle):
            return buf
        found = self.stored.get(handle) if self.stored is not None else None
        if found is None:
            raise NotFound(
                f"no open buffer has the handle {handle}: it was closed, or dropped (only the newest "
                f"{MAX_STORED_BUFFERS} are kept); file_open the file again"
            )
        if _key(found.target) != _key(target):
            raise InvalidArgument(f"the handle {handle} is the buffer of {found.target.display}, not {target.display}")
        self._open[_key(target)] = found
        return found

    def _keep(self, buf: Buffer) -> None:
        if self.stored is not None:
            self.stored.put(buf)

    def _load(self, target: Target, encoding: str | None) -> tuple[tuple[Any, ...], Coding, str, str]:
        """(version, coding, text, sha256) of a file, read whole."""
        entry = self.vfs.require_file(target)
        if entry.size > self.max_read_bytes:
            raise TooLarge(
                f"{target.display} is {entry.size} bytes, over the {self.max_read_bytes}-byte limit for a buffer"
            )
        # The version is taken before the read: a change during the read shows as external later.
        version = _version(self.vfs.version(target))
        data = self.vfs.cat(target)
        coding = detect(data, target.display) if encoding is None else chosen(encoding, data)
        return version, coding, coding.decode(data, target.display), sha256(data)

    def _sniff(self, target: Target, entry: Entry | None) -> Coding:
        """The coding of a file that is not open, from its first bytes (UTF-8 for a new or binary file)."""
        if entry is None or entry.size == 0:
            return UTF8
        try:
            return detect(
                self.vfs.cat(target, start=0, end=min(entry.size, SNIFF_BYTES)), "", entry.size <= SNIFF_BYTES
            )
        except BinaryContent:
            return UTF8  # the new content replaces it whole

    def _existing(self, target: Target) -> Entry | None:
        try:
            return self.vfs.require_file(target)
        except NotFound:
            return None

    def _changed(self, buf: Buffer) -> bool:
        try:
            return buf.version is None or _version(self.vfs.version(buf.target)) != buf.version
        except NotFound:
            return True

    def _unique_name(self, base: str) -> str:
        taken = {b.name for b in self._open.values()}
        if base not in taken:
            return base
        return next(f"{base}<{n}>" for n in range(2, len(taken) + 3) if f"{base}<{n}>" not in taken)

    def _write(
        self, target: Target, buf: Buffer | None, coding: Coding, text: str, data: bytes, *, force: bool, backup: bool
    ) -> SaveResult:
        """Write ``data`` (``text`` encoded) over the file, after the external-change check and the
        backup: one change, planned here and committed by the one write path."""
        real = writable_target(self.vfs, target)

        def plan() -> Plan[SaveResult]:
            changed = buf is not None and self._changed(buf)
            if changed and not force:
                raise Conflict(
                    f"{target.display} changed on disk since it was opened; your content stays unsaved in the buffer. "
                    "Pass force=true to overwrite that change (the name~ backup keeps it), or file_close with "
                    "save_if_modified=false and file_open again to see it"
                )
            entry = self._existing(real)
            ops: list[Step] = []
            kept = self._backup(real, entry) if backup and entry is not None else None
            if kept is not None:
                ops.append(kept)
            pinned = buf is not None and not force and buf.digest is not None and entry is not None
            expect = Expect("file", digest=buf.digest) if pinned and buf is not None else Expect("file-or-absent")
            ops.append(Put(real, data, expect=expect, parents=True))
            result = SaveResult(
                bytes_written=len(data),
                backup_created=kept is not None,
                uri=uri_of(target),
                encoding=coding.name,
                created=entry is None,
                backup=uri_of(kept.target) if kept is not None else None,
                externally_modified=changed,
            )
            return Plan(result, ops)

        result = changes.make(self.vfs, plan, touches=[real])
        if buf is not None:
            buf.text, buf.unsaved, buf.digest = text, False, sha256(data)
            try:
                buf.version = _version(self.vfs.version(target))
            except NotFound:
                buf.version = None
            self._keep(buf)
        return result

    def _backup(self, target: Target, entry: Entry) -> Put | None:
        """The step that copies the current version to ``name~`` (a link of that name is
        replaced, never written through); None when there is to be no backup."""
        try:
            backup = self.vfs.resolve(target.display + "~", follow=False, write=True)
        except NotFound:
            return None  # the deny list hides backup names: keep none
        old = self.vfs.lookup(backup)
        if old is not None and old.type == "directory":
            raise IsADirectory(f"{backup.display} is a directory; the backup of {target.display} cannot be written")
        mode = None
        if entry.mode is not None:
            # Defense in depth: the backup keeps an existing backup file's mode or gets the default
            # one; a file private to its owner is not copied where group or others could read it.
            mode = old.mode if old is not None and old.type == "file" and old.mode is not None else DEFAULT_MODE
            if mode & ~stat.S_IMODE(entry.mode) & 0o077:
                return None
        return Put(backup, source=target, expect=ANYTHING, mode=mode)
