"""The writes of a mount under review (``overlay.OverlayMount``): ``OverlayFS`` is its view
(``overlayview.OverlayReads``) with fsspec's writing verbs, each one change to the pending
layer (``layers.Layer.change``), never to the store.

A file's bytes become a blob, a delete a whiteout (where the store holds something there), a
rename a node that shows the store's content at the new path (nothing is copied), a folder made
a node. Each node keeps what the store held at its path when the layer first covered it (the
``record`` the mount is made with: the version the agent read, checked again before the layer
is applied) and the ids of the changes that wrote it (``scopes.labelled``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import stat
import time
from typing import Any

from fsspec.utils import stringify_path

from vfs_mcp_backends.base import PreconditionFailed
from vfs_mcp_backends.layers import IndexEdit, Node, parent_of
from vfs_mcp_backends.overlayview import DEFAULT_DIR_MODE, OverlayReads, Seen
from vfs_mcp_backends.scopes import current_label, ensure_wanted
from vfs_mcp_backends.staged_files import SpooledFile


class OverlayFS(OverlayReads):
    """The view of a mount under review, and its writes, into the layer alone."""

    def _open(
        self,
        path: Any,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        """``rb`` reads (``OverlayReads``); ``wb``, ``xb`` and ``ab`` write a staged file that lands
        in the layer whole at ``commit`` (``close``, with ``autocommit``)."""
        if mode == "rb":
            return super()._open(path, mode, block_size, autocommit, cache_options, **kwargs)
        if mode not in ("wb", "xb", "ab"):
            raise ValueError(f"unsupported file mode: {mode!r}")
        rel = self._rel(path)
        self.layer.fresh()
        if mode == "xb" and self._lookup(rel) is not None:
            raise FileExistsError(errno.EEXIST, "file exists", self._fs(rel))
        start = b""
        if mode == "ab":
            with contextlib.suppress(FileNotFoundError):
                start = self.cat_file(path)
        follow = kwargs.get("follow", True)
        return _StagedWrite(self, rel, mode, autocommit, start, kwargs.get("permissions"), follow)

    # -- writing -----------------------------------------------------------------------------

    def _was(self, rel: str, node: Node | None) -> Any:
        """What the store held at ``rel`` when the layer first covered it."""
        if node is not None:
            return node.was
        return self.record(rel) if self.record is not None else None

    @staticmethod
    def _labels(node: Node | None) -> tuple[str, ...]:
        """The change ids of a node about to be written: its own, and the change writing it."""
        label = current_label()
        old = node.changes if node is not None else ()
        return old if label is None or label in old else (*old, label)

    def _parent_ready(self, rel: str) -> list[IndexEdit]:
        """Check that ``rel``'s folder is there (FileNotFoundError, NotADirectoryError); on stores
        that make the folders a file's path names, the ops that make it (whiteouts on the way
        become folders again)."""
        parent = parent_of(rel)
        if not parent:
            return []
        seen = self._lookup(self._followed(parent))
        if seen is not None:
            if seen.kind != "directory":
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", self._fs(parent))
            return []
        if not self.implicit_parents:
            raise FileNotFoundError(errno.ENOENT, "no such folder", self._fs(parent))
        ops: list[IndexEdit] = []
        folder = parent
        while folder:
            node = self.layer.nodes.get(folder)
            if node is not None and node.kind in ("file", "link"):
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", self._fs(folder))
            if node is not None and node.kind == "gone":
                made = Node("dir", opaque=True, time=time.time(), was=node.was, changes=self._labels(node))
                ops.append(("set", folder, made))
            folder = parent_of(folder)
        return ops

    def _put(
        self,
        rel: str,
        data: bytes,
        *,
        mode: int | None = None,
        follow: bool = True,
        if_match: str | None = None,
        create_only: bool = False,
        conditional: bool = False,
    ) -> str:
        """``data`` as the file at ``rel``, in the layer; its token (the blob's sha256).
        ``conditional``: only while the file has token ``if_match``, or with ``create_only``
        while nothing is there (``PreconditionFailed``)."""
        if not rel:
            raise IsADirectoryError(errno.EISDIR, "the mount root is a folder", self._fs(rel))
        self.layer.fresh()
        if follow:
            rel = self._followed(rel)
        sha = self.layer.put_blob(data)

        def build() -> list[IndexEdit]:
            ops = self._parent_ready(rel)
            node = self.layer.nodes.get(rel)
            seen = self._lookup(rel)
            if seen is not None and seen.kind == "directory":
                raise IsADirectoryError(errno.EISDIR, "is a directory", self._fs(rel))
            if conditional:
                token = self._token(seen)
                if (create_only and seen is not None) or (if_match is not None and token != if_match.strip('"')):
                    raise PreconditionFailed(self._fs(rel))
            kept = mode
            if kept is None and self.modes and seen is not None and seen.kind == "file":
                kept = stat.S_IMODE(int(seen.info.get("mode") or 0)) or None
            made = Node("file", blob=sha, size=len(data), mode=kept, time=time.time())
            made.was, made.changes = self._was(rel, node), self._labels(node)
            return [*ops, ("drop", rel, None), ("set", rel, made)]

        ensure_wanted()
        self.layer.change(build)
        return sha

    def _token(self, seen: Seen | None) -> str | None:
        if seen is None:
            return None
        if seen.node is not None and seen.node.kind == "file":
            return seen.node.blob
        token = self.base.version_token(seen.info)
        return token.strip('"') if token else None

    def _absent_ops(self, rel: str, node: Node | None, keep: str | None = None) -> list[IndexEdit]:
        """The ops that leave nothing at ``rel``: its nodes go, and a whiteout hides what the
        store holds there, if it holds anything; then ``_emptied`` (``keep``: a path the change
        writes, whose folders it keeps)."""
        ops: list[IndexEdit] = [("drop", rel, None)]
        mapped = self._below_mapped(rel)
        if mapped is not None and self._base_info(mapped) is not None:
            gone = Node("gone", time=time.time(), was=self._was(rel, node), changes=self._labels(node))
            ops.append(("set", rel, gone))
        return ops + self._emptied(rel, keep)

    def _emptied(self, rel: str, keep: str | None) -> list[IndexEdit]:
        """On stores whose folders are key prefixes, a folder shows while something is in it:
        the folders above ``rel`` left with nothing in them once it is gone (and no marker of
        their own) are whited out themselves, now, so that no read asks the store whether the
        whiteouts below a folder left anything in it (what the store holds the layer does not
        hide shows; a key added behind the agent's back under a folder it emptied does not)."""
        if self.empty_dirs:
            return []
        ops: list[IndexEdit] = []
        gone, folder = rel, parent_of(rel)
        while folder and not (keep is not None and (keep + "/").startswith(folder + "/")):
            node = self.layer.nodes.get(folder)
            if node is not None and (node.marker or node.kind != "dir"):
                break
            name = gone.rpartition("/")[2]
            if any(other != name for other, _ in self._children(folder)):
                break
            mapped = self._below_mapped(folder) if node is None or not node.opaque else None
            if mapped is not None and self._base_marker(mapped):
                break
            if mapped is not None and self._base_info(mapped) is not None:
                made = Node("gone", time=time.time(), was=self._was(folder, node), changes=self._labels(node))
                ops += [("drop", folder, None), ("set", folder, made)]
            gone, folder = folder, parent_of(folder)
        return ops

    def _remove(self, rel: str, *, recursive: bool, folder: bool | None = None) -> None:
        """Delete what is at ``rel`` (a link itself, never what it points to); ``folder``: it
        must be a folder (True) or must not (False)."""
        if not rel:
            raise PermissionError(errno.EPERM, "the mount root is not removed", self._fs(rel))
        self.layer.fresh()
        rel = self._followed(rel, last=False)

        def build() -> list[IndexEdit]:
            seen = self._lookup(rel)
            if seen is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or folder", self._fs(rel))
            if folder is True and seen.kind != "directory":
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", self._fs(rel))
            if folder is False and seen.kind == "directory":
                raise IsADirectoryError(errno.EISDIR, "is a directory", self._fs(rel))
            if seen.kind == "directory" and not recursive and self._holds_any(rel):
                raise OSError(errno.ENOTEMPTY, "folder not empty", self._fs(rel))
            return self._absent_ops(rel, self.layer.nodes.get(rel))

        ensure_wanted()
        self.layer.change(build)

    def _make_dir(self, rel: str, *, parents: bool, exist_ok: bool = False, marker: bool = False) -> None:
        """The folder ``rel`` made (``parents``: its missing folders too, on stores with
        folders of their own; on key-prefix stores a folder stands by its ``marker``)."""
        self.layer.fresh()
        if not rel:
            if exist_ok:
                return
            raise FileExistsError(errno.EEXIST, "file exists", self._fs(rel))

        def build() -> list[IndexEdit]:
            seen = self._lookup(rel)
            if seen is not None:
                if (exist_ok or marker) and seen.kind == "directory":
                    node = self.layer.nodes.get(rel)
                    if marker and not self.empty_dirs and (node is None or not node.marker):
                        return self._folder_ops(
                            rel, node, marker=True
                        )  # the marker of a folder that stands by its files
                    return []
                raise FileExistsError(errno.EEXIST, "file exists", self._fs(rel))
            chain = [rel]
            while self.empty_dirs and parents and parent_of(chain[-1]) and self._lookup(parent_of(chain[-1])) is None:
                chain.append(parent_of(chain[-1]))
            ops = self._parent_ready(chain[-1])
            for folder in reversed(chain):
                ops += self._folder_ops(folder, self.layer.nodes.get(folder), marker=not self.empty_dirs)
            return ops

        ensure_wanted()
        self.layer.change(build)

    def _folder_ops(self, rel: str, node: Node | None, *, marker: bool) -> list[IndexEdit]:
        hidden = self._below_mapped(rel)
        there = node is not None and node.kind == "dir" and not node.opaque
        opaque = not there and (node is not None or (hidden is not None and self._base_info(hidden) is not None))
        if node is not None and node.kind == "dir":
            made = dataclasses.replace(node, marker=marker, changes=self._labels(node))
        else:
            made = Node("dir", mode=DEFAULT_DIR_MODE if self.modes else None, time=time.time(), marker=marker)
            made.opaque, made.was, made.changes = opaque, self._was(rel, node), self._labels(node)
        return [("drop", rel, None), ("set", rel, made)] if node is None or node.kind != "dir" else [("set", rel, made)]

    def _rename(self, rel1: str, rel2: str) -> None:
        """``rel1`` (a file, link or folder, as it is) shown at ``rel2`` from now on, in one
        record: its nodes move with it, and the store's content it showed is shown from its
        new place (a ``moved`` node), never copied."""
        self.layer.fresh()
        rel1, rel2 = self._followed(rel1, last=False), self._followed(rel2, last=False)
        if not rel1 or not rel2 or rel2 == rel1 or rel2.startswith(rel1 + "/"):
            raise OSError(errno.EINVAL, "cannot move a folder into itself, or a mount root", self._fs(rel2))

        def build() -> list[IndexEdit]:
            source = self._lookup(rel1)
            if source is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or folder", self._fs(rel1))
            there = self._lookup(rel2)
            if there is not None:
                if there.kind == "directory" and source.kind != "directory":
                    raise IsADirectoryError(errno.EISDIR, "is a directory", self._fs(rel2))
                if there.kind != "directory" and source.kind == "directory":
                    raise NotADirectoryError(errno.ENOTDIR, "not a directory", self._fs(rel2))
                if there.kind == "directory" and self._holds_any(rel2):
                    raise OSError(errno.ENOTEMPTY, "folder not empty", self._fs(rel2))
            ops = self._parent_ready(rel2)
            node1, node2 = self.layer.nodes.get(rel1), self.layer.nodes.get(rel2)
            _, mapped1 = self._where(rel1)
            if node1 is not None and node1.kind in ("file", "link"):
                moved = dataclasses.replace(node1)
            elif node1 is not None and node1.kind == "dir" and mapped1 is None:
                moved = dataclasses.replace(node1, opaque=True)
            else:
                assert mapped1 is not None
                moved = Node("moved", source=mapped1, time=time.time(), mode=node1.mode if node1 else None)
                moved.shows = source.kind
                moved.marker = node1 is not None and node1.marker
            moved.was, moved.changes = self._was(rel2, node2), self._labels(node1)
            inside = [(path[len(rel1) :], inner) for path, inner in self.layer.below(rel1)]
            ops += [("drop", rel2, None), ("set", rel2, moved)]
            ops += [("set", rel2 + tail, dataclasses.replace(inner, was=None)) for tail, inner in inside]
            return ops + self._absent_ops(rel1, node1, keep=rel2)

        ensure_wanted()
        self.layer.change(build)

    def _symlink(self, rel: str, text: str) -> None:
        self.layer.fresh()

        def build() -> list[IndexEdit]:
            if self._lookup(rel) is not None:
                raise FileExistsError(errno.EEXIST, "file exists", self._fs(rel))
            node = self.layer.nodes.get(rel)
            made = Node("link", to=text, time=time.time(), was=self._was(rel, node), changes=self._labels(node))
            return [*self._parent_ready(rel), ("drop", rel, None), ("set", rel, made)]

        ensure_wanted()
        self.layer.change(build)

    def _chmod(self, rel: str, mode: int) -> None:
        self.layer.fresh()
        rel = self._followed(rel)

        def build() -> list[IndexEdit]:
            seen = self._lookup(rel)
            if seen is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or folder", self._fs(rel))
            node, bits = seen.node, stat.S_IMODE(mode)
            if node is not None and node.kind in ("file", "dir", "moved"):
                return [("set", rel, dataclasses.replace(node, mode=bits, changes=self._labels(node)))]
            if node is not None or seen.source is None:
                return []  # a link has no mode of its own
            made = Node("moved", source=seen.source, mode=bits, time=time.time(), was=self._was(rel, None))
            made.shows = seen.kind
            made.changes = self._labels(None)
            return [("set", rel, made)]

        ensure_wanted()
        self.layer.change(build)

    # fsspec's writing verbs

    def pipe_file(self, path: Any, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        if str(stringify_path(path)).endswith("/") and not value and not self.empty_dirs:
            self._make_dir(self._rel(path), parents=True, marker=True)  # a folder's marker
            return
        create = mode == "create"
        follow = kwargs.get("follow", True)
        try:
            self._put(
                self._rel(path),
                bytes(value),
                mode=kwargs.get("permissions"),
                follow=follow,
                create_only=create,
                conditional=create,
            )
        except PreconditionFailed:
            raise FileExistsError(errno.EEXIST, "file exists", self._fs(self._rel(path))) from None

    def rm_file(self, path: Any) -> None:
        rel = self._rel(path)
        if str(stringify_path(path)).endswith("/") and not self.empty_dirs:
            self._drop_marker(rel)
            return
        self._remove(rel, recursive=False, folder=False)

    def _drop_marker(self, rel: str) -> None:
        """A folder's marker gone: the folder with it when nothing else is in it."""
        self.layer.fresh()

        def build() -> list[IndexEdit]:
            seen = self._lookup(rel)
            if seen is None or seen.kind != "directory":
                raise FileNotFoundError(errno.ENOENT, "no such folder marker", self._fs(rel) + "/")
            if not self._holds_any(rel):
                return self._absent_ops(rel, self.layer.nodes.get(rel))
            node = self.layer.nodes.get(rel)
            if node is not None and node.marker:
                return [("set", rel, dataclasses.replace(node, marker=False, changes=self._labels(node)))]
            return []

        ensure_wanted()
        self.layer.change(build)

    def _rm(self, path: Any) -> None:
        self.rm_file(path)

    def rmdir(self, path: Any) -> None:
        self._remove(self._rel(path), recursive=False, folder=True)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        for one in [path] if isinstance(path, str) else list(path):
            rel = self._rel(one)
            self.layer.fresh()
            seen = self._lookup(self._followed(rel, last=False))
            if seen is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or folder", self._fs(rel))
            if seen.kind == "directory" and not recursive:
                raise IsADirectoryError(errno.EISDIR, "is a directory; pass recursive=True", self._fs(rel))
            self._remove(rel, recursive=True)

    def mkdir(self, path: Any, create_parents: bool = True, **kwargs: Any) -> None:
        if not self.empty_dirs:
            return  # as a key-prefix store's own: a folder is made by what is put in it (or its marker)
        self._make_dir(self._rel(path), parents=create_parents)

    def makedirs(self, path: Any, exist_ok: bool = False) -> None:
        if not self.empty_dirs:
            return
        self._make_dir(self._rel(path), parents=True, exist_ok=exist_ok)

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        self._rename(self._rel(path1), self._rel(path2))

    def cp_file(self, path1: Any, path2: Any, **kwargs: Any) -> None:
        """A file's bytes copied into the layer (a folder: made, as fsspec's recursive copy asks)."""
        rel1, rel2 = self._rel(path1), self._rel(path2)
        self.layer.fresh()
        seen = self._lookup(self._followed(rel1))
        if seen is None:
            raise FileNotFoundError(errno.ENOENT, "no such file or folder", self._fs(rel1))
        if seen.kind == "directory":
            self.makedirs(path2, exist_ok=True)  # (a key-prefix store's folder is made by what is put in it)
            return
        self._put(rel2, self.cat_file(path1), mode=kwargs.get("permissions"))

    def symlink(self, target: str, path: Any, **kwargs: Any) -> None:
        self._symlink(self._rel(path), target)

    def chmod(self, path: Any, mode: int) -> None:
        self._chmod(self._rel(path), mode)

    def invalidate_cache(self, path: str | None = None) -> None:
        self.bfs.invalidate_cache(path)


class _StagedWrite(SpooledFile):
    """A write into the layer, landing whole at ``commit``, never before."""

    def __init__(
        self,
        fs: OverlayFS,
        rel: str,
        mode: str,
        autocommit: bool,
        start: bytes,
        permissions: int | None,
        follow: bool,
    ) -> None:
        self.fs, self.rel, self.mode = fs, rel, mode
        self.permissions, self.follow = permissions, follow
        self.path = fs._fs(rel)
        super().__init__(autocommit=autocommit, start=start)

    def _land(self, data: bytes) -> None:
        exclusive = self.mode == "xb"
        try:
            self.fs._put(
                self.rel, data, mode=self.permissions, follow=self.follow, create_only=exclusive, conditional=exclusive
            )
        except PreconditionFailed:
            raise FileExistsError(errno.EEXIST, "file exists", self.path) from None
