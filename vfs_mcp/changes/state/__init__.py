"""The state store: what outlives a call, a connection and a process, in one place outside every
mount — the change log with its before-images, the ide buffers, and who is alive to own them.

This package owns the store and everything in it: every name (``layout.py``, where the layout is
drawn), a change's record as bytes (``records.py``) and the timeline's index (``timeline.py``).
Nothing outside it spells a name of the store.

``LocalState`` is a private folder on this machine: made 0700 and never a link, in folders no other
user can write (``private.private_folder``), its files 0600, written whole (a temp name, then a
rename) and, when a record must be durable before a change starts, fsynced with its folder. An
instance is alive while it holds an exclusive ``flock`` on its lock file: the kernel lets go when
the process dies, however it dies. A folder that went away while a server ran (a cleaner, a person
emptying ``~/.local/state``) is made again at its next use, with the same checks, and the log says so.

``ObjectState`` is any other fsspec URL (``s3://bucket/.vfs-mcp-state``, ``memory://...``): one
object per name, created with ``If-None-Match: *`` where the store has conditional writes (two
replicas never write one name both), durable when the PUT returns. An instance is alive while
its lease object is fresh: a thread renews it, and a replica whose lease ran out is dead.
``claim`` lets one survivor (and only one) take over a dead instance's unfinished work.

Why its lines are one job: both stores keep one contract (``StateStore``: names holding bytes,
and who is alive to own them), and every verb of the local one applies the same rules of names
(temp names, journals, images going with their record) in one place, where a rule added to one
verb is seen missing from the next.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from vfs_mcp.changes.frozen import frozen
from vfs_mcp.changes.private import private_folder
from vfs_mcp.changes.state.journal import SUFFIX, Journals
from vfs_mcp.changes.state.journal import sweep as sweep_journal
from vfs_mcp.changes.state.layout import FOLDERS, PENDING, QUARANTINE, record, set_aside, under_way
from vfs_mcp.changes.state.linked import orphans, unlink_images
from vfs_mcp.jail.state_place import StateUnavailable, check_outside, default_folder, host_folder
from vfs_mcp_backends import BackendMount, PreconditionFailed, create_mount

if TYPE_CHECKING:
    from vfs_mcp_backends.layers import Layer

log = logging.getLogger("vfs_mcp")

LEASE_SECONDS = float(os.environ.get("VFS_MCP_LEASE_SECONDS", "30"))
"""How long an instance on a shared store counts as alive after it last renewed its lease."""
_FLAGS = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


@frozen
class Listed:
    name: str
    size: int
    modified: float


def new_instance_id() -> str:
    return secrets.token_hex(8)


class StateStore(ABC):
    """Names (``folder/name``) holding bytes, and the instances alive to own them."""

    url: str
    instance: str
    """This process's instance: random, never a process id (containers reuse those)."""

    def __init__(self) -> None:
        self.instance = new_instance_id()
        self._tickers: list[Callable[[], None]] = []
        self._layers: dict[str, Layer] = {}
        _open.add(self)

    @abstractmethod
    def write(self, name: str, data: bytes, *, durable: bool = False, create: bool = True) -> None:
        """``data`` at ``name``, visible whole or not at all; ``create``: only while nothing is
        there (``FileExistsError`` otherwise); ``durable``: on disk when this returns."""

    @abstractmethod
    def read(self, name: str, start: int = 0, end: int | None = None) -> bytes:
        """The bytes of ``name`` (``FileNotFoundError`` when it is not there)."""

    @abstractmethod
    def listing(self, folder: str) -> list[Listed]:
        """What ``folder`` holds (names without the folder)."""

    @abstractmethod
    def move(self, name: str, to: str) -> None:
        """Rename ``name`` to ``to`` (which is not there)."""

    @abstractmethod
    def delete(self, *names: str) -> None:
        """Remove names; one already gone is no error."""

    @abstractmethod
    def alive(self, instance: str) -> bool:
        """Whether ``instance`` still runs."""

    @abstractmethod
    def claim(self, instance: str) -> contextlib.AbstractContextManager[bool]:
        """Take over the dead ``instance``: True for the one survivor that gets it (its lock or
        lease goes once the block ends), False when it is alive or another survivor has it."""

    @abstractmethod
    def close(self) -> None:
        """This instance ends (its lock or lease goes)."""

    def every_lease(self, job: Callable[[], None]) -> None:
        """Run ``job`` now and then while this instance lives (to find replicas that died)."""
        self._tickers.append(job)

    def exists(self, name: str) -> bool:
        try:
            self.read(name, 0, 0)
        except FileNotFoundError:
            return False
        return True

    @property
    def host_folder(self) -> str | None:
        """The real host folder of a store on this machine's disk (None elsewhere)."""
        return None

    @property
    def on_this_machine(self) -> bool:
        """Whether reading it costs no network (a folder here, memory)."""
        return True

    def layer(self, url: str) -> Layer:
        """The pending layer of the mount served as ``url`` under review (one per store and URL
        in a process): read afresh at each use where the store is on this machine, at most every
        ``LOOK_SECONDS`` elsewhere (and before each change)."""
        from vfs_mcp_backends.layers import Layer  # loaded only where a mount is under review, not by a first edit

        with _layers_lock:
            found = self._layers.get(url)
            if found is None:
                found = Layer(self, url, look_every=0.0 if self.on_this_machine else LOOK_SECONDS)
                self._layers[url] = found
            return found


