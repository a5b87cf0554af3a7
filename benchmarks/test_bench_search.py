"""grep, trees and analytics over big trees and S3, each timed beside its baseline in the same run.

Targets (README): grep through the ripgrep engine ≤ 1.5x ``rg --json`` run directly with the
same options, and the Python engine over a memory mount ≤ 4x that rg; grep over S3 objects
behind 20 ms of latency ≤ 1.1x a 16-thread GET loop and ≥ 8x faster than fetching them one
by one; ``directory_tree`` and ``calculate_directory_size`` of 5,000 S3 keys in their listing's
5 pages and no other request; ``find_duplicate_files``
reading ≤ 5% of the tree. Timings are reported, never asserted: the ``*_ratio`` tests print
one-shot ratios (``pytest benchmarks -s``). Request counts and bytes read are asserted.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pytest
from conftest import RARE_LITERAL, REGEX, s3fs_client

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.search.grep import GrepQuery, GrepResult, grep_files
from vfs_mcp.ops.search.ripgrep import rg_binary
from vfs_mcp.ops.trees.analytics import DuplicatesResult, SizeResult, calculate_directory_size, find_duplicate_files
from vfs_mcp.ops.trees.directory_tree import TreeResult, directory_tree

if TYPE_CHECKING:
    from conftest import LocalTree, S3Data, Scale
    from latency_proxy import LatencyProxy

T = TypeVar("T")
CONTEXT = 2
LIMIT = 100
S3_LIST_PAGE = 1000
BYTES_READ_BOUND = 0.05
# The flags grep_ripgrep passes for a query with default options (no include/exclude/deny
# globs, gitignore off, default max_file_size), without the pattern's own flags.
RG_FLAGS = [
    "--json",
    "--sort",
    "path",
    "--no-config",
    "--text",
    "--hidden",
    "--no-messages",
    "--encoding",
    "utf-8",
    "-g",
    "!.git",
    "-g",
    "!.vfs-mcp-tmp-*",
    "--no-ignore",
    "--max-filesize",
    str(10 * 1024 * 1024),
    "--case-sensitive",
    "-B",
    str(CONTEXT),
    "-A",
    str(CONTEXT),
]


def once(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def show_ratio(label: str, ratio: float, *, at_most: float | None = None, at_least: float | None = None) -> None:
    if at_most is not None:
        target, met = f"≤ {at_most:.3g}x", ratio <= at_most
    else:
        assert at_least is not None
        target, met = f"≥ {at_least:.3g}x", ratio >= at_least
    print(f"\n{label}: {ratio:.3g}x (target {target}: {'met' if met else 'MISSED'})")


# -- 4, 5. grep a 20,000-file tree: ripgrep engine, Python engine on memory, rg itself ----


def literal_query() -> GrepQuery:
    return GrepQuery(pattern=RARE_LITERAL, before=CONTEXT, after=CONTEXT, limit=LIMIT)


def regex_query() -> GrepQuery:
    return GrepQuery(pattern=REGEX, is_regex=True, before=CONTEXT, after=CONTEXT, limit=LIMIT)


def run_rg(tree: LocalTree, query: GrepQuery) -> int:
    """``rg --json`` with grep_ripgrep's flags, its output read as a stream and the process
    killed once ``limit + 1`` matches are out, as grep_ripgrep does; returns the matches seen.
    """
    rg = rg_binary()
    assert rg is not None
    fixed = [] if query.is_regex else ["--fixed-strings"]
    command = [rg, *RG_FLAGS, *fixed, "-e", query.pattern, "--", "."]
    seen = 0
    with subprocess.Popen(
        command, cwd=tree.host, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(b'{"type":"match"'):
                seen += 1
                if seen > LIMIT:
                    break
        proc.kill()
    return seen


def grep(vfs: JailedFS, query: Callable[[], GrepQuery], engine: Literal["auto", "python"] = "auto") -> GrepResult:
    return grep_files(vfs, ".", query(), engine=engine)


def check_literal(tree: LocalTree, result: GrepResult | int) -> None:
    expected = tree.spec.literal_paths()
    if isinstance(result, int):
        assert result == len(expected)
        return
    assert [relative(m.path) for m in result.matches] == expected
    assert all(RARE_LITERAL in m.line and len(m.context_before) == len(m.context_after) == 2 for m in result.matches)
    assert not result.has_more


def check_regex(tree: LocalTree, result: GrepResult | int) -> None:
    if isinstance(result, int):
        assert result == LIMIT + 1
        return
    assert [relative(m.path) for m in result.matches] == tree.spec.regex_paths()[:LIMIT]
    assert result.has_more


def relative(display: str) -> str:
    """A match's path relative to the tree root, whatever the mount shows before it."""
    return re.sub(r"^.*?(?=pkg\d\d/)", "", display)


