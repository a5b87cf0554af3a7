"""A change's jobs for threads of their own (its hashes, its undo record) start as it first waits
for its store, never while it still computes (``scopes.later``): started then, when their result
is asked for, or never once forgone."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from vfs_mcp_backends.scopes import later, waiting, waits


class Pool(Executor):
    """An executor that runs each job as it is given, and says which it was given."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.started.append(fn(*args, **kwargs))
        done: Future[Any] = Future()
        done.set_result(self.started[-1])
        return done


def test_a_job_made_in_a_change_starts_at_its_first_wait_for_the_store_and_only_once() -> None:
    pool = Pool()
    with waits():
        hash_job, record_job = later(pool, lambda: "hash"), later(pool, lambda: "record")
        assert pool.started == []
        waiting()
        assert pool.started == ["hash", "record"]
        waiting()
        assert hash_job.result() == "hash" and record_job.result() == "record"
    assert pool.started == ["hash", "record"]


def test_a_job_outside_a_change_starts_at_once_and_one_left_at_its_end_when_asked_for() -> None:
    pool = Pool()
    later(pool, lambda: "a read's hash")
    assert pool.started == ["a read's hash"]
    with waits():
        left = later(pool, lambda: "never waited")
    waiting()
    assert pool.started == ["a read's hash"]
    assert left.result() == "never waited"
    assert pool.started == ["a read's hash", "never waited"]


def test_a_forgone_job_never_starts_and_one_already_started_is_waited_for() -> None:
    pool = Pool()
    with waits():
        forgone, started = later(pool, lambda: "forgone"), later(pool, lambda: "started")
        forgone.forgo()
        waiting()
        started.forgo()
    assert pool.started == ["started"]
