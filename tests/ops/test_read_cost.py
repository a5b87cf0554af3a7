"""What reading files on a local disk costs, counted rather than timed: the system calls a
whole read makes (one fstat of the open file, not two), and the Python calls and models
``read_multiple_files`` makes a file (issue 50: the read rows at or under f37b77b's)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import Sandbox, counting

from vfs_mcp.ops.files.read import read_file, read_multiple_files

FILES = 50
SYSCALLS = ("open", "close", "stat", "fstat", "pread", "readlink")


@contextmanager
def system_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """The ``os`` functions of ``SYSCALLS`` called inside the block, each a system call."""
    made: Counter[str] = Counter()

    def counted(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def count(*args: Any, **kwargs: Any) -> Any:
            made[name] += 1
            return call(*args, **kwargs)

        return count

    with monkeypatch.context() as patch:
        for name in SYSCALLS:
            patch.setattr(os, name, counted(name, getattr(os, name)))
        yield made


def models(called: Any) -> str | None:
    """Counts the pydantic models validated (``validate_python``)."""
    return "models" if getattr(called, "__name__", "") == "validate_python" else None


def test_a_whole_read_of_a_local_file_stats_the_open_file_once(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_sandbox.put("logs/app.log", "line\n" * 100)
    vfs = local_sandbox.vfs()
    read_file(vfs, "logs/app.log")  # imports and first-use caches are not the read's cost
    with system_calls(monkeypatch) as made:
        text, meta = read_file(vfs, "logs/app.log")
    assert (text, meta.size) == ("line\n" * 100, 500)
    # The jail's check of where links lead (an O_PATH open, a readlink of it, its close), the
    # walk to the folder and the file (an open each, an lstat of the name before its open, both
    # closed), one fstat of the open file and one pread: before, a second fstat asked again.
    assert made == {"open": 3, "readlink": 1, "close": 3, "stat": 1, "fstat": 1, "pread": 1}


def test_a_range_read_of_a_local_file_stats_the_open_file_once(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_sandbox.put("logs/app.log", "line\n" * 100)
    vfs = local_sandbox.vfs()
    read_file(vfs, "logs/app.log", offset_bytes=5, max_bytes=10)
    with system_calls(monkeypatch) as made:
        text, meta = read_file(vfs, "logs/app.log", offset_bytes=5, max_bytes=10)
    assert (text, meta.offset_bytes, meta.bytes_read) == ("line\nline\n", 5, 10)
    assert made["fstat"] == 1


def test_reading_many_local_files_makes_one_model_and_a_bounded_number_of_python_calls_a_file(
    local_sandbox: Sandbox,
) -> None:
    paths = [f"notes/n{i:02d}.txt" for i in range(FILES)]
    for i, path in enumerate(paths):
        local_sandbox.put(path, f"note {i}\n" * 20)
    vfs = local_sandbox.vfs()
    read_multiple_files(vfs, paths)
    with counting(models) as seen:
        texts, meta = read_multiple_files(vfs, paths)
    assert texts == [f"note {i}\n" * 20 for i in range(FILES)] and meta.succeeded == FILES
    # Its FileRead a file and the reply's MultiReadResult: no ReadResult a file besides.
    assert seen["models"] == FILES + 1
    # f37b77b made 75 a file; main before issue 50's read round 85 (the jail's and the store's
    # steps added since, a second model, generators as context managers); now 74.
    assert seen["python calls"] < 75 * FILES, seen["python calls"] / FILES
