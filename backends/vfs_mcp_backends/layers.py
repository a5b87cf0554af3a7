"""A pending layer: the changes made to a mount under review, kept beside it (in a state
store), never in it. ``overlay.OverlayMount`` shows the mount with them applied.

    review/<key>.layer             the layer: its mount's URL and its epoch (new after a discard)
    review/<key>.<epoch>.j<seq>    one change to the layer's index (seq 1, 2, ...)
    review/<key>.<epoch>.s<seq>    the whole index as of record seq (every ``SNAPSHOT_EVERY``)
    review/<key>.b<sha256>         a pending file's bytes, named by their sha256

The index maps paths below the mount's root to nodes: a file or a link the layer holds, a
folder made (``dir``; ``opaque`` when it hides what the mount holds there), a whiteout
(``gone``: nothing here, nor below), or what the mount holds elsewhere, shown here
(``moved``: a folder or file renamed, never copied). Each node keeps what the mount held at
its path when the layer first covered it (``was``: the version the agent read, to check
before applying), and the ids of the changes that wrote it.

A process keeps the index in memory as of the last record it read (``fresh`` reads the ones
after it). Records are numbered and each is created only while its number is free (the
store's create-exclusive write), so two processes writing one layer never lose a record: the
one that finds its number taken reads what it missed and makes its change again
(``change``). The layer's name object names its epoch: a layer discarded (everything of it
deleted) is seen as gone by every process at its next look.

What the store holds of a layer is untrusted input (anyone who can write the state store can
change it): each node read from a record or a snapshot is checked (a path spelt as one inside the
mount, a moved node's source too, a kind, a blob named by a sha256, ...). A bad one is dropped,
and the log says which record held it and why; a record that is not JSON at all is passed over
the same way. Nothing a record holds makes the layer unreadable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger("vfs_mcp")

SNAPSHOT_EVERY = 512
"""Records between two snapshots of the whole index (a process that opens the layer reads the
newest snapshot and the records after it)."""
ATTEMPTS = 64
"""Times a change is made again after other writers took its record's number first."""
FOLDER = "review"


class LayerStore(Protocol):
    """Where a layer lives: the state store's interface (``vfs_mcp.changes.state.StateStore``)."""

    def write(self, name: str, data: bytes, *, durable: bool = False, create: bool = True) -> None: ...

    def read(self, name: str, start: int = 0, end: int | None = None) -> bytes: ...

    def listing(self, folder: str) -> list[Any]: ...

    def delete(self, *names: str) -> None: ...


@dataclass(slots=True)
class Node:
    """What the layer holds at one path (see the module's docstring)."""

    kind: str
    """file, link, dir, gone or moved."""
    blob: str = ""
    """A file's bytes: their sha256 (the blob's name)."""
    size: int = 0
    mode: int | None = None
    """A file's or folder's permission bits (stores with modes); a moved one's, when changed."""
    time: float = 0.0
    to: str = ""
    """A link's text."""
    source: str = ""
    """A moved node: the path in the mount whose content it shows."""
    shows: str = ""
    """A moved node: what its source was when it moved (directory, file or symlink)."""
    opaque: bool = False
    """A folder that hides what the mount holds at its path (it was deleted, then made again)."""
    marker: bool = False
    """A folder made on a store whose folders are key prefixes: it stands with nothing in it."""
    was: Any = None
    """What the mount held here when the layer first covered the path (None: not recorded)."""
    changes: tuple[str, ...] = ()
    """The ids of the changes that wrote it, oldest first."""

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.kind}
        for key, value, empty in (
            ("b", self.blob, ""),
            ("n", self.size, 0),
            ("m", self.mode, None),
            ("t", self.time, 0.0),
            ("to", self.to, ""),
            ("s", self.source, None if self.kind == "moved" else ""),
            ("sh", self.shows, ""),
            ("o", self.opaque, False),
            ("mk", self.marker, False),
            ("w", self.was, None),
            ("c", list(self.changes), []),
        ):
            if value != empty:
                out[key] = value
        return out

    @classmethod
    def load(cls, data: dict[str, Any]) -> Node:
        return cls(
            kind=data["k"],
            blob=data.get("b", ""),
            size=data.get("n", 0),
            mode=data.get("m"),
            time=data.get("t", 0.0),
            to=data.get("to", ""),
            source=data.get("s", ""),
            shows=data.get("sh", ""),
            opaque=data.get("o", False),
            marker=data.get("mk", False),
            was=data.get("w"),
            changes=tuple(data.get("c", ())),
        )


IndexEdit = tuple[str, str, Node | None]
"""One change to the index: ("set", path, node), ("drop", path, None): the node at path and
every node below it go."""


def join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def parent_of(rel: str) -> str:
    return rel.rpartition("/")[0]


