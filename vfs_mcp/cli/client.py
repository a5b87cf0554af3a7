"""The command-line client (docs/command-line-client.md): call one tool on a vfs-mcp server and print the result.

``vfs-mcp call TOOL [key=value ...]`` starts a server over stdio (``python -m vfs_mcp`` with
the arguments after ``--``) or connects to one over HTTP (``--url``), checks the tool name
and coerces the ``key=value`` strings to the tool's input schema, calls it and prints the
result. Transport failures that may pass (a refused or dropped connection, a timeout) are
retried with exponential backoff; a call already sent is retried only when the tool says it
is read-only or idempotent, so a write is never applied twice.

Exit codes: 0 success, 1 tool error (or a server that cannot be reached), 2 usage error.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, REQUEST_TIMEOUT, CallToolResult, Tool

from vfs_mcp.cli.printing import Style, render, to_json, use_color
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.replies import json_value

Target = StdioServerParameters | str
"""Where a server is: a command to start over stdio, or an HTTP URL."""
Connectable = Server[Any] | MCPServer | Target
"""A Target, or a server object to drive in-process."""

DEFAULT_RETRIES = 3
BACKOFF_SECONDS = 0.5

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class UsageError(ValueError):
    """The command line (or an XML command) asks for something the tool cannot take; exit code 2."""


class TransportFailure(RuntimeError):
    """The server could not be reached or stopped answering, after every retry."""


# --- arguments as text -> arguments of the tool's types -------------------------------------


def _kinds(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a property accepts, ``null`` left out ($ref'd models are objects)."""
    options = schema.get("anyOf") or schema.get("oneOf") or [schema]
    kinds: list[str] = []
    for option in options:
        kind = option.get("type", "object" if "$ref" in option else None)
        for k in kind if isinstance(kind, list) else [kind]:
            if k and k != "null" and k not in kinds:
                kinds.append(k)
    return kinds


def _boolean(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(text)


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _array(text: str) -> list[Any]:
    # A bare word is a one-item list, so exclude_patterns=*.log needs no JSON quoting.
    if not text.lstrip().startswith("["):
        return [text]
    value: list[Any] = json_value(text, list)
    return value


_PARSERS: dict[str, Callable[[str], Any]] = {
    "boolean": _boolean,
    "integer": int,
    "number": _number,
    "array": _array,
    "object": lambda text: json_value(text, dict),
}
_NAMES = {"boolean": "true or false", "integer": "an integer", "number": "a number", "array": "a JSON array"}


def coerce_arguments(tool: Tool, raw: Mapping[str, str]) -> dict[str, Any]:
    """Turn text arguments (``key=value``, XML attributes) into the types ``tool`` declares.

    A camelCase key the tool spells in snake_case is renamed (docs/xml-interface.md writes
    ``excludePatterns``). Keys the tool does not know pass through unchanged, for the
    server to refuse with a suggestion. Raises UsageError naming the argument when a value
    does not fit its type.
    """
    properties: Mapping[str, Any] = tool.input_schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for key, text in raw.items():
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
        name = snake if key not in properties and snake in properties else key
        kinds = _kinds(properties.get(name, {}))
        if not kinds or "string" in kinds:
            arguments[name] = text
            continue
        for kind in kinds:
            try:
                arguments[name] = _PARSERS[kind](text)
                break
            except (ValueError, KeyError):
                continue
        else:
            wanted = " or ".join(_NAMES.get(k, f"a JSON {k}") for k in kinds)
            raise UsageError(f"{tool.name}: argument {name} must be {wanted}")
    return arguments


def parse_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``["path=a.txt", "lines=5"]`` -> ``{"path": "a.txt", "lines": "5"}`` (UsageError if no ``=``)."""
    raw: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {pair!r}")
        raw[key] = value
    return raw


def find_tool(tools: Sequence[Tool], name: str) -> Tool:
    """The tool called ``name``; UsageError with the closest names otherwise."""
    for tool in tools:
        if tool.name == name:
            return tool
    names = [t.name for t in tools]
    close = difflib.get_close_matches(name, names, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `vfs-mcp tools`"
    raise UsageError(f"unknown tool {name!r}{hint}")


# --- calling with retries -------------------------------------------------------------------


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def transient(exc: BaseException, over_http: bool) -> bool:
    """Whether a transport failure may pass: worth another try after a pause.

    A stdio server that closes the connection has exited (a bad root, a crash): starting it
    again would fail the same way, so only HTTP closures count.
    """
    for leaf in _leaves(exc):
        if _refusal(leaf):
            return False  # the same token is refused the same way every time
        if isinstance(leaf, httpx2.TransportError | ConnectionError | TimeoutError):
            return True
        if isinstance(leaf, MCPError) and over_http and leaf.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
            return True
    return False


def _refusal(leaf: BaseException) -> int | None:
    """The status of an HTTP server's 401 or 403 (else None): vfs-mcp's comes as a JSON-RPC
    error whose message starts with the status (its code, -32001, is the SDK's "request
    timeout" too)."""
    status = getattr(getattr(leaf, "response", None), "status_code", None)
    if status in (401, 403):
        return int(status)
    if isinstance(leaf, MCPError) and str(leaf.message)[:4] in ("401 ", "403 "):
        return int(str(leaf.message)[:3])
    return None


def describe_failure(exc: BaseException, target: Target | None = None, token_from: str | None = None) -> str:
    """One line for a transport failure (the innermost cause, not a task-group wrapper);
    ``token_from`` says where the token sent came from (None: none was sent)."""
    leaf = _leaves(exc)[0]
    if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
        return "the server closed the connection (its own message, if any, is above)"
    if isinstance(leaf, FileNotFoundError):
        return f"cannot start the server: {leaf.filename or leaf} not found"
    if isinstance(target, str):
        if _refusal(leaf) == 401:
            if token_from:
                return (
                    f"{target} answered 401 Unauthorized to the token from {token_from}: it is not the server's token"
                )
            return f"{target} answered 401 Unauthorized: give the server's token with --auth-token-file FILE"
        if type(leaf).__name__ in ("ConnectError", "ConnectionRefusedError"):
            return f"cannot connect to {target}: connection refused (is the server running, on that port?)"
    return str(leaf) or type(leaf).__name__


def _may_repeat(tool: Tool) -> bool:
    hints = tool.annotations
    return bool(hints and (hints.read_only_hint or hints.idempotent_hint))


@dataclass
class Outcome:
    """What one ``call`` produced: the tool's result, or a usage error found once connected."""

    result: CallToolResult | None = None
    usage: str | None = None


@asynccontextmanager
async def open_client(target: Connectable, token: str | None = None) -> AsyncIterator[Client]:
    """A connected client; over HTTP with ``token``, every request carries it as a bearer token."""
    if isinstance(target, str) and token:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(target, http_client=http)) as client,
        ):
            yield client
    else:
        async with Client(target) as client:
            yield client


