"""One error tree for every tool (docs/protocol.md, "Errors").

    VfsError (Exception)               code            status  JSON-RPC
    ├── NotFound                       NOT_FOUND        404    -32602
    ├── AccessDenied                   ACCESS_DENIED    403    -32603
    ├── ReadOnly                       READ_ONLY        403    -32603
    ├── InvalidArgument                INVALID_ARGUMENT 400    -32602
    ├── IsADirectory                   IS_A_DIRECTORY   400    -32602
    ├── NotADirectory                  NOT_A_DIRECTORY  400    -32602
    ├── AlreadyExists                  ALREADY_EXISTS   409    -32602
    ├── Conflict                       CONFLICT         409    -32602
    │   └── Stale                      CONFLICT         409    -32602
    ├── BinaryContent                  BINARY_CONTENT   422    -32602
    ├── TooLarge                       TOO_LARGE        413    -32602
    ├── Declined                       DECLINED         403    -32603
    └── Internal                       INTERNAL         500    -32603

Foreign exceptions (``OSError`` from fsspec, botocore's ``ClientError``, codec errors)
become one of these in ``translate`` — the single boundary, used by the jail. These are plain
exceptions that know nothing of MCP: the server turns them into MCP results and JSON-RPC
errors in one module (``vfs_mcp.server.calls.boundary``), so the jail, the write path, the
operations and the ``vfs`` fsspec protocol load no part of the MCP SDK. Messages
name paths as the mount names them (results' spelling; ``jail.as_written`` adds the caller's
where it differs), never what lies behind a mount (a bucket's backing path, an outside target).
"""

from __future__ import annotations

import errno
import logging
from typing import ClassVar

from vfs_mcp_backends.store_errors import STORE_CODES, error_code, storage_problem

log = logging.getLogger("vfs_mcp")


ECHOED_CHARS = 40
"""Characters of a value the caller sent that an error quotes back, at most."""


