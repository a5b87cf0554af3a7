"""A mount under review: its store read-only underneath, a pending layer above
(``layers.Layer``), and an fsspec filesystem that shows the store with the layer applied.

Every write lands in the layer: a file's bytes as a blob, a delete as a whiteout, a rename
as a node that shows the store's content at the new path (nothing is copied), a folder made
as a node. Every read, listing and walk merges the two: the store's entries where no node
covers them, the layer's where one does. The store itself never changes; nothing but this
filesystem (and what applies the layer, ``vfs_mcp.review``) ever reads the layer.

Paths are the store's own (the layer's paths are below the mount's root), so the jail, the
operations and the one write path work over it unchanged, with the store's capabilities:
folders that are key prefixes (S3) come and go with what is in them, links (a local folder)
are followed through the layer and the store alike, as one tree (``resolve_links``). Walks
and listings keep the store's paging (``pages``, ``ls_many``): where the layer holds nothing
below a folder, the store's answer is passed on as it is.

Why one module of this size: the view is one algorithm (which node or which store path a
path shows, and what a folder holds), read by every verb below it; its parts apart would
each need all of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import posixpath
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fsspec import AbstractFileSystem
from fsspec.spec import AbstractBufferedFile
from fsspec.utils import stringify_path

from vfs_mcp_backends.base import (
    BackendMount,
    Child,
    Keep,
    Page,
    PreconditionFailed,
    check_conditions,
)
from vfs_mcp_backends.layers import Layer, Node, Op, join, parent_of
from vfs_mcp_backends.scopes import current_label, ensure_wanted
from vfs_mcp_backends.writes import COPY_CHUNK, DEFAULT_MODE, UMASK

DEFAULT_DIR_MODE = 0o777 & ~UMASK
MAX_LINKS = 40
"""Links followed in one path before it is a loop (ELOOP), as the kernel counts them."""
ASK = object()
"""What the store holds at a path is not known yet: look it up."""

Recorder = Callable[[str], Any]
"""What the store holds at a path below the mount root, as JSON (``Node.was``): the version
the agent read, to check before the layer is applied. None where nothing is there."""


@dataclass(slots=True)
class Seen:
    """What the view shows at one path: its kind, its fsspec info (named by the path), the
    layer's node there (if any) and the store path its content comes from (None: the layer's)."""

    kind: str
    info: dict[str, Any]
    node: Node | None
    source: str | None


class Outside(Exception):
    """A link leads out of the mount: ``path`` is where it leads (a host path, or the store's)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class OverlayFS(AbstractFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """The store of ``base`` with ``layer`` applied (see the module's docstring)."""

    protocol = ("overlay",)
    root_marker = ""
    cachable = False

    def __init__(self, base: BackendMount, layer: Layer, record: Recorder | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = base
        self.bfs = base.fs
        self.layer = layer
        self.record = record
        self.top = base.root.rstrip("/") or base.root
        caps = base.capabilities
        self.empty_dirs, self.links, self.modes, self.etags = caps.empty_dirs, caps.symlinks, caps.modes, caps.etags
        self.stamps = caps.timestamps
        self.real_top = base.host_path(base.root) if caps.host_paths else None
        self.folder_times, self.folder_class = _folder_times(base)
        # A local folder without auto_mkdir refuses a file whose folder is missing; memory and
        # object stores make the folders a file's path names.
        self.implicit_parents = bool(getattr(self.bfs, "auto_mkdir", True)) or not caps.empty_dirs

    # -- paths ------------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(stringify_path(path))
        if "://" in text:
            scheme, _, rest = text.partition("://")
            text = rest if scheme in ("s3", "s3a", "gs", "gcs", "az", "abfs", "overlay") else "/" + rest.lstrip("/")
        stripped = text.rstrip("/")
        return stripped or ("/" if text.startswith("/") else "")

    def _rel(self, path: Any) -> str:
        full = self._strip_protocol(path)
        if full == self.top:
            return ""
        if full.startswith(self.top.rstrip("/") + "/"):
            return full[len(self.top.rstrip("/")) + 1 :]
        raise PermissionError(errno.EACCES, "not under the root of this review mount", full)

    def _fs(self, rel: str) -> str:
        return f"{self.top.rstrip('/')}/{rel}" if rel else self.top

    # -- which node, which store path ---------------------------------------------------------

    def _where(self, rel: str) -> tuple[Node | None, str | None]:
        """The node at ``rel`` (or None) and the store path whose content ``rel`` shows (None:
        the store's content there is hidden: a whiteout, a layer file, a folder made over it)."""
        nodes = self.layer.nodes
        if not nodes or not rel:
            return nodes.get(rel) if rel else None, rel
        mapped: str | None = ""
        path = ""
        node = None
        for part in rel.split("/"):
            path = join(path, part)
            if mapped is not None:
                mapped = join(mapped, part)
            node = nodes.get(path)
            if node is not None:
                if node.kind == "moved":
                    mapped = node.source
                elif node.kind != "dir" or node.opaque:
                    mapped = None
        return node, mapped

    def _below_mapped(self, rel: str) -> str | None:
        """The store path ``rel`` shows by its folders alone (a node of its own aside)."""
        if not rel:
            return ""
        _, above = self._where(parent_of(rel))
        return None if above is None else join(above, rel.rpartition("/")[2])

    def _base_info(self, source: str) -> dict[str, Any] | None:
        try:
            raw: dict[str, Any] = (
                self.bfs.info(self._fs(source), follow=False) if self.links else self.bfs.info(self._fs(source))
            )
        except (FileNotFoundError, NotADirectoryError):
            return None
        return raw

    def _lookup(self, rel: str, base: Any = ASK) -> Seen | None:
        """What the view shows at ``rel``, links not followed; None where nothing is. ``base``:
        the store's info of the path ``rel`` shows, when the caller has it (None: nothing there)."""
        node, mapped = self._where(rel)
        if node is not None:
            return self._of_node(rel, node)
        if not rel:
            raw = self._base_info("") or {"name": self.top, "type": "directory", "size": 0}
            return Seen("directory", raw, None, "")
        if mapped is not None:
            raw = self._base_info(mapped) if base is ASK else base
            if raw is not None and not (raw.get("type") == "directory" and self._emptied(rel, mapped)):
                return Seen(str(raw.get("type")), self._named(raw, rel, mapped), None, mapped)
        if self.layer.has_below(rel) and self._holds_any(rel):
            return Seen("directory", self._folder_info(rel, None), None, None)
        return None

    def _of_node(self, rel: str, node: Node) -> Seen | None:
        if node.kind == "gone":
            return None
        if node.kind in ("file", "link"):
            return Seen("file" if node.kind == "file" else "symlink", self._node_info(rel, node), node, None)
        if node.kind == "dir":
            if self.empty_dirs or node.marker or self._holds_any(rel):
                return Seen("directory", self._folder_info(rel, node), node, None)
            return None
        raw = self._base_info(node.source)
        if raw is None or (raw.get("type") == "directory" and self._emptied(rel, node.source)):
            return None
        info = self._named(raw, rel, node.source)
        if node.mode is not None:
            info["mode"] = stat.S_IFMT(int(info.get("mode") or 0)) | node.mode
        return Seen(str(raw.get("type")), info, node, node.source)

    def _emptied(self, rel: str, source: str) -> bool:
        """On stores whose folders are key prefixes: whether whiteouts hide all that the folder
        ``rel`` (the store's ``source``) held, its own marker aside."""
        if self.empty_dirs or not self.layer.gone_below(rel):
            return False
        return not self._holds_any(rel) and not self._base_marker(source)

    def _base_marker(self, source: str) -> bool:
        """Whether the store holds the marker of the folder ``source`` (a ``key/`` object)."""
        base = self._fs(source).rstrip("/")
        try:
            raws = self.bfs.ls(base, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return any(str(raw["name"]) == base + "/" for raw in raws)  # listed beside what it holds

    def _holds_any(self, rel: str) -> bool:
        """Whether the view shows anything below the folder ``rel``."""
        return any(True for _ in self._children(rel, first=True))

    # -- info dicts --------------------------------------------------------------------------

    def _named(self, raw: dict[str, Any], rel: str, source: str) -> dict[str, Any]:
        if source == rel:
            return raw
        info = dict(raw)
        info["name"] = self._fs(rel)
        return info

    def _stamped(self, info: dict[str, Any], when: float) -> dict[str, Any]:
        if "modified" in self.stamps:
            if self.etags:
                info["LastModified"] = datetime.fromtimestamp(when, tz=UTC)
            else:
                info["mtime"] = when
        if "created" in self.stamps:
            info["created"] = when
        if "accessed" in self.stamps:
            info["atime"] = when
        return info

    def _node_info(self, rel: str, node: Node) -> dict[str, Any]:
        name = self._fs(rel)
        if node.kind == "link":
            info: dict[str, Any] = {"name": name, "size": len(node.to), "type": "symlink", "islink": True}
            if self.modes:
                info["mode"] = stat.S_IFLNK | 0o777
            return self._stamped(info, node.time)
        info = {"name": name, "size": node.size, "type": "file"}
        if self.modes:
            info["mode"] = stat.S_IFREG | (DEFAULT_MODE if node.mode is None else node.mode)
            info["nlink"] = 1
        if self.links:
            info["islink"] = False
        if self.etags:
            info["ETag"] = f'"{node.blob}"'
            info["StorageClass"] = "STANDARD"
        return self._stamped(info, node.time)

    def _folder_info(self, rel: str, node: Node | None) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self._fs(rel), "size": 0, "type": "directory"}
        if self.modes:
            mode = node.mode if node is not None and node.mode is not None else DEFAULT_DIR_MODE
            info["mode"] = stat.S_IFDIR | mode
        if self.links:
            info["islink"] = False
        if self.folder_class:
            info["StorageClass"] = self.folder_class
        return self._stamped(info, node.time) if node is not None and node.time and self.folder_times else info

    # -- links ---------------------------------------------------------------------------------

    def _link_text(self, rel: str) -> str | None:
        node, mapped = self._where(rel)
        if node is not None:
            if node.kind == "link":
                return node.to
            if node.kind != "moved":
                return None
        if mapped is None:
            return None
        raw = self._base_info(mapped)
        if raw is None or raw.get("type") != "symlink":
            return None
        return str(self.bfs.readlink(self._fs(mapped)))

    def _follow(self, rel: str, last: bool = True) -> str:
        """``rel`` with the links on its way followed through the view (all, or all but the
        last); ``Outside`` for one that leads out of the mount, ELOOP past ``MAX_LINKS``."""
        if not self.links or not rel:
            return rel
        todo = rel.split("/")
        done: list[str] = []
        hops = 0
        while todo:
            part = todo.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    raise Outside(posixpath.normpath("/".join([self.real_top or self.top, "..", *todo])))
                done.pop()
                continue
            text = self._link_text("/".join([*done, part])) if (todo or last) else None
            if text is None:
                done.append(part)
                continue
            hops += 1
            if hops > MAX_LINKS:
                raise OSError(errno.ELOOP, "too many levels of symbolic links", self._fs(rel))
            if text.startswith("/"):
                inside = self._inside(text)
                if inside is None:
                    raise Outside(posixpath.normpath(text))
                done, todo = [], [*inside, *todo]
            else:
                todo = [*text.split("/"), *todo]
        return "/".join(done)

    def _inside(self, absolute: str) -> list[str] | None:
        """The parts below the root of an absolute link text that names a path in the mount."""
        text = posixpath.normpath(absolute)
        for root in filter(None, (self.real_top, self.top)):
            if text == root:
                return []
            if text.startswith(root.rstrip("/") + "/"):
                return text[len(root.rstrip("/")) + 1 :].split("/")
        return None

    def _followed(self, rel: str, last: bool = True) -> str:
        """``rel`` with its links followed (``_follow``); PermissionError for one that leads out."""
        if not self.links:
            return rel
        try:
            return self._follow(rel, last)
        except Outside:
            raise PermissionError(errno.EACCES, "a symbolic link leads out of the mount", self._fs(rel)) from None

    def resolved(self, path: str, follow: bool) -> str:
        """Where ``path`` leads once links are followed through the view, as a path under the
        store's real root (a host path on a local folder): outside it when a link leads out."""
        rel = self._rel(path)
        top = self.real_top or self.top
        self.layer.fresh()
        try:
            real = self._follow(rel, last=follow)
        except Outside as out:
            return out.path
        except OSError:
            real = rel  # a loop: where it is (its reads fail)
        return f"{top.rstrip('/')}/{real}" if real else top

    # -- metadata and listings -------------------------------------------------------------------

    def info(self, path: Any, follow: bool = True, **kwargs: Any) -> dict[str, Any]:
        rel = self._rel(path)
        self.layer.fresh()
        real = self._followed(rel) if follow else rel
        seen = self._lookup(real)
        if seen is None:
            raise FileNotFoundError(errno.ENOENT, "no such file or folder", self._fs(rel))
        if real == rel:
            return seen.info
        return {**seen.info, "name": self._fs(rel), "islink": True}

    def ls(self, path: Any, detail: bool = True, **kwargs: Any) -> list[Any]:
        rel = self._rel(path)
        self.layer.fresh()
        real = self._followed(rel)
        node, mapped = self._where(real)
        if node is None and mapped == real == rel and not self.layer.has_below(rel):
            listed: list[Any] = self.bfs.ls(self._fs(rel), detail=detail)  # the store's, untouched
            return listed
        seen = self._lookup(real)
        if seen is None:
            raise FileNotFoundError(errno.ENOENT, "no such folder", self._fs(rel))
        if seen.kind != "directory":
            return [seen.info if detail else seen.info["name"]]
        found = [{**child.info, "name": self._fs(join(rel, name))} for name, child in sorted(self._children(real))]
        return found if detail else [one["name"] for one in found]

    def _listed(self, source: str) -> dict[str, dict[str, Any]]:
        """The store's entries of the folder ``source``, by name."""
        base = self._fs(source).rstrip("/")
        try:
            raws = self.bfs.ls(base, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        listed = {}
        for raw in raws:
            full = str(raw["name"]).rstrip("/")
            if full != base and full.startswith(base + "/") and "/" not in full[len(base) + 1 :]:
                listed[full[len(base) + 1 :]] = raw
        return listed

    def _children(self, rel: str, first: bool = False) -> Iterator[tuple[str, Seen]]:
        """What the view shows in the folder ``rel`` (no order); ``first``: stop at the first."""
        _, mapped = self._where(rel)
        listed = self._listed(mapped) if mapped is not None else {}
        covered = set(self.layer.children(rel))
        for name, raw in listed.items():
            if name not in covered:
                yield name, Seen(str(raw.get("type")), raw, None, join(mapped or "", name))
                if first:
                    return
        for name in covered:
            seen = self._lookup(join(rel, name), listed.get(name) if mapped is not None else None)
            if seen is not None:
                yield name, seen
                if first:
                    return

    def find(
        self, path: Any, maxdepth: int | None = None, withdirs: bool = False, detail: bool = False, **kwargs: Any
    ) -> Any:
        """Everything below ``path`` in the view, never through a link; a file finds itself, a
        missing path nothing (as fsspec's ``find``); ``withdirs`` lists the folder itself too."""
        rel = self._rel(path)
        self.layer.fresh()
        seen = self._lookup(rel)
        out: dict[str, dict[str, Any]] = {}
        if seen is None:
            return out if detail else []
        if seen.kind != "directory":
            out[self._fs(rel)] = seen.info
        else:
            if withdirs:
                out[self._fs(rel)] = seen.info
            for sub, info in self._walk(rel, maxdepth, kwargs.get("metadata", True)):
                if withdirs or info.get("type") != "directory":
                    out[self._fs(join(rel, sub))] = info
        names = sorted(out)
        return {name: out[name] for name in names} if detail else names

    def _walk(self, rel: str, maxdepth: int | None, metadata: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
        """Everything the view shows below the folder ``rel``: (path below it, info), no order."""
        _, mapped = self._where(rel)
        listed = self._base_entries(mapped, maxdepth, metadata) if mapped is not None else iter(())
        if not self.layer.has_below(rel):
            for sub, raw in listed:
                yield sub, raw if mapped == rel else self._named(raw, join(rel, sub), "")
            return
        hidden = self._hider(rel)
        found = [(sub, self._named(raw, join(rel, sub), mapped or "")) for sub, raw in listed if not hidden(sub)]
        found += self._layer_entries(rel, maxdepth)
        yield from self._with_folders(rel, found, maxdepth)

    def _base_entries(self, source: str, maxdepth: int | None, metadata: bool) -> Iterator[tuple[str, dict[str, Any]]]:
        try:
            yield from self.base.entries(self._fs(source), maxdepth, metadata)
        except (FileNotFoundError, NotADirectoryError):
            return

    def _layer_entries(self, rel: str, maxdepth: int | None) -> list[tuple[str, dict[str, Any]]]:
        """What the layer shows below the folder ``rel``: its nodes, and the store's content
        moved nodes show (what nodes below those cover left out): (path below ``rel``, info)."""
        found: list[tuple[str, dict[str, Any]]] = []
        for path, node in self.layer.below(rel):
            sub = path[len(rel) + 1 :] if rel else path
            depth = sub.count("/")
            if node.kind == "dir" and not self.empty_dirs and not node.marker:
                continue  # a folder on a key-prefix store shows by what it holds (``_with_folders``)
            seen = self._of_node(path, node)
            if seen is None:
                continue
            found.append((sub, seen.info))
            if node.kind == "moved" and seen.kind == "directory" and (maxdepth is None or depth + 1 < maxdepth):
                hidden = self._hider(path)
                deeper = None if maxdepth is None else maxdepth - depth - 1
                for below, raw in self._base_entries(node.source, deeper, True):
                    if not hidden(below):
                        found.append((f"{sub}/{below}", self._named(raw, join(path, below), "")))
        return found

    def _hider(self, rel: str) -> Callable[[str], bool]:
        """Whether a store entry at (path below ``rel``) is covered by the layer: a node is at
        it, or at a folder above it that does not show the store's content (not a plain folder)."""
        nodes = self.layer.nodes
        known: dict[str, bool] = {"": False}

        def covered(folder: str) -> bool:
            found = known.get(folder)
            if found is None:
                node = nodes.get(join(rel, folder))
                found = (node is not None and (node.kind != "dir" or node.opaque)) or covered(parent_of(folder))
                known[folder] = found
            return found

        def hidden(sub: str) -> bool:
            return join(rel, sub) in nodes or covered(parent_of(sub))

        return hidden

    def _with_folders(
        self, rel: str, entries: list[tuple[str, dict[str, Any]]], maxdepth: int | None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """``entries`` with the folders their paths name that none of them is (folders of layer
        files), and, where folders are key prefixes, without the folders whiteouts emptied."""
        have = {sub for sub, _ in entries}
        holding: set[str] = set()
        for sub, info in entries:
            if self.empty_dirs or info.get("type") != "directory" or self._marked(join(rel, sub)):
                folder = sub if info.get("type") == "directory" else parent_of(sub)
                while folder and folder not in holding:
                    holding.add(folder)
                    folder = parent_of(folder)
        for sub, info in entries:
            if maxdepth is not None and sub.count("/") >= maxdepth:
                continue  # below the depth asked for: it only named its folders
            if info.get("type") != "directory" or sub in holding or not self.layer.gone_below(join(rel, sub)):
                yield sub, info
        for folder in sorted(holding - have):
            if maxdepth is None or folder.count("/") < maxdepth:
                yield folder, self._folder_info(join(rel, folder), None)

    def _kept(self, rel: str, item: tuple[str, str, int]) -> bool:
        """Whether a store's entry of a walk below ``rel`` still shows (on key-prefix stores,
        whiteouts may have emptied a folder)."""
        sub, kind, _ = item
        if kind != "directory" or self.empty_dirs or not self.layer.gone_below(join(rel, sub)):
            return True
        return self._lookup(join(rel, sub)) is not None

    def _marked(self, rel: str) -> bool:
        """A folder that stands with nothing in it on a key-prefix store: a node made it, or
        the store holds its marker."""
        node = self.layer.nodes.get(rel)
        if node is not None:
            return node.kind == "dir" and node.marker
        if not self.layer.gone_below(rel):
            return True  # the store's folder, untouched by whiteouts: as the store lists it
        mapped = self._below_mapped(rel)
        return mapped is not None and self._base_marker(mapped)

    # -- reading -----------------------------------------------------------------------------

    def _file(self, rel: str) -> tuple[Node | None, str | None]:
        """The file the view shows at ``rel`` (links followed): its node, or the store path its
        bytes are at. Where the layer covers nothing on the way, the store's path at once (the
        store's own call then says what is wrong)."""
        real = self._followed(rel)
        node, mapped = self._where(real)
        if node is None and mapped is not None:
            return None, mapped
        if node is not None and node.kind == "file":
            return node, None
        seen = self._lookup(real)
        if seen is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", self._fs(rel))
        if seen.kind == "directory":
            raise IsADirectoryError(errno.EISDIR, "is a directory", self._fs(rel))
        return None, seen.source

    def cat_file(self, path: Any, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        rel = self._rel(path)
        self.layer.fresh()
        node, source = self._file(rel)
        if node is None:
            assert source is not None
            data: bytes = self.bfs.cat_file(self._fs(source), start=start, end=end)
            return data
        size = node.size
        first = 0 if start is None else (start if start >= 0 else max(0, size + start))
        last = size if end is None else (end if end >= 0 else max(0, size + end))
        if first >= min(last, size):
            return b""
        return self.layer.read_blob(node.blob, first, min(last, size))

    def read_whole(self, path: str, limit: int) -> tuple[dict[str, Any], bytes | None] | None:
        rel = self._rel(path)
        self.layer.fresh()
        node, source = self._file(rel)
        if node is None:
            assert source is not None
            found = self.base.read_whole(self._fs(source), limit)
            if found is None or source == rel:
                return found
            return self._named(found[0], rel, source), found[1]
        return self._node_info(rel, node), self.layer.read_blob(node.blob) if node.size <= limit else None

    def _open(
        self,
        path: Any,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        rel = self._rel(path)
        self.layer.fresh()
        if mode == "rb":
            node, source = self._file(rel)
            if node is None:
                assert source is not None
                kwargs.pop("follow", None)
                return self.bfs.open(self._fs(source), "rb", block_size=block_size, **kwargs)
            return _BlobReader(self, node, self._fs(rel))
        if mode not in ("wb", "xb", "ab"):
            raise ValueError(f"unsupported file mode: {mode!r}")
        if mode == "xb" and self._lookup(rel) is not None:
            raise FileExistsError(errno.EEXIST, "file exists", self._fs(rel))
        start = b""
        if mode == "ab":
            with contextlib.suppress(FileNotFoundError):
                start = self.cat_file(path)
        follow = kwargs.get("follow", True)
        return _StagedWrite(self, rel, mode, autocommit, start, kwargs.get("permissions"), follow)

    def modified(self, path: Any) -> datetime:
        info = self.info(path)
        stamp = info.get("LastModified") or info.get("mtime") or info.get("created")
        if isinstance(stamp, datetime):
            return stamp
        return datetime.fromtimestamp(float(stamp or 0), tz=UTC)

    def created(self, path: Any) -> datetime:
        return self.modified(path)

    def readlink(self, path: Any) -> str:
        rel = self._rel(path)
        self.layer.fresh()
        text = self._link_text(rel)
        if text is None:
            raise OSError(errno.EINVAL, "not a symbolic link", self._fs(rel))
        return text

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

    def _parent_ready(self, rel: str) -> list[Op]:
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
        ops: list[Op] = []
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

        def build() -> list[Op]:
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

    def _absent_ops(self, rel: str, node: Node | None) -> list[Op]:
        """The ops that leave nothing at ``rel``: its nodes go, and a whiteout hides what the
        store holds there, if it holds anything."""
        ops: list[Op] = [("drop", rel, None)]
        mapped = self._below_mapped(rel)
        if mapped is not None and self._base_info(mapped) is not None:
            gone = Node("gone", time=time.time(), was=self._was(rel, node), changes=self._labels(node))
            ops.append(("set", rel, gone))
        return ops

    def _remove(self, rel: str, *, recursive: bool, folder: bool | None = None) -> None:
        """Delete what is at ``rel`` (a link itself, never what it points to); ``folder``: it
        must be a folder (True) or must not (False)."""
        if not rel:
            raise PermissionError(errno.EPERM, "the mount root is not removed", self._fs(rel))
        self.layer.fresh()
        rel = self._followed(rel, last=False)

        def build() -> list[Op]:
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

        def build() -> list[Op]:
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

    def _folder_ops(self, rel: str, node: Node | None, *, marker: bool) -> list[Op]:
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

        def build() -> list[Op]:
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
                moved.marker = node1 is not None and node1.marker
            moved.was, moved.changes = self._was(rel2, node2), self._labels(node1)
            inside = [(path[len(rel1) :], inner) for path, inner in self.layer.below(rel1)]
            ops += [("drop", rel2, None), ("set", rel2, moved)]
            ops += [("set", rel2 + tail, dataclasses.replace(inner, was=None)) for tail, inner in inside]
            return ops + self._absent_ops(rel1, node1)

        ensure_wanted()
        self.layer.change(build)

    def _symlink(self, rel: str, text: str) -> None:
        self.layer.fresh()

        def build() -> list[Op]:
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

        def build() -> list[Op]:
            seen = self._lookup(rel)
            if seen is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or folder", self._fs(rel))
            node, bits = seen.node, stat.S_IMODE(mode)
            if node is not None and node.kind in ("file", "dir", "moved"):
                return [("set", rel, dataclasses.replace(node, mode=bits, changes=self._labels(node)))]
            if node is not None or seen.source is None:
                return []  # a link has no mode of its own
            made = Node("moved", source=seen.source, mode=bits, time=time.time(), was=self._was(rel, None))
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

        def build() -> list[Op]:
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
        self._make_dir(self._rel(path), parents=create_parents)

    def makedirs(self, path: Any, exist_ok: bool = False) -> None:
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
            self._make_dir(rel2, parents=True, exist_ok=True)
            return
        self._put(rel2, self.cat_file(path1), mode=kwargs.get("permissions"))

    def symlink(self, target: str, path: Any, **kwargs: Any) -> None:
        self._symlink(self._rel(path), target)

    def chmod(self, path: Any, mode: int) -> None:
        self._chmod(self._rel(path), mode)

    def invalidate_cache(self, path: str | None = None) -> None:
        self.bfs.invalidate_cache(path)


class _BlobReader(AbstractBufferedFile):  # type: ignore[misc]  # fsspec is untyped
    """A file of the layer, read in byte ranges."""

    def __init__(self, fs: OverlayFS, node: Node, name: str) -> None:
        super().__init__(fs, name, "rb", block_size=COPY_CHUNK, cache_type="none", size=node.size)
        self.node = node

    def _fetch_range(self, start: int, end: int) -> bytes:
        end = min(end, self.node.size)
        if start >= end:
            return b""
        data: bytes = self.fs.layer.read_blob(self.node.blob, start, end)
        return data


class _StagedWrite(io.RawIOBase):
    """A write into the layer: the bytes gather in a spooled temp file and land whole at
    ``commit`` (``close``, with ``autocommit``), never before; ``discard`` drops them."""

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
        super().__init__()
        self.fs, self.rel, self.mode, self.autocommit = fs, rel, mode, autocommit
        self.permissions, self.follow = permissions, follow
        self.path = fs._fs(rel)
        self._spool = tempfile.SpooledTemporaryFile(max_size=COPY_CHUNK)  # noqa: SIM115  # closed at commit or discard
        self._spool.write(start)
        self._done = False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError("write to a closed file")
        return self._spool.write(data)

    def tell(self) -> int:
        return self._spool.tell()

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        if self.autocommit:
            self.commit()

    def commit(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            self._spool.seek(0)
            data = self._spool.read()
            exclusive = self.mode == "xb"
            self.fs._put(
                self.rel, data, mode=self.permissions, follow=self.follow, create_only=exclusive, conditional=exclusive
            )
        except PreconditionFailed:
            raise FileExistsError(errno.EEXIST, "file exists", self.path) from None
        finally:
            self._spool.close()

    def discard(self) -> None:
        if not self._done:
            self._done = True
            self._spool.close()
        if not self.closed:
            super().close()


class _Fetches:
    """Whole-file fetches of a review mount: the store's own batch for the files it holds, the
    layer's bytes at once for the layer's."""

    def __init__(self, fs: OverlayFS, inner: Any) -> None:
        self.fs, self.inner = fs, inner

    def submit(self, path: str) -> Future[bytes]:
        try:
            node, source = self.fs._file(self.fs._rel(path))
            if node is None:
                assert source is not None
                found: Future[bytes] = self.inner.submit(self.fs._fs(source))
                return found
            data = self.fs.layer.read_blob(node.blob)
        except Exception as exc:  # handed over with the result, as the store's own fetches do
            failed: Future[bytes] = Future()
            failed.set_exception(exc)
            return failed
        done: Future[bytes] = Future()
        done.set_result(data)
        return done

    def stop(self) -> None:
        self.inner.stop()


@dataclass
class OverlayMount(BackendMount):
    """A mount under review (see the module's docstring); ``fs`` is its ``OverlayFS``."""

    base: BackendMount | None = None

    @classmethod
    def over(
        cls, base: BackendMount, layer: Layer, record: Recorder | None = None, *, local: bool = True
    ) -> OverlayMount:
        """``base`` under review with ``layer`` (``local``: the layer's store is on this machine).
        ``record`` says what the store holds at a path, kept with the node that first covers it."""
        capabilities = dataclasses.replace(
            base.capabilities,
            host_paths=False,
            native_grep=False,
            atomic_rename=True,
            append=False,
            native_copy=True,
            locked_writes=False,
            local_io=base.capabilities.local_io and local,
        )
        return cls(fs=OverlayFS(base, layer, record), root=base.root, capabilities=capabilities, base=base)

    @property
    def overlay(self) -> OverlayFS:
        assert isinstance(self.fs, OverlayFS)
        return self.fs

    @property
    def layer(self) -> Layer:
        return self.overlay.layer

    @property
    def under(self) -> BackendMount:
        """The store under review."""
        assert self.base is not None
        return self.base

    def invalidate(self, path: str | None = None) -> None:
        self.under.invalidate(path)

    def invalidate_tree(self, path: str) -> None:
        self.under.invalidate_tree(path)

    def walk(self, path: str, maxdepth: int | None = None, metadata: bool = True) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = self.fs.find(
            path, maxdepth=maxdepth, withdirs=True, detail=True, metadata=metadata
        )
        return found

    def resolve_links(self, path: str, follow: bool) -> str:
        return self.overlay.resolved(path, follow)

    def read_whole(self, path: str, limit: int) -> tuple[dict[str, Any], bytes | None] | None:
        return self.overlay.read_whole(path, limit)

    def fetches(self) -> Any:
        inner = self.under.fetches()
        return _Fetches(self.overlay, inner) if inner is not None else None

    def pages(
        self, path: str, maxdepth: int | None = None, metadata: bool = True, keep: Keep | None = None
    ) -> Iterator[Page]:
        """The store's pages with the layer merged in: the store's entries the layer covers left
        out, the layer's added to the page whose keys reach theirs (all in one page on stores
        that list in one)."""
        fs = self.overlay
        rel = fs._rel(path)
        fs.layer.fresh()
        node, mapped = fs._where(rel)
        if node is None and mapped == rel and not fs.layer.has_below(rel):
            yield from self.under.pages(path, maxdepth, metadata, keep)
            return
        hidden = fs._hider(rel)
        layered = [
            (sub, str(info.get("type")), int(info.get("size") or 0) if info.get("type") == "file" else 0)
            for sub, info in fs._with_folders(rel, fs._layer_entries(rel, maxdepth), maxdepth)
        ]
        kept = [e for e in layered if keep is None or keep(e[0].rpartition("/")[2], e[0])]
        pending = sorted((e[0] + "/" if e[1] == "directory" else e[0], e) for e in kept)
        shown: set[str] = set()
        inner = self.under.pages(fs._fs(mapped), maxdepth, metadata, keep) if mapped is not None else iter(())
        for page in _pages_or_one(inner):
            listed = page.items if page is not None else []
            items = [
                item
                for item in listed
                if not hidden(item[0]) and not (item[1] == "directory" and item[0] in shown) and fs._kept(rel, item)
            ]
            # Store entries the page read that still show (the key of a file deleted does not count).
            count = max(0, (page.listed if page is not None else 0) - (len(listed) - len(items)))
            last = page is None or page.last
            until = page.until if page is not None else ""
            shown.update(sub for sub, kind, _ in items if kind == "directory")
            while pending and (last or pending[0][0] <= until):
                _, entry = pending.pop(0)
                if entry[1] != "directory" or entry[0] not in shown:
                    shown.add(entry[0])
                    items.append(entry)
                    count += 1
            if fs.empty_dirs:
                items.sort(key=lambda item: item[0].replace("/", "\x00"))
            yield Page(items, page.unreadable if page is not None else [], last, count, until)

    def ls_many(self, paths: list[str], cursors: list[str | None]) -> list[tuple[list[Child], str | None]]:
        """Each folder's entries in the view, a page at a time: the store's page of the folder
        it shows (all folders at once, as the store lists them), the layer's entries merged in
        by name. A cursor carries the store's and the last name it gave."""
        fs = self.overlay
        fs.layer.fresh()
        plans: list[tuple[str, str | None, str]] = []
        asked: list[tuple[int, str, str | None]] = []
        for index, (path, cursor) in enumerate(zip(paths, cursors, strict=True)):
            rel = fs._rel(path)
            _, mapped = fs._where(rel)
            after, _, inner = (cursor or "").partition("\x00")
            plans.append((rel, mapped, after))
            if mapped is not None and (cursor is None or inner):
                asked.append((index, fs._fs(mapped), inner or None))
        listed = self.under.ls_many([p for _, p, _ in asked], [c for _, _, c in asked]) if asked else []
        answers = {index: answer for (index, _, _), answer in zip(asked, listed, strict=True)}
        return [
            self._merged(fs, rel, mapped, after, answers.get(i, ([], None)))
            for i, (rel, mapped, after) in enumerate(plans)
        ]

    @staticmethod
    def _merged(
        fs: OverlayFS, rel: str, mapped: str | None, after: str, answer: tuple[list[Child], str | None]
    ) -> tuple[list[Child], str | None]:
        entries, cursor = answer
        if mapped == rel and not fs.layer.has_below(rel):
            return entries, cursor
        covered = set(fs.layer.children(rel))
        kept = [entry for entry in entries if entry[0] not in covered]
        base = {name: kind for name, kind, _ in entries}
        last = entries[-1][0] if entries and cursor is not None else None
        for name in sorted(covered):
            if name <= after or (last is not None and name > last):
                continue  # another page's (names up to the store page's last are this one's)
            child = join(rel, name)
            if base.get(name) == "directory" and child not in fs.layer.nodes and not fs.layer.gone_below(child):
                kept.append(next(entry for entry in entries if entry[0] == name))
                continue  # the store's folder, with layer files in it: as the store lists it
            seen = fs._lookup(child, ASK if name in base else None)
            if seen is not None:
                kept.append((name, seen.kind, int(seen.info.get("size") or 0) if seen.kind == "file" else 0))
        kept.sort()
        return kept, None if cursor is None else f"{last}\x00{cursor}"

    def narrowed(self, root: str) -> BackendMount:
        return dataclasses.replace(self, root=root)

    def host_path(self, path: str) -> str | None:
        return None

    def put_if(self, path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        check_conditions(if_match, create_only)
        if not self.capabilities.conditional_writes:
            raise NotImplementedError("this review mount's store has no conditional writes")
        fs = self.overlay
        return f'"{fs._put(fs._rel(path), data, if_match=if_match, create_only=create_only, conditional=True)}"'


def _folder_times(base: BackendMount) -> tuple[bool, str | None]:
    """Whether the store's folders have times (a disk's do; memory's and key prefixes' do
    not), and the storage class it says a folder has (S3's "DIRECTORY")."""
    prefixes = "DIRECTORY" if base.capabilities.etags and not base.capabilities.empty_dirs else None
    base.invalidate(base.root)
    try:
        info = base.fs.info(base.root)
    except (OSError, ValueError):
        return False, prefixes
    times = any(info.get(key) is not None for key in ("mtime", "LastModified", "created", "atime"))
    return times, info.get("StorageClass") or prefixes


def _pages_or_one(pages: Iterator[Page]) -> Iterator[Page | None]:
    """The store's pages, or one None when it lists none (a folder only the layer holds)."""
    found = False
    while True:
        try:
            page = next(pages)
        except StopIteration:
            break
        except (FileNotFoundError, NotADirectoryError):
            break  # the store has no folder there: the layer's alone
        found = True
        yield page
    if not found:
        yield None