def layer_key(url: str) -> str:
    """The name of the layer of the mount served as ``url`` in its state store."""
    return hashlib.sha256(url.encode()).hexdigest()[:16]


@dataclass
class _NodeIndex:
    nodes: dict[str, Node] = field(default_factory=dict)
    kids: dict[str, dict[str, int]] = field(default_factory=dict)
    """Folder -> child name -> how many nodes lie at or below that child (a trie of the nodes' paths)."""
    refs: Counter[str] = field(default_factory=Counter)
    """Blob -> the file nodes that hold it."""

    def put(self, rel: str, node: Node) -> None:
        old = self.nodes.get(rel)
        if old is not None:
            self._forget(rel, old)
        else:
            self._count(rel, 1, self.kids)
        self.nodes[rel] = node
        if node.kind == "file":
            self.refs[node.blob] += 1

    def drop(self, rel: str) -> list[str]:
        """Remove the node at ``rel`` and every node below it; the blobs no node holds any more."""
        gone = [p for p, _ in self.below(rel)]
        if rel in self.nodes:
            gone.append(rel)
        freed = []
        for path in gone:
            node = self.nodes.pop(path)
            self._forget(path, node)
            self._count(path, -1, self.kids)
            if node.kind == "file" and not self.refs[node.blob]:
                del self.refs[node.blob]
                freed.append(node.blob)
        return freed

    def _forget(self, rel: str, node: Node) -> None:
        if node.kind == "file":
            self.refs[node.blob] -= 1

    @staticmethod
    def _count(rel: str, step: int, table: dict[str, dict[str, int]]) -> None:
        """``step`` more nodes at or below each folder on ``rel``'s way (the trie ``kids``)."""
        path = rel
        while path:
            parent, _, name = path.rpartition("/")
            folder = table.setdefault(parent, {})
            folder[name] = folder.get(name, 0) + step
            if folder[name] <= 0:
                del folder[name]
                if not folder:
                    del table[parent]
            path = parent

    def below(self, rel: str) -> Iterator[tuple[str, Node]]:
        """The nodes strictly below ``rel`` (no order)."""
        stack = [rel]
        while stack:
            folder = stack.pop()
            for name in self.kids.get(folder, ()):
                path = join(folder, name)
                node = self.nodes.get(path)
                if node is not None:
                    yield path, node
                stack.append(path)


