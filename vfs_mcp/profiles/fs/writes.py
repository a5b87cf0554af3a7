"""Seed 001's ``fs`` writes: create, overwrite, delete, copy and move.

A path given absolute (a host path, ``~``, a URL) may be written only inside a git
repository (a folder holding ``.git``, looked for from the path up to its mount's root,
never above it) as well as inside a mount.
"""

from __future__ import annotations

from vfs_mcp.errors import (
    AccessDenied,
    AlreadyExists,
    IsADirectory,
    NotFound,
    TooLarge,
)
from vfs_mcp.filesystem import Entry, JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.ops.text import encode
from vfs_mcp.profiles.fs.ops import is_absolute, name_as_given, repo_root, text_file
from vfs_mcp.profiles.fs.results import (
    CopyResult,
    CreateFileResult,
    DeleteResult,
    MoveResult,
    PathResult,
)

# -- git repositories -------------------------------------------------------------------------


def _writable(vfs: JailedFS, raw: str, *, follow: bool = True) -> Target:
    """Resolve a path to write; one given absolute must lie inside a git repository."""
    target = vfs.resolve(raw, follow=follow, write=True)
    if is_absolute(raw) and repo_root(vfs, target) is None:
        raise AccessDenied(
            f"{raw} is an absolute path outside every git repository; write inside a repository "
            "or use a path relative to the server root"
        )
    return target


# -- writing ---------------------------------------------------------------------------------------


def _encode(content: str, max_bytes: int | None) -> bytes:
    data = encode(content, "utf-8")
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(f"content is {len(data)} bytes, over the {max_bytes}-byte limit for one write")
    return data


def create_file(
    vfs: JailedFS,
    path: str,
    content: str = "",
    overwrite: bool = False,
    create_parents: bool = False,
    max_bytes: int | None = None,
) -> CreateFileResult:
    """Create a file (replace one only with ``overwrite``); ALREADY_EXISTS otherwise."""
    data = _encode(content, max_bytes)
    target = _writable(vfs, path)
    shown = name_as_given(vfs, path, target)
    try:
        existing: Entry | None = vfs.info(target, follow=False)
    except NotFound:
        existing = None
    if existing is not None and existing.type == "directory":
        raise IsADirectory(f"{shown} is a directory; choose a file path")
    if existing is not None and not overwrite:
        raise AlreadyExists(f"{shown} already exists; pass overwrite=true to replace it")
    try:
        existed = vfs.write(target, data, create_dirs=create_parents)
    except NotFound:
        raise NotFound(f"the parent folder of {shown} does not exist; pass create_parents=true") from None
    return CreateFileResult(path=shown, created=not existed, overwritten=existed)


def overwrite_file(vfs: JailedFS, path: str, content: str, max_bytes: int | None = None) -> PathResult:
    """Replace the whole content of an existing regular file."""
    data = _encode(content, max_bytes)
    target = _writable(vfs, path)
    shown = name_as_given(vfs, path, target)
    try:
        text_file(vfs, target)
    except NotFound:
        raise NotFound(f"{shown} does not exist; create it with create_file") from None
    vfs.write(target, data)
    return PathResult(path=shown)


def delete_path(vfs: JailedFS, path: str, recursive: bool = False, force: bool = False) -> DeleteResult:
    """Delete a file, link or (``recursive``) directory tree; ``force`` makes a missing path a success."""
    target = _writable(vfs, path, follow=False)
    shown = name_as_given(vfs, path, target)
    try:
        entry = vfs.rm(target, recursive=recursive)
    except NotFound:
        if not force:
            raise
        return DeleteResult(path=shown, existed=False, is_dir=False, removed=False, recursive=recursive)
    return DeleteResult(path=shown, existed=True, is_dir=entry.type == "directory", removed=True, recursive=recursive)


def _source_and_destination(
    vfs: JailedFS, source: Target, dest: Target, recursive: bool, overwrite: bool, create_parents: bool
) -> bool:
    """Check a copy or move before anything changes; returns whether the destination exists."""
    entry = vfs.info(source, follow=False)
    if entry.type == "directory" and not recursive:
        raise IsADirectory(f"{source.display} is a directory; pass recursive=true to take everything in it")
    existed = vfs.exists(dest)
    try:
        vfs.prepare_destination(source, dest, overwrite, create_parents)
    except NotFound:
        raise NotFound(f"the parent folder of {dest.display} does not exist; pass create_parents=true") from None
    return existed


def copy_path(
    vfs: JailedFS,
    from_: str,
    to: str,
    overwrite: bool = False,
    recursive: bool = False,
    create_parents: bool = True,
) -> CopyResult:
    """Copy a file (a directory tree with ``recursive``, beyond the seed), across mounts too."""
    source = vfs.resolve(from_)
    dest = _writable(vfs, to)
    existed = _source_and_destination(vfs, source, dest, recursive, overwrite, create_parents)
    copied = vfs.copy(source, dest, overwrite=overwrite, recursive=recursive)
    return CopyResult(
        from_=name_as_given(vfs, from_, source),
        to=name_as_given(vfs, to, dest),
        bytes_copied=copied,
        overwritten=existed,
    )


def move_path(
    vfs: JailedFS,
    from_: str,
    to: str,
    overwrite: bool = False,
    recursive: bool = False,
    create_parents: bool = True,
) -> MoveResult:
    """Move or rename a file (a directory with ``recursive``, beyond the seed), across mounts too."""
    source = _writable(vfs, from_, follow=False)
    dest = _writable(vfs, to)
    if source.is_root:
        raise AccessDenied(f"{source.display} is a mount root and cannot be moved")
    existed = _source_and_destination(vfs, source, dest, recursive, overwrite, create_parents)
    vfs.move(source, dest, overwrite=overwrite)
    return MoveResult(
        from_=name_as_given(vfs, from_, source),
        to=name_as_given(vfs, to, dest),
        existed=existed,
        overwritten=existed,
        recursive=recursive,
    )