Check = Callable[["LocalTree", "GrepResult | int"], None]
KINDS: dict[str, tuple[Callable[[], GrepQuery], Check]] = {
    "literal": (literal_query, check_literal),
    "regex": (regex_query, check_regex),
}


def grep_group(kind: str, tree: LocalTree) -> str:
    number = 4 if kind == "literal" else 5
    return f"{number} grep {kind}, {tree.label}: ripgrep engine ≤ 1.5x rg, python engine on memory ≤ 4x rg"


@pytest.mark.parametrize("kind", KINDS)
def test_grep_ripgrep_engine(
    benchmark: Any, kind: str, tree_vfs: JailedFS, source_tree: LocalTree, scale: Scale
) -> None:
    benchmark.group = grep_group(kind, source_tree)
    query, check = KINDS[kind]
    result = benchmark.pedantic(grep, args=(tree_vfs, query), rounds=scale.rounds, warmup_rounds=1)
    assert result.engine == "ripgrep"
    check(source_tree, result)


@pytest.mark.parametrize("kind", KINDS)
def test_grep_python_engine_on_memory(
    benchmark: Any, kind: str, memory_tree_vfs: JailedFS, source_tree: LocalTree, scale: Scale
) -> None:
    benchmark.group = grep_group(kind, source_tree)
    query, check = KINDS[kind]
    result = benchmark.pedantic(grep, args=(memory_tree_vfs, query, "python"), rounds=scale.rounds, warmup_rounds=1)
    assert result.engine == "python"
    check(source_tree, result)


@pytest.mark.parametrize("kind", KINDS)
def test_grep_rg_baseline(benchmark: Any, kind: str, source_tree: LocalTree, scale: Scale) -> None:
    benchmark.group = grep_group(kind, source_tree)
    query, check = KINDS[kind]
    check(source_tree, benchmark.pedantic(run_rg, args=(source_tree, query()), rounds=scale.rounds, warmup_rounds=1))


@pytest.mark.parametrize("kind", KINDS)
def test_grep_ratio(kind: str, tree_vfs: JailedFS, memory_tree_vfs: JailedFS, source_tree: LocalTree) -> None:
    query, check = KINDS[kind]
    run_rg(source_tree, query())  # one untimed run each, so neither pays for a cold cache
    grep(tree_vfs, query)
    rg, seen = once(lambda: run_rg(source_tree, query()))
    ours, result = once(lambda: grep(tree_vfs, query))
    python, in_memory = once(lambda: grep(memory_tree_vfs, query, "python"))
    for checked in (seen, result, in_memory):
        check(source_tree, checked)
    show_ratio(f"grep {kind}: ripgrep engine / rg ({ours * 1e3:.0f} ms / {rg * 1e3:.0f} ms)", ours / rg, at_most=1.5)
    show_ratio(f"grep {kind}: python engine on memory / rg ({python * 1e3:.0f} ms)", python / rg, at_most=4)


# -- 6. grep S3 objects behind 20 ms of latency: Python engine vs a 16-thread GET loop ------

GET_THREADS = 16


def s3_grep_group(s3_data: S3Data) -> str:
    return (
        f"6 grep {s3_data.grep_tree.count} S3 objects, +20 ms a request:"
        f" python engine ≤ 1.1x a {GET_THREADS}-thread GET loop, ≥ 8x one by one"
    )


def grep_s3(s3_data: S3Data, proxy: LatencyProxy) -> GrepResult:
    vfs = s3_data.new_vfs(s3_data.grep_prefix, proxy.url)
    return grep_files(vfs, ".", literal_query(), engine="python")


def matching(key: str, data: bytes) -> list[str]:
    """``key`` once for each line of ``data`` holding the literal."""
    return [key for line in data.decode("utf-8", "replace").splitlines() if RARE_LITERAL in line]


def fetch_one_by_one(s3_data: S3Data, proxy: LatencyProxy) -> list[str]:
    """One listing, then each object fetched in turn and scanned; the paths of matching lines."""
    fs = s3fs_client(proxy.url)
    return [hit for key in fs.find(s3_data.grep_prefix) for hit in matching(key, fs.cat_file(key))]


def fetch_in_threads(s3_data: S3Data, proxy: LatencyProxy) -> list[str]:
    """One listing, then the objects fetched by 16 threads (a client pooling 16 connections)
    and scanned as they arrive, in key order; the paths of matching lines."""
    fs = s3fs_client(proxy.url, config_kwargs={"max_pool_connections": GET_THREADS})
    keys = fs.find(s3_data.grep_prefix)
    with ThreadPoolExecutor(GET_THREADS) as pool:
        return [hit for key, data in zip(keys, pool.map(fs.cat_file, keys), strict=True) for hit in matching(key, data)]


