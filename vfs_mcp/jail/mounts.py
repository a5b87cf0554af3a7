"""The mount table: root URLs from the command line and the config file, made into filesystems."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vfs_mcp_backends import BackendMount, Capabilities, create_mount, scheme_of
from vfs_mcp_backends.local import host_path
from vfs_mcp_backends.store_errors import storage_problem

if TYPE_CHECKING:
    from vfs_mcp_backends.layers import Layer


@dataclass
class Mount:
    """One root: how it is written (``url``), its filesystem, and its policy."""

    url: str
    backend: BackendMount
    scheme: str
    read_only: bool = False
    real_root: str = ""
    deny_hardlinked: bool = False
    review: bool = False
    """Its changes are kept pending, for a person to accept (``vfs_mcp.review``); once it is
    served so, its store is an ``OverlayMount`` (``layer``)."""
    _root: tuple[str, list[str]] | None = field(default=None, init=False, repr=False, compare=False)
    """``root_parts`` of ``url``, made once: every path resolved asks for them."""

    @property
    def fs(self) -> Any:
        return self.backend.fs

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities

    @property
    def is_local(self) -> bool:
        """A local folder, named by host paths (under review too, where its store has none)."""
        return self.scheme == "file"

    @property
    def layer(self) -> Layer | None:
        """The pending layer of a mount served under review (the review modules load only then)."""
        return self.backend.layer

    def sweep_temp_files(self, older_than: float, pause: Callable[[], object] | None = None) -> int:
        """Delete temp files of writes that were killed, older than ``older_than`` seconds
        (``pause``: called now and then on the way, and may wait)."""
        return self.backend.sweep(older_than, pause=pause)

    def root_parts(self) -> list[str]:
        """The root as path components: host path parts for local, ``bucket/prefix`` parts
        otherwise (one list, made once: not to be changed)."""
        made = self._root
        if made is None or made[0] != self.url:
            root = self.url if self.is_local else self.url.split("://", 1)[1]
            made = self._root = (self.url, [p for p in root.split("/") if p])
        return made[1]

    def fs_path(self, rel: str) -> str:
        """The path inside the backend filesystem for a canonical mount-relative path."""
        root = self.backend.root
        if not rel:
            return root
        return f"{root}/{rel}" if root and not root.endswith("/") else root + rel  # posixpath.join, for a canonical rel

    def display(self, rel: str) -> str:
        """The path as the user addresses this mount (host path for local, URL otherwise)."""
        if not rel:
            return self.url
        return f"{self.url.rstrip('/')}/{rel}"


@dataclass(frozen=True)
class MountSpec:
    """What the operator asked for, before any filesystem is built."""

    root: str
    read_only: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    deny_hardlinked: bool = False
    review: bool = False


def _display_root(url: str) -> str:
    scheme = scheme_of(url)
    if scheme in ("file", "local"):
        return host_path(url)
    rest = url.split("://", 1)[1].strip("/")
    return f"{scheme}://{rest}"


def open_mount(spec: MountSpec, read_only: bool = False) -> Mount:
    """Build one mount; raises ValueError with a clear message when the root is unusable."""
    try:
        backend = create_mount(spec.root, spec.options)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ValueError(f"cannot mount {spec.root}: {exc}") from exc
    except TypeError as exc:  # an fsspec plug-in missing a required option
        raise ValueError(
            f"cannot mount {spec.root}: its filesystem needs options the URL does not give ({exc}); "
            "give them as options of a [[mount]] in a --config file"
        ) from exc
    url = _display_root(spec.root)
    real = backend.host_path(backend.root) or backend.root
    return Mount(
        url=url,
        backend=backend,
        scheme="file" if backend.capabilities.host_paths else scheme_of(url),
        read_only=spec.read_only or read_only,
        real_root=real,
        deny_hardlinked=spec.deny_hardlinked,
        review=spec.review,
    )


@dataclass
class Config:
    """The ``--config`` TOML file: mounts with options, and server-wide policy."""

    mounts: list[MountSpec] = field(default_factory=list)
    read_only: bool = False
    deny: list[str] = field(default_factory=list)
    max_read_bytes: int | None = None
    max_write_bytes: int | None = None
    state: str | None = None
    confirm: str | None = None
    """Which changes a person is asked to accept first (``--confirm``)."""
    task_after: float | str | None = None
    """Seconds before a long call becomes a task, or "never" (``--task-after``)."""
    index: bool = True

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Config:
        """Read a config file, checked against its schema; raises ValueError naming what is wrong."""
        from vfs_mcp.jail.config_file import read_config  # here: most servers start without a file

        checked = read_config(path)
        first: dict[str, int] = {}
        for number, entry in enumerate(checked.mount, 1):
            root = _display_root(entry.root)
            if root in first:
                # Two policies for one root: serving either silently would drop the other.
                raise ValueError(
                    f"config {path}: [[mount]] {first[root]} and [[mount]] {number} name the same root {root}; "
                    "keep one entry with the options you want"
                )
            first[root] = number
        mounts = [
            MountSpec(
                root=m.root,
                read_only=m.read_only,
                options=dict(m.options),
                deny_hardlinked=m.deny_hardlinked,
                review=m.review,
            )
            for m in checked.mount
        ]
        return cls(
            mounts=mounts,
            read_only=checked.read_only,
            deny=list(checked.deny),
            max_read_bytes=checked.max_read_bytes,
            max_write_bytes=checked.max_write_bytes,
            state=checked.state,
            confirm=checked.confirm,
            task_after=checked.task_after,
            index=checked.index,
        )


def merge_specs(roots: Iterable[str], config: Config | None) -> list[MountSpec]:
    """ROOT arguments first (taking options from a config mount of the same root), then the rest of the config."""
    configured = {_display_root(s.root): s for s in (config.mounts if config else [])}
    specs: list[MountSpec] = []
    for root in roots:
        specs.append(configured.pop(_display_root(root), MountSpec(root=root)))
    specs.extend(configured.values())
    return specs


CHECK_SECONDS = 10.0
"""How long a mount's root may take to list at start before the server refuses to start."""
NOTICE_SECONDS = 1.0
"""How long a check may take before the person waiting is told what it waits for."""
ENDPOINT_VARIABLES = {"s3": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"), "gs": ("STORAGE_EMULATOR_HOST",)}
"""The environment variables a store's library takes its endpoint from, in its order."""


def endpoint_of(mount: Mount) -> str | None:
    """Where the mount's store is reached, and what says so (``http://host:9000, from
    $AWS_ENDPOINT_URL``); None for the library's default."""
    option = getattr(mount.fs, "endpoint_url", None)
    for variable in ENDPOINT_VARIABLES.get(mount.scheme, ()):
        if os.environ.get(variable) and option in (None, os.environ[variable]):
            return f"{os.environ[variable]}, from ${variable}"
    return f"{option}, from the mount's endpoint_url option" if option else None


def check_mounts(
    mounts: Sequence[Mount], seconds: float = CHECK_SECONDS, waiting: Callable[[str], None] | None = None
) -> None:
    """List every mount's root once, all at once, bounded in time; ValueError naming the first
    mount that fails and why (no credentials, endpoint unreachable, bucket missing, ...) and
    its endpoint. ``waiting`` is told, once, of a mount whose store takes a while to answer."""
    pool = ThreadPoolExecutor(max_workers=max(1, len(mounts)), thread_name_prefix="vfs-mcp-check")
    futures = [(mount, pool.submit(mount.fs.ls, mount.backend.root, detail=False)) for mount in mounts]
    try:
        for mount, future in futures:
            endpoint = endpoint_of(mount)
            at = f" (endpoint {endpoint})" if endpoint else ""
            try:
                try:
                    future.result(timeout=NOTICE_SECONDS if waiting else seconds)
                except FuturesTimeout:
                    if waiting is None:
                        raise
                    waiting(f"waiting up to {seconds:g} s for {mount.url} to answer{at}")
                    future.result(timeout=seconds - NOTICE_SECONDS)
            except FuturesTimeout:
                raise ValueError(
                    f"cannot mount {mount.url}: its store did not answer within {seconds:g} s{at}"
                ) from None
            except Exception as exc:
                problem = storage_problem(exc)
                if problem is None and isinstance(exc, FileNotFoundError):
                    problem = "its root does not exist (a missing bucket or container?)"
                if problem is None and isinstance(exc, PermissionError):
                    problem = "access to its root is denied"
                raise ValueError(f"cannot mount {mount.url}: {problem or type(exc).__name__}{at}") from exc
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    for mount in mounts:
        mount.backend.invalidate()  # a listing cached now would hide files written later (adlfs)


def open_mounts(specs: Sequence[MountSpec], read_only: bool = False) -> list[Mount]:
    """Build every mount; two roots written the same way are one mount."""
    mounts: list[Mount] = []
    for spec in specs:
        mount = open_mount(spec, read_only)
        if all(m.url != mount.url for m in mounts):
            mounts.append(mount)
    if not mounts:
        raise ValueError("no mounts: give at least one ROOT")
    return mounts