class Layer:
    """One mount's pending layer in a state store (see the module's docstring)."""

    def __init__(self, store: LayerStore, url: str, *, look_every: float = 0.0) -> None:
        """``look_every``: seconds between two looks for other processes' records (0: at every
        use, for stores on this machine; each look is two small reads)."""
        self.store = store
        self.url = url
        self.key = layer_key(url)
        self.look_every = look_every
        self.lock = threading.RLock()
        self._index = _NodeIndex()
        self.epoch: str | None = None
        self.seq = 0
        self._looked = float("-inf")

    # -- names ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{FOLDER}/{self.key}.layer"

    def _record(self, seq: int, epoch: str | None = None) -> str:
        return f"{FOLDER}/{self.key}.{epoch or self.epoch}.j{seq:010d}"

    def _snapshot(self, seq: int) -> str:
        return f"{FOLDER}/{self.key}.{self.epoch}.s{seq:010d}"

    def _blob(self, sha: str) -> str:
        return f"{FOLDER}/{self.key}.b{sha}"

    # -- reading the index ----------------------------------------------------------------

    @property
    def nodes(self) -> dict[str, Node]:
        return self._index.nodes

    def children(self, rel: str) -> list[str]:
        """Names below the folder ``rel`` that nodes lie at or below."""
        return list(self._index.kids.get(rel, ()))

    def has_below(self, rel: str) -> bool:
        return rel in self._index.kids

    def below(self, rel: str) -> Iterator[tuple[str, Node]]:
        return self._index.below(rel)

    def fresh(self, force: bool = False) -> None:
        """Read what other processes wrote since the last look (when one is due, or ``force``)."""
        now = time.monotonic()
        if not force and now - self._looked < self.look_every:
            return
        with self.lock:
            self._looked = now
            meta = self._meta()
            if meta is None:
                if self.epoch is not None:
                    self._reset(None)
                return
            if meta["epoch"] != self.epoch:
                self._load(meta["epoch"])
                return
            self._follow()

    def _meta(self) -> dict[str, Any] | None:
        try:
            meta: dict[str, Any] = json.loads(self.store.read(self.name))
        except FileNotFoundError:
            return None
        except (ValueError, RecursionError):
            meta = {}
        if not isinstance(meta, dict) or not _EPOCH.fullmatch(str(meta.get("epoch"))):
            log.error("review: the layer name %s is not one this version wrote; its layer is not shown", self.name)
            return None
        return meta

    def _reset(self, epoch: str | None) -> None:
        self._index = _NodeIndex()
        self.epoch, self.seq = epoch, 0

    def _follow(self) -> None:
        while True:
            try:
                data = self.store.read(self._record(self.seq + 1))
            except FileNotFoundError:
                return
            self._apply(_decode(self._record(self.seq + 1), data))
            self.seq += 1

    def _load(self, epoch: str) -> None:
        """The index of ``epoch`` read whole: its newest snapshot and the records after it."""
        self._reset(epoch)
        prefix = f"{self.key}.{epoch}."
        snapshots = sorted(
            int(item.name[len(prefix) + 1 :])
            for item in self.store.listing(FOLDER)
            if item.name.startswith(prefix + "s")
        )
        for seq in reversed(snapshots):
            try:
                data = json.loads(self.store.read(self._snapshot(seq)))
            except FileNotFoundError:
                continue  # a newer snapshot replaced it meanwhile
            except (ValueError, RecursionError) as err:
                log.error("review: the layer snapshot %s is not JSON (%s); passed over", self._snapshot(seq), err)
                continue
            nodes = data.get("nodes") if isinstance(data, dict) else None
            for rel, node in nodes.items() if isinstance(nodes, dict) else ():
                loaded = _checked(self._snapshot(seq), ("set", rel, node))
                if loaded is not None and loaded[2] is not None:
                    self._index.put(rel, loaded[2])
            self.seq = seq
            break
        self._follow()

    # -- blobs ----------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Keep ``data`` (once: blobs are named by their sha256); its sha256."""
        sha = hashlib.sha256(data).hexdigest()
        with contextlib.suppress(FileExistsError):
            self.store.write(self._blob(sha), data, durable=True)
        return sha

    def read_blob(self, sha: str, start: int = 0, end: int | None = None) -> bytes:
        return self.store.read(self._blob(sha), start, end)

    # -- changing ---------------------------------------------------------------------------

    def change(self, build: Callable[[], list[IndexEdit]]) -> None:
        """Change the index by what ``build`` says, on the index as it is now (read fresh first;
        again, if another process recorded a change meanwhile). ``build`` may raise: nothing
        changes."""
        with self.lock:
            for _ in range(ATTEMPTS):
                self.fresh(force=True)
                ops = build()
                if not ops:
                    return
                if self.epoch is None:
                    self._begin()
                    continue  # the index of the epoch found, or of the one begun
                seq = self.seq + 1
                try:
                    self.store.write(self._record(seq), _encode(ops), durable=True)
                except FileExistsError:
                    continue  # another process took the number: read its record, build again
                freed = self._apply(ops)
                self.seq = seq
                self._free(freed)
                if seq % SNAPSHOT_EVERY == 0:
                    self._save_snapshot()
                return
            raise OSError(f"the review layer of {self.url} is being changed by too many writers at once")

    def drop(self, roots: list[str], planned: dict[str, dict[str, Any]] | None = None) -> list[Node]:
        """Drop the nodes at and below ``roots`` from the index; the nodes dropped. With
        ``planned`` (nodes by path, dumped, as a change planned on them; ``roots`` ignored),
        only the roots of those still as planned, whose nodes below are all as planned too: a
        node written since stays. Dropping what is gone already drops nothing (a change's
        recovery drops again what it may have dropped before a crash)."""
        gone: list[Node] = []

        def build() -> list[IndexEdit]:
            gone.clear()
            chosen = roots if planned is None else self.as_planned(planned)
            for root in chosen:
                gone.extend(node for _, node in [(root, self.nodes[root]), *self.below(root)] if root in self.nodes)
            return [("drop", root, None) for root in chosen]

        self.change(build)
        return gone

    def as_planned(self, planned: dict[str, dict[str, Any]]) -> list[str]:
        """The roots of the nodes of ``planned`` the index holds as planned, with every node
        below them as planned too: what ``drop`` with ``planned`` drops (nothing, once it has)."""
        nodes = self.nodes
        kept = {rel for rel, dump in planned.items() if (node := nodes.get(rel)) is not None and node.dump() == dump}
        return [
            root
            for root in kept
            if not _above(kept, root) and all(planned.get(rel) == node.dump() for rel, node in self.below(root))
        ]

    def _begin(self) -> None:
        """Name the layer (a new epoch), unless another process just did."""
        meta = {"url": self.url, "epoch": secrets.token_hex(8)}
        with contextlib.suppress(FileExistsError):
            self.store.write(self.name, json.dumps(meta).encode(), durable=True)

    def _apply(self, ops: list[IndexEdit]) -> list[str]:
        freed: list[str] = []
        for verb, rel, node in ops:
            if verb == "drop":
                freed += self._index.drop(rel)
            else:
                assert node is not None
                old = self._index.nodes.get(rel)
                self._index.put(rel, node)
                if old is not None and old.kind == "file" and old.blob != node.blob and not self._index.refs[old.blob]:
                    del self._index.refs[old.blob]
                    freed.append(old.blob)
        return [sha for sha in freed if not self._index.refs.get(sha)]

    def _free(self, freed: list[str]) -> None:
        """Delete the blobs no node holds any more."""
        if freed:
            with contextlib.suppress(OSError):
                self.store.delete(*(self._blob(sha) for sha in dict.fromkeys(freed)))

    def _save_snapshot(self) -> None:
        nodes = {rel: node.dump() for rel, node in self._index.nodes.items()}
        self.store.write(self._snapshot(self.seq), json.dumps({"nodes": nodes}).encode(), durable=True, create=False)
        prefix = f"{self.key}.{self.epoch}.s"
        older = [
            f"{FOLDER}/{item.name}"
            for item in self.store.listing(FOLDER)
            if item.name.startswith(prefix) and int(item.name[len(prefix) :]) < self.seq
        ]
        self.store.delete(*older)

    def clear(self) -> None:
        """The layer gone from its store, everything of it (every process sees it empty at
        its next look)."""
        with self.lock:
            self.store.delete(self.name)
            self.store.delete(*self.names())
            self._reset(None)
            self._looked = time.monotonic()

    def names(self) -> list[str]:
        """Every name the layer holds in its store."""
        prefix = f"{self.key}."
        return [f"{FOLDER}/{item.name}" for item in self.store.listing(FOLDER) if item.name.startswith(prefix)]


