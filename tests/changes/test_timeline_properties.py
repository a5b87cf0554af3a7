"""A property of the timeline: random sequences of writes, edits, moves, deletes, patches, undos,
redos, checkpoints and restores, made on a memory, two local (one keeping what its changes
replace by a second name, one by a copy) and an S3 (moto) twin, answer alike
and end in equal trees; and every restore that succeeds, undone at once, gives back the tree it
found byte for byte."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from mcp import Client

from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio

NAMES = ["a.txt", "b.txt", "d/c.txt"]
WORDS = ["alpha", "beta", "gamma"]
_examples = itertools.count()

step = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), st.sampled_from(WORDS)),
    st.tuples(st.just("edit"), st.sampled_from(NAMES), st.sampled_from(WORDS)),
    st.tuples(st.just("move"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.just("")),
    st.tuples(st.just("patch"), st.sampled_from(NAMES), st.sampled_from(WORDS)),
    st.tuples(st.just("undo"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("checkpoint"), st.sampled_from(["p", "q"]), st.just("")),
    st.tuples(st.just("restore"), st.sampled_from(["p", "q"]), st.just("")),
)


def files(box: Sandbox, base: str) -> dict[str, bytes]:
    """The files below ``base`` (what every store keeps alike: no modes, no empty folders)."""
    fs, root = box.mount.fs, box.mount.fs_path(base)
    box.mount.backend.invalidate_tree(root)
    found = fs.find(root, detail=True) if fs.exists(root) else {}
    return {
        str(path)[len(root) :].strip("/"): bytes(fs.cat_file(path))
        for path, info in found.items()
        if info["type"] == "file" and not str(path).endswith("/")
    }


def arguments(kind: str, first: Any, second: str, base: str, ids: list[str]) -> tuple[str, dict[str, Any]] | None:
    if kind == "write":
        return "write_file", {"path": f"{base}/{first}", "content": f"{second}\n", "create_dirs": True}
    if kind == "edit":
        edits = [{"oldText": word, "newText": second} for word in WORDS if word != second][:1]
        return "edit_file", {"path": f"{base}/{first}", "edits": edits}
    if kind == "move":
        return "move_file", {"source": f"{base}/{first}", "destination": f"{base}/{first}.{second}"}
    if kind == "delete":
        return "delete_path", {"path": f"{base}/{first}"}
    if kind == "patch":
        patch = f"*** Begin Patch\n*** Add File: {base}/{second}-{first.replace('/', '-')}\n+{second}\n*** End Patch\n"
        return "apply_patch", {"patch": patch}
    if kind == "undo":
        return ("undo", {"change_id": ids[first % len(ids)]}) if ids else None
    if kind == "checkpoint":
        return "checkpoint", {"name": f"{first}-{base}"}
    return "undo", {"change_id": f"{first}-{base}", "and_after": True}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=4, max_size=10))
async def test_random_timelines_on_memory_local_and_s3_twins_end_equal_and_restores_undo_whole(
    steps: list[tuple[str, Any, str]], tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> None:
    base = f"ex{next(_examples)}"
    kinds = ("memory", "local", "local", "s3")
    twins = [make_sandbox(kind, Path(tmp_path_factory.mktemp(kind)), request) for kind in kinds]
    # The second local twin refuses hard-linked files: the files its changes replace are kept by
    # a copy in the record, the first's by a second name in the state store (``changes.state.linked``).
    twins[2].mount.deny_hardlinked = True
    for box in twins:
        box.put(f"{base}/a.txt", "alpha\n")
        box.put(f"{base}/d/c.txt", "beta\n")
    ids: list[list[str]] = [[] for _ in twins]
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(box.server())) for box in twins]
        for kind, first, second in steps:
            outcomes = []
            found = [files(box, base) for box in twins]
            for n, (box, client) in enumerate(zip(twins, clients, strict=True)):
                call = arguments(kind, first, second, base, ids[n])
                if call is None:
                    outcomes.append(None)
                    continue
                result = await client.call_tool(*call)
                error, data = error_of(result), data_of(result) or {}
                outcomes.append(error["code"] if error else "ok")
                if error is None and data.get("change_id"):
                    ids[n].append(data["change_id"])
                if kind == "restore" and error is None and data.get("change_id"):
                    # The restore's undo gives back the tree it found, byte for byte.
                    back = await client.call_tool("undo", {"change_id": data["change_id"]})
                    assert error_of(back) is None, back
                    assert files(box, base) == found[n], f"{box.kind}: the restore's undo"
                    ids[n].append((data_of(back) or {})["change_id"])
            note(f"{kind} {first} {second}: {outcomes}")
            assert len(set(outcomes)) == 1, f"the twins answered {outcomes} to {kind} {first} {second}"
            trees = [files(box, base) for box in twins]
            assert all(tree == trees[0] for tree in trees), f"after {kind} {first} {second}"
