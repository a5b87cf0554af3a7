"""Filesystem faults on demand: a full disk, a refused read, a file changed under the agent,
a slow or flaky store, injected where the store meets the jail.

    memory_server(files, faults=[
        Fault.on("write", "data/*.csv", errno.ENOSPC),      # every write of a CSV under data/
        Fault.on("read", "src/**", errno.EACCES, after=2),  # the third read under src/ on
        Fault.conflict("notes.md"),                         # another writer, after every read
        Fault.delay("list", "**", seconds=0.5),             # slow listings
        Fault.pause("write", "big.bin", reached, resume),   # held until the test says go on
        Fault.flaky("read", "**", rate=0.2, seed=7),        # one read in five fails, reproducibly
    ])

A fault wraps the mount's store (``FaultyMount``), so every tool meets it as it would meet the
real one: the jail, the staged writes and the error mapping are the product's own. Operations
are named by what a tool does to the store: ``read``, ``write`` (also making folders and
changing modes), ``list``, ``stat``, ``delete`` and ``move``; a copy reads its source and writes
its destination. Paths are mount-relative globs (``*`` within a name, ``**`` across folders,
``{a,b}``; ``**`` alone matches everything, the root too).
"""

from __future__ import annotations

import collections
import dataclasses
import errno as errnos
import hashlib
import os
import posixpath
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from vfs_mcp.jail.globs import minimatch
from vfs_mcp_backends import BackendMount

__all__ = ["OPERATIONS", "Fault", "FaultyMount"]

PAUSE_LIMIT = 120.0
"""Seconds a paused store call waits for its ``resume`` at most: a test that never resumes it
fails on what the call then does, instead of holding a worker thread forever."""

Operation = Literal["read", "write", "list", "stat", "delete", "move"]
OPERATIONS: tuple[str, ...] = ("read", "write", "list", "stat", "delete", "move")


@dataclass(frozen=True)
class Fault:
    """One injected fault. Make it with ``on``, ``conflict``, ``delay``, ``pause`` or ``flaky``.

    ``after``: matching calls that pass before it first fires; ``times``: how often it fires
    (None: every time after that).
    """

    kind: Literal["error", "conflict", "delay", "pause", "flaky"]
    op: Operation
    path: str
    error: int = errnos.EIO
    after: int = 0
    times: int | None = None
    seconds: float = 0.0
    rate: float = 1.0
    seed: int = 0
    content: bytes | None = None
    reached: threading.Event | None = None
    resume: threading.Event | None = None

    def __post_init__(self) -> None:
        if self.op not in OPERATIONS:
            raise ValueError(f"unknown operation {self.op!r}; choose one of {', '.join(OPERATIONS)}")
        if self.after < 0 or (self.times is not None and self.times < 1):
            raise ValueError("after is 0 or more and times 1 or more (or None: every time)")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate is a probability, from 0 to 1 (not {self.rate})")
        minimatch(self.path)  # an invalid glob fails here, not at the first call

    @classmethod
    def on(cls, op: Operation, path: str, error: int, *, after: int = 0, times: int | None = None) -> Fault:
        """``op`` on a path matching ``path`` fails with OSError ``error`` (an ``errno`` number).

        A streamed write fails after its first chunk reached the store, as a disk fills mid-file.
        """
        return cls("error", op, path, error=error, after=after, times=times)

    @classmethod
    def conflict(
        cls, path: str, *, content: str | bytes | None = None, after: int = 0, times: int | None = None
    ) -> Fault:
        """Another writer changes the file right after a tool reads it, so a tool that reads
        then writes (an edit, a line edit, a patch) finds it changed: CONFLICT once its retries
        run out (with ``times=1``, an edit's retry succeeds on the new version, as after most
        real races). The file becomes ``content``, or by default gains a newline at its end.
        """
        data = content.encode() if isinstance(content, str) else content
        return cls("conflict", "read", path, after=after, times=times, content=data)

    @classmethod
    def delay(cls, op: Operation, path: str, seconds: float, *, after: int = 0, times: int | None = None) -> Fault:
        """``op`` on a matching path waits ``seconds`` first (a slow disk or bucket)."""
        return cls("delay", op, path, seconds=seconds, after=after, times=times)

    @classmethod
    def pause(
        cls,
        op: Operation,
        path: str,
        reached: threading.Event,
        resume: threading.Event,
        *,
        after: int = 0,
        times: int | None = None,
    ) -> Fault:
        """``op`` on a matching path sets ``reached`` and waits until ``resume`` is set (at most
        ``PAUSE_LIMIT`` seconds): a test's barrier, to make another call while this one is held
        at a known step instead of sleeping and hoping it is there."""
        return cls("pause", op, path, after=after, times=times, reached=reached, resume=resume)

    @classmethod
    def flaky(cls, op: Operation, path: str, *, rate: float, seed: int = 0, error: int = errnos.EIO) -> Fault:
        """``op`` on a matching path fails with ``error`` at ``rate`` (0-1), the same calls every run:
        whether a call fails depends on ``seed``, the path and how many times it was asked for.
        """
        return cls("flaky", op, path, error=error, rate=rate, seed=seed)


