"""The MCP SDK's private names this server needs, in one place.

mcp 2.x has no public way to do these few things; each is one function here, and
``tests/server/test_sdk_seams.py`` fails loudly, naming the function, when an SDK release renames
or removes what it reaches for.

- ``registered_tools``/``registered_tool``: the tool objects (function, argument model,
  output schema) behind ``tools/list``, read synchronously while profiles register (the
  public ``MCPServer.list_tools`` is async and returns wire types only).
- ``add_planned_tool``: register a tool whose schemas are known (``vfs_mcp.server.schemas``),
  its pydantic argument model built on its first call instead of at start.
- ``lowlevel``: the low-level server, to run a session over streams the transport wraps.
- ``withdraw_requests``: take out request handlers MCPServer always registers (prompts), so
  a server without prompts does not declare the capability (it is derived from the handlers).
- ``connection_of``: what one client connection shares across its requests, so state can
  be kept per connection (the public session object is per request in the legacy era).
- ``claimed_stdio``: standard input and output claimed for the wire as the SDK's stdio
  transport claims them, for a transport that writes its replies as bytes (``vfs_mcp.transports.stdio``).
- ``session_ids``/``end_session``: the HTTP sessions a session manager holds, and ending one
  so its id answers 404 (``vfs_mcp.transports.http_sessions``).
- ``logging_set_up_once``: MCPServer's constructor sets logging up only where nothing has yet.
- ``tool_results_keep_their_meta``: the runner's per-version sieve of a ``tools/call`` result
  hands its ``_meta`` over as it is instead of copying it (a tree's 20,000 nodes).
- ``client_roots``: the client's roots asked for from inside a request, by the resolver
  machinery the SDK fills a tool's ``Resolve`` arguments with (mid-call ``roots/list`` through
  2025-11-25, an input round on 2026-07-28), for a request that is not one tool's.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Annotated, Any, BinaryIO

from mcp.server import stdio
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver import server as mcpserver_module
from mcp.server.mcpserver.resolve import (
    ListRoots,
    Resolve,
    build_resolver_plans,
    find_resolved_parameters,
    resolve_arguments,
)
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities import logging as sdk_logging
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import InputRequiredResult, ListRootsResult, ToolAnnotations
from mcp_types import methods as sdk_methods

_SIEVE = sdk_methods.serialize_server_result
"""The SDK's own sieve of a result (``tool_results_keep_their_meta`` wraps it)."""


def logging_set_up_once() -> None:
    """From now on, MCPServer's constructor sets logging up only where the root logger has no
    handler yet. Its ``configure_logging`` imports rich (where it is installed) and builds a
    console for rich's handler (a good part of a server's start: benchmarks/README.md), then calls
    ``logging.basicConfig``, which does nothing once the root logger has a handler, as it has
    in a ``vfs-mcp`` process (``cli.options`` sets its own up first): where it has none, the
    SDK's setup runs as before."""
    configure = mcpserver_module.configure_logging  # type: ignore[attr-defined]  # the name the constructor calls
    if configure is not sdk_logging.configure_logging:  # replaced already (here, once)
        return

    @functools.wraps(configure)
    def unless_set_up(*args: Any, **kwargs: Any) -> None:
        if not logging.getLogger().handlers:
            configure(*args, **kwargs)

    mcpserver_module.configure_logging = unless_set_up  # type: ignore[attr-defined]


def tool_results_keep_their_meta() -> None:
    """From now on the SDK's runner sieves a ``tools/call`` result for the protocol version
    (``serialize_server_result``: validated against the version's schema, then dumped again)
    with its ``_meta`` handed over as it is: the tools put JSON data there
    (``profiles.results``), and the sieve's dump copied all of it on the event loop's thread,
    a tree's 20,000 nodes at a time (the cost: benchmarks/README.md; ``replies.WireResult``
    spares the dump before it the same copy). The rest of the result is sieved as before; a ``_meta`` that is not a mapping
    of names goes through the sieve whole, to be refused there."""
    sdk_methods.serialize_server_result = _sieved  # the name the runner calls


