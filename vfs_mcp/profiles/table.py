"""A profile is a table of ``Tool`` rows: a name, what the model is told, and the adapter that
calls one shared operation with the profile's options and renders its result in the
profile's dialect.

An adapter is a plain function ``(vfs, settings, <arguments>) -> CallToolResult``: its
arguments after the first two, with their types and defaults, are the tool's input schema.
A row names it, or says where it is (``"package.module:function"``): then its module, and the
operations it imports, load on the tool's first call, not when the table is read.
An argument named ``progress`` is the call's progress reporter (``ops.walks.progress.Progress``),
not part of the schema. The server registers each row on the MCP SDK (``vfs_mcp.server.tools``); nothing
here knows the SDK.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_types import ToolAnnotations

from vfs_mcp.settings import Settings


@dataclass(frozen=True)
class Tool:
    """One row of a profile's table."""

    fn: Callable[..., Any] | str
    """The adapter, ``(vfs, settings, **arguments) -> CallToolResult``, or where it is: ``"module:function"``."""
    title: str
    description: str
    """Written for a model; ``{name}`` stands for another tool of the profile as it is named."""
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = False
    name: str = ""
    """The tool's name (default: the adapter's)."""
    original_name: str = ""
    """Its name as the server the profile reproduces spells it, served with ``--tool-names seed`` (default: the same)."""
    writes: bool | None = None
    """Listed only when some mount is writable (default: when it is not read-only)."""
    review: bool = False
    """Listed only when some mount is under review."""
    at_start: bool = False
    """A server process makes its adapter and argument model at start, not on its first call:
    the first change of a script that calls at once (it loads the write path). Only what the
    start's bound has room for (benchmarks/README.md, "Issue 50 item 3")."""

    @property
    def where(self) -> str:
        """Where the adapter is: ``"module:function"``."""
        return self.fn if isinstance(self.fn, str) else f"{self.fn.__module__}:{self.fn.__qualname__}"

    @property
    def adapter(self) -> Callable[..., Any]:
        """The adapter, its module imported if it was not."""
        return self.fn if callable(self.fn) else _imported(self.fn)

    @property
    def key(self) -> str:
        return self.name or self.where.rpartition(":")[2]

    def named(self, settings: Settings) -> str:
        return settings.name(self.key, self.original_name or self.key)

    @property
    def needs_writable(self) -> bool:
        return not self.read_only if self.writes is None else self.writes

    def described(self, names: Mapping[str, str]) -> str:
        """The description, the profile's tools named as they are served."""
        return self.description.format_map(names) if "{" in self.description else self.description

    @property
    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=self.destructive if not self.read_only else False,
            idempotent_hint=True if self.read_only else self.idempotent,
            open_world_hint=False,
        )


@functools.cache
def _imported(where: str) -> Callable[..., Any]:
    module, _, name = where.partition(":")
    adapter: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return adapter
