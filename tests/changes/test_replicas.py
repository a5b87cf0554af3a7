"""Replicas for real: two `vfs-mcp --transport http` servers over one bucket (moto's S3 server)
behind HAProxy. 8 clients editing the same few objects at once: every edit reported applied is
in the final objects; every other one said CONFLICT; none vanished. With one state store on the
bucket, a change made through one replica is undone by its id through the other.

Run with ``-s`` to see the figures (edits, conflicts, latency) that benchmarks/README.md quotes.
"""

from __future__ import annotations

import random
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import fsspec
import pytest
from emulators import Unavailable, unavailable
from mcp import Client
from processes import RawStdio, load_balancer, mcp_client, vfs_mcp_http

from vfs_mcp.profiles.results import data_of, error_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OBJECTS = 4
EDITS_PER_OBJECT = 100
CLIENTS = 8


@pytest.mark.parametrize(
    ("sticky", "flags"),
    [(False, ("--stateless",)), (True, ())],
    ids=["stateless-round-robin", "sessions-sticky-on-mcp-session-id"],
)
async def test_replicas_behind_haproxy_lose_no_edit(
    s3_endpoint: str, tmp_path: Path, sticky: bool, flags: tuple[str, ...]
) -> None:
    env = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    bucket = f"replicas-{uuid.uuid4().hex[:10]}"
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint, key="testing", secret="testing", skip_instance_cache=True)
    fs.mkdir(bucket)
    for n in range(OBJECTS):
        fs.pipe_file(
            f"{bucket}/doc-{n}.txt", "".join(f"marker {n}-{i:03d}\n" for i in range(EDITS_PER_OBJECT)).encode()
        )
    edits = [(n, i) for i in range(EDITS_PER_OBJECT) for n in range(OBJECTS)]
    outcomes: dict[tuple[int, int], str | None] = {}
    latencies: list[float] = []

    async def edit(client: Client, n: int, i: int) -> None:
        started = time.perf_counter()
        change = [{"oldText": f"marker {n}-{i:03d}\n", "newText": f"EDITED {n}-{i:03d}\n"}]
        error = error_of(await client.call_tool("edit_file", {"path": f"doc-{n}.txt", "edits": change}))
        latencies.append(time.perf_counter() - started)
        outcomes[(n, i)] = None if error is None else str(error["code"])

    async def worker(number: int, url: str) -> None:
        async with mcp_client(url) as client:
            for n, i in edits[number::CLIENTS]:
                await edit(client, n, i)

    root = f"s3://{bucket}"
    with ExitStack() as stack:
        replicas = [stack.enter_context(vfs_mcp_http(root, env, *flags)) for _ in range(2)]
        try:
            port = stack.enter_context(load_balancer(replicas, sticky, tmp_path))
        except Unavailable as exc:
            unavailable(exc)
        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for number in range(CLIENTS):
                    group.start_soon(worker, number, f"http://127.0.0.1:{port}/mcp")

    fs.invalidate_cache()
    finals = {n: fs.cat_file(f"{bucket}/doc-{n}.txt").decode() for n in range(OBJECTS)}
    applied = [key for key, outcome in outcomes.items() if outcome is None]
    lost = [(n, i) for n, i in applied if f"EDITED {n}-{i:03d}\n" not in finals[n]]
    phantom = [(n, i) for (n, i), o in outcomes.items() if o is not None and f"EDITED {n}-{i:03d}\n" in finals[n]]
    ordered = sorted(latencies)
    print(
        f"\n{'sticky sessions' if sticky else 'stateless'}: {len(outcomes)} edits, {len(applied)} applied, "
        f"{len(outcomes) - len(applied)} CONFLICT; p50 {ordered[len(ordered) // 2] * 1000:.0f} ms, "
        f"p99 {ordered[int(len(ordered) * 0.99)] * 1000:.0f} ms"
    )
    assert len(outcomes) == OBJECTS * EDITS_PER_OBJECT
    assert set(outcomes.values()) <= {None, "CONFLICT"}
    assert lost == [] and phantom == []


CHANGES = 64
"""Changes made and undone by id: 8 per client, each client editing through both replicas (round
robin) and undoing through one chosen at random while the others hold the mount's lock. An undo
finds its record by id in the shared store the same way at any count: more changes only repeat
these (200 made this test two minutes of CI)."""
BUSY_TRIES = 3
"""Tries of an undo that finds the mount's write lock held past its wait (8 clients undo at once,
each holding it while it restores): CONFLICT, nothing changed, "try again" — a client tries again."""