def _above(paths: set[str], rel: str) -> bool:
    """Whether one of ``paths`` lies above ``rel``."""
    while "/" in rel:
        rel = rel.rpartition("/")[0]
        if rel in paths:
            return True
    return False


def _encode(ops: list[IndexEdit]) -> bytes:
    return json.dumps([[verb, rel, node.dump() if node else None] for verb, rel, node in ops]).encode()


def _decode(name: str, data: bytes) -> list[IndexEdit]:
    """The changes the record ``name`` holds, each checked (``_checked``)."""
    try:
        ops = json.loads(data)
    except (ValueError, RecursionError) as err:
        log.error("review: the layer record %s is not JSON (%s); passed over", name, str(err)[:80])
        return []
    if not isinstance(ops, list):
        log.error("review: the layer record %s holds no list of changes; passed over", name)
        return []
    return [op for item in ops if (op := _checked(name, item)) is not None]


_SHA256 = re.compile(r"[0-9a-f]{64}")
_EPOCH = re.compile(r"[0-9a-f]{16}")
_KINDS = frozenset({"file", "link", "dir", "gone", "moved"})


def _checked(name: str, item: Any) -> IndexEdit | None:
    """One change a record holds, as the index takes it; None (logged) when it cannot be."""
    try:
        verb, rel, data = item
        _inside(rel)
        if verb == "drop":
            return ("drop", rel, None)
        if verb != "set" or not isinstance(data, dict):
            raise ValueError(f"{verb!r} is no change of a layer")
        node = Node.load(data)
        if node.kind not in _KINDS:
            raise ValueError(f"{node.kind!r} is no kind of node")
        if node.kind == "file" and not (isinstance(node.blob, str) and _SHA256.fullmatch(node.blob)):
            raise ValueError("a file whose bytes are not named by their sha256")
        if node.kind == "moved":
            _inside(node.source)
            if not node.source:
                raise ValueError("a move from the mount's root")
        if not isinstance(node.size, int) or node.size < 0 or not isinstance(node.to, str):
            raise ValueError("a size or a link's text of the wrong type")
        if node.mode is not None and not isinstance(node.mode, int):
            raise ValueError("a mode that is not a number")
        if node.was is not None and not (isinstance(node.was, dict) and isinstance(node.was.get("fp", []), list)):
            raise ValueError("what the mount held there is not spelt as a layer keeps it")
        if not all(isinstance(change, str) for change in node.changes):
            raise ValueError("change ids that are not text")
    except (ValueError, TypeError, KeyError) as err:
        log.error("review: the layer record %s holds a change that cannot be taken (%s); dropped", name, str(err)[:120])
        return None
    return ("set", rel, node)


def _inside(rel: Any) -> None:
    """ValueError unless ``rel`` is spelt as a path inside the mount ('' is its root)."""
    if not isinstance(rel, str):
        raise ValueError("a path that is not text")
    if rel and ("\x00" in rel or any(part in ("", ".", "..") for part in rel.split("/"))):
        raise ValueError(f"the path {rel[:80]!r} is not one inside the mount")
