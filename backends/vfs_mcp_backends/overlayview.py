"""The view of a mount under review (``overlay.OverlayMount``): its store, read-only, with a
pending layer (``layers.Layer``) applied. This is the reading half (``overlayfs.OverlayFS`` adds
the writes, which go to the layer alone): which node or which store path a path shows, what a
folder holds, where links lead, and the reads, listings and walks over both.

A path shows the layer's node where one covers it (a node at it, or a whiteout, a file, a moved
or a remade folder above it), else the store's content at the path its folders map it to (a
moved folder maps what is below it to its source). The store's answers are passed on as they
are wherever the layer holds nothing on the way, so an untouched folder costs what it costs
on the store itself; where folders are key prefixes (S3), a folder shows while anything shows
in it. Links (a local folder) are followed through the layer and the store alike, as one tree.

Why its lines are one job: every verb below reads the same view (``_where``, ``_lookup``,
``_children``, ``_walk``), and the view is one algorithm; apart, each part would need the rest.
"""

from __future__ import annotations

import errno
import posixpath
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fsspec import AbstractFileSystem
from fsspec.spec import AbstractBufferedFile
from fsspec.utils import stringify_path

from vfs_mcp_backends.base import (
    BackendMount,
)
from vfs_mcp_backends.layers import Layer, Node, join, parent_of
from vfs_mcp_backends.staged_files import COPY_CHUNK, DEFAULT_MODE, UMASK

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