def check_s3_grep(s3_data: S3Data, result: GrepResult | list[str]) -> None:
    expected = s3_data.grep_tree.literal_paths()
    found = [m.path for m in result.matches] if isinstance(result, GrepResult) else result
    assert [relative(path) for path in found] == expected


def test_s3_grep_python_engine(benchmark: Any, s3_data: S3Data, s3_proxy: LatencyProxy, scale: Scale) -> None:
    benchmark.group = s3_grep_group(s3_data)
    result = benchmark.pedantic(grep_s3, args=(s3_data, s3_proxy), rounds=scale.s3_rounds)
    check_s3_grep(s3_data, result)


def test_s3_grep_one_by_one_baseline(benchmark: Any, s3_data: S3Data, s3_proxy: LatencyProxy, scale: Scale) -> None:
    benchmark.group = s3_grep_group(s3_data)
    check_s3_grep(s3_data, benchmark.pedantic(fetch_one_by_one, args=(s3_data, s3_proxy), rounds=scale.s3_rounds))


def test_s3_grep_threaded_get_baseline(benchmark: Any, s3_data: S3Data, s3_proxy: LatencyProxy, scale: Scale) -> None:
    benchmark.group = s3_grep_group(s3_data)
    check_s3_grep(s3_data, benchmark.pedantic(fetch_in_threads, args=(s3_data, s3_proxy), rounds=scale.s3_rounds))


def test_s3_grep_ratio(s3_data: S3Data, s3_proxy: LatencyProxy) -> None:
    timed: dict[str, tuple[float, int]] = {}
    for name, run in [("ours", grep_s3), ("threads", fetch_in_threads), ("one by one", fetch_one_by_one)]:
        s3_proxy.reset()
        seconds, result = once(lambda run=run: run(s3_data, s3_proxy))  # type: ignore[misc]
        check_s3_grep(s3_data, result)
        timed[name] = seconds, s3_proxy.count()
    (ours, our_requests), (threads, thread_requests), (plain, plain_requests) = timed.values()
    show_ratio(
        f"S3 grep: python engine / {GET_THREADS}-thread GET loop ({ours:.2f} s, {our_requests} requests"
        f" / {threads:.2f} s, {thread_requests} requests)",
        ours / threads,
        at_most=1.1,
    )
    show_ratio(
        f"S3 grep: one by one / python engine ({plain:.2f} s, {plain_requests} requests)", plain / ours, at_least=8
    )


# -- 7. trees and sizes of 5,000 S3 keys: list requests, and time beside one paged find ----


def is_list_request(request_line: str) -> bool:
    """A GET of the bucket itself (ListObjects, v1 or v2), not of a key."""
    method, target, _ = request_line.split(" ", 2)
    return method == "GET" and "?" in target and "/" not in target.split("?", 1)[0].strip("/")


def list_bound(s3_data: S3Data) -> int:
    """One request a page of 1,000 keys: 5 for 5,000 keys (the listing shows the root is there)."""
    return math.ceil(s3_data.tree_keys / S3_LIST_PAGE)


def s3_tree_group(s3_data: S3Data) -> str:
    return f"7 {s3_data.tree_keys:,} S3 keys, +20 ms a request: tree and size in {list_bound(s3_data)} list requests, no more"


def s3_tree(s3_data: S3Data, proxy: LatencyProxy) -> TreeResult:
    vfs = s3_data.new_vfs(s3_data.tree_prefix, proxy.url)
    return directory_tree(vfs, ".", max_depth=100, max_entries=10**6)


def s3_size(s3_data: S3Data, proxy: LatencyProxy) -> SizeResult:
    return calculate_directory_size(s3_data.new_vfs(s3_data.tree_prefix, proxy.url), ".")


def s3_find(s3_data: S3Data, proxy: LatencyProxy) -> list[str]:
    files: list[str] = s3fs_client(proxy.url).find(s3_data.tree_prefix)
    return files


def test_s3_directory_tree(benchmark: Any, s3_data: S3Data, s3_proxy: LatencyProxy, scale: Scale) -> None:
    benchmark.group = s3_tree_group(s3_data)
    result = benchmark.pedantic(s3_tree, args=(s3_data, s3_proxy), rounds=scale.s3_rounds)
    assert (result.files, result.truncated) == (s3_data.tree_keys, False)