def echoed(value: object) -> str:
    """``value`` quoted for an error message: whole when short, else its first
    ``ECHOED_CHARS`` characters and how long it was (a reply never repeats a caller's 5,000
    characters back at it)."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= ECHOED_CHARS:
        return repr(text)
    return f"{text[:ECHOED_CHARS]!r}... ({len(text):,} characters)"


class VfsError(Exception):
    """A failure the model can act on: a stable code and a one-line message."""

    code: ClassVar[str] = "INTERNAL"
    status: ClassVar[int] = 500
    jsonrpc_code: ClassVar[int] = -32603

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def noted(self, note: str) -> VfsError:
        """The same error (same class, same fields) with ``note`` after its message."""
        again = Exception.__new__(type(self))
        again.__dict__.update(self.__dict__)
        again.message = f"{self.message}; {note}"
        Exception.__init__(again, again.message)
        return again

    def to_dict(self) -> dict[str, str | int]:
        return {"code": self.code, "status": self.status, "jsonrpc_code": self.jsonrpc_code, "message": self.message}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class NotFound(VfsError):
    code, status, jsonrpc_code = "NOT_FOUND", 404, -32602


class AccessDenied(VfsError):
    code, status, jsonrpc_code = "ACCESS_DENIED", 403, -32603


class ReadOnly(VfsError):
    code, status, jsonrpc_code = "READ_ONLY", 403, -32603


class InvalidArgument(VfsError):
    code, status, jsonrpc_code = "INVALID_ARGUMENT", 400, -32602


class IsADirectory(VfsError):
    code, status, jsonrpc_code = "IS_A_DIRECTORY", 400, -32602


class NotADirectory(VfsError):
    code, status, jsonrpc_code = "NOT_A_DIRECTORY", 400, -32602


class AlreadyExists(VfsError):
    code, status, jsonrpc_code = "ALREADY_EXISTS", 409, -32602


class Conflict(VfsError):
    code, status, jsonrpc_code = "CONFLICT", 409, -32602


class Stale(Conflict):
    """The file changed between a call's read and its write: nothing was written, and a call
    whose change still applies to the new version may redo it."""


class BinaryContent(VfsError):
    code, status, jsonrpc_code = "BINARY_CONTENT", 422, -32602


class TooLarge(VfsError):
    code, status, jsonrpc_code = "TOO_LARGE", 413, -32602


class Declined(VfsError):
    """The person asked to confirm a change (``--confirm``) declined or dismissed it: nothing
    was changed, and calling again asks again: the model should not retry, but ask the user."""

    code, status, jsonrpc_code = "DECLINED", 403, -32603


class Internal(VfsError):
    code, status, jsonrpc_code = "INTERNAL", 500, -32603


ALL_ERRORS: tuple[type[VfsError], ...] = (
    NotFound,
    AccessDenied,
    ReadOnly,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    AlreadyExists,
    Conflict,
    BinaryContent,
    TooLarge,
    Declined,
    Internal,
)

_BY_CODE: dict[str, type[VfsError]] = {kind.code: kind for kind in ALL_ERRORS}

_BY_ERRNO: dict[int, tuple[type[VfsError], str]] = {
    errno.ENOENT: (NotFound, "does not exist; list its folder to check the name"),
    errno.EACCES: (AccessDenied, "permission denied by the operating system"),
    errno.EPERM: (AccessDenied, "operation not permitted by the operating system"),
    errno.EROFS: (ReadOnly, "is on a read-only file system"),
    errno.EISDIR: (IsADirectory, "is a directory; use list_directory or directory_tree"),
    errno.ENOTDIR: (NotADirectory, "is not a directory (or a parent is a file)"),
    errno.EEXIST: (AlreadyExists, "already exists; pass overwrite=true or choose another name"),
    errno.ENOTEMPTY: (AlreadyExists, "is a directory that is not empty; empty or delete it first"),
    errno.ELOOP: (AccessDenied, "is a symbolic link that cannot be followed here"),
    errno.ENAMETOOLONG: (InvalidArgument, "is too long a name for this file system; choose a shorter one"),
    errno.ENOSPC: (Internal, "could not be written: no space left on the device; nothing was changed"),
    errno.EDQUOT: (Internal, "could not be written: disk quota exceeded; nothing was changed"),
    errno.EFBIG: (
        TooLarge,
        "could not be written: over a size limit of its mount (a memory mount's max_bytes) or file system; "
        "nothing was changed: write less, or delete files first",
    ),
    errno.EXDEV: (InvalidArgument, "cannot be moved across devices; copy it and delete the source"),
}

_BY_TYPE: tuple[tuple[type[BaseException], type[VfsError], str], ...] = (
    (FileNotFoundError, NotFound, "does not exist; list its folder to check the name"),
    (IsADirectoryError, IsADirectory, "is a directory; use list_directory or directory_tree"),
    (NotADirectoryError, NotADirectory, "is not a directory (or a parent is a file)"),
    (FileExistsError, AlreadyExists, "already exists; pass overwrite=true or choose another name"),
    (PermissionError, AccessDenied, "permission denied by the storage backend"),
    (TimeoutError, Internal, "timed out on the storage backend; try again"),
    (ConnectionError, Internal, "could not be reached: the storage backend is not answering"),
)


def translate(exc: BaseException, display: str) -> VfsError:
    """Map a foreign exception raised while working on ``display`` to our tree.

    The returned error never carries the foreign message (it may hold a host path);
    the detail is logged on the server side instead.
    """
    if isinstance(exc, VfsError):
        return exc
    if isinstance(exc, UnicodeDecodeError):
        return BinaryContent(f"{display} is not valid text in the requested encoding; read it with encoding='base64'")
    if isinstance(exc, UnicodeEncodeError):
        return InvalidArgument(f"{display}: text or name cannot be encoded for the storage backend")
    if type(exc) is LookupError:  # codecs.lookup; KeyError and IndexError are bugs, not bad input
        return InvalidArgument(f"unknown encoding for {display}; use a Python codec name such as 'utf-8' or 'base64'")
    if isinstance(exc, OSError) and exc.errno in _BY_ERRNO:
        kind, reason = _BY_ERRNO[exc.errno]
        return kind(f"{display} {reason}")
    code = error_code(exc)
    if code in STORE_CODES:
        name, reason = STORE_CODES[code]
        return _BY_CODE[name](f"{display} {reason}")
    for foreign, kind, reason in _BY_TYPE:
        if isinstance(exc, foreign):
            return kind(f"{display} {reason}")
    storage = storage_problem(exc)
    if storage is not None:
        log.warning("storage unreachable on %s", display, exc_info=exc)
        kind = AccessDenied if "credentials" in storage else Internal
        return kind(f"{display}: {storage}")
    log.error("unmapped error on %s", display, exc_info=exc)
    return Internal(f"{display}: unexpected storage error ({type(exc).__name__}); the detail is in the server log")