async def call_tool(
    target: Target,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    raw: Mapping[str, str] | None = None,
    *,
    token: str | None = None,
    token_from: str | None = None,
    retries: int = DEFAULT_RETRIES,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    connect: Callable[[Target, str | None], AbstractAsyncContextManager[Client]] = open_client,
) -> Outcome:
    """Connect to ``target``, check ``name``, coerce ``raw`` over ``arguments`` and call the tool.

    Retries transient transport failures up to ``retries`` more times, sleeping
    ``BACKOFF_SECONDS * 2**n`` between tries (a refused token is not retried). Raises
    TransportFailure when every try failed; ``token_from`` names the token's source in it.
    """
    over_http = isinstance(target, str)
    attempt = 0
    while True:
        sent: Tool | None = None
        try:
            async with connect(target, token) as client:
                tools = (await client.list_tools()).tools
                try:
                    tool = find_tool(tools, name)
                    args = {**(arguments or {}), **coerce_arguments(tool, raw or {})}
                except UsageError as exc:
                    if not any(t.name == name for t in tools):
                        return Outcome(usage=await _why_not_listed(client, name) or str(exc))
                    return Outcome(usage=str(exc))
                sent = tool
                return Outcome(result=await client.call_tool(name, args))
        except Exception as exc:  # boundary: the SDK raises transport errors of every kind, often grouped
            retry = transient(exc, over_http) and (sent is None or _may_repeat(sent))
            if not retry or attempt >= retries:
                tries = f" (after {attempt + 1} tries)" if attempt else ""
                raise TransportFailure(f"{describe_failure(exc, target, token_from)}{tries}") from exc
        await sleep(BACKOFF_SECONDS * 2**attempt)
        attempt += 1


async def _why_not_listed(client: Client, name: str) -> str | None:
    """What a vfs-mcp server says of a tool it does not list (a read-only server's write
    tools, tools ``--tools`` leaves out); None from another server. The call is refused
    before anything runs."""
    try:
        error = error_of(await client.call_tool(name, {}))
    except MCPError as exc:  # -32602: a tool the server does not serve, and why
        return exc.message if exc.code == INVALID_PARAMS else None
    return str(error["message"]) if error else None


async def list_tools(target: Connectable) -> list[Tool]:
    """Every tool ``target`` lists."""
    async with Client(target) as client:
        return list((await client.list_tools()).tools)


def run_call(
    target: Target,
    name: str,
    arguments: Mapping[str, Any],
    raw: Mapping[str, str],
    *,
    plain: bool = False,
    full: bool = False,
    json_out: bool = False,
    retries: int = DEFAULT_RETRIES,
    token: str | None = None,
    token_from: str | None = None,
) -> int:
    """``vfs-mcp call``: print the result; return the exit code (0 ok, 1 tool error or unreachable, 2 usage)."""
    call = functools.partial(call_tool, target, name, arguments, raw, token=token, token_from=token_from)
    try:
        outcome = anyio.run(functools.partial(call, retries=retries))
    except TransportFailure as exc:
        print(f"vfs-mcp call: {exc}", file=sys.stderr)
        return 1
    if outcome.result is None:
        print(f"vfs-mcp call: {outcome.usage}", file=sys.stderr)
        return 2
    if json_out:
        print(to_json(outcome.result))
    else:
        sys.stdout.write(render(outcome.result, Style(use_color(plain)), full))
    return 1 if outcome.result.is_error else 0