def _sieved(method: str, version: str, data: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    meta = data.get("_meta") if method == "tools/call" else None
    if not isinstance(meta, dict) or not all(isinstance(name, str) for name in meta):
        return _SIEVE(method, version, data, **options)
    out = _SIEVE(method, version, {**data, "_meta": {}}, **options)
    if "_meta" in out:  # (every version's result has one)
        out["_meta"] = meta
    return out


def registered_tools(server: MCPServer) -> list[Tool]:
    """Every tool registered on ``server``, in registration order."""
    return list(server._tool_manager.list_tools())


def registered_tool(server: MCPServer, name: str) -> Tool | None:
    """The tool registered as ``name``, or None."""
    return server._tool_manager.get_tool(name)


class ArgumentsOnFirstUse:
    """A tool's ``FuncMetadata`` (its pydantic argument model) built when first asked for: on
    the tool's first call, not at start; ``sign()`` first gives ``fn`` its signature.
    ``output_schema`` is known without it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        sign: Callable[[], None],
        skip_names: Sequence[str],
        output_schema: dict[str, Any] | None,
    ) -> None:
        self._fn, self._sign, self._skip_names = fn, sign, skip_names
        self._built: FuncMetadata | None = None
        self.output_schema = output_schema

    def __getattr__(self, name: str) -> Any:  # only for what __init__ did not set: the built metadata's
        if self._built is None:
            self._sign()
            self._built = func_metadata(self._fn, skip_names=self._skip_names)
        found = getattr(self._built, name)
        self.__dict__[name] = found  # asked for again on every call: found without this lookup from now on
        return found


def add_planned_tool(
    server: MCPServer,
    fn: Callable[..., Any],
    sign: Callable[[], None],
    *,
    name: str,
    title: str | None,
    description: str,
    annotations: ToolAnnotations | None,
    parameters: dict[str, Any],
    output_schema: dict[str, Any] | None,
    context_kwarg: str | None,
) -> None:
    """Register the async ``fn`` as ``name`` with its input and output schemas given (as
    ``Tool.from_function`` would make them from ``fn``'s signature): what ``from_function``
    does with the signature (the argument model) is done on the tool's first call, after
    ``sign()`` gave ``fn`` its signature."""
    skip = [context_kwarg] if context_kwarg is not None else []
    server._tool_manager._tools[name] = Tool.model_construct(
        fn=fn,
        name=name,
        title=title,
        description=description,
        parameters=parameters,
        fn_metadata=ArgumentsOnFirstUse(fn, sign, skip, output_schema),  # type: ignore[arg-type]  # stands in for FuncMetadata
        is_async=True,
        context_kwarg=context_kwarg,
        resolved_params={},
        resolver_plans={},
        annotations=annotations,
        icons=None,
        meta=None,
    )


def lowlevel(server: MCPServer) -> Server[Any]:
    """The low-level server under ``server``."""
    return server._lowlevel_server


def withdraw_requests(server: MCPServer, *methods: str) -> None:
    """Serve none of ``methods``: they answer -32601 and their capability is not declared."""
    for method in methods:
        lowlevel(server)._request_handlers.pop(method, None)


def connection_of(session: object) -> object | None:
    """The connection a request's session belongs to, or None where the SDK gives none."""
    return getattr(session, "_connection", None)


@contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire's standard input and output, binary, claimed as the SDK's ``stdio_server``
    claims them: meanwhile descriptor 0 reads the null device and 1 writes to standard error,
    so nothing else in the process reads the requests or writes into the replies; both are
    given back on exit. RuntimeError when another transport holds them."""
    with ExitStack() as claims:
        streams = []
        for fd, stream, mode, diversion in (
            (0, sys.stdin, "rb", stdio._open_stdin_diversion),
            (1, sys.stdout, "wb", stdio._open_stdout_diversion),
        ):
            claimed, release = stdio._claim_fd(fd, stream, mode, diversion)  # type: ignore[arg-type]
            if release is not None:
                claims.callback(release)
            streams.append(claimed)
        yield streams[0], streams[1]


def session_ids(manager: StreamableHTTPSessionManager) -> Collection[str]:
    """The ids of the sessions ``manager`` holds now (a live view, not a copy)."""
    return manager._server_instances.keys()


async def end_session(manager: StreamableHTTPSessionManager, session_id: str) -> None:
    """End a session ``manager`` holds: its id answers 404 at once, then its transport stops."""
    transport = manager._server_instances.get(session_id)
    if transport is not None:
        await manager._discard_session(session_id, transport)


def _ask_for_roots() -> ListRoots:
    return ListRoots()


async def _roots(roots: Annotated[ListRootsResult, Resolve(_ask_for_roots)]) -> ListRootsResult:
    return roots


_ROOTS_PARAMS = find_resolved_parameters(_roots)
_ROOTS_PLANS = build_resolver_plans(_ROOTS_PARAMS, set())


async def client_roots(context: Context[Any, Any]) -> ListRootsResult | InputRequiredResult:
    """The client's ``roots/list`` answer, or the input round that asks for it (2026-07-28).
    Raises MCPError when the client fails to answer or there is no channel to ask on."""
    answer = await resolve_arguments(_ROOTS_PARAMS, _ROOTS_PLANS, {}, context)
    if isinstance(answer, InputRequiredResult):
        return answer
    roots: ListRootsResult = answer["roots"]
    return roots
