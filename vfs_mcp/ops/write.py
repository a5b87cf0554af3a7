"""Writing, creating, moving, copying and deleting."""

from __future__ import annotations

from pydantic import BaseModel, Field

from vfs_mcp.errors import NotFound, TooLarge
from vfs_mcp.filesystem import JailedFS, sha256_aside
from vfs_mcp.ops.text import encode


class WriteResult(BaseModel):
    path: str
    bytes_written: int
    created: bool = Field(description="True when the file did not exist before")
    appended: bool
    sha256: str | None = Field(None, description="Hash of the new content (whole writes)")


def write_file(
    vfs: JailedFS,
    path: str,
    content: str,
    encoding: str = "utf-8",
    create_dirs: bool = False,
    append: bool = False,
    expected_hash: str | None = None,
    max_bytes: int | None = None,
) -> WriteResult:
    """Create or replace a file (atomically on local disks), or append to it.

    Raises TOO_LARGE when the content is over ``max_bytes``.
    """
    data = encode(content, encoding)  # fails before anything is touched
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(
            f"content is {len(data)} bytes, over the {max_bytes}-byte limit for one write; "
            "write it in parts with append=true"
        )
    target = vfs.resolve(path, write=True)
    digest = sha256_aside(data)  # hashed while it is written
    existed = vfs.write(
        target, data, append=append, create_dirs=create_dirs, expected_hash=expected_hash, digest=digest
    )
    return WriteResult(
        path=target.display,
        bytes_written=len(data),
        created=not existed,
        appended=append and existed,
        sha256=None if append and existed else digest(),
    )


class DirectoryResult(BaseModel):
    path: str
    created: bool = Field(description="False when it already existed")


def create_directory(vfs: JailedFS, path: str, parents: bool = True, exist_ok: bool = True) -> DirectoryResult:
    target = vfs.resolve(path, write=True)
    return DirectoryResult(path=target.display, created=vfs.mkdir(target, parents=parents, exist_ok=exist_ok))


class MoveResult(BaseModel):
    source: str
    destination: str
    type: str
    overwritten: bool


def move_file(vfs: JailedFS, source: str, destination: str, overwrite: bool = False) -> MoveResult:
    src = vfs.resolve(source, follow=False, write=True)
    dst = vfs.resolve(destination, write=True)
    existed = vfs.exists(dst)
    entry = vfs.move(src, dst, overwrite=overwrite)
    return MoveResult(source=src.display, destination=dst.display, type=entry.type, overwritten=existed)


class CopyResult(BaseModel):
    source: str
    destination: str
    type: str
    bytes_copied: int
    overwritten: bool


def copy_file(
    vfs: JailedFS,
    source: str,
    destination: str,
    overwrite: bool = False,
    recursive: bool = False,
    create_dirs: bool = True,
) -> CopyResult:
    src = vfs.resolve(source)
    dst = vfs.resolve(destination, write=True)
    kind = vfs.info(src).type
    existed = vfs.exists(dst)
    if not create_dirs and not dst.is_root and not vfs.exists(dst.parent()):
        raise NotFound(f"parent directory {dst.parent().display} does not exist; pass create_dirs=true")
    copied = vfs.copy(src, dst, overwrite=overwrite, recursive=recursive)
    return CopyResult(source=src.display, destination=dst.display, type=kind, bytes_copied=copied, overwritten=existed)


class DeleteResult(BaseModel):
    path: str
    existed: bool
    type: str | None
    removed: bool


def delete_path(vfs: JailedFS, path: str, recursive: bool = False, force: bool = False) -> DeleteResult:
    """Delete a file, link or directory; ``force`` makes a missing path a success."""
    target = vfs.resolve(path, follow=False, write=True)
    try:
        entry = vfs.rm(target, recursive=recursive)
    except NotFound:
        if not force:
            raise
        return DeleteResult(path=target.display, existed=False, type=None, removed=False)
    return DeleteResult(path=target.display, existed=True, type=entry.type, removed=True)
