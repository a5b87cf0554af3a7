"""The harness: seeded mounts (``HarnessFS``), servers over them and connected clients."""

from __future__ import annotations

import dataclasses
import logging
import os
import posixpath
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Self

from mcp import Client
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.server.mcpserver import MCPServer
from mcp_types import ElicitRequestParams, ElicitResult

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.testing.faults import Fault, FaultyMount
from vfs_mcp.testing.recording import Recorder, ToolCall, save_calls
from vfs_mcp.testing.trees import Content, Snapshot, TreeDiff, tree_diff

if TYPE_CHECKING:
    from vfs_mcp.review import PendingFile

Files = Mapping[str, str | bytes]
"""Relative path -> content: ``str`` is written as UTF-8, ``bytes`` as is."""

Seed = Files | str | os.PathLike[str] | None
"""What to put in a new mount: a ``Files`` mapping, or a local folder to copy in."""


def load_dir(folder: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every regular file under ``folder`` (symbolic links are skipped), by relative POSIX path.

    Raises NotADirectoryError when ``folder`` is not a directory.
    """
    if not os.path.isdir(folder):
        raise NotADirectoryError(f"not a directory: {os.fspath(folder)}")
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            source = os.path.join(dirpath, name)
            if os.path.isfile(source) and not os.path.islink(source):
                rel = os.path.relpath(source, folder).replace(os.sep, "/")
                with open(source, "rb") as handle:
                    files[rel] = handle.read()
    return files


@dataclass
class HarnessFS:
    """The files of one mount, reached directly: no tools, no jail, no read-only check.

    For setting a scene and checking what an agent did. Paths are relative to the mount root,
    or written as the tools write them (``memory://workspace/src/app.py``, an absolute local path).
    """

    mount: Mount

    @property
    def root(self) -> str:
        """The mount root as tool calls and results name it."""
        return self.mount.url

    def path(self, rel: str = "") -> str:
        """How tool calls and results name ``rel``."""
        return self.mount.display(self._rel(rel))

    def read_bytes(self, path: str) -> bytes:
        """The content of a file; raises FileNotFoundError."""
        raw = self._raw(path)
        self.mount.backend.invalidate(raw)
        data: bytes = self.mount.fs.cat_file(raw)
        return data

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The content of a file, decoded."""
        return self.read_bytes(path).decode(encoding)

    def write(self, path: str, content: str | bytes) -> None:
        """Create or replace a file (``str`` as UTF-8), making missing parent directories."""
        raw = self._raw(path)
        if raw == self.mount.backend.root:
            raise IsADirectoryError(f"the mount root is a directory: {self.root}")
        if self.mount.capabilities.empty_dirs:
            self.mount.fs.makedirs(posixpath.dirname(raw), exist_ok=True)
        self.mount.fs.pipe_file(raw, content.encode() if isinstance(content, str) else bytes(content))
        self.mount.backend.invalidate(raw)

    def seed(self, files: Seed) -> None:
        """Write every file of a ``Files`` mapping, or copy in a local folder."""
        if files is None:
            return
        source = files if isinstance(files, Mapping) else load_dir(files)
        for rel, content in source.items():
            self.write(rel, content)

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents (on S3, a ``dir/`` marker object)."""
        raw = self._raw(path)
        if self.mount.capabilities.empty_dirs:
            self.mount.fs.makedirs(raw, exist_ok=True)
        else:
            self.mount.fs.pipe_file(raw + "/", b"")
        self.mount.backend.invalidate(raw)

    def exists(self, path: str) -> bool:
        """Whether a file or directory is there."""
        raw = self._raw(path)
        self.mount.backend.invalidate(raw)
        return bool(self.mount.fs.exists(raw))

    def isdir(self, path: str) -> bool:
        """Whether ``path`` is a directory (on S3: has files under it, or a marker)."""
        raw = self._raw(path)
        self.mount.backend.invalidate(raw)
        return bool(self.mount.fs.isdir(raw))

    def remove(self, path: str) -> None:
        """Delete a file, or a directory with everything in it; raises FileNotFoundError."""
        raw = self._raw(path)
        if raw == self.mount.backend.root:
            raise PermissionError(f"the mount root is not removed: {self.root}")
        self.mount.backend.invalidate(raw)
        self.mount.fs.rm(raw, recursive=True)
        self.mount.backend.invalidate(raw)

    def snapshot(self, path: str = "", *, text: bool = True) -> Snapshot:
        """Every file under ``path`` (the whole mount by default) -> its content, in path order.

        Keys are relative to ``path``. Content valid as UTF-8 comes back as ``str`` unless
        ``text=False``, so a snapshot compares equal to the mapping that seeded the mount.
        Directories are not listed: on S3 they exist only through the files in them.
        """
        base = self._raw(path)
        self.mount.backend.invalidate_tree(base)
        found: dict[str, Any] = self.mount.fs.find(base, withdirs=False, detail=True)
        files = Snapshot()
        for name, info in sorted(found.items()):
            if info.get("type") != "file" or name.endswith("/"):
                continue  # S3 "dir/" marker objects
            rel = posixpath.relpath(name, base.rstrip("/") or "/")
            if rel == ".":  # ``path`` is a file
                rel = posixpath.basename(name)
            data: bytes = self.mount.fs.cat_file(name)
            files[rel] = _maybe_text(data) if text else data
        return files

    def diff(self, before: Mapping[str, Content] | None = None, path: str = "") -> TreeDiff:
        """What changed from ``before`` (an earlier ``snapshot``, or a dict of the files expected)
        to the files under ``path`` now: added, removed and changed files, with a unified diff
        of each changed text file (``print`` it). Without ``before``, on a mount under review:
        what its pending changes would change (its store's files against what the tools see)."""
        if before is None:
            store = self.under_review()
            if store is None:
                raise TypeError("diff() needs the files before (a snapshot) on a mount not under review")
            before = store.snapshot(path)
        return tree_diff(before, self.snapshot(path))

    def under_review(self) -> HarnessFS | None:
        """The store of a mount under review, as it is (its pending changes aside); None for
        a mount not under review."""
        if self.mount.layer is None:
            return None
        from vfs_mcp.review.under_review import sides_of

        return HarnessFS(sides_of(self.mount).base)

    def _rel(self, path: str) -> str:
        """``path`` as a canonical mount-relative path; ValueError for one that leaves the mount."""
        root = self.root.rstrip("/")
        if path == root:
            path = ""
        elif path.startswith(root + "/"):
            path = path[len(root) + 1 :]
        elif path.startswith("/") or "://" in path:
            raise ValueError(f"{path!r} is not inside the mount {self.root}")
        rel = posixpath.normpath(path or ".")
        if rel == ".." or rel.startswith("../"):
            raise ValueError(f"{path!r} leaves the mount {self.root}")
        return "" if rel == "." else rel

    def _raw(self, path: str) -> str:
        return self.mount.fs_path(self._rel(path))


def _maybe_text(data: bytes) -> str | bytes:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


@dataclass(kw_only=True)
class VfsClient(Client):
    """An ``mcp.Client`` connected in-process to a vfs-mcp server, with the harness's extras.

    ``fs`` reaches the mount's files directly; ``calls`` lists every tool call the server
    answered (from this client or any other connected to ``server``), with the version of each
    file it read, as ``recorder`` (the server's middleware) saw it. Make one with ``connect``,
    or ``recorded`` for a server built elsewhere.
    """

    fs: HarnessFS
    calls: list[ToolCall] = field(default_factory=list)
    recorder: Recorder | None = None
    served: JailedFS | None = None
    """The server's jailed filesystem (what ``pending`` reviews)."""

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        return self

    def pending(self, *select: str) -> list[PendingFile]:
        """What the agent left pending on the mounts under review (paths or change ids pick
        some): each path, how it changed, its diff and the ids of the changes that made it."""
        from vfs_mcp.review import Review

        assert self.served is not None
        return Review(self.served).pending(*select)

    def save_calls(self, path: str | os.PathLike[str]) -> None:
        """Write ``calls`` as a JSON lines recording for ``replay`` (the mount root as ``${root}``)."""
        save_calls(path, self.calls, self.fs.root)


Answer = Literal["accept", "decline", "cancel"]


@dataclass
class Person:
    """The person a server with ``confirm`` asks before a change, as the client's dialog would:
    answers each question with ``answer`` (or what ``decide(message)`` returns) and keeps the
    questions, as the dialog shows them, in ``asked``. Pass it as ``answer=`` to ``connect`` or
    ``memory_server`` (any ``mcp`` elicitation callback does too); a client given none declares
    no elicitation, and the server asks it nothing."""

    answer: Answer = "decline"
    decide: Callable[[str], Answer] | None = None
    asked: list[str] = field(default_factory=list)

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        message = str(getattr(params, "message", ""))
        self.asked.append(message)
        action = self.decide(message) if self.decide is not None else self.answer
        return ElicitResult(action=action, content={} if action == "accept" else None)


_SERVER_OPTIONS = frozenset(f.name for f in dataclasses.fields(Settings)) - {"profiles", "warm_up"}
"""A server of the harness runs in the tests' process: never a warm-up thread there (``Settings.warm_up``)."""


def _settings(profile: str | Sequence[str], options: Mapping[str, Any]) -> Settings:
    unknown = sorted(set(options) - _SERVER_OPTIONS)
    if unknown:
        raise TypeError(f"unknown server option {', '.join(unknown)}; known: {', '.join(sorted(_SERVER_OPTIONS))}")
    names = profile.split(",") if isinstance(profile, str) else list(profile)
    values = dict(options)
    if "deny" in values:
        values["deny"] = tuple(values["deny"])
    return Settings(profiles=tuple(p.strip() for p in names if p.strip()), **values)


def connect(
    fs: HarnessFS,
    *,
    profile: str | Sequence[str] = "default",
    extra: Sequence[HarnessFS] = (),
    faults: Sequence[Fault] = (),
    answer: ElicitationFnT | None = None,
    **server_options: Any,
) -> VfsClient:
    """A new server over ``fs`` (then the ``extra`` mounts) and a client for it, not yet connected.

    Enter it with ``async with``. ``profile`` names the tool sets ("default", or several as a list
    or comma-separated); ``server_options`` are ``Settings`` fields: ``max_read_bytes``,
    ``max_edit_bytes``, ``max_write_bytes``, ``deny`` (globs of names to hide) and ``tool_names``
    ("safe" or "seed"). ``faults`` go in front of ``fs``'s store for the server only: ``client.fs``
    still reads and writes the files directly. ``answer``: the person the server asks before a
    change (a ``Person``, or any elicitation callback), under ``confirm`` ("destructive", "writes";
    without ``answer`` the client declares no elicitation and is asked nothing). Raises TypeError
    for an unknown option and ValueError for an unknown profile.
    """
    served = dataclasses.replace(fs.mount, backend=FaultyMount(fs.mount.backend, faults)) if faults else fs.mount
    server = build_server([served, *(other.mount for other in extra)], _settings(profile, server_options))
    return recorded(server, fs, answer=answer)


def recorded(server: MCPServer, fs: HarnessFS, *, answer: ElicitationFnT | None = None) -> VfsClient:
    """A client (not yet connected) of ``server``, whose first mount ``fs`` is, recording every
    tool call the server answers from now on (``client.calls``). On a mount under review,
    ``client.fs`` shows the files as the tools see them."""
    recorder = Recorder([])
    server.middleware.append(recorder)
    vfs = getattr(server, "vfs", None)
    if vfs is not None and vfs.mounts[0].layer is not None:
        fs = HarnessFS(vfs.mounts[0])
    return VfsClient(server, fs=fs, calls=recorder.calls, recorder=recorder, served=vfs, elicitation_callback=answer)


def memory_fs(files: Seed = None, *, read_only: bool = False, name: str = "workspace") -> HarnessFS:
    """A new in-memory mount ``memory://{name}`` holding ``files`` (its store is its own)."""
    fs = HarnessFS(open_mount(MountSpec(f"memory://{name}", read_only=read_only)))
    fs.seed(files)
    return fs


def local_fs(folder: str | os.PathLike[str], files: Seed = None, *, read_only: bool = False) -> HarnessFS:
    """A mount of the local ``folder`` (made if missing), with ``files`` written into it."""
    os.makedirs(folder, exist_ok=True)
    fs = HarnessFS(open_mount(MountSpec(os.fspath(folder), read_only=read_only)))
    fs.seed(files)
    return fs


def s3_fs(
    bucket: str,
    files: Seed = None,
    *,
    prefix: str = "",
    endpoint_url: str | None = None,
    read_only: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> HarnessFS:
    """A mount of ``s3://{bucket}/{prefix}`` (the bucket is made if missing), with ``files`` written into it.

    ``endpoint_url`` points at an S3-compatible server (moto, MinIO); ``storage_options`` go
    to s3fs as they are. Credentials come from the usual AWS chain.
    """
    options = dict(storage_options or {})
    if endpoint_url:
        options["endpoint_url"] = endpoint_url
    root = f"s3://{bucket}/{prefix.strip('/')}".rstrip("/")
    fs = HarnessFS(open_mount(MountSpec(root, read_only=read_only, options=options)))
    store = fs.mount.fs
    if not store.exists(bucket):
        store.mkdir(bucket)
    if prefix.strip("/"):
        store.pipe_file(fs.mount.backend.root + "/", b"")  # the prefix exists, as an empty "directory"
    fs.mount.backend.invalidate(fs.mount.backend.root)
    fs.seed(files)
    return fs


@asynccontextmanager
async def memory_server(
    files: Seed = None,
    *,
    profile: str | Sequence[str] = "default",
    read_only: bool = False,
    name: str = "workspace",
    faults: Sequence[Fault] = (),
    review: bool = False,
    overlay: str | os.PathLike[str] | None = None,
    answer: ElicitationFnT | None = None,
    **server_options: Any,
) -> AsyncIterator[VfsClient]:
    """A connected client of a new server over a new in-memory mount holding ``files``.

    No disk, no subprocess, no network. Relative paths in tool calls start at the mount root;
    results name files ``memory://{name}/...``. A ``read_only`` server does not list the write
    tools. ``faults`` and ``server_options`` are those of ``connect``.

    ``review``: the mount is under review: the agent's changes stay pending (``client.pending()``,
    ``client.fs.diff()``), ``client.fs`` shows the files as the tools see them. ``overlay``: the
    mount is that local folder (a checkout) under review, its pending changes in memory: the
    agent reads the folder, and nothing it does reaches it (``files`` are pending changes too).

    ``confirm`` ("destructive", "writes") and ``answer`` (a ``Person``): the server asks before
    changes, and ``answer`` answers as the person would (``connect``).
    """
    if overlay is None:
        fs = memory_fs(files, read_only=read_only, name=name)
    else:
        fs = HarnessFS(open_mount(MountSpec(os.fspath(overlay), read_only=read_only)))
        server_options.setdefault("state", f"memory://vfs-mcp-review-{secrets.token_hex(8)}")
    reviewed = review or overlay is not None
    async with connect(fs, profile=profile, faults=faults, review=reviewed, answer=answer, **server_options) as client:
        if overlay is not None:
            client.fs.seed(files)
        yield client


@asynccontextmanager
async def local_server(
    files: Seed = None,
    *,
    folder: str | os.PathLike[str] | None = None,
    profile: str | Sequence[str] = "default",
    read_only: bool = False,
    faults: Sequence[Fault] = (),
    **server_options: Any,
) -> AsyncIterator[VfsClient]:
    """As ``memory_server``, over a local folder: ``folder``, or a temporary one removed at the end.

    For what only a disk has (file modes, symbolic links, ripgrep). Results name files by their
    absolute path.
    """
    with _folder_or_temp(folder) as root:
        fs = local_fs(root, files, read_only=read_only)
        async with connect(fs, profile=profile, faults=faults, **server_options) as client:
            yield client


@asynccontextmanager
async def s3_server(
    files: Seed = None,
    *,
    bucket: str,
    prefix: str = "",
    endpoint_url: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    profile: str | Sequence[str] = "default",
    read_only: bool = False,
    faults: Sequence[Fault] = (),
    **server_options: Any,
) -> AsyncIterator[VfsClient]:
    """As ``memory_server``, over ``s3://{bucket}/{prefix}`` (see ``s3_fs``; ``moto_s3`` gives an endpoint).

    The bucket is not emptied at the end: give each test a bucket or prefix of its own.
    """
    fs = s3_fs(
        bucket, files, prefix=prefix, endpoint_url=endpoint_url, read_only=read_only, storage_options=storage_options
    )
    async with connect(fs, profile=profile, faults=faults, **server_options) as client:
        yield client


@contextmanager
def _folder_or_temp(folder: str | os.PathLike[str] | None) -> Iterator[str]:
    if folder is not None:
        yield os.fspath(folder)
        return
    with tempfile.TemporaryDirectory(prefix="vfs-mcp-") as tmp:
        yield os.path.realpath(tmp)


@contextmanager
def moto_s3() -> Iterator[str]:
    """moto's S3 server on a free loopback port, for as long as the block runs; yields its URL.

    Needs moto's server: vfs-mcp's ``s3-test`` extra. Sets dummy AWS credentials and region in
    the environment when none are set, so that nothing looks for real ones. Its access log
    (every request, at INFO) is kept out of the tests' output.
    """
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        raise RuntimeError(MOTO_MISSING) from exc
    for key, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        os.environ.setdefault(key, value)
    access_log = logging.getLogger("werkzeug")
    level = access_log.level
    access_log.setLevel(max(level, logging.WARNING))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        access_log.setLevel(level)


MOTO_MISSING = (
    "moto_s3 needs moto's server: install vfs-mcp with its s3-test extra (from a clone of vfs-mcp: "
    "pip install ./backends '.[s3-test]'), which keeps moto's botocore within s3fs's pin"
)