class OverlayReads(AbstractFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """The store of ``base`` with ``layer`` applied, read (see the module's docstring)."""

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
            top = self._base_info("") or {"name": self.top, "type": "directory", "size": 0}
            return Seen("directory", top, None, "")
        if mapped is not None:
            raw: dict[str, Any] | None = self._base_info(mapped) if base is ASK else base
            if raw is not None:
                return Seen(str(raw.get("type")), self._named(raw, rel, mapped), None, mapped)
        # A folder only the layer's files name (the store has none there): it shows while they do.
        if self.layer.has_below(rel) and self._holds_any(rel, store=mapped is not None and base is not None):
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
        if node.shows == "directory" and not self.base.capabilities.local_io:
            # A folder moved on a remote store: a folder, as it was (no request to say so again).
            return Seen("directory", self._folder_info(rel, None), node, node.source)
        raw = self._base_info(node.source)
        if raw is None:
            return None
        info = self._named(raw, rel, node.source)
        if node.mode is not None:
            info["mode"] = stat.S_IFMT(int(info.get("mode") or 0)) | node.mode
        return Seen(str(raw.get("type")), info, node, node.source)

    def _base_marker(self, source: str) -> bool:
        """Whether the store holds the marker of the folder ``source`` (a ``key/`` object)."""
        base = self._fs(source).rstrip("/")
        try:
            raws = self.bfs.ls(base, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return any(str(raw["name"]) == base + "/" for raw in raws)  # listed beside what it holds

    def _holds_any(self, rel: str, store: bool = True) -> bool:
        """Whether the view shows anything below the folder ``rel`` (``store``: the store may
        hold something there; False when it is known to hold nothing)."""
        return any(True for _ in self._children(rel, first=True, store=store))

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
        # The listing first: a folder that holds something is there (one request, not a
        # lookup and a listing); only an empty answer is looked up (a file, nothing, an empty folder).
        found = [{**child.info, "name": self._fs(join(rel, name))} for name, child in sorted(self._children(real))]
        if not found:
            seen = self._lookup(real)
            if seen is None:
                raise FileNotFoundError(errno.ENOENT, "no such folder", self._fs(rel))
            if seen.kind != "directory":
                return [seen.info if detail else seen.info["name"]]
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

    def _children(self, rel: str, first: bool = False, store: bool = True) -> Iterator[tuple[str, Seen]]:
        """What the view shows in the folder ``rel`` (no order); ``first``: stop at the first;
        ``store``: False when the store is known to hold nothing there (it is not asked)."""
        _, mapped = self._where(rel)
        listed = self._listed(mapped) if mapped is not None and store else {}
        covered = set(self.layer.children(rel))
        for name, raw in listed.items():
            if name not in covered:
                yield name, Seen(str(raw.get("type")), raw, None, join(mapped or "", name))
                if first:
                    return
        for name in covered:
            seen = self._lookup(join(rel, name), listed.get(name) if mapped is not None and store else None)
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
        found = list(self._walk(rel, maxdepth, kwargs.get("metadata", True)))
        out: dict[str, dict[str, Any]] = {}
        # A walk that finds something walked a folder; only an empty one is looked up.
        seen = self._lookup(rel) if not found else Seen("directory", self._folder_info(rel, None), None, None)
        if seen is None:
            return out if detail else []
        if seen.kind != "directory":
            out[self._fs(rel)] = seen.info
        else:
            if withdirs:
                out[self._fs(rel)] = seen.info
            for sub, info in found:
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
        moved nodes show (what nodes below those cover left out): (path below ``rel``, info).

        The layer's trie is walked to ``maxdepth`` only: below it a node only names the
        folders above it (``_with_folders``), so for each folder at the last level that holds
        nodes deeper, one of them that shows stands for all (a tree of 3 levels over 10,000
        pending files reads one node a folder at its third level, not the 10,000)."""
        found: list[tuple[str, dict[str, Any]]] = []
        nodes, layer = self.layer.nodes, self.layer
        cut = len(rel) + 1 if rel else 0
        folders = [(rel, 0)]  # a folder of the trie and the depth of its children below ``rel``
        while folders:
            folder, depth = folders.pop()
            prefix = f"{folder}/" if folder else ""
            last = maxdepth is not None and depth + 1 >= maxdepth  # its children's children are below the depth
            for name in layer.children(folder):
                path = prefix + name
                if layer.has_below(path):
                    if not last:
                        folders.append((path, depth + 1))
                    elif (deeper := self._deeper(path)) is not None:
                        found.append((deeper[cut:], {"type": "file"}))  # below the depth: it names its folders
                node = nodes.get(path)
                if node is None or not self._shown(node):
                    continue
                if maxdepth is not None and depth >= maxdepth:
                    found.append((path[cut:], {"type": "file"}))  # (a walk to depth 0)
                    continue
                seen = self._of_node(path, node)
                if seen is None:
                    continue
                sub = path[cut:]
                found.append((sub, seen.info))
                if node.kind == "moved" and seen.kind == "directory" and (maxdepth is None or depth + 1 < maxdepth):
                    hidden = self._hider(path)
                    deeper_depth = None if maxdepth is None else maxdepth - depth - 1
                    for below, raw in self._base_entries(node.source, deeper_depth, True):
                        if not hidden(below):
                            found.append((f"{sub}/{below}", self._named(raw, join(path, below), "")))
        return found

    def _deeper(self, folder: str) -> str | None:
        """A node below ``folder`` that shows (not a whiteout, not a folder that shows by what it
        holds), else None: one of its children where one is (a file edited or added, usually)."""
        nodes = self.layer.nodes
        for name in self.layer.children(folder):
            node = nodes.get(f"{folder}/{name}")
            if node is not None and node.kind != "gone" and self._shown(node):
                return f"{folder}/{name}"
        return next((p for p, n in self.layer.below(folder) if n.kind != "gone" and self._shown(n)), None)

    def _shown(self, node: Node) -> bool:
        """Whether a walk meets ``node`` itself: not a folder on a key-prefix store (without a
        marker), which shows by what it holds (``_with_folders``)."""
        return node.kind != "dir" or self.empty_dirs or node.marker

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
        """``entries`` within ``maxdepth``, with the folders their paths name that none of them
        is (the folders of files the layer adds, on key-prefix stores)."""
        have = {sub for sub, _ in entries}
        holding: set[str] = set()
        for sub, _ in entries:
            folder = parent_of(sub)
            while folder and folder not in holding:
                holding.add(folder)
                folder = parent_of(folder)
        for sub, info in entries:
            if maxdepth is None or sub.count("/") < maxdepth:
                yield sub, info
        for folder in sorted(holding - have):
            if maxdepth is None or folder.count("/") < maxdepth:
                yield folder, self._folder_info(join(rel, folder), None)

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
        raise ValueError(f"unsupported file mode: {mode!r} (this view reads; overlayfs.OverlayFS writes)")

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


class _BlobReader(AbstractBufferedFile):  # type: ignore[misc]  # fsspec is untyped
    """A file of the layer, read in byte ranges."""

    def __init__(self, fs: OverlayReads, node: Node, name: str) -> None:
        super().__init__(fs, name, "rb", block_size=COPY_CHUNK, cache_type="none", size=node.size)
        self.node = node

    def _fetch_range(self, start: int, end: int) -> bytes:
        end = min(end, self.node.size)
        if start >= end:
            return b""
        data: bytes = self.fs.layer.read_blob(self.node.blob, start, end)
        return data


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
