"""The jail as an fsspec filesystem: protocol ``vfs``, for Python programs (pandas, pyarrow,
anything on fsspec) under the same policy that guards the tools.

    fs = fsspec.filesystem("vfs", roots=["/data", "s3://bucket/reports"], deny=["*.pem"], read_only=False)
    pandas.read_csv("vfs:///data/x.csv", storage_options={"roots": ["/data"]})

The options are the command line's: ``roots`` (ROOT arguments), ``deny`` (``--deny``),
``read_only`` (``--read-only``), ``config`` (``--config FILE``), ``deny_hardlinked``,
``review`` and ``state`` (``--review``, ``--state``: writes stay pending, see docs/review.md).
Paths are the tools' paths: absolute inside a mount (``/data/x.csv``) or a mount URL
(``vfs://s3://bucket/reports/x.csv``); names come back the same way. Errors are the usual
OSError subclasses: denied or missing is FileNotFoundError, outside every mount, through a
link out or onto a read-only mount PermissionError (the jail's message says which).

This class is an adapter only: every call resolves through ``Jail.resolve`` and runs one of
``JailedFS``'s verbs. Writes are staged and land whole at ``close`` (a ``with`` block left on
an exception keeps the old content); ``r+b`` is refused. See docs/python-fsspec.md.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import stat
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from fsspec import AbstractFileSystem
from fsspec.spec import AbstractBufferedFile
from fsspec.utils import stringify_path

from vfs_mcp.errors import (
    AccessDenied,
    AlreadyExists,
    Conflict,
    Internal,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotFound,
    ReadOnly,
    TooLarge,
    VfsError,
)
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Config, merge_specs, open_mounts
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.ops.files import transfers, write
from vfs_mcp.ops.files.write import writable_target
from vfs_mcp_backends.staged_files import SpooledFile

_AS_OS_ERROR: tuple[tuple[type[VfsError], type[OSError], int], ...] = (
    (NotFound, FileNotFoundError, errno.ENOENT),
    (AccessDenied, PermissionError, errno.EACCES),
    (ReadOnly, PermissionError, errno.EROFS),
    (IsADirectory, IsADirectoryError, errno.EISDIR),
    (NotADirectory, NotADirectoryError, errno.ENOTDIR),
    (AlreadyExists, FileExistsError, errno.EEXIST),
    (Conflict, OSError, errno.EBUSY),
    (TooLarge, OSError, errno.EFBIG),
    (InvalidArgument, OSError, errno.EINVAL),
    (Internal, OSError, errno.EIO),
)
"""Our error tree as the OSErrors fsspec users catch (the first class that matches wins)."""


def os_error(exc: VfsError, path: str) -> OSError:
    """The OSError for one of our errors about ``path``, with the jail's message."""
    for ours, theirs, number in _AS_OS_ERROR:
        if isinstance(exc, ours):
            return theirs(number, exc.message, path)
    return OSError(errno.EIO, exc.message, path)


@contextlib.contextmanager
def _as_os_errors(path: str) -> Iterator[None]:
    try:
        yield
    except VfsError as exc:
        raise os_error(exc, path) from exc


class _KeyedByConfig(type(AbstractFileSystem)):  # type: ignore[misc]  # fsspec's instance cache, untyped
    """fsspec's instance cache, keyed also by what the ``config`` file holds: an instance is
    reused while the file is unchanged, and a file that gains ``deny`` or ``read_only`` (or
    loses them) gives a new instance with the new policy, not the one cached before."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        config = kwargs.get("config", args[3] if len(args) > 3 else None)
        if config:
            kwargs["config_sha256"] = _sha256_of(config)
        return super().__call__(*args, **kwargs)


def _sha256_of(path: str) -> str | None:
    """The sha256 of a file's bytes; None when it cannot be read (opening the mounts says why)."""
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


