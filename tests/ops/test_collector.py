"""The collector's pause: off for as long as any pause lasts, then as it was before the first;
apply_patch plans in one."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Sandbox

from vfs_mcp.ops.edits import collector, hunk_placing
from vfs_mcp.ops.edits.patch import apply_patch


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_overlapping_pauses_leave_the_collector_off_until_the_last_one_ends(collector_on: None) -> None:
    first, second = collector.paused(), collector.paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_pause_that_ends_by_an_error_lets_the_collector_run_again(collector_on: None) -> None:
    with pytest.raises(ValueError), collector.paused():
        assert not gc.isenabled()
        raise ValueError("planning failed")
    assert gc.isenabled()


def test_a_pause_while_the_collector_is_off_leaves_it_off(collector_on: None) -> None:
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()
    gc.enable()


def test_the_collector_is_off_while_a_patch_is_placed_and_on_again_once_it_is_made(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, collector_on: None
) -> None:
    local_sandbox.put("a.txt", "alpha\nbeta\ngamma\n")
    seen: list[bool] = []
    place = hunk_placing.place

    def watched(*args: Any) -> list[hunk_placing.Placed]:
        seen.append(gc.isenabled())
        return place(*args)

    monkeypatch.setattr(hunk_placing, "place", watched)
    apply_patch(local_sandbox.vfs(), "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n")
    assert seen == [False]
    assert gc.isenabled()
    assert local_sandbox.get("a.txt") == b"alpha\nBETA\ngamma\n"
