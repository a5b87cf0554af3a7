"""How a long operation (a walk, a tree, a search, a size) reports its progress to the caller."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int | None, str], None]
"""Called with what is done, the total when it is known, and a line saying what is being done."""
