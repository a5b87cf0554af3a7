"""The store test kit: what every store passes, the built-in ones and plug-ins alike.

A backend's tests subclass ``StoreTests`` and give one fixture, ``mount``: a fresh
``BackendMount`` whose root is an empty folder the tests may fill::

    import pytest
    from vfs_mcp_backends.testkit import StoreTests
    from my_package.backend import create

    class TestMyStore(StoreTests):
        @pytest.fixture
        def mount(self, tmp_path):
            return create("mystore://test-bucket/tests", {"endpoint_url": "http://127.0.0.1:9000"})

``StoreTests`` runs fsspec's own abstract suite (``fsspec.tests.abstract``: copy, get, put,
open and pipe, 137 tests, the suite s3fs and gcsfs run on themselves) on ``mount.fs`` under
``mount.root``, and ``StoreContract``: this project's contract of a store (capabilities
that hold, staged writes, ``info(follow=False)`` where links exist, conditional writes
where declared, walks that agree and mark unreadable folders). A store's real differences
are its declared ``Capabilities``, never a skipped test. Needs pytest (a test dependency).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
from collections.abc import Iterator
from typing import Any

import pytest
from fsspec.tests.abstract import (
    AbstractCopyTests,
    AbstractFixtures,
    AbstractGetTests,
    AbstractOpenTests,
    AbstractPipeTests,
    AbstractPutTests,
)

from vfs_mcp_backends.base import BackendMount, Capabilities, PreconditionFailed
from vfs_mcp_backends.hostpaths import fd_path, real_path

TIMESTAMP_KEYS = {
    "created": ("created", "creation_time", "timeCreated"),
    "modified": ("mtime", "LastModified", "last_modified", "updated"),
    "accessed": ("atime",),
}
"""Where ``info()`` reports each of ``Capabilities.timestamps``, by the names fsspec stores use."""


class StoreFixtures(AbstractFixtures):  # type: ignore[misc]  # fsspec is untyped
    """fsspec's fixtures, from the one a store gives: ``mount``."""

    @pytest.fixture
    def mount(self) -> BackendMount:
        raise NotImplementedError("a store's tests give the fixture `mount`: a fresh BackendMount")

    @pytest.fixture
    def fs(self, mount: BackendMount) -> Any:
        return mount.fs

    @pytest.fixture
    def fs_path(self, mount: BackendMount) -> str:
        return mount.root.rstrip("/")

    @pytest.fixture
    def fs_join(self) -> Any:
        return posixpath.join

    @pytest.fixture
    def supports_empty_directories(self, mount: BackendMount) -> bool:
        return mount.capabilities.empty_dirs


