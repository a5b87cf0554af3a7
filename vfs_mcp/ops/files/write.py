"""Writing, creating and deleting: each a plan for the one write path (``vfs_mcp.changes``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from vfs_mcp import changes
from vfs_mcp.changes import ABSENT, Append, Expect, MakeDir, Plan, Put, Remove, Step
from vfs_mcp.errors import (
    AccessDenied,
    AlreadyExists,
    Conflict,
    InvalidArgument,
    IsADirectory,
    NotFound,
    TooLarge,
    VfsError,
)
from vfs_mcp.jail.entries import sha256_aside
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.text.document import hashed_into
from vfs_mcp.ops.text.encoding import encode

E = TypeVar("E", bound=VfsError)

BUILT_ON_FIRST_USE = ConfigDict(defer_build=True)
"""This module's results are built (validator, serializer) when first used, not when imported:
the edits import the module for ``writable`` alone, on their first call."""


class WriteResult(BaseModel):
    model_config = BUILT_ON_FIRST_USE

    path: str
    bytes_written: int
    created: bool = Field(description="True when the file did not exist before")
    appended: bool
    sha256: str | None = Field(None, description="Hash of the new content (whole writes)")


Wording = Mapping[str, str]
"""A dialect's words for an operation's refusals: for a refusal's name, a template of what it
names (``{path}``, ``{parent}``); a refusal the mapping leaves out keeps the operation's words.
The operation checks, inside the write path's lock; the dialect only words (``refused``)."""


def refused(kind: type[E], name: str, words: str, wording: Wording | None, **names: str) -> E:
    """The error ``kind`` for the refusal ``name``, in the dialect's words else ``words``."""
    return kind((wording or {}).get(name, words).format(**names))


def check_size(data: bytes, max_bytes: int | None) -> None:
    """TOO_LARGE for content over ``max_bytes``."""
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(
            f"content is {len(data)} bytes, over the {max_bytes}-byte limit for one write; "
            "write it in parts with append=true"
        )


def writable(vfs: JailedFS, path: str) -> Target:
    """The file a write to ``path`` changes: a link inside the mount leads to its target,
    which is written (the link stays a link)."""
    return writable_target(vfs, vfs.resolve(path, write=True))


def writable_target(vfs: JailedFS, target: Target) -> Target:
    """``writable`` of a resolved path."""
    try:
        return vfs.canonical(target)
    except NotFound:
        return target  # folders still to be made: nothing to resolve below the last one there


def write_file(
    vfs: JailedFS,
    path: str,
    content: str,
    encoding: str = "utf-8",
    create_dirs: bool = False,
    append: bool = False,
    expected_hash: str | None = None,
    max_bytes: int | None = None,
    create_only: bool = False,
    must_exist: bool = False,
    shown: str | None = None,
    wording: Wording | None = None,
) -> WriteResult:
    """Create or replace a file (atomically on local disks), or append to it; ``shown``: its
    name in messages, ``wording``: a dialect's words for its refusals.

    Raises TOO_LARGE when the content is over ``max_bytes``; ALREADY_EXISTS with
    ``create_only`` when something is there, NOT_FOUND with ``must_exist`` when nothing is;
    CONFLICT when ``expected_hash`` (sha256 hex) is not the current content's.
    """
    data = encode(content, encoding)  # fails before anything is touched
    check_size(data, max_bytes)
    shown = shown or vfs.resolve(path, write=True).display
    return write_bytes(
        vfs,
        writable(vfs, path),
        data,
        shown=shown,
        create_dirs=create_dirs,
        append=append,
        expected_hash=expected_hash,
        create_only=create_only,
        must_exist=must_exist,
        wording=wording,
    )


def write_bytes(
    vfs: JailedFS,
    target: Target,
    data: bytes,
    *,
    shown: str | None = None,
    create_dirs: bool = False,
    append: bool = False,
    expected_hash: str | None = None,
    create_only: bool = False,
    must_exist: bool = False,
    wording: Wording | None = None,
) -> WriteResult:
    """``write_file`` of bytes at a resolved (``writable``) target, named ``shown`` in messages."""
    shown = shown or target.display
    digest = sha256_aside(data)  # hashed while it is written

    def plan() -> Plan[WriteResult]:
        existing = vfs.lookup(target)
        if existing is not None and existing.type == "directory":
            raise refused(IsADirectory, "directory", "{path} is a directory; choose a file path", wording, path=shown)
        if existing is not None and existing.type != "file":
            words = "{path} is not a regular file; choose a file path"
            raise refused(InvalidArgument, "not_file", words, wording, path=shown)
        if existing is not None and create_only:
            raise refused(AlreadyExists, "exists", "{path} already exists; choose another name", wording, path=shown)
        if existing is None and must_exist:
            words = "{path} does not exist; list its folder to check the name"
            raise refused(NotFound, "missing", words, wording, path=shown)
        expect = ABSENT if existing is None else Expect("file", token=existing.token)
        if expected_hash is not None:
            current = vfs.digest(target) if existing is not None else ""
            if current != expected_hash.lower():
                raise Conflict(f"{shown} changed since it was read (sha256 differs); read it again")
            if existing is not None:
                expect = Expect("file", token=existing.token, digest=current)
        appended = append and existing is not None
        result = WriteResult(
            path=shown,
            bytes_written=len(data),
            created=existing is None,
            appended=appended,
            sha256=None,
        )
        if appended:
            return Plan(result, [Append(target, data, expect)])
        ops: list[Step] = [Put(target, data, expect=expect, parents=create_dirs, digest=digest)]
        return Plan(result, ops, after=hashed_into(result, ops))

    return changes.make(vfs, plan, touches=[target])


class DirectoryResult(BaseModel):
    model_config = BUILT_ON_FIRST_USE

    path: str
    created: bool = Field(description="False when it already existed")


def create_directory(vfs: JailedFS, path: str, parents: bool = True, exist_ok: bool = True) -> DirectoryResult:
    shown = vfs.resolve(path, write=True).display
    target = writable(vfs, path)

    def plan() -> Plan[DirectoryResult]:
        entry = vfs.lookup(target, follow=True)
        if entry is not None:
            if entry.type != "directory":
                raise AlreadyExists(f"{shown} exists and is not a directory; choose another name")
            if not exist_ok:
                raise AlreadyExists(f"{shown} already exists; exist_ok=true accepts that")
            return Plan(DirectoryResult(path=shown, created=False))
        if not parents:
            vfs.require_dir(target.parent())
        return Plan(DirectoryResult(path=shown, created=True), [MakeDir(target)])

    return changes.make(vfs, plan, touches=[target])


class DeleteResult(BaseModel):
    model_config = BUILT_ON_FIRST_USE

    path: str
    existed: bool
    type: str | None
    removed: bool


def delete_path(vfs: JailedFS, path: str, recursive: bool = False, force: bool = False) -> DeleteResult:
    """Delete a file, link or directory; ``force`` makes a missing path a success."""
    target = vfs.resolve(path, follow=False, write=True)
    if target.is_root:
        raise AccessDenied(f"{target.display} is a mount root and cannot be deleted")

    def plan() -> Plan[DeleteResult]:
        entry = vfs.lookup(target)
        if entry is None:
            if not force:
                raise NotFound(f"{target.display} does not exist; force=true accepts that")
            return Plan(DeleteResult(path=target.display, existed=False, type=None, removed=False))
        result = DeleteResult(path=target.display, existed=True, type=entry.type, removed=True)
        return Plan(result, [Remove(target, Expect(entry.type, token=entry.token), recursive=recursive)])

    return changes.make(vfs, plan, touches=[target])