_open: weakref.WeakSet[StateStore] = weakref.WeakSet()
_layers_lock = threading.Lock()
LOOK_SECONDS = 1.0
"""How stale a replica's view of a pending layer on a shared store may be (its own changes show at once)."""


def close_all() -> None:
    """Close every store this process opened (it is about to end without its finalizers)."""
    for store in list(_open):
        with contextlib.suppress(Exception):
            store.close()


# -- a private folder on this machine -------------------------------------------------------


class LocalState(StateStore):
    def __init__(self, folder: str) -> None:
        super().__init__()
        self.folder = private_folder(folder)
        self.url = self.folder
        self._remaking = threading.Lock()
        self._held: dict[str, Any] = {}
        self._finalizer = weakref.finalize(self, _let_go, self._held)
        self._closed = False
        self._make()

    def _make(self) -> None:
        """Open (making what is missing) the folder and its subfolders, sweep what dead
        instances left, and take this instance's lock."""
        root = _open_folder(self.folder)
        self._identity = _identity(os.fstat(root))
        self._dirs = {sub: _open_folder(private_folder(os.path.join(self.folder, sub))) for sub in FOLDERS}
        dead = self._sweep()
        self._lock = self._open_lock(self.instance)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._held.update(instances=self._dirs["instances"], lock=f"{self.instance}.lock")
        self._held["fds"] = [self._lock, root, *self._dirs.values()]
        self._journals = self._held["journals"] = Journals(self._dirs["instances"], self.instance, self._held["fds"])
        if dead:  # an instance died without closing: it may have been killed between a link and its record
            self._sweep_orphans()
            for owner in dead:
                if not self.alive(owner):  # claimed meanwhile by a survivor finishing its work: its lock stays
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{owner}.lock", dir_fd=self._dirs["instances"])

    def _went(self) -> bool:
        """Whether the folder this store holds open is no longer at its path (removed, renamed
        away or replaced): a store that went away, to be made again."""
        try:
            return _identity(os.lstat(self.folder)) != self._identity or any(
                os.fstat(fd).st_nlink == 0 for fd in self._dirs.values()
            )
        except OSError:
            return True

    def _again(self, err: OSError) -> bool:
        """After ``err``: whether the store went away and was made again (the same checks as at
        start: a private folder of this user, private all the way up), so the operation can
        be tried once more. ``StateUnavailable`` when it cannot be made again."""
        if self._closed or not isinstance(err, FileNotFoundError) or not self._went():
            return False
        with self._remaking:
            if self._went():
                old = list(self._held.get("fds", []))
                made = private_folder(self.folder)
                if made != self.folder:
                    raise StateUnavailable(
                        errno.EPERM, f"the state folder {self.folder} now leads to {made}; refused"
                    ) from None
                self._make()
                for fd in old:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                log.warning(
                    "the state store %s went away while this server ran; made it again (the records it held "
                    "are lost: changes made before cannot be undone, nor recovered after a crash)",
                    self.folder,
                )
        return True

    def _retried(self, job: Callable[[], Any]) -> Any:
        try:
            return job()
        except OSError as err:
            if not self._again(err):
                raise
        return job()

    @property
    def host_folder(self) -> str | None:
        return self.folder

    def place(self, name: str) -> tuple[int, str]:
        """The open folder and the name in it of the state name ``name`` (to make a hard link there)."""
        return self._path(name)

    def _path(self, name: str) -> tuple[int, str]:
        folder, _, base = name.partition("/")
        if folder not in self._dirs or not base or "/" in base or base.startswith("."):
            raise ValueError(f"not a state name: {name!r}")
        return self._dirs[folder], base

    def write(self, name: str, data: bytes, *, durable: bool = False, create: bool = True) -> None:
        self._retried(lambda: self._write(name, data, durable=durable, create=create))

    def _write(self, name: str, data: bytes, *, durable: bool = False, create: bool = True) -> None:
        dir_fd, base = self._path(name)
        if durable and Journals.takes(name, self.instance):
            self._journals.put(name, data)  # one fdatasync, no new name (``journal.py``)
            return
        # Every temp name is made in instances/ (one small folder: the sweep at start lists only
        # it, however many records and timeline entries the other folders hold).
        temps = self._dirs["instances"]
        temp = f".tmp-{self.instance}-{secrets.token_hex(6)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600, dir_fd=temps)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        try:
            if create:
                os.link(temp, base, src_dir_fd=temps, dst_dir_fd=dir_fd, follow_symlinks=False)
            else:
                os.rename(temp, base, src_dir_fd=temps, dst_dir_fd=dir_fd)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=temps)
        if durable:
            os.fsync(dir_fd)

    def read(self, name: str, start: int = 0, end: int | None = None) -> bytes:
        found: bytes = self._retried(lambda: self._read(name, start, end))
        return found

    def _read(self, name: str, start: int = 0, end: int | None = None) -> bytes:
        dir_fd, base = self._path(name)
        try:
            fd = os.open(base, os.O_RDONLY | _FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            return self._journals.read(name)[start:end]  # FileNotFoundError when it holds none either
        try:
            size = os.fstat(fd).st_size if end is None else end
            chunks, offset = [], start
            while offset < size:
                chunk = os.pread(fd, min(size - offset, 16 << 20), offset)
                if not chunk:
                    break
                chunks.append(chunk)
                offset += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def listing(self, folder: str) -> list[Listed]:
        found: list[Listed] = self._retried(lambda: self._listing(folder))
        return found

    def _listing(self, folder: str) -> list[Listed]:
        found = []
        with os.scandir(self._dirs[folder]) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    info = entry.stat(follow_symlinks=False)
                    found.append(Listed(entry.name, info.st_size, info.st_mtime))
        if folder == "pending":
            found += [Listed(name, 0, 0.0) for name in self._journals.names()]
        return found

    def move(self, name: str, to: str) -> None:
        self._retried(lambda: self._move(name, to))

    def _move(self, name: str, to: str) -> None:
        (from_fd, base), (to_fd, new) = self._path(name), self._path(to)
        try:
            os.rename(base, new, src_dir_fd=from_fd, dst_dir_fd=to_fd)
        except FileNotFoundError:
            self._write(to, self._journals.read(name), create=False)
            self._journals.drop(name)

    def delete(self, *names: str) -> None:
        self._retried(lambda: self._delete(*names))

    def _delete(self, *names: str) -> None:
        for name in names:
            dir_fd, base = self._path(name)
            if not self._journals.drop(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(base, dir_fd=dir_fd)
            if name.endswith(".rec") and not name.startswith("quarantine/"):
                unlink_images(self._dirs["images"], base.split(".", 1)[0])  # they go with their record

    def _open_lock(self, instance: str, create: bool = True) -> int:
        flags = os.O_RDWR | (os.O_CREAT if create else 0) | _FLAGS
        return os.open(f"{instance}.lock", flags, 0o600, dir_fd=self._dirs["instances"])

    def alive(self, instance: str) -> bool:
        if instance == self.instance:
            return not self._closed
        try:
            fd = self._open_lock(instance, create=False)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    @contextlib.contextmanager
    def claim(self, instance: str) -> Iterator[bool]:
        try:
            fd = self._open_lock(instance, create=False)
        except FileNotFoundError:
            fd = self._open_lock(instance)  # its lock went, its records stayed: still ours to finish
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not _only_probed(fd):
                    yield False
                    return
            yield True
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{instance}.lock", dir_fd=self._dirs["instances"])
        finally:
            os.close(fd)

    def instances(self) -> list[str]:
        return [item.name.removesuffix(".lock") for item in self.listing("instances") if item.name.endswith(".lock")]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._finalizer()

    def _sweep(self) -> list[str]:
        """Remove the half-written names of instances that died writing them: in instances/,
        where every temp name is made — the folders of records and timeline entries are never
        listed here, however large. The dead instances whose lock files are left (they died
        without closing: ``_make`` removes them once it has swept their orphaned images; one
        with work left under way gets it back when claimed)."""
        folder = self._dirs["instances"]
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries]
        dead = []
        for name in names:
            if name.endswith(".lock"):
                owner = name.removesuffix(".lock")
                if not self.alive(owner):
                    dead.append(owner)
            elif name.endswith(SUFFIX):
                if not self.alive(name.split(".", 1)[0]):
                    sweep_journal(folder, name)  # one holding a record stays: recovery finds it
            elif name.startswith(".tmp-") and not self.alive(name[5:].split("-", 1)[0]):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=folder)
        return dead

    def _sweep_orphans(self) -> None:
        """Remove the images no record names that were linked before every live instance
        started, this one included (``linked.orphans`` says why that is safe; this one's own
        start bounds it by a time before the lock files were listed: an instance starting
        after that links only newer images)."""
        started = os.fstat(self._lock).st_ctime_ns
        with os.scandir(self._dirs["instances"]) as entries:
            for entry in entries:
                owner = entry.name.removesuffix(".lock")
                if entry.name.endswith(".lock") and owner != self.instance and self.alive(owner):
                    with contextlib.suppress(FileNotFoundError):
                        started = min(started, entry.stat(follow_symlinks=False).st_ctime_ns)
        images = self._dirs["images"]
        for name in orphans(images, started, self._named):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=images)
            log.warning(
                "the state store %s held images/%s, which no record names (its change was cut short): removed",
                self.folder,
                name,
            )

    def _named(self, change_ids: list[str]) -> set[str]:
        """Which of ``change_ids`` a record names: pending, then filed, then quarantined (the
        way a record moves, so that one moving meanwhile is seen at one place or the next)."""
        pending = {found.change_id for item in self._listing(PENDING) if (found := under_way(item.name))}
        named = {one for one in change_ids if one in pending or self._exists(record(one))}
        aside = {one for item in self._listing(QUARANTINE) if (one := set_aside(item.name))}
        return named | aside.intersection(change_ids)

    def _exists(self, name: str) -> bool:
        dir_fd, base = self._path(name)
        try:
            os.stat(base, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True


def _only_probed(fd: int) -> bool:
    """Whether the lock ``fd`` opens, refused to an exclusive claim, was held only by probes
    (``alive``'s shared ``flock``, a moment long, from any process): then no owner and no other
    claimer holds it, and the claim waits the probes out and takes it. False when it is held
    exclusively: its instance alive, or another survivor on its work."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_EX)  # shared to exclusive; a survivor taking it meanwhile finishes first
    return True


def _let_go(held: dict[str, Any]) -> None:
    """An instance ends: its lock file goes, its journals holding no record, then its
    descriptors (the lock with them)."""
    with contextlib.suppress(OSError, KeyError):
        os.unlink(held["lock"], dir_fd=held["instances"])
    with contextlib.suppress(OSError, KeyError):
        held["journals"].close()
    for fd in held.get("fds", []):
        with contextlib.suppress(OSError):
            os.close(fd)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _open_folder(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | _FLAGS)


# -- any fsspec store (a prefix on a shared bucket, memory) --------------------------------


_live_here: set[str] = set()
"""Instances of this process on stores that cannot tell (memory)."""


class ObjectState(StateStore):
    def __init__(self, url: str, options: dict[str, Any] | None = None, mount: BackendMount | None = None) -> None:
        super().__init__()
        self.url = url
        self.mount = mount or create_mount(url, options or {})
        self.fs = self.mount.fs
        self.leases = self.mount.capabilities.conditional_writes or not self.mount.capabilities.local_io
        self._guard = threading.Lock()  # create-only on a store without conditional writes: in this process
        self._stop = threading.Event()
        _live_here.add(self.instance)
        if self.leases:
            self._renew()
            threading.Thread(target=self._keep_alive, name="vfs-mcp-state-lease", daemon=True).start()

    def _path(self, name: str) -> str:
        folder, _, base = name.partition("/")
        if folder not in FOLDERS or not base or "/" in base:
            raise ValueError(f"not a state name: {name!r}")
        return f"{self.mount.root.rstrip('/')}/{name}"

    @property
    def on_this_machine(self) -> bool:
        return self.mount.capabilities.local_io

    def write(self, name: str, data: bytes, *, durable: bool = False, create: bool = True) -> None:
        path = self._path(name)
        if create and self.mount.capabilities.conditional_writes:
            try:
                self.mount.put_if(path, data, create_only=True)
            except PreconditionFailed:
                raise FileExistsError(errno.EEXIST, f"{name} exists") from None
            return
        with self._guard:
            if create and self._exists(path):
                raise FileExistsError(errno.EEXIST, f"{name} exists")
            self.fs.pipe_file(path, data)
        self.mount.invalidate(path)

    def _exists(self, path: str) -> bool:
        self.mount.invalidate(path)
        return bool(self.fs.exists(path))

    def read(self, name: str, start: int = 0, end: int | None = None) -> bytes:
        path = self._path(name)
        if end is not None and end <= start:
            if not self._exists(path):
                raise FileNotFoundError(errno.ENOENT, name)
            return b""
        return bytes(self.fs.cat_file(path, start=start or None, end=end))

    def listing(self, folder: str) -> list[Listed]:
        path = f"{self.mount.root.rstrip('/')}/{folder}"
        self.mount.invalidate(path)
        try:
            found = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        listed = []
        for info in found:
            if info.get("type") != "file":
                continue
            modified = info.get("LastModified") or info.get("mtime") or info.get("created")
            stamp = modified.timestamp() if hasattr(modified, "timestamp") else float(modified or 0)
            listed.append(Listed(str(info["name"]).rstrip("/").rsplit("/", 1)[-1], int(info.get("size") or 0), stamp))
        return listed

    def move(self, name: str, to: str) -> None:
        source, dest = self._path(name), self._path(to)
        self.fs.copy(source, dest)
        self.delete(name)
        self.mount.invalidate(dest)

    def delete(self, *names: str) -> None:
        for name in names:
            path = self._path(name)
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm_file(path)
            self.mount.invalidate(path)

    def _lease(self, instance: str) -> tuple[dict[str, Any] | None, str | None]:
        path = self._path(f"instances/{instance}.lease")
        self.mount.invalidate(path)
        try:
            info = self.fs.info(path)
            return json.loads(self.fs.cat_file(path)), self.mount.version_token(info)
        except (FileNotFoundError, ValueError):
            return None, None

    def alive(self, instance: str) -> bool:
        if instance in _live_here:
            return not (instance == self.instance and self._stop.is_set())
        if not self.leases:
            return False
        lease, _ = self._lease(instance)
        return lease is not None and float(lease.get("expires", 0)) > time.time()

    @contextlib.contextmanager
    def claim(self, instance: str) -> Iterator[bool]:
        if self.alive(instance):
            yield False
            return
        if not self.leases:
            yield True
            return
        claim = self._path(f"instances/{instance}.claim")
        record = json.dumps({"by": self.instance, "expires": time.time() + LEASE_SECONDS}).encode()
        try:
            self.mount.put_if(claim, record, create_only=True)
        except PreconditionFailed:
            held, token = self._claimed(claim)
            if held is not None and (float(held.get("expires", 0)) > time.time() or token is None):
                yield False
                return
            try:
                self.mount.put_if(claim, record, if_match=token)  # its claimer died: ours now
            except PreconditionFailed:
                yield False
                return
        yield True
        self.delete(f"instances/{instance}.lease", f"instances/{instance}.claim")

    def _claimed(self, path: str) -> tuple[dict[str, Any] | None, str | None]:
        self.mount.invalidate(path)
        try:
            return json.loads(self.fs.cat_file(path)), self.mount.version_token(self.fs.info(path))
        except (FileNotFoundError, ValueError):
            return None, None

    def instances(self) -> list[str]:
        names = self.listing("instances")
        return sorted({item.name.rsplit(".", 1)[0] for item in names if item.name.endswith((".lease", ".claim"))})

    def _renew(self) -> None:
        lease = json.dumps({"expires": time.time() + LEASE_SECONDS}).encode()
        self.fs.pipe_file(self._path(f"instances/{self.instance}.lease"), lease)

    def _keep_alive(self) -> None:
        while not self._stop.wait(LEASE_SECONDS / 3):
            try:
                self._renew()
                for job in list(self._tickers):
                    job()
            except Exception:  # the thread must outlive a store that does not answer for a while
                log.warning("the state store %s could not be reached to renew this server's lease", self.url)

    def close(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            _live_here.discard(self.instance)
            if self.leases:
                with contextlib.suppress(Exception):
                    self.delete(f"instances/{self.instance}.lease")


def open_state(url: str | None, *, served: Sequence[str], urls: Sequence[str], memory: bool = False) -> StateStore:
    """The state store at ``url`` (None: the default for these mounts; ``memory``: a fresh
    store in this process, for servers whose every mount is in memory). ``served``: the real
    host folders of the local mounts, ``urls`` every mount's root: the store must be neither
    inside one nor hold one (``StateUnavailable``), checked before anything is written there."""
    if url is None and memory:
        return ObjectState(f"memory://vfs-mcp-state-{new_instance_id()}", {})
    location = default_folder(served, urls) if url is None else url
    check_outside(location, served, urls)
    folder = host_folder(location)
    if folder is None:
        return ObjectState(location.rstrip("/"))
    return LocalState(folder)