def test_s3_directory_size(benchmark: Any, s3_data: S3Data, s3_proxy: LatencyProxy, scale: Scale) -> None:
    benchmark.group = s3_tree_group(s3_data)
    result = benchmark.pedantic(s3_size, args=(s3_data, s3_proxy), rounds=scale.s3_rounds)
    assert (result.files, result.total_bytes) == (s3_data.tree_keys, 100 * s3_data.tree_keys)


def test_s3_one_paged_find_baseline(benchmark: Any, s3_data: S3Data, s3_proxy: LatencyProxy, scale: Scale) -> None:
    benchmark.group = s3_tree_group(s3_data)
    assert len(benchmark.pedantic(s3_find, args=(s3_data, s3_proxy), rounds=scale.s3_rounds)) == s3_data.tree_keys


@pytest.mark.parametrize(
    "operation",
    [
        pytest.param(s3_tree, id="directory_tree"),
        pytest.param(s3_size, id="size"),
        pytest.param(s3_find, id="s3fs_find"),
    ],
)
def test_s3_list_requests(
    operation: Callable[[S3Data, LatencyProxy], object], s3_data: S3Data, s3_proxy: LatencyProxy
) -> None:
    s3_proxy.reset()
    seconds, _ = once(lambda: operation(s3_data, s3_proxy))
    lists, total = s3_proxy.count(is_list_request), s3_proxy.count()
    bound = list_bound(s3_data)
    print(
        f"\n{operation.__name__} of {s3_data.tree_keys:,} keys: {lists} list requests ({total} in all),"
        f" {seconds:.2f} s (bound: {bound} list requests and no other: {'met' if total == lists <= bound else 'MISSED'})"
    )
    assert total == lists <= bound


# -- 8. find_duplicate_files: bytes read, and time beside hashing every file --------------


def dup_group(tree: LocalTree) -> str:
    return f"8 find_duplicate_files, {tree.label}, 100 duplicate pairs: reads ≤ 5% of the tree"


def find_duplicates(vfs: JailedFS, tree: LocalTree) -> DuplicatesResult:
    return find_duplicate_files(vfs, ".", max_files=tree.spec.count)


def hash_every_file(tree: LocalTree) -> list[tuple[str, ...]]:
    """The plain way: read and hash every file, then group by digest."""
    by_digest: dict[bytes, list[str]] = defaultdict(list)
    for folder, _, names in os.walk(tree.host):
        for name in names:
            path = Path(folder, name)
            by_digest[hashlib.sha256(path.read_bytes()).digest()].append(path.relative_to(tree.host).as_posix())
    return sorted(tuple(sorted(paths)) for paths in by_digest.values() if len(paths) > 1)


def check_duplicates(tree: LocalTree, result: DuplicatesResult | list[tuple[str, ...]]) -> None:
    if isinstance(result, DuplicatesResult):
        assert not result.truncated and result.files_scanned == tree.spec.count
        pairs = sorted(tuple(sorted(relative(p) for p in g.paths)) for g in result.groups)
    else:
        pairs = list(result)
    assert pairs == tree.spec.duplicate_pairs_paths()


def test_find_duplicate_files(benchmark: Any, tree_vfs: JailedFS, source_tree: LocalTree, scale: Scale) -> None:
    benchmark.group = dup_group(source_tree)
    result = benchmark.pedantic(find_duplicates, args=(tree_vfs, source_tree), rounds=scale.rounds, warmup_rounds=1)
    check_duplicates(source_tree, result)


def test_hash_every_file_baseline(benchmark: Any, source_tree: LocalTree, scale: Scale) -> None:
    benchmark.group = dup_group(source_tree)
    check_duplicates(source_tree, benchmark.pedantic(hash_every_file, args=(source_tree,), rounds=scale.rounds))


def test_find_duplicate_files_ratio(tree_vfs: JailedFS, source_tree: LocalTree) -> None:
    ours, result = once(lambda: find_duplicates(tree_vfs, source_tree))
    plain, pairs = once(lambda: hash_every_file(source_tree))
    check_duplicates(source_tree, result)
    check_duplicates(source_tree, pairs)
    print(
        f"\nfind_duplicate_files / hashing every file ({ours * 1e3:.0f} ms / {plain * 1e3:.0f} ms): {ours / plain:.2f}x;"
        f" read {result.bytes_read / 10**6:.1f} MB of {source_tree.total_bytes / 10**6:.1f} MB"
    )


def test_find_duplicate_files_bytes_read(tree_vfs: JailedFS, source_tree: LocalTree) -> None:
    share = find_duplicates(tree_vfs, source_tree).bytes_read / source_tree.total_bytes
    print(f"\nfind_duplicate_files read {share:.1%} of the tree (bound ≤ {BYTES_READ_BOUND:.0%})")
    assert share <= BYTES_READ_BOUND
