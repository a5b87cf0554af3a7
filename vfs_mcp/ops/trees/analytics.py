"""Sizes, large files, empty directories and duplicates, each from one listing.

Disk-space questions count everything by default (a size, the largest files, duplicates):
what an ignore file ignores (builds, ``.venv``, ``.git``'s packs) is where space goes.
Empty directories are a tidying question, so there ignored paths and ``.git`` are left out,
as in searches.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

from pydantic import BaseModel, Field

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import select

SAMPLE_BYTES = 512
"""Read from the middle of each same-size file before any full hash: headers are often shared."""
HASH_BLOCK = 1 << 20


class SizeResult(BaseModel):
    path: str
    total_bytes: int
    files: int
    directories: int
    skipped: list[str] = Field(default_factory=list, description="Folders that could not be read (not counted)")


def calculate_directory_size(vfs: JailedFS, path: str = ".", progress: Progress | None = None) -> SizeResult:
    """The bytes, files and folders below ``path``, everything counted (ignored paths too: the
    size of a folder is what it holds). The listing is summed page by page as it comes (on S3
    its ⌈N/1000⌉ list requests and nothing else), so memory does not grow with the tree."""
    root = vfs.resolve(path)
    total = files = directories = listed = 0
    skipped: list[str] = []
    for page in vfs.pages(root):
        for _, kind, size in page.items:
            if kind == "file":
                files += 1
                total += size
            elif kind == "directory":
                directories += 1
        skipped += page.skipped
        listed += page.listed
        if progress and not page.last:
            progress(listed, None, f"{listed:,} entries listed, {total:,} bytes so far")
    return SizeResult(
        path=root.display,
        total_bytes=total,
        files=files,
        directories=directories,
        skipped=[root.mount.display(rel) for rel in skipped],
    )


class LargeFile(BaseModel):
    path: str
    size: int
    modified: float | None = None


class LargeFilesResult(BaseModel):
    path: str
    min_size_bytes: int
    files: list[LargeFile]
    has_more: bool


def find_large_files(
    vfs: JailedFS,
    path: str = ".",
    min_size_mb: float = 100,
    recursive: bool = True,
    max_results: int = 100,
    exclude_patterns: list[str] | None = None,
    respect_gitignore: bool = False,
) -> LargeFilesResult:
    """Files of at least ``min_size_mb`` MiB, largest first; ignored paths included unless
    ``respect_gitignore`` (what takes the space is often what is ignored: builds, ``.venv``)."""
    if min_size_mb < 0 or max_results < 1:
        raise InvalidArgument("min_size_mb must be 0 or more and max_results 1 or more")
    root = vfs.resolve(path)
    threshold = int(min_size_mb * 1024 * 1024)
    depth = None if recursive else 1
    selection = select(vfs, root, max_depth=depth, exclude=exclude_patterns, respect_gitignore=respect_gitignore)
    large = sorted(
        (e for e in selection.files() if e.size >= threshold), key=lambda e: (-e.size, e.target.rel.split("/"))
    )
    return LargeFilesResult(
        path=root.display,
        min_size_bytes=threshold,
        files=[LargeFile(path=e.path, size=e.size, modified=e.modified) for e in large[:max_results]],
        has_more=len(large) > max_results,
    )


class EmptyDirsResult(BaseModel):
    path: str
    directories: list[str]


def find_empty_directories(
    vfs: JailedFS,
    path: str = ".",
    recursive: bool = True,
    exclude_patterns: list[str] | None = None,
    respect_gitignore: bool = True,
) -> EmptyDirsResult:
    """Directories with nothing in them (on object stores: a directory marker with nothing
    under it), those that ignore files ignore and ``.git``'s own left out unless
    ``respect_gitignore`` is False. A folder whose contents are all ignored is not empty."""
    root = vfs.resolve(path)
    everything = vfs.find(root, None if recursive else 2)
    depth = None if recursive else 1
    selection = select(vfs, root, max_depth=depth, exclude=exclude_patterns, respect_gitignore=respect_gitignore)
    parents = {e.target.parent().rel for e in everything}
    empty = [e.path for e in selection.entries if e.type == "directory" and e.target.rel not in parents]
    return EmptyDirsResult(path=root.display, directories=empty)


class DuplicateGroup(BaseModel):
    size: int
    sha256: str
    paths: list[str]


class DuplicatesResult(BaseModel):
    path: str
    groups: list[DuplicateGroup]
    files_scanned: int
    wasted_bytes: int = Field(description="Bytes that deleting all but one copy of each group would free")
    bytes_read: int = Field(description="Bytes read to decide (files of unique size are never read)")
    truncated: bool = Field(description="True when max_files stopped the scan early")


def find_duplicate_files(
    vfs: JailedFS,
    path: str = ".",
    recursive: bool = True,
    min_size: int = 1,
    exclude_patterns: list[str] | None = None,
    max_files: int = 1000,
    progress: Progress | None = None,
    respect_gitignore: bool = False,
) -> DuplicatesResult:
    """Groups of identical files: by size, then a hash of a 512-byte sample from the middle,
    then a full hash. Files of unique size are never read. Ignored paths are included unless
    ``respect_gitignore`` (copies are wasted space wherever they are).
    """
    if min_size < 0 or max_files < 1:
        raise InvalidArgument("min_size must be 0 or more and max_files 1 or more")
    root = vfs.resolve(path)
    depth = None if recursive else 1
    selection = select(vfs, root, max_depth=depth, exclude=exclude_patterns, respect_gitignore=respect_gitignore)
    files = [e for e in selection.files() if e.size >= min_size]
    truncated = len(files) > max_files
    files = files[:max_files]
    by_size: dict[int, list[Entry]] = defaultdict(list)
    for entry in files:
        by_size[entry.size].append(entry)
    read = 0
    groups: list[DuplicateGroup] = []
    candidates = [same for same in by_size.values() if len(same) > 1]
    for done, same in enumerate(candidates, 1):
        by_sample: dict[bytes, list[Entry]] = defaultdict(list)
        whole = same[0].size <= SAMPLE_BYTES
        for entry in same:
            start = 0 if whole else (entry.size - SAMPLE_BYTES) // 2
            # An empty range is never sent: s3rver and Azurite answer it with a broken response.
            sample = (
                vfs.cat(entry.target, start=start, end=start + min(entry.size, SAMPLE_BYTES)) if entry.size else b""
            )
            read += len(sample)
            by_sample[hashlib.sha256(sample).digest()].append(entry)
        for digest, alike in by_sample.items():
            if len(alike) < 2:
                continue
            if whole:  # the sample was the whole file: it is the full hash
                groups.append(DuplicateGroup(size=alike[0].size, sha256=digest.hex(), paths=[e.path for e in alike]))
                continue
            by_full: dict[str, list[Entry]] = defaultdict(list)
            for entry in alike:
                full, count = _full_hash(vfs, entry)
                read += count
                by_full[full].append(entry)
            groups += [
                DuplicateGroup(size=g[0].size, sha256=d, paths=[e.path for e in g])
                for d, g in by_full.items()
                if len(g) > 1
            ]
        if progress:
            progress(done, len(candidates), root.display)
    groups.sort(key=lambda g: (-g.size * (len(g.paths) - 1), g.paths))
    return DuplicatesResult(
        path=root.display,
        groups=groups,
        files_scanned=len(files),
        wasted_bytes=sum(g.size * (len(g.paths) - 1) for g in groups),
        bytes_read=read,
        truncated=truncated,
    )


def _full_hash(vfs: JailedFS, entry: Entry) -> tuple[str, int]:
    digest = hashlib.sha256()
    count = 0
    with vfs.open_read(entry.target) as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
            count += len(block)
    return digest.hexdigest(), count
