"""Listing a directory, file metadata, the mounts, and the working directory."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from importlib import metadata

from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.globs import name_glob

DEFAULT_LIST_LIMIT = 1000


class ListEntry(BaseModel):
    name: str
    path: str
    type: str = Field(description="file, directory, symlink or other")
    size: int | None = None
    modified: str | None = None


class ListResult(BaseModel):
    path: str
    entries: list[ListEntry]
    total: int = Field(description="Matching entries in the directory")
    has_more: bool
    next_offset: int | None = None


def iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z") if ts is not None else None


def list_directory(
    vfs: JailedFS,
    path: str = ".",
    include_hidden: bool = False,
    pattern: str | None = None,
    offset: int = 0,
    limit: int = DEFAULT_LIST_LIMIT,
) -> ListResult:
    """Entries of one directory in name order, paged by offset/limit."""
    if offset < 0 or limit < 1:
        raise InvalidArgument("offset must be 0 or more and limit 1 or more")
    target = vfs.resolve(path)
    entries = vfs.ls(target)
    if not include_hidden:
        entries = [e for e in entries if not e.name.startswith(".")]
    if pattern:
        matches = name_glob(pattern)
        entries = [e for e in entries if matches(e.name)]
    page = entries[offset : offset + limit]
    more = offset + limit < len(entries)
    return ListResult(
        path=target.display,
        entries=[
            ListEntry(
                name=e.name,
                path=e.path,
                type=e.type,
                size=e.size if e.type == "file" else None,
                modified=iso(e.modified),
            )
            for e in page
        ],
        total=len(entries),
        has_more=more,
        next_offset=offset + limit if more else None,
    )


class FileInfo(BaseModel):
    path: str
    name: str
    type: str
    size: int
    created: str | None = None
    modified: str | None = None
    accessed: str | None = None
    permissions: str | None = Field(None, description="rwx string, e.g. rw-r--r--")
    mode: str | None = Field(None, description="octal mode, e.g. 0644")
    is_symlink: bool = False
    mime_type: str | None = None
    etag: str | None = None
    storage_class: str | None = None
    mount: str
    read_only: bool


def file_info(entry: Entry) -> FileInfo:
    mount = entry.target.mount
    return FileInfo(
        path=entry.path,
        name=entry.name,
        type=entry.type,
        size=entry.size,
        created=iso(entry.created),
        modified=iso(entry.modified),
        accessed=iso(entry.accessed),
        permissions=stat.filemode(entry.mode)[1:] if entry.mode is not None else None,
        mode=f"{entry.mode:04o}" if entry.mode is not None else None,
        is_symlink=entry.is_symlink,
        mime_type=entry.mime_type,
        etag=entry.etag,
        storage_class=entry.storage_class,
        mount=mount.url,
        read_only=mount.read_only,
    )


def get_file_info(vfs: JailedFS, path: str) -> FileInfo:
    return file_info(vfs.info(vfs.resolve(path)))


class MountInfo(BaseModel):
    root: str
    backend: str
    read_only: bool
    empty_directories: bool = Field(description="False on object stores: directories exist only through files")
    symlinks: bool


class MountsResult(BaseModel):
    directories: list[MountInfo]


def list_allowed_directories(vfs: JailedFS) -> MountsResult:
    return MountsResult(
        directories=[
            MountInfo(
                root=m.url,
                backend="local" if m.is_local else m.scheme,
                read_only=m.read_only,
                empty_directories=m.capabilities.empty_dirs,
                symlinks=m.capabilities.symlinks,
            )
            for m in vfs.mounts
        ]
    )


class ChangeDirectoryResult(BaseModel):
    previous_dir: str
    current_dir: str


def change_directory(vfs: JailedFS, path: str) -> ChangeDirectoryResult:
    target = vfs.resolve(path)
    previous = vfs.cwd
    vfs.chdir(target)
    return ChangeDirectoryResult(previous_dir=previous.display, current_dir=target.display)


class WorkingDirectoryResult(BaseModel):
    current_dir: str
    script_dir: str = Field(description="The server itself: its package and version (never a host path)")


def get_working_directory(vfs: JailedFS) -> WorkingDirectoryResult:
    # Clients ask where the server's script lives (docs/security.md, ``script_dir``); a host path outside every mount would
    # tell a client about the machine, so the answer is the package that runs.
    return WorkingDirectoryResult(current_dir=vfs.cwd.display, script_dir=f"vfs-mcp {package_version()}")


def package_version() -> str:
    try:
        return metadata.version("vfs-mcp")
    except metadata.PackageNotFoundError:
        return "unknown"