class _Armed:
    """One fault in use: its path test and how many times it matched and fired."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault
        self.matches = (lambda rel: True) if fault.path == "**" else minimatch(fault.path)
        self.seen = 0
        self.fired = 0
        self.per_path: dict[str, int] = {}

    def fires(self, rel: str) -> bool:
        """Whether this call meets the fault (counted: call once per store call)."""
        fault = self.fault
        self.seen += 1
        if self.seen <= fault.after or (fault.times is not None and self.fired >= fault.times):
            return False
        if fault.kind == "flaky":
            n = self.per_path[rel] = self.per_path.get(rel, 0) + 1
            draw = hashlib.sha256(f"{fault.seed}:{rel}:{n}".encode()).digest()
            if int.from_bytes(draw[:8], "big") / 2**64 >= fault.rate:
                return False
        self.fired += 1
        return True


class _Plan:
    """The faults of one mount, and the store calls they watch."""

    def __init__(self, faults: Sequence[Fault], inner: BackendMount) -> None:
        self.armed = [_Armed(f) for f in faults]
        self.inner = inner
        self.base = inner.root.rstrip("/")
        self.lock = threading.Lock()
        self.calls: collections.Counter[str] = collections.Counter()

    def rel(self, path: str) -> str:
        path = str(path).rstrip("/")
        if path == self.base or not path.startswith(self.base + "/"):
            return ""
        return posixpath.normpath(path[len(self.base) + 1 :])

    def before(self, op: str, *paths: str) -> int | None:
        """Sleep the delays and hold the pauses that fire; the errno of the first error that fires, if any."""
        delay, error, pauses = 0.0, None, []
        with self.lock:
            self.calls[op] += 1
            for armed in self.armed:
                kind = armed.fault.kind
                if kind == "conflict" or armed.fault.op != op:
                    continue
                rels = [r for r in map(self.rel, paths) if armed.matches(r)]
                if not rels or not armed.fires(rels[0]):
                    continue
                if kind == "delay":
                    delay += armed.fault.seconds
                elif kind == "pause":
                    pauses.append(armed.fault)
                elif error is None:
                    error = armed.fault.error
        if delay:
            time.sleep(delay)
        for fault in pauses:
            assert fault.reached is not None and fault.resume is not None
            fault.reached.set()
            fault.resume.wait(PAUSE_LIMIT)
        return error

    def check(self, op: str, *paths: str) -> None:
        """``before``, raising the error that fires."""
        error = self.before(op, *paths)
        if error is not None:
            raise _oserror(error, paths[0])

    def after_read(self, path: str) -> None:
        """The conflicts a finished read of ``path`` sets off: the file changes underneath."""
        rel = self.rel(path)
        with self.lock:
            due = [a.fault for a in self.armed if a.fault.kind == "conflict" and a.matches(rel) and a.fires(rel)]
        for fault in due:
            fs = self.inner.fs
            self.inner.invalidate(path)
            new = fault.content if fault.content is not None else fs.cat_file(path) + b"\n"
            fs.pipe_file(path, new)
            self.inner.invalidate(path)


def _oserror(code: int, path: str) -> OSError:
    return OSError(code, f"{os.strerror(code)} (injected)", path)


_OPS: dict[str, str] = {
    **dict.fromkeys(("cat_file", "cat", "read_block"), "read"),
    **dict.fromkeys(("pipe_file", "pipe", "mkdir", "makedirs", "touch", "chmod"), "write"),
    **dict.fromkeys(("ls", "find", "walk", "glob", "du"), "list"),
    **dict.fromkeys(("info", "exists", "lexists", "isdir", "isfile", "size", "modified", "created"), "stat"),
    **dict.fromkeys(("rm", "rm_file", "rmdir"), "delete"),
}
_READS = frozenset({"cat_file", "cat"})


class _FaultyFS:
    """An fsspec filesystem with the plan's faults in front of the calls the server makes."""

    def __init__(self, inner: Any, plan: _Plan) -> None:
        self._inner = inner
        self._plan = plan

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        op = _OPS.get(name)
        if op is None or not callable(attr):
            return attr
        plan = self._plan

        def call(path: str, *args: Any, **kwargs: Any) -> Any:
            plan.check(op, path)
            result = attr(path, *args, **kwargs)
            if name in _READS:
                plan.after_read(path)
            return result

        return call

    def mv(self, source: str, dest: str, *args: Any, **kwargs: Any) -> Any:
        self._plan.check("move", source, dest)
        return self._inner.mv(source, dest, *args, **kwargs)

    def cp_file(self, source: str, dest: str, *args: Any, **kwargs: Any) -> Any:
        self._plan.check("read", source)
        self._plan.check("write", dest)
        return self._inner.cp_file(source, dest, *args, **kwargs)

    def open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        return self._opened(self._inner.open, path, mode, args, kwargs)

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        return self._opened(self._inner._open, path, mode, args, kwargs)

    def _opened(self, opener: Callable[..., Any], path: str, mode: str, args: Iterable[Any], kwargs: Any) -> Any:
        if "r" in mode:
            self._plan.check("read", path)
            return _Handle(opener(path, mode, *args, **kwargs), lambda: self._plan.after_read(path))
        error = self._plan.before("write", path)
        handle = opener(path, mode, *args, **kwargs)
        return handle if error is None else _FailingWriter(handle, _oserror(error, path))


