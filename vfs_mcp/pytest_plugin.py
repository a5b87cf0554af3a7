"""pytest plugin of the test harness, registered as ``vfs_mcp`` through the ``pytest11`` entry point.

Fixtures:
    vfs_fs        a ``HarnessFS``: a fresh mount holding the test's files (no tools, no jail)
    vfs_client    a connected ``VfsClient`` of a new server over ``vfs_fs`` (async)
    vfs_files     the files to seed (default: none); override it or parametrize it
    vfs_profile   the profile(s) to serve (default: "default")
    vfs_backend   "memory" (default), "local" (under tmp_path) or "s3" (moto; needs moto[server])
    vfs_s3_endpoint  the S3 endpoint for "s3": moto's server, started once per session
    vfs_person    the person ``vfs_client``'s server asks before a destructive change (a test that
                  uses it gets ``confirm="destructive"`` unless its mark says otherwise): declines
                  every question unless told (``vfs_person.answer = "accept"``); ``.asked`` lists them

The ``vfs`` marker sets the same per test, module or class, the closest mark winning per key::

    @pytest.mark.vfs({"src/app.py": "print('hi')\\n"}, profile="default", read_only=False, max_read_bytes=1024)

``faults=[Fault.on(...), ...]`` in the mark puts faults in front of the served store (``vfs_fs``
still reaches the files directly). ``vfs_client`` runs under anyio (``@pytest.mark.anyio``) and
under pytest-asyncio in auto mode. A failed ``assert client.fs.snapshot() == {...}`` shows the
tree diff: each path added, removed or changed, and the unified diff of each changed text file.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from vfs_mcp.testing import HarnessFS, Person, Seed, VfsClient

# vfs_mcp.testing is imported by the fixtures, not here: every pytest run in an environment with
# vfs-mcp installed loads this module, and the MCP SDK takes seconds to import.

BACKENDS = ("memory", "local", "s3")
_MOUNT_KEYS = ("files", "backend", "read_only")
_buckets = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "vfs(files=None, *, profile='default', backend='memory', read_only=False, faults=(), **server_options): "
        "what the vfs_fs and vfs_client fixtures serve (vfs_mcp.testing)",
    )


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """A failed ``snapshot == expected`` (either side a ``Snapshot``) as a tree diff."""
    trees = sys.modules.get("vfs_mcp.testing.trees")  # loaded by then if a snapshot was taken
    if op != "==" or trees is None or not isinstance(left, dict) or not isinstance(right, dict):
        return None
    if isinstance(left, trees.Snapshot):
        expected, found = right, left
    elif isinstance(right, trees.Snapshot):
        expected, found = left, right
    else:
        return None
    lines: list[str] = trees.tree_diff(expected, found).lines()
    return ["the snapshot differs from what was expected (+ only in the snapshot, - only expected):", *lines]


def _marked(files: Seed = None, /, **options: Any) -> dict[str, Any]:
    return {"files": files, **options} if files is not None else options


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The ``vfs`` marks on the test, its class and module merged, the closest winning per key."""
    merged: dict[str, Any] = {}
    for mark in reversed(list(request.node.iter_markers("vfs"))):
        try:
            merged.update(_marked(*mark.args, **mark.kwargs))
        except TypeError:
            pytest.fail("the vfs mark takes one positional argument (files) and keyword options", pytrace=False)
    return merged


@pytest.fixture
def vfs_files() -> Seed:
    """The files ``vfs_fs`` holds (a mapping, or a local folder to copy); none unless overridden."""
    return None


@pytest.fixture
def vfs_profile() -> str | Sequence[str]:
    """The profile(s) ``vfs_client`` serves."""
    return "default"


@pytest.fixture
def vfs_backend() -> str:
    """Where ``vfs_fs`` keeps the files: "memory", "local" or "s3"."""
    return "memory"


@pytest.fixture(scope="session")
def vfs_s3_endpoint() -> Iterator[str]:
    """The S3 endpoint for the "s3" backend: moto's server on loopback, for the whole session."""
    from vfs_mcp.testing import moto_s3

    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture
def vfs_fs(request: pytest.FixtureRequest, vfs_files: Seed, vfs_backend: str) -> Iterator[HarnessFS]:
    """A fresh mount holding the test's files, reached directly."""
    from vfs_mcp.testing import local_fs, memory_fs, s3_fs

    options = _options(request)
    files = options.get("files", vfs_files)
    backend = options.get("backend", vfs_backend)
    read_only = bool(options.get("read_only", False))
    if backend == "memory":
        yield memory_fs(files, read_only=read_only)
    elif backend == "local":
        tmp: os.PathLike[str] = request.getfixturevalue("tmp_path")
        yield local_fs(os.path.join(tmp, "vfs"), files, read_only=read_only)
    elif backend == "s3":
        endpoint: str = request.getfixturevalue("vfs_s3_endpoint")
        bucket = f"vfs-test-{os.getpid()}-{next(_buckets)}"
        fs = s3_fs(bucket, files, endpoint_url=endpoint, read_only=read_only)
        yield fs
        fs.mount.fs.rm(bucket, recursive=True)  # the endpoint may outlive the session: leave nothing behind
    else:
        pytest.fail(f"unknown vfs backend {backend!r}; choose one of {', '.join(BACKENDS)}", pytrace=False)


@pytest.fixture
def vfs_person() -> Person:
    """The person the server asks before a destructive change: declines unless told otherwise."""
    from vfs_mcp.testing import Person

    return Person("decline")


@pytest.fixture
async def vfs_client(
    request: pytest.FixtureRequest, vfs_fs: HarnessFS, vfs_profile: str | Sequence[str]
) -> AsyncIterator[VfsClient]:
    """A client of a new server over ``vfs_fs``, connected for the test."""
    from vfs_mcp.testing import connect

    options = {k: v for k, v in _options(request).items() if k not in _MOUNT_KEYS}
    profile = options.pop("profile", vfs_profile)
    if "vfs_person" in request.fixturenames:
        options.setdefault("confirm", "destructive")
        options["answer"] = request.getfixturevalue("vfs_person")
    client = connect(vfs_fs, profile=profile, **options)
    if "anyio_backend" in request.fixturenames:
        async with client:
            yield client
    else:
        async with _own_task(client):
            yield client


@asynccontextmanager
async def _own_task(client: VfsClient) -> AsyncIterator[VfsClient]:
    """Keep ``client`` connected from a task of its own.

    pytest-asyncio runs a fixture's setup and teardown in two different tasks, and the
    client's task group must be left in the task that entered it.
    """
    connected = asyncio.Event()
    done = asyncio.Event()

    async def host() -> None:
        async with client:
            connected.set()
            await done.wait()

    task = asyncio.get_running_loop().create_task(host())
    waiter = asyncio.ensure_future(connected.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # raises why the client could not connect
    try:
        yield client
    finally:
        done.set()
        await task
