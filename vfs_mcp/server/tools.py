"""The profiles' tables registered on the MCP SDK: each row's adapter bound to the server's
jailed filesystem and settings, run in a worker thread, its errors turned into error results.

``register`` lists the chosen profiles' tools in their tables' order (the tools that write
only when some mount is writable), then ``toolset.publish`` compacts their schemas and keeps
only those ``--tools`` names.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic.fields import FieldInfo

from vfs_mcp import profiles
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.profiles.results import catching, reporter
from vfs_mcp.profiles.table import Tool
from vfs_mcp.server import sdk, toolset
from vfs_mcp.settings import Settings

PROGRESS_ARGUMENT = "progress"
"""An adapter's argument that receives the call's progress reporter (the SDK's Context on the way in)."""


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Register every chosen profile's tools, in the order given; then publish them compactly,
    only those ``settings.tools`` names (ValueError for a name that is neither a tool nor a set)."""
    profiles.check(settings.profiles)
    writable = any(not mount.read_only for mount in vfs.mounts)
    exact: set[str] = set()
    for profile in dict.fromkeys(settings.profiles):
        before = {tool.name for tool in sdk.registered_tools(server)}
        table = profiles.tools_of(profile)
        if isinstance(table, tuple):
            _add_table(server, table, vfs, settings, writable)
        else:  # a profile not yet a table registers its own tools
            table.register(server, vfs, settings)
        if profile in profiles.SEED_EXACT:
            exact |= {tool.name for tool in sdk.registered_tools(server)} - before
    toolset.publish(server, settings.tools, exact)


def _add_table(server: MCPServer, table: tuple[Tool, ...], vfs: JailedFS, settings: Settings, writable: bool) -> None:
    names = {tool.key: tool.named(settings) for tool in table}
    for tool in table:
        if tool.needs_writable and not writable:
            continue
        server.add_tool(
            bound(tool, vfs, settings),
            name=names[tool.key],
            title=tool.title,
            description=tool.described(names),
            annotations=tool.annotations,
        )


@functools.lru_cache(maxsize=8)
def profile_tools(settings: Settings) -> dict[str, bool]:
    """Every tool the profiles of ``settings`` have (name -> read-only), writable mounts and
    ``--tools`` aside: the tables', and those a profile not yet a table registers on a scratch
    server over a memory mount."""
    whole = dataclasses.replace(settings, tools=(), client_roots="off", audit_log=None)
    server = MCPServer()
    vfs = JailedFS(Jail([open_mount(MountSpec("memory://vfs-mcp-profile-tools"))], deny=whole.deny))
    register(server, vfs, whole)
    return {t.name: bool(t.annotations and t.annotations.read_only_hint) for t in sdk.registered_tools(server)}


def bound(tool: Tool, vfs: JailedFS, settings: Settings) -> Callable[..., Awaitable[CallToolResult]]:
    """The function the SDK registers for ``tool``: its adapter's signature without ``vfs`` and
    ``settings`` (the SDK builds the tool's arguments from it), calling the adapter with them."""
    fn = tool.fn
    hints = typing.get_type_hints(fn, include_extras=True)
    parameters = [
        parameter.replace(annotation=Context if parameter.name == PROGRESS_ARGUMENT else hints[parameter.name])
        for parameter in list(inspect.signature(fn).parameters.values())[2:]
    ]
    aliases = {alias: p.name for p in parameters if (alias := _alias(p.annotation)) and alias != p.name}

    def call(**arguments: Any) -> CallToolResult:
        arguments = {aliases.get(key, key): value for key, value in arguments.items()}
        if PROGRESS_ARGUMENT in arguments:
            arguments[PROGRESS_ARGUMENT] = reporter(arguments[PROGRESS_ARGUMENT])
        result: CallToolResult = fn(vfs, settings, **arguments)
        return result

    call.__name__ = call.__qualname__ = fn.__name__
    call.__module__ = fn.__module__
    call.__signature__ = inspect.Signature(parameters, return_annotation=hints["return"])  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": hints["return"]}
    return catching(call)


def _alias(annotation: Any) -> str | None:
    """The name a caller spells an argument with (``Field(alias=...)``), where it has one."""
    for meta in typing.get_args(annotation)[1:] if typing.get_origin(annotation) is typing.Annotated else ():
        if isinstance(meta, FieldInfo) and meta.alias:
            return meta.alias
    return None
