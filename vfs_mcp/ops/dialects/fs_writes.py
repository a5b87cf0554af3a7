"""The ``fs`` dialect's writes (docs/profile-fs.md): create, overwrite, delete, copy and move.

A path given absolute (a host path, ``~``, a URL) may be written only inside a git
repository (a folder holding ``.git``, looked for from the path up to its mount's root,
never above it) as well as inside a mount.
"""

from __future__ import annotations

from vfs_mcp.errors import (
    AccessDenied,
    NotFound,
    TooLarge,
)
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.dialects.fs_reads import is_absolute, name_as_given, repo_root
from vfs_mcp.ops.dialects.fs_results import (
    CreateFileResult,
    FsCopyResult,
    FsDeleteResult,
    FsMoveResult,
    PathResult,
)
from vfs_mcp.ops.files import transfers, write
from vfs_mcp.ops.text.encoding import encode

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


def _check_size(content: str, max_bytes: int | None) -> None:
    data = encode(content, "utf-8")
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(f"content is {len(data)} bytes, over the {max_bytes}-byte limit for one write")


PARENT_MISSING = "the parent folder of {path} does not exist; pass create_parents=true"
CREATE = {"exists": "{path} already exists; pass overwrite=true to replace it"}
"""The original's words for the operations' refusals (``write.Wording``)."""
OVERWRITE = {
    "directory": "{path} is a directory; list it with list_files",
    "not_file": "{path} is not a regular file",
    "missing": "{path} does not exist; create it with create_file",
}
TRANSFER = {
    "directory": "{path} is a directory; pass recursive=true to take everything in it",
    "parent_missing": PARENT_MISSING,
}


def create_file(
    vfs: JailedFS,
    path: str,
    content: str = "",
    overwrite: bool = False,
    create_parents: bool = False,
    max_bytes: int | None = None,
) -> CreateFileResult:
    """Create a file (replace one only with ``overwrite``); ALREADY_EXISTS otherwise."""
    _check_size(content, max_bytes)
    shown = name_as_given(vfs, path, _writable(vfs, path))
    try:
        written = write.write_file(
            vfs, path, content, create_dirs=create_parents, create_only=not overwrite, shown=shown, wording=CREATE
        )
    except NotFound:  # the file itself is not asked to exist: its folder is missing
        raise NotFound(PARENT_MISSING.format(path=shown)) from None
    return CreateFileResult(path=shown, created=written.created, overwritten=not written.created)


def overwrite_file(vfs: JailedFS, path: str, content: str, max_bytes: int | None = None) -> PathResult:
    """Replace the whole content of an existing regular file."""
    _check_size(content, max_bytes)
    shown = name_as_given(vfs, path, _writable(vfs, path))
    write.write_file(vfs, path, content, must_exist=True, shown=shown, wording=OVERWRITE)
    return PathResult(path=shown)


def delete_path(vfs: JailedFS, path: str, recursive: bool = False, force: bool = False) -> FsDeleteResult:
    """Delete a file, link or (``recursive``) directory tree; ``force`` makes a missing path a success."""
    target = _writable(vfs, path, follow=False)
    shown = name_as_given(vfs, path, target)
    deleted = write.delete_path(vfs, path, recursive=recursive, force=force)
    return FsDeleteResult(
        path=shown,
        existed=deleted.existed,
        is_dir=deleted.type == "directory",
        removed=deleted.removed,
        recursive=recursive,
    )


def copy_path(
    vfs: JailedFS,
    from_: str,
    to: str,
    overwrite: bool = False,
    recursive: bool = False,
    create_parents: bool = True,
) -> FsCopyResult:
    """Copy a file (a directory tree with ``recursive``, beyond the original), across mounts too."""
    source, dest = _ends(vfs, from_, to, moving=False)
    copied = transfers.copy_file(vfs, from_, to, overwrite, recursive, create_parents, wording=TRANSFER)
    return FsCopyResult(from_=source, to=dest, bytes_copied=copied.bytes_copied, overwritten=copied.overwritten)


def move_path(
    vfs: JailedFS,
    from_: str,
    to: str,
    overwrite: bool = False,
    recursive: bool = False,
    create_parents: bool = True,
) -> FsMoveResult:
    """Move or rename a file (a directory with ``recursive``, beyond the original), across mounts too."""
    source, dest = _ends(vfs, from_, to, moving=True)
    moved = transfers.move_file(vfs, from_, to, overwrite, create_parents, recursive, wording=TRANSFER)
    return FsMoveResult(
        from_=source, to=dest, existed=moved.overwritten, overwritten=moved.overwritten, recursive=recursive
    )


def _ends(vfs: JailedFS, from_: str, to: str, *, moving: bool) -> tuple[str, str]:
    """A copy's or move's source and destination named as the caller gave them, both checked
    first (the source writable too when it moves)."""
    source = _writable(vfs, from_, follow=False) if moving else vfs.resolve(from_)
    return name_as_given(vfs, from_, source), name_as_given(vfs, to, _writable(vfs, to))