class StoreContract:
    """This project's contract of a store, checked against what its ``Capabilities`` declare."""

    def make_link(self, mount: BackendMount, path: str, target: str) -> None:
        """Make ``path`` a symbolic link to ``target`` (stores with ``symlinks``): on the host
        path where the store has one; a store with links but no host paths overrides this."""
        host = mount.host_path(posixpath.dirname(path))
        if host is None:
            raise NotImplementedError("a store with symlinks but no host paths overrides make_link")
        os.symlink(target, os.path.join(host, posixpath.basename(path)))

    def unreadable(self, mount: BackendMount, path: str) -> contextlib.AbstractContextManager[bool]:
        """A context in which listing the folder ``path`` fails, entered as True; as False where
        the store has no folder a listing can be refused for. By default: on stores with host
        paths, ``refused_listing``; on the others, none."""
        host = mount.host_path(path)
        return refused_listing(host) if host is not None else contextlib.nullcontext(False)

    @staticmethod
    def put(mount: BackendMount, rel: str, data: bytes) -> str:
        path = f"{mount.root.rstrip('/')}/{rel}"
        mount.fs.pipe_file(path, data)
        mount.invalidate(path)
        return path

    def test_capabilities_are_declared_consistently(self, mount: BackendMount) -> None:
        caps = mount.capabilities
        assert isinstance(caps, Capabilities)
        assert caps.timestamps <= set(TIMESTAMP_KEYS)
        assert not caps.native_grep or caps.host_paths, "ripgrep searches host paths"
        assert not caps.conditional_writes or caps.etags, "put_if compares the version token"
        host = mount.host_path(mount.root)
        assert (host is not None) == caps.host_paths
        assert host is None or os.path.isdir(host)

    def test_info_reports_the_declared_timestamps(self, mount: BackendMount) -> None:
        info = mount.fs.info(self.put(mount, "stamped.txt", b"x"))
        for kind in mount.capabilities.timestamps:
            assert any(info.get(key) is not None for key in TIMESTAMP_KEYS[kind]), f"no {kind} time in {info}"

    def test_a_staged_write_is_visible_only_after_commit(self, mount: BackendMount) -> None:
        path = self.put(mount, "staged.txt", b"old")
        handle = mount.fs._open(path, "wb", autocommit=False)
        handle.write(b"new")
        handle.close()
        mount.invalidate(path)
        assert mount.fs.cat_file(path) == b"old"
        handle.commit()
        mount.invalidate(path)
        assert mount.fs.cat_file(path) == b"new"

    def test_an_empty_staged_write_creates_an_empty_file_at_commit(self, mount: BackendMount) -> None:
        path = f"{mount.root.rstrip('/')}/empty.txt"
        handle = mount.fs._open(path, "wb", autocommit=False)
        handle.close()
        mount.invalidate(path)
        assert not mount.fs.exists(path)
        handle.commit()
        mount.invalidate(path)
        assert mount.fs.cat_file(path) == b""

    def test_a_discarded_write_leaves_the_old_content(self, mount: BackendMount) -> None:
        path = self.put(mount, "kept.txt", b"old")
        handle = mount.fs._open(path, "wb", autocommit=False)
        handle.write(b"never")
        handle.close()
        handle.discard()
        mount.invalidate(path)
        assert mount.fs.cat_file(path) == b"old"

    def test_an_empty_folder_exists_where_declared(self, mount: BackendMount) -> None:
        path = f"{mount.root.rstrip('/')}/empty"
        mount.fs.mkdir(path)
        mount.invalidate(path)
        assert mount.fs.isdir(path) == mount.capabilities.empty_dirs

    def test_info_without_following_reports_a_link_itself(self, mount: BackendMount) -> None:
        target = self.put(mount, "target.txt", b"data")
        if not mount.capabilities.symlinks:
            assert not mount.fs.info(target).get("islink")
            return
        link = f"{mount.root.rstrip('/')}/link"
        self.make_link(mount, link, "target.txt")
        itself = mount.fs.info(link, follow=False)
        assert (itself["type"], bool(itself["islink"])) == ("symlink", True)
        followed = mount.fs.info(link)
        assert (followed["type"], followed["size"], bool(followed["islink"])) == ("file", 4, True)

    def test_append_and_modes_where_declared(self, mount: BackendMount) -> None:
        caps = mount.capabilities
        path = self.put(mount, "log.txt", b"one")
        if caps.append:
            with mount.fs._open(path, "ab") as handle:
                handle.write(b" two")
            assert mount.fs.cat_file(path) == b"one two"
        if caps.modes:
            handle = mount.fs._open(path, "wb", autocommit=False, permissions=0o640)
            handle.write(b"moded")
            handle.close()
            handle.commit()
            assert mount.fs.info(path)["mode"] & 0o777 == 0o640

    def test_version_tokens_change_with_each_write(self, mount: BackendMount) -> None:
        path = self.put(mount, "versioned.txt", b"one")
        first = mount.version_token(mount.fs.info(path))
        if not mount.capabilities.etags:
            return
        self.put(mount, "versioned.txt", b"two")
        second = mount.version_token(mount.fs.info(path))
        assert first and second and first != second

    def test_a_read_of_a_version_gives_what_cat_file_and_info_give(self, mount: BackendMount) -> None:
        path = self.put(mount, "ranged.txt", b"0123456789")
        if mount.read_version(path) is None:
            return  # not offered: the caller reads with cat_file
        info = mount.fs.info(path)
        for start, end in [(None, None), (2, 5), (-3, None), (4, None), (-4, -1), (3, 3)]:
            raw, data = mount.read_version(path, start, end)  # type: ignore[misc]
            empty = start is not None and start == end
            assert data == (b"" if empty else mount.fs.cat_file(path, start=start, end=end)), (start, end)
            assert raw["size"] == info["size"] and mount.version_token(raw) == mount.version_token(info)

    def test_conditional_writes_where_declared(self, mount: BackendMount) -> None:
        path = f"{mount.root.rstrip('/')}/cas.txt"
        if not mount.capabilities.conditional_writes:
            with pytest.raises(NotImplementedError):
                mount.put_if(path, b"x", create_only=True)
            return
        first = mount.put_if(path, b"one", create_only=True)
        with pytest.raises(PreconditionFailed):
            mount.put_if(path, b"again", create_only=True)
        mount.invalidate(path)
        token = first or mount.version_token(mount.fs.info(path))
        assert mount.put_if(path, b"two", if_match=token) != token
        with pytest.raises(PreconditionFailed):
            mount.put_if(path, b"stale", if_match=token)
        mount.invalidate(path)
        assert mount.fs.cat_file(path) == b"two"

    def test_the_walks_agree_in_depth_first_name_order(self, mount: BackendMount) -> None:
        for rel in ("b.txt", "a/x.txt", "a/y/z.txt", "a-b.txt"):
            self.put(mount, rel, rel.encode())
        root = mount.root.rstrip("/")
        items, unreadable = mount.names(root)
        assert [(rel, kind) for rel, kind, _ in items] == [
            ("a", "directory"),
            ("a/x.txt", "file"),
            ("a/y", "directory"),
            ("a/y/z.txt", "file"),
            ("a-b.txt", "file"),
            ("b.txt", "file"),
        ]
        assert {rel: size for rel, kind, size in items if kind == "file"} == {
            "a/x.txt": 7,
            "a/y/z.txt": 9,
            "a-b.txt": 7,
            "b.txt": 5,
        }
        assert unreadable == []
        assert sorted(rel for rel, _ in mount.entries(root)) == sorted(rel for rel, _, _ in items)
        assert [rel for rel, _, _ in mount.names(root, maxdepth=1)[0]] == ["a", "a-b.txt", "b.txt"]

    def test_a_walk_marks_a_folder_it_cannot_read(self, mount: BackendMount) -> None:
        self.put(mount, "open/a.txt", b"a")
        self.put(mount, "locked/b.txt", b"b")
        root = mount.root.rstrip("/")
        with self.unreadable(mount, f"{root}/locked") as refused:
            items, unreadable = mount.names(root)
            marked = {rel for rel, raw in mount.entries(root) if raw.get("unreadable")}
        listed = [rel for rel, _, _ in items]
        if refused:
            assert unreadable == ["locked"] and marked == {"locked"}
            assert "locked" in listed and "locked/b.txt" not in listed
        else:
            assert unreadable == [] and marked == set() and "locked/b.txt" in listed


class FsspecSuite(AbstractCopyTests, AbstractGetTests, AbstractPutTests, AbstractOpenTests, AbstractPipeTests):  # type: ignore[misc]
    """fsspec's abstract suite (137 tests), on the fixtures ``fs``, ``fs_path``, ``fs_join``."""


class StoreTests(StoreFixtures, StoreContract, FsspecSuite):
    """fsspec's abstract suite and this project's store contract; subclass it with a ``mount`` fixture."""


@contextlib.contextmanager
def refused_listing(folder: str) -> Iterator[bool]:
    """A context in which opening the host folder ``folder`` as a directory fails with EACCES
    (entered as True), for ``StoreContract.unreadable`` on stores with host paths: unlike a
    ``chmod``, it holds when the tests run as root, for whom no folder is unreadable."""
    real = real_path(folder)
    opened = os.open

    def guarded(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = opened(path, flags, *args, **kwargs)
        if flags & os.O_DIRECTORY and fd_path(fd) == real:
            os.close(fd)
            raise PermissionError(errno.EACCES, "Permission denied")
        return fd

    os.open = guarded
    try:
        yield True
    finally:
        os.open = opened