class JailFileSystem(AbstractFileSystem, metaclass=_KeyedByConfig):  # type: ignore[misc]  # fsspec is untyped
    """The jail's mounts and policy as one fsspec filesystem (see the module docstring)."""

    protocol = ("vfs",)
    root_marker = "/"

    def __init__(
        self,
        roots: str | Sequence[str] = (),
        deny: str | Sequence[str] = (),
        read_only: bool = False,
        config: str | None = None,
        deny_hardlinked: bool = False,
        jailed: JailedFS | None = None,
        config_sha256: str | None = None,
        review: bool = False,
        state: str | None = None,
        **kwargs: Any,
    ) -> None:
        """ValueError when there is no root or a root cannot be mounted (naming it).
        ``jailed``: serve an existing jailed filesystem (a server's own) instead of new mounts.
        ``config_sha256``: the config file's hash, set by the instance cache (``_KeyedByConfig``).
        ``review``: every mount under review (as ``--review``; one mount: ``review = true`` in the
        config): writes stay pending in the state store ``state`` (``vfs_mcp.review``)."""
        super().__init__(**kwargs)
        if jailed is not None:
            self.vfs = jailed
            return
        loaded = Config.load(config) if config else None
        specs = merge_specs([roots] if isinstance(roots, str) else roots, loaded)
        if not specs:
            raise ValueError("the vfs filesystem needs roots=[...] (or a config file with [[mount]]s)")
        mounts = open_mounts(specs, read_only=read_only or bool(loaded and loaded.read_only))
        for mount in mounts:
            mount.deny_hardlinked = mount.deny_hardlinked or deny_hardlinked
        denied = [*(loaded.deny if loaded else []), *([deny] if isinstance(deny, str) else deny)]
        if review or any(mount.review for mount in mounts):
            from vfs_mcp.review import jailed_under_review

            state = state or (loaded.state if loaded else None)
            self.vfs = jailed_under_review(mounts, state=state, deny=denied, every=review)
            return
        self.vfs = JailedFS(Jail(mounts, deny=denied))

    # -- paths ------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        text = str(stringify_path(path))
        text = text.removeprefix("vfs://") if text.startswith("vfs://") else text.removeprefix("vfs:")
        return text.rstrip("/") or "/"

    @classmethod
    def _parent(cls, path: str) -> str:
        text = cls._strip_protocol(path)
        scheme, sep, rest = text.partition("://")
        if not sep:
            return super()._parent(text)  # type: ignore[no-any-return]
        head = rest.rpartition("/")[0]
        return f"{scheme}://{head or rest}"  # a mount URL's bucket is its own parent

    def _resolve(self, path: str, *, follow: bool = True, write: bool = False) -> Target:
        return self.vfs.resolve(self._strip_protocol(path), follow=follow, write=write)

    # -- metadata and listings --------------------------------------------------------

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        with _as_os_errors(path):
            return _info(self.vfs.info(self._resolve(path)))

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        """A folder's visible entries; a file lists itself, as in fsspec."""
        with _as_os_errors(path):
            target = self._resolve(path)
            entry = self.vfs.info(target)
            listed = self.vfs.ls(target) if entry.type == "directory" else [entry]
        found = [_info(one) for one in listed]
        return found if detail else [one["name"] for one in found]

    def find(
        self, path: str, maxdepth: int | None = None, withdirs: bool = False, detail: bool = False, **kwargs: Any
    ) -> Any:
        """Every visible path below ``path`` in one walk; a file finds itself, a missing or
        denied path nothing; ``withdirs`` lists the start folder too (as in fsspec)."""
        with _as_os_errors(path):
            try:
                target = self._resolve(path)
                entry = self.vfs.info(target)
            except NotFound:
                return {} if detail else []
            found = self.vfs.find(target, maxdepth) if entry.type == "directory" else []
        out = {entry.path: _info(entry)} if withdirs or entry.type != "directory" else {}
        out |= {one.path: _info(one) for one in found if withdirs or one.type != "directory"}
        names = sorted(out)
        return {name: out[name] for name in names} if detail else names

    def modified(self, path: str) -> datetime:
        return datetime.fromtimestamp(self.info(path)["mtime"], tz=UTC)

    def created(self, path: str) -> datetime:
        return datetime.fromtimestamp(self.info(path)["created"], tz=UTC)

    # -- reading ----------------------------------------------------------------------

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        with _as_os_errors(path):
            target = self._resolve(path)
            self.vfs.require_file(target)
            return self.vfs.cat(target, start, end)

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        """``rb``: a buffered reader of byte ranges; ``wb``, ``xb``, ``ab``: a ``JailWriter``."""
        if mode not in ("rb", "wb", "xb", "ab"):
            raise ValueError(f"unsupported file mode: {mode!r} (a write replaces or extends the whole file)")
        with _as_os_errors(path):
            target = self._resolve(path, write=mode != "rb")
            if mode != "rb":
                return JailWriter(self.vfs, target, mode, autocommit=autocommit)
            entry = self.vfs.require_file(target)
        cache_type = kwargs.pop("cache_type", "readahead")
        return JailReader(self, target, block_size, cache_type, cache_options, entry.size)

    # -- writing ----------------------------------------------------------------------

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        with _as_os_errors(path):
            target = writable_target(self.vfs, self._resolve(path, write=True))
            write.write_bytes(self.vfs, target, bytes(value), create_dirs=True, create_only=mode == "create")

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        with _as_os_errors(path):
            write.create_directory(self.vfs, self._resolve(path, write=True).display, create_parents, exist_ok=False)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        with _as_os_errors(path):
            write.create_directory(self.vfs, self._resolve(path, write=True).display, exist_ok=exist_ok)

    def rmdir(self, path: str) -> None:
        with _as_os_errors(path):
            target = self._resolve(path, follow=False, write=True)
            if self.vfs.info(target, follow=False).type != "directory":
                raise NotADirectory(f"{target.display} is not a directory")
            try:
                write.delete_path(self.vfs, target.display)
            except AlreadyExists as exc:
                raise OSError(errno.ENOTEMPTY, exc.message, path) from exc

    def rm_file(self, path: str) -> None:
        with _as_os_errors(path):
            target = self._resolve(path, follow=False, write=True)
            if self.vfs.info(target, follow=False).type == "directory":
                raise IsADirectory(f"{target.display} is a directory; remove it with rm(path, recursive=True)")
            write.delete_path(self.vfs, target.display)

    def rm(self, path: str | list[str], recursive: bool = False, maxdepth: int | None = None) -> None:
        """Delete files, links (never their targets) and, with ``recursive``, folders."""
        for one in [path] if isinstance(path, str) else path:
            with _as_os_errors(one):
                target = self._resolve(one, follow=False, write=True)
                if self.vfs.info(target, follow=False).type == "directory" and not recursive:
                    raise IsADirectory(f"{target.display} is a directory; pass recursive=True")
                write.delete_path(self.vfs, target.display, recursive=recursive)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """Copy a file (across mounts too); a folder is made at ``path2`` (fsspec's recursive copy)."""
        with _as_os_errors(path1):
            source, dest = self._resolve(path1), self._resolve(path2, write=True)
            if self.vfs.info(source).type == "directory":
                write.create_directory(self.vfs, dest.display)
            else:
                transfers.copy_file(self.vfs, source.display, dest.display, overwrite=True)

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        """Each path moved as the ``move_file`` tool moves it, with its checks (one rename
        onto the destination where the store can; a folder whole, what the deny list hides in
        it included, or not at all). One path goes onto ``path2``; a list or a glob's matches
        go into the folder ``path2`` (made if missing), or one for one onto a list ``path2``.
        ``recursive`` and ``maxdepth`` change nothing: a folder always moves whole."""
        for source, dest, parents in self._moves(path1, path2):
            with _as_os_errors(source):
                src, dst = self._resolve(source, follow=False, write=True), self._resolve(dest, write=True)
                transfers.move_file(self.vfs, src.display, dst.display, overwrite=True, create_dirs=parents)

    def _moves(self, path1: Any, path2: Any) -> list[tuple[str, str, bool]]:
        """(source, destination, make its folders) of each move ``mv(path1, path2)`` makes."""
        if isinstance(path1, str) and not any(c in path1 for c in "*?["):
            return [(path1, path2, False)]
        sources = self.glob(path1) if isinstance(path1, str) else [stringify_path(one) for one in path1]
        if isinstance(path1, str) and not sources:
            raise FileNotFoundError(errno.ENOENT, "no path matches", path1)
        if isinstance(path2, list):
            if len(path2) != len(sources):
                raise ValueError(f"mv: {len(sources)} sources but {len(path2)} destinations")
            return [(source, dest, True) for source, dest in zip(sources, path2, strict=True)]
        folder = self._strip_protocol(path2).rstrip("/")
        return [(source, f"{folder}/{self._strip_protocol(source).rpartition('/')[2]}", True) for source in sources]


