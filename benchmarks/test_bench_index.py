"""grep over a bucket with the content index: what a second search costs, counted at the proxy.

moto's S3 server runs in a process of its own (``moto_bucket.py``) behind the 20 ms latency
proxy; the state store is a second bucket on it (as replicas share one), reached directly (the
proxy relays no PUT), its requests counted as botocore sends them. ``VFS_BENCH_INDEX_OBJECTS`` objects of
source text (``SourceTree``: median 10 KB; 10,000 is the issue's size, about 150 MB; 500
quick: 5 changed behind its back, 5 planted hits a pattern, one listing page, as at 1,000).
Asserted, in requests (never seconds):

| search | requests at most |
|---|---|
| the first, indexing on the side | what the scan sends: the listing's pages and a GET an object |
| the second, a literal and a regex with literal parts | the listing, one listing of the index, a GET a file that matches |
| after 1 % of the objects changed behind its back | the same plus a GET a changed object |
| another replica's first, over the same state store | the same plus a GET a segment of the index |

Printed beside them: each search's seconds against the scan's and against one listing. Writes
through the server are not timed here (the proxy relays no PUT): that a grep after an edit reads
nothing it cannot match is asserted in request counts by tests/ops/test_grep_index.py.
Requests to ``instances/`` (each replica's lease, renewed by a thread every 10 s) are not the
search's and are left out.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import REGEX, S3_CREDENTIALS, S3_LATENCY, Scale, SourceTree, s3fs_client
from latency_proxy import LatencyProxy
from moto_bucket import serving

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import ObjectState
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.search import index
from vfs_mcp.ops.search.grep import GrepQuery, grep_files
from vfs_mcp.ops.search.query import GrepResult

DATA, STATE = "vfs-index-data", "vfs-index-state"
PAGE = 1000
LITERAL = "legacy_quota_override"
EXPORTS = r'fetch\("/api/v1/export", deadline_ms = \d{5,}\)'
"""The planted regex lines, by a regex with literal parts only they hold (``REGEX``'s literal,
``deadline_ms = ``, is on lines of every file: the index cannot narrow it, and says so by
reading every object, as the scan does)."""


@dataclass
class Bench:
    tree: SourceTree
    proxy: LatencyProxy
    port: int
    state: str

    @property
    def pages(self) -> int:
        return math.ceil(self.tree.count / PAGE)

    def __post_init__(self) -> None:
        self.state_sent: list[str] = []

    def vfs(self, state: str | None = None) -> JailedFS:
        """A fresh server's view: its own S3 client, its own state store client (straight to
        moto: the proxy relays no PUT, which botocore sends with ``Expect: 100-continue``;
        its requests are counted as botocore sends them)."""
        options = {"endpoint_url": self.proxy.url, **S3_CREDENTIALS}
        vfs = JailedFS(Jail(open_mounts([MountSpec(f"s3://{DATA}", options=options)])))
        store = ObjectState(state or self.state, {"endpoint_url": f"http://127.0.0.1:{self.port}", **S3_CREDENTIALS})
        fs: Any = store.fs
        fs.connect()
        fs.s3.meta.events.register("before-send.s3", self._sent)
        changes.attach(vfs, log.ChangeLog(store))
        return vfs

    def _sent(self, request: Any, **_: Any) -> None:
        self.state_sent.append(f"{request.method} {request.url.split('/', 3)[3]}")

    def reset(self) -> None:
        self.proxy.reset()
        self.state_sent.clear()

    def requests(self) -> list[str]:
        """The requests since the last reset: the mount's at the proxy, the state store's as sent."""
        state = [f"{line.split(' ', 1)[0]} /{line.split(' ', 1)[1]} HTTP/1.1" for line in self.state_sent]
        return [line for line in [*self.proxy.request_lines, *state] if "/instances/" not in line]


@pytest.fixture(scope="module")
def bench(scale: Scale, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    count = int(os.environ.get("VFS_BENCH_INDEX_OBJECTS") or (500 if scale.quick else 10_000))
    tree = SourceTree(count, literal_hits=5, regex_hits=5, duplicate_pairs=0)
    spec = {DATA: {rel: data.decode() for rel, data in tree.files()}, STATE: {}}
    with serving(spec, tmp_path_factory.mktemp("index")) as port:
        proxy = LatencyProxy("127.0.0.1", port, S3_LATENCY)
        proxy.start()
        try:
            yield Bench(tree, proxy, port, f"s3://{STATE}/state")
        finally:
            proxy.stop()


def search(bench: Bench, vfs: JailedFS, pattern: str, use_index: bool = True) -> tuple[float, list[str], GrepResult]:
    bench.reset()
    started = time.perf_counter()
    result = grep_files(
        vfs, ".", GrepQuery(pattern, is_regex=pattern in (REGEX, EXPORTS), max_results=100), use_index=use_index
    )
    return time.perf_counter() - started, bench.requests(), result


def kinds(requests: list[str]) -> dict[str, int]:
    out = {"data lists": 0, "data gets": 0, "index lists": 0, "index gets": 0, "other": 0}
    for line in requests:
        method, target, _ = line.split(" ", 2)
        if target.startswith(f"/{STATE}") and not ("/index/" in target or "%2Findex" in target):
            out["other"] += method != "GET"  # the state store's leases and recovery, on a thread of their own
            continue
        where = "index" if target.startswith(f"/{STATE}") else "data"
        if method == "GET" and "list-type=2" in target:
            out[f"{where} lists"] += 1
        elif method == "GET":
            out[f"{where} gets"] += 1
        else:
            out["other"] += 1
    return out


def show(label: str, seconds: float, requests: list[str], against: dict[str, float]) -> None:
    ratios = ", ".join(f"{seconds / base:.2f}x {name}" for name, base in against.items())
    print(f"\n{label}: {seconds:.2f} s ({ratios}); requests {kinds(requests)}")


def test_a_second_search_costs_the_listing_and_the_matches(bench: Bench) -> None:
    tree = bench.tree
    listing = min(_timed(lambda: s3fs_client(bench.proxy.url).find(DATA)) for _ in range(3))
    scan_seconds, scan_requests, scanned = search(bench, bench.vfs(f"s3://{STATE}/scan"), LITERAL, use_index=False)
    assert kinds(scan_requests)["data gets"] == tree.count
    base = {"scan": scan_seconds, "listing": listing}
    print(f"\n{tree.count:,} objects: one listing {listing:.2f} s, the scan {scan_seconds:.2f} s")

    vfs = bench.vfs()
    seconds, requests, first = search(bench, vfs, LITERAL)
    show("first indexed search", seconds, requests, base)
    assert first == scanned
    counted = kinds(requests)
    assert counted["data gets"] == tree.count and counted["data lists"] == bench.pages
    assert index.settle(vfs, timeout=3600)

    for pattern, planted in ((LITERAL, tree.literal_at), (EXPORTS, tree.regex_at)):
        seconds, requests, second = search(bench, vfs, pattern)
        show(f"second search of {pattern!r}", seconds, requests, base)
        assert [m.path for m in second.matches] == [f"s3://{DATA}/{tree.path(i)}" for i in planted]
        counted = kinds(requests)
        assert counted == {
            "data lists": bench.pages,
            "data gets": len(planted),
            "index lists": 1,
            "index gets": 0,
            "other": 0,
        }

    seconds, requests, _ = search(bench, vfs, REGEX)
    show(f"a regex whose literal every file holds, {REGEX!r}", seconds, requests, base)
    assert kinds(requests)["data gets"] == tree.count

    changed = list(range(0, tree.count, 100))  # 1 %, behind the server's back (straight to moto)
    admin = s3fs_client(f"http://127.0.0.1:{bench.port}")
    for i in changed:
        admin.pipe_file(f"{DATA}/{tree.path(i)}", tree.content(i) + b"\n# changed behind its back\n")
    seconds, requests, after = search(bench, vfs, LITERAL)
    show("after 1 % changed", seconds, requests, base)
    assert [m.path for m in after.matches] == [f"s3://{DATA}/{tree.path(i)}" for i in tree.literal_at]
    counted = kinds(requests)
    assert counted["data lists"] == bench.pages and counted["index lists"] == 1 and counted["index gets"] == 0
    assert counted["data gets"] <= len(changed) + len(tree.literal_at)
    assert index.settle(vfs, timeout=3600)

    other = bench.vfs()  # another replica over the same state store
    seconds, requests, served = search(bench, other, LITERAL)
    show("another replica's first search", seconds, requests, base)
    assert served == after
    counted = kinds(requests)
    direct = {"endpoint_url": f"http://127.0.0.1:{bench.port}", **S3_CREDENTIALS}
    listed = ObjectState(bench.state, direct).listing("index")
    segments, sizes = len(listed), sum(item.size for item in listed)
    assert counted["data gets"] == len(tree.literal_at) and counted["index gets"] == segments
    text = sum(len(tree.content(i)) for i in range(tree.count))
    print(f"\nindex: {segments} segments, {sizes / 1e6:.1f} MB for {text / 1e6:.1f} MB of text ({sizes / text:.0%})")
    print(f"figures: {index.stats_of(vfs)}")


def _timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started
