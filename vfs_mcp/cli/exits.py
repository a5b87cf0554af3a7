"""A person's command over a state store (``vfs-mcp review``, ``history``, ``checkpoint``,
``undo``): its exit code, and its refusals as one line on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from vfs_mcp.errors import VfsError

T = TypeVar("T")


def exit_code(prog: str, opened: AbstractContextManager[T], work: Callable[[T], int]) -> int:
    """``work``'s exit code over what ``opened`` opens: 1 when the store refuses what it does
    (a conflict, an id that is not there), 2 when it cannot be opened or is asked wrongly."""
    try:
        with opened as value:
            try:
                return work(value)
            except VfsError as err:
                print(f"vfs-mcp {prog}: {err}", file=sys.stderr)
                return 1
    except (OSError, ValueError, VfsError) as exc:
        print(f"vfs-mcp {prog}: {exc}", file=sys.stderr)
        return 2
