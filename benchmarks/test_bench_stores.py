"""The one-listing promise on every object store: a tree or size of N keys costs about
N / page-size list requests, counted at a latency proxy in front of each real server.

S3 on moto is measured in ``test_bench_search.py`` (group 7); here the same tree of
``Scale.s3_keys`` objects (``dNN/sNN/fNNN.txt``) sits on s3rver, fake-gcs-server and Azurite
(tests/emulators.py), uploaded around the proxy. Each call is asserted to send one list
request a page and no other request (the listing shows the root is there); times are
printed, never asserted
(``pytest benchmarks -s -k stores``).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import S3_LATENCY

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.trees.analytics import calculate_directory_size
from vfs_mcp.ops.trees.directory_tree import directory_tree
from vfs_mcp_backends import create_mount

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the tests' emulator helpers
import emulators
from latency_proxy import LatencyProxy

if TYPE_CHECKING:
    from conftest import Scale

BUCKET = "vfs-bench-stores"


def _split(request_line: str) -> tuple[str, str, str]:
    method, target, _ = request_line.split(" ", 2)
    path, _, query = target.partition("?")
    return method, path, query


def s3_list(request_line: str) -> bool:
    """ListObjects (v1 or v2): a GET of the bucket itself with a query."""
    method, path, query = _split(request_line)
    return method == "GET" and bool(query) and "/" not in path.strip("/")


def gcs_list(request_line: str) -> bool:
    """objects.list: GET /storage/v1/b/BUCKET/o (a single object is .../o/NAME)."""
    method, path, _ = _split(request_line)
    return method == "GET" and path.endswith("/o")


def azure_list(request_line: str) -> bool:
    """List Blobs: a GET with comp=list."""
    method, _, query = _split(request_line)
    return method == "GET" and "comp=list" in query.split("&")


@dataclass(frozen=True)
class Store:
    scheme: str
    page: int
    """Keys a list request returns at most (the service's default page)."""
    is_list: Callable[[str], bool]
    start: Callable[[Path], emulators.Emulator]
    options: Callable[[str], dict[str, Any]]
    """Mount options that reach the server at a base URL."""


S3RVER_OPTIONS = {"key": emulators.S3RVER_KEY, "secret": emulators.S3RVER_KEY, "conditional_writes": False}
STORES = {
    "s3rver": Store("s3", 1000, s3_list, emulators.start_s3rver, lambda url: {"endpoint_url": url, **S3RVER_OPTIONS}),
    "gcs": Store("gs", 1000, gcs_list, emulators.start_fake_gcs, lambda url: {"endpoint_url": url}),
    "azure": Store(
        "az",
        5000,
        azure_list,
        emulators.start_azurite,
        lambda url: {"connection_string": emulators.azurite_connection_string(f"{url}/{emulators.AZURITE_ACCOUNT}")},
    ),
}


@dataclass
class StoreTree:
    name: str
    store: Store
    proxy: LatencyProxy
    keys: int

    def new_vfs(self) -> JailedFS:
        """A fresh mount (no cached listing) of the tree, reached through the proxy."""
        spec = MountSpec(f"{self.store.scheme}://{BUCKET}/tree", options=self.store.options(self.proxy.url))
        return JailedFS(Jail(open_mounts([spec])))

    @property
    def bound(self) -> int:
        """One list request a page of the prefix's objects (the files and the root's marker)."""
        return math.ceil((self.keys + 1) / self.store.page)


@pytest.fixture(scope="module", params=list(STORES))
def store_tree(
    request: pytest.FixtureRequest, scale: Scale, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StoreTree]:
    store = STORES[request.param]
    try:
        emulator = store.start(tmp_path_factory.mktemp(request.param))
    except emulators.Unavailable as exc:
        pytest.skip(str(exc))
    proxy = LatencyProxy("127.0.0.1", emulator.port, S3_LATENCY)
    try:
        direct = emulator.url.removesuffix(f"/{emulators.AZURITE_ACCOUNT}")
        admin = create_mount(f"{store.scheme}://{BUCKET}", store.options(direct)).fs
        admin.mkdir(BUCKET)
        keys = scale.s3_keys
        tree = {f"{BUCKET}/tree/d{i // 500:02d}/s{i // 50 % 10:02d}/f{i % 50:03d}.txt": b"x" * 100 for i in range(keys)}
        # The root as a marker, as create_directory makes it: s3rver cannot see a prefix whose
        # keys all lie two levels down (tests/conftest.py, EMULATOR_BUGS).
        admin.pipe({f"{BUCKET}/tree/": b"", **tree})
        proxy.start()
        yield StoreTree(request.param, store, proxy, keys)
    finally:
        if proxy.url:
            proxy.stop()
        emulator.stop()


@pytest.mark.parametrize(
    "operation",
    [
        pytest.param(lambda vfs: directory_tree(vfs, ".", max_depth=100, max_entries=10**6), id="directory_tree"),
        pytest.param(lambda vfs: calculate_directory_size(vfs, "."), id="size"),
    ],
)
def test_list_requests_of_a_tree_and_a_size(store_tree: StoreTree, operation: Callable[[JailedFS], Any]) -> None:
    vfs = store_tree.new_vfs()
    store_tree.proxy.reset()
    started = time.perf_counter()
    result = operation(vfs)
    seconds = time.perf_counter() - started
    assert result.files == store_tree.keys
    lists, total = store_tree.proxy.count(store_tree.store.is_list), store_tree.proxy.count()
    print(
        f"\n{store_tree.name}: {store_tree.keys:,} keys, {lists} list requests ({total} in all), {seconds:.2f} s"
        f" (bound: {store_tree.bound} and no other request, a page is {store_tree.store.page:,} keys)"
    )
    assert total == lists <= store_tree.bound
