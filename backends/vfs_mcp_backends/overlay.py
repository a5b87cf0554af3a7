"""A mount under review: its store read-only underneath, a pending layer above
(``layers.Layer``), served as an ``OverlayMount`` whose filesystem (``overlayfs.OverlayFS``)
shows the store with the layer applied and writes to the layer alone.

The store itself never changes; nothing but this mount (and what applies the layer,
``vfs_mcp.review``) reads the layer. Paths are the store's own (the layer's are below the
mount's root), so the jail, the operations and the one write path work over it unchanged,
with the store's capabilities: folders that are key prefixes come and go with what is in them,
links are followed through the layer and the store alike (``resolve_links``). Walks and
listings keep the store's paging (``pages``, ``ls_many``): where the layer holds nothing below
a folder, the store's answer is passed on as it is.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from vfs_mcp_backends.base import BackendMount, Child, Keep, Page, check_conditions
from vfs_mcp_backends.layers import Layer, join
from vfs_mcp_backends.overlayfs import OverlayFS
from vfs_mcp_backends.overlayview import ASK, Recorder

__all__ = ["OverlayFS", "OverlayMount", "Recorder"]


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
        pending = deque(sorted((e[0] + "/" if e[1] == "directory" else e[0], e) for e in kept))
        shown: set[str] = set()
        inner = self.under.pages(fs._fs(mapped), maxdepth, metadata, keep) if mapped is not None else iter(())
        for page in _pages_or_one(inner):
            listed = page.items if page is not None else []
            items = [
                item for item in listed if not hidden(item[0]) and not (item[1] == "directory" and item[0] in shown)
            ]
            # Store entries the page read that still show (the key of a file deleted does not count).
            count = max(0, (page.listed if page is not None else 0) - (len(listed) - len(items)))
            last = page is None or page.last
            until = page.until if page is not None else ""
            shown.update(sub for sub, kind, _ in items if kind == "directory")
            while pending and (last or pending[0][0] <= until):
                _, entry = pending.popleft()
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
        base = {entry[0]: entry for entry in entries}
        last = entries[-1][0] if entries and cursor is not None else None
        for name in sorted(covered):
            if name <= after or (last is not None and name > last):
                continue  # another page's (names up to the store page's last are this one's)
            child = join(rel, name)
            if name in base and base[name][1] == "directory" and child not in fs.layer.nodes:
                kept.append(base[name])  # the store's folder, with layer files (or whiteouts) in it
                continue
            seen = fs._lookup(child, ASK if name in base else None)
            if seen is not None:
                kept.append((name, seen.kind, int(seen.info.get("size") or 0) if seen.kind == "file" else 0))
        kept.sort()
        return kept, None if cursor is None else f"{last}\x00{cursor}"

    def host_path(self, path: str) -> str | None:
        return None

    def put_if(self, path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        check_conditions(if_match, create_only)
        if not self.capabilities.conditional_writes:
            raise NotImplementedError("this review mount's store has no conditional writes")
        fs = self.overlay
        return f'"{fs._put(fs._rel(path), data, if_match=if_match, create_only=create_only, conditional=True)}"'


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