async def test_every_change_made_through_one_replica_is_undone_by_its_id_through_any(
    s3_endpoint: str, tmp_path: Path
) -> None:
    """Two replicas behind HAProxy (round robin, no stickiness), one state store on the bucket,
    clients of the 2026-07-28 era (no session): ``CHANGES`` edits, each undone by its change id
    through a replica chosen at random."""
    env = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    bucket = f"undo-{uuid.uuid4().hex[:10]}"
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint, key="testing", secret="testing", skip_instance_cache=True)
    fs.mkdir(bucket)
    for n in range(CHANGES):
        fs.pipe_file(f"{bucket}/data/doc-{n:03d}.txt", f"original {n}\n".encode())
    flags = ("--state", f"s3://{bucket}/.vfs-mcp-state")
    ids: dict[int, str] = {}
    busy: list[int] = []
    undone: dict[int, str | None] = {}
    undos: dict[int, str] = {}
    chooser = random.Random(7)

    async def call(url: str, tool: str, arguments: dict[str, Any]) -> Any:
        async with Client(url) as client:  # a connection per call, as a client without a session makes
            return await client.call_tool(tool, arguments)

    with ExitStack() as stack:
        replicas = [stack.enter_context(vfs_mcp_http(f"s3://{bucket}/data", env, *flags)) for _ in range(2)]
        try:
            port = stack.enter_context(load_balancer(replicas, False, tmp_path))
        except Unavailable as exc:
            unavailable(exc)
        started = time.perf_counter()

        async def edit(worker: int) -> None:
            for n in range(worker, CHANGES, CLIENTS):
                change = [{"oldText": f"original {n}", "newText": f"edited {n}"}]
                result = await call(
                    f"http://127.0.0.1:{port}/mcp", "edit_file", {"path": f"doc-{n:03d}.txt", "edits": change}
                )
                ids[n] = data_of(result)["change_id"]  # type: ignore[index]

        async def take_back(worker: int) -> None:
            for n in range(worker, CHANGES, CLIENTS):
                for _ in range(BUSY_TRIES):  # the lock's "nothing was changed, try again", as a client does
                    url = f"http://127.0.0.1:{chooser.choice(replicas)}/mcp"
                    result = await call(url, "undo", {"change_id": ids[n]})
                    error = error_of(result)
                    if error is None or "holds the write lock" not in str(error["message"]):
                        break
                    busy.append(n)
                undone[n] = None if error is None else str(error["message"])
                undos[n] = data_of(result)["change_id"] if error is None else ""  # type: ignore[index]

        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for worker in range(CLIENTS):
                    group.start_soon(edit, worker)
            edited = time.perf_counter()
            async with anyio.create_task_group() as group:
                for worker in range(CLIENTS):
                    group.start_soon(take_back, worker)
        finished = time.perf_counter()

    fs.invalidate_cache()
    lost = [n for n in range(CHANGES) if fs.cat_file(f"{bucket}/data/doc-{n:03d}.txt") != f"original {n}\n".encode()]
    print(
        f"\n{CHANGES} edits through HAProxy in {edited - started:.1f} s, each undone by id through a random "
        f"replica in {finished - edited:.1f} s; {sum(v is None for v in undone.values())} undone "
        f"({len(busy)} tried again after a busy lock)"
    )
    assert len(ids) == CHANGES and {n: e for n, e in undone.items() if e is not None} == {}
    assert lost == []
    records = fs.find(f"{bucket}/.vfs-mcp-state/changes")
    assert sorted(name.rsplit("/", 1)[-1] for name in records) == sorted(f"{i}.rec" for i in undos.values())
    assert fs.find(f"{bucket}/.vfs-mcp-state/pending") == [], "an undone change leaves the log; its undo is its own"


async def test_a_change_a_dead_replica_left_half_made_is_taken_back_by_a_live_one_within_its_lease(
    s3_endpoint: str, tmp_path: Path
) -> None:
    """A replica killed (SIGKILL) while it copies a folder: the other, which keeps running, finds
    its lease run out and takes the copy back — no restart, no request needed."""
    env = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "VFS_MCP_LEASE_SECONDS": "2",
    }
    bucket = f"lease-{uuid.uuid4().hex[:10]}"
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint, key="testing", secret="testing", skip_instance_cache=True)
    fs.mkdir(bucket)
    for n in range(60):
        fs.pipe_file(f"{bucket}/data/tree/f{n:02d}.txt", f"file {n}\n".encode() * 2000)
    root, flags = f"s3://{bucket}/data", ("--state", f"s3://{bucket}/.vfs-mcp-state")
    with vfs_mcp_http(root, env, *flags) as survivor_port:
        with RawStdio(root, *flags, env=env) as doomed:
            doomed.start_call("copy_file", source="tree", destination="copy", recursive=True)
            deadline = time.monotonic() + 60
            while not fs.find(f"{bucket}/data/copy") and time.monotonic() < deadline:
                fs.invalidate_cache()
                time.sleep(0.05)
            doomed.proc.kill()  # SIGKILL, mid-copy
            doomed.proc.wait()
        fs.invalidate_cache()
        copied_when_killed = len(fs.find(f"{bucket}/data/copy"))
        while time.monotonic() < deadline:
            fs.invalidate_cache()
            if not fs.find(f"{bucket}/data/copy") or len(fs.find(f"{bucket}/data/copy")) == 60:
                break
            time.sleep(0.5)
        async with mcp_client(f"http://127.0.0.1:{survivor_port}/mcp") as client:
            assert not (await client.call_tool("list_allowed_directories", {})).is_error
    fs.invalidate_cache()
    left = len(fs.find(f"{bucket}/data/copy"))
    print(f"\n{copied_when_killed} of 60 files copied when the replica died; {left} once the survivor took over")
    assert left in (0, 60), f"{left} of 60 files: half a copy"
    assert fs.find(f"{bucket}/.vfs-mcp-state/pending") == []
