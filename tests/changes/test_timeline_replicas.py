"""Two replicas serving one bucket over one state store on it: a checkpoint made through one is
restored through the other, the history of either shows every change, and the restore's undo
through the first brings the work back — with clients of both protocol eras (a session kept
per replica; a fresh connection every step, no session)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import fsspec
import pytest
from mcp import Client
from processes import mcp_client, vfs_mcp_http
from results import ok

pytestmark = pytest.mark.anyio

Call = Callable[[int, str, dict[str, Any]], Awaitable[Any]]


@asynccontextmanager
async def caller(era: str) -> AsyncIterator[Call]:
    """``call(port, tool, arguments)``: through a session kept per replica (``legacy``), or a
    fresh default client every step (``fresh``: no session, the 2026-07-28 era)."""
    async with AsyncExitStack() as stack:
        sessions: dict[int, Client] = {}

        async def call(port: int, tool: str, arguments: dict[str, Any]) -> Any:
            url = f"http://127.0.0.1:{port}/mcp"
            if era == "fresh":
                async with Client(url) as client:
                    return await client.call_tool(tool, arguments)
            if port not in sessions:
                sessions[port] = await stack.enter_async_context(mcp_client(url))
            return await sessions[port].call_tool(tool, arguments)

        yield call


@pytest.mark.parametrize("era", ["legacy", "fresh"])
async def test_a_checkpoint_made_through_one_replica_is_restored_through_the_other(s3_endpoint: str, era: str) -> None:
    env = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    bucket = f"timeline-{uuid.uuid4().hex[:10]}"
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint, key="testing", secret="testing", skip_instance_cache=True)
    fs.mkdir(bucket)
    seed = {f"{bucket}/data/doc-{n}.txt": f"original {n}\n".encode() for n in range(4)}
    for path, data in seed.items():
        fs.pipe_file(path, data)

    def tree() -> dict[str, bytes]:
        fs.invalidate_cache()
        return {path: fs.cat_file(path) for path in sorted(fs.find(f"{bucket}/data"))}

    flags = ("--state", f"s3://{bucket}/.vfs-mcp-state")
    with (
        vfs_mcp_http(f"s3://{bucket}/data", env, *flags) as one,
        vfs_mcp_http(f"s3://{bucket}/data", env, *flags) as two,
    ):
        async with caller(era) as call:
            point = ok(await call(one, "checkpoint", {"name": "before-agent"}))
            for n, port in enumerate([one, two, one, two]):
                edit = [{"oldText": f"original {n}", "newText": f"edited {n} through {port}"}]
                ok(await call(port, "edit_file", {"path": f"doc-{n}.txt", "edits": edit}))
            ok(await call(two, "write_file", {"path": "new.txt", "content": "new\n"}))
            after = tree()
            shown = ok(await call(two, "history", {}))
            restored = ok(await call(two, "undo", {"change_id": "before-agent", "and_after": True}))
            assert tree() == seed
            ok(await call(one, "undo", {"change_id": restored["change_id"]}))
    assert tree() == after
    assert [line["tool"] for line in shown["changes"]] == ["write_file", *["edit_file"] * 4, "checkpoint"]
    assert shown["changes"][-1]["change_id"] == point["change_id"] and len(restored["undone"]) == 5