class _Handle:
    """A file handle that runs ``on_close`` once it is closed."""

    def __init__(self, inner: Any, on_close: Callable[[], None]) -> None:
        self._inner = inner
        self._on_close: Callable[[], None] | None = on_close

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Any:
        return iter(self._inner)

    def close(self) -> None:
        self._inner.close()
        done, self._on_close = self._on_close, None
        if done is not None:
            done()


class _FailingWriter(_Handle):
    """A staged write that fails after its first chunk reached the store (or at close when empty)."""

    def __init__(self, inner: Any, error: OSError) -> None:
        super().__init__(inner, self._fail)
        self._error = error

    def write(self, data: bytes) -> int:
        written: int = self._inner.write(data)
        self._fail()
        return written

    def _fail(self) -> None:
        raise self._error


class FaultyMount(BackendMount):
    """A backend mount with faults in front of its store; the store itself is unchanged.

    Declares no native grep, so a search reads files through the store and meets the faults.
    """

    def __init__(self, inner: BackendMount, faults: Sequence[Fault], plan: _Plan | None = None) -> None:
        plan = plan or _Plan(faults, inner)
        capabilities = dataclasses.replace(inner.capabilities, native_grep=False)
        super().__init__(fs=_FaultyFS(inner.fs, plan), root=inner.root, capabilities=capabilities)
        self.inner = inner
        self.plan = plan

    @property
    def calls(self) -> collections.Counter[str]:
        """The store calls made through the faults so far, by operation (``read``, ``write``, ...):
        what a tool cost the store, counted (``FaultyMount(mount, [])`` counts with no fault)."""
        return self.plan.calls

    def invalidate(self, path: str | None = None) -> None:
        self.inner.invalidate(path)

    def invalidate_tree(self, path: str) -> None:
        self.inner.invalidate_tree(path)

    def host_path(self, path: str) -> str | None:
        return self.inner.host_path(path)

    def resolve_links(self, path: str, follow: bool) -> str:
        return self.inner.resolve_links(path, follow)

    def narrowed(self, root: str) -> BackendMount:
        return FaultyMount(self.inner.narrowed(root), (), self.plan)

    def sweep(
        self, older_than: float, folders: Sequence[str] | None = None, pause: Callable[[], object] | None = None
    ) -> int:
        return self.inner.sweep(older_than, folders, pause)

    def hold(self, folders: Any, wait: float | None = None) -> Any:
        return self.inner.hold(folders, wait)

    def version_token(self, info: Any) -> str | None:
        return self.inner.version_token(info)

    def fetches(self) -> None:
        return None  # a fetch on the store's event loop would pass the faults by: reads go through cat_file

    def put_if(self, path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        self.plan.check("write", path)
        return self.inner.put_if(path, data, if_match=if_match, create_only=create_only)