def _info(entry: Entry) -> dict[str, Any]:
    """fsspec's info dict of an entry, named as the tools name it."""
    out: dict[str, Any] = {
        "name": entry.path,
        "size": entry.size,
        "type": entry.type,
        "islink": entry.is_symlink,
        "mtime": entry.modified,
        "created": entry.created,
    }
    if entry.mode is not None and entry.type in ("file", "directory"):
        out["mode"] = entry.mode | (stat.S_IFDIR if entry.type == "directory" else stat.S_IFREG)
    if entry.etag:
        out["etag"] = entry.etag
    return out


class JailReader(AbstractBufferedFile):  # type: ignore[misc]  # fsspec is untyped
    """A file read in byte ranges through the jail (``JailedFS.cat``), buffered by fsspec."""

    def __init__(
        self, fs: JailFileSystem, target: Target, block_size: int | None, cache_type: str, cache_options: Any, size: int
    ) -> None:
        super().__init__(
            fs,
            target.display,
            "rb",
            block_size or "default",
            cache_type=cache_type,
            cache_options=cache_options,
            size=size,
        )
        self.target = target

    def _fetch_range(self, start: int, end: int) -> bytes:
        with _as_os_errors(self.path):
            return self.fs.vfs.cat(self.target, start, end)  # type: ignore[no-any-return]


class JailWriter(SpooledFile):
    """A write through the jail, landing whole at ``commit`` through the write path: ``wb``
    replaces the file, ``xb`` creates it only if it is absent (checked at open and at commit),
    ``ab`` appends. Parent folders are made as needed."""

    def __init__(self, vfs: JailedFS, target: Target, mode: str, *, autocommit: bool) -> None:
        self._vfs, self._target, self._mode = vfs, target, mode
        position = 0
        try:
            if mode == "xb" and vfs.exists(target):
                raise AlreadyExists(f"{target.display} already exists")
            if mode == "ab":
                with contextlib.suppress(NotFound):
                    position = vfs.require_file(target).size
        except BaseException:
            self._done = True  # nothing to commit when it is collected
            raise
        super().__init__(autocommit=autocommit, position=position)

    def _land(self, data: bytes) -> None:
        target = self._target
        with _as_os_errors(target.display):
            write.write_bytes(
                self._vfs,
                writable_target(self._vfs, target),
                data,
                create_dirs=True,
                append=self._mode == "ab",
                create_only=self._mode == "xb",
            )
