"""The XML interface (docs/xml-interface.md): run ``<mcp:filesystem>`` blocks of commands against a server.

    <mcp:filesystem>
        <cd path="src" />
        <read path="app.py" />
        <write path="notes.txt">Text to write.</write>
        <head_file path="app.py" lines="5" />
    </mcp:filesystem>

Blocks are found in free text (the prose around them is ignored) and each is parsed by
expat through defusedxml: no DTD, no entity declarations, no external references. The
parser is fed a wrapper element of ours before the block, so a document prolog — the only
place a DTD can appear — is never the caller's to write; a "billion laughs" block fails
on its undefined entity before anything expands.

Commands run in order on one MCP client, so ``cd`` carries over to every command after it,
across blocks too. ``read``, ``write``, ``list``, ``search``, ``cd`` and ``grep`` name
default-profile tools (with docs/xml-interface.md's defaults: ``write`` creates parent folders, ``grep``
ignores case); any other element names a tool, its attributes the arguments (coerced to the
tool's schema types), its text the ``content`` of tools that take one. Each command gives a
CommandResult with the HTTP-like status of its code (docs/protocol.md, "Errors"); a failure never stops the commands
after it.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TextIO
from xml.etree.ElementTree import Element, ParseError, TreeBuilder
from xml.parsers.expat import ErrorString
from xml.sax.saxutils import escape, quoteattr

import anyio
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, Tool

from vfs_mcp.cli.client import Connectable, UsageError, coerce_arguments
from vfs_mcp.profiles.results import data_of, error_of

ALIASES = {
    "read": "read_file",
    "write": "write_file",
    "list": "list_directory",
    "search": "search_files",
    "cd": "change_directory",
    "grep": "grep_files",
}
# The XML interface's own defaults for its commands, where they differ from the tools' (as attribute text).
XML_DEFAULTS = {"write": {"create_dirs": "true"}, "grep": {"case_sensitive": "false"}}

_OPEN = "<mcp:filesystem"
_CLOSE = "</mcp:filesystem>"
_CHUNK = 64 * 1024
MAX_BLOCK_CHARS = 16 * 1024 * 1024
"""Largest block read: a bigger one is refused before it is parsed (its content would be a
write of more than that anyway; use write_file through a client for big files)."""
MAX_ATTRIBUTE_CHARS = 64 * 1024
"""Largest attribute value (a path, a pattern) a command takes; text content may be longer."""
MAX_DEPTH = 4
"""The wrapper, the block, a command, and one level more (refused with its command's own message)."""
MAX_ECHO = 200
"""Characters of a caller's value a result repeats (a refused value is never echoed whole)."""
_WRAPPER = b'<vfs-mcp xmlns:mcp="urn:vfs-mcp">'
_TEXT_ENTITIES = {"\r": "&#13;"}  # a bare CR would read back as LF
# Characters XML 1.0 cannot carry at all (control characters, U+FFFE/U+FFFF): shown as U+FFFD.
_NOT_XML = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF], 0xFFFD)


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one command: an HTTP-like status (200 on success) and the message."""

    block: int
    command: str
    status: int
    message: str
    tool: str | None = None
    code: str | None = None
    path: str | None = None
    structured: dict[str, Any] | None = None

    @property
    def success(self) -> bool:
        return self.status == 200


class BlockError(ValueError):
    """A block that is not well-formed XML (or declares a DTD or entities)."""


class _BlockClosed(Exception):
    def __init__(self, element: Element, at: int, bare: bool) -> None:
        self.element = element
        self.at = at
        self.bare = bare


class _Builder(TreeBuilder):
    """A tree builder that stops the parse when the block (the wrapper's first child) closes."""

    depth = 0
    bare = False  # nothing seen inside the block yet: it may be a self-closing <mcp:filesystem/>
    expat: Any = None

    def start(self, tag: str, attrs: dict[str, str]) -> Element:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise BlockError("elements nest too deep: a block holds commands, and a command takes no elements")
        self.bare = self.depth == 2
        return super().start(tag, attrs)

    def data(self, data: str) -> None:
        self.bare = False
        super().data(data)

    def end(self, tag: str) -> Element:
        self.depth -= 1
        element = super().end(tag)
        if self.depth == 1:
            # Expat forgets its position once a handler raises: pass it on. It is the start
            # of the closing tag, or just after a self-closing tag.
            raise _BlockClosed(element, self.expat.CurrentByteIndex, self.bare)
        return element


def _find_open(text: str, pos: int) -> int:
    """Where the next ``<mcp:filesystem`` tag starts (not ``<mcp:filesystems``), or -1."""
    while (start := text.find(_OPEN, pos)) >= 0:
        follower = text[start + len(_OPEN) : start + len(_OPEN) + 1]
        if follower in ("", ">", "/") or follower.isspace():
            return start
        pos = start + 1
    return -1


def _where(text: str, start: int, error: ParseError) -> str:
    """Line and column of a parse error in the whole input (the wrapper removed)."""
    line, column = error.position
    if line == 1:
        column += start - (text.rfind("\n", 0, start) + 1) - len(_WRAPPER)
    return f"line {text.count(chr(10), 0, start) + line}, column {column + 1}"


def parse_block(text: str, start: int) -> tuple[Element, int]:
    """Parse the block starting at ``text[start]``; return it and where it ends.

    The text is fed in chunks and the parse stops when the block closes, so the prose and
    blocks after it are not read here; it stops too at an element nested deeper than a
    command's, and past ``MAX_BLOCK_CHARS``, so no input makes the blocks cost more than
    a pass over it. Raises BlockError (with line and column) when the block is not
    well-formed, never closes, nests too deep or is too large.
    """
    builder = _Builder()
    parser = DefusedXMLParser(target=builder, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    builder.expat = parser.parser
    fed = bytearray()
    try:
        parser.feed(_WRAPPER)
        for i in range(start, len(text), _CHUNK):
            if i - start >= MAX_BLOCK_CHARS:
                raise BlockError(f"the block is not closed within {MAX_BLOCK_CHARS:,} characters, the limit")
            chunk = text[i : i + _CHUNK].encode("utf-8", "surrogatepass")
            fed += chunk
            parser.feed(chunk)
    except _BlockClosed as closed:
        at = closed.at - len(_WRAPPER)
        # A start tag never ends in "/>" unless it closes itself (attribute values are quoted).
        self_closing = closed.bare and fed[at - 2 : at] == b"/>"
        end = at if self_closing else fed.index(b">", at) + 1
        return closed.element, start + len(fed[:end].decode("utf-8", "surrogatepass"))
    except ParseError as exc:
        raise BlockError(f"malformed XML at {_where(text, start, exc)}: {ErrorString(exc.code)}") from exc
    except DefusedXmlException as exc:  # defense in depth: the wrapper leaves no place for a DTD
        raise BlockError("DTD and entity declarations are not accepted") from exc
    raise BlockError(f"the block is not closed with {_CLOSE}")


def blocks(text: str) -> Iterator[Element | BlockError]:
    """Every ``<mcp:filesystem>`` block in ``text``, parsed, in order (a BlockError for a bad one)."""
    pos = 0
    close = -1  # the first closing tag at or after the current block, found once (linear overall)
    while (start := _find_open(text, pos)) >= 0:
        try:
            element, pos = parse_block(text, start)
        except BlockError as exc:
            yield exc
            # Go on after this block's closing tag, unless another block opens first.
            if close != -2 and close < start:
                found = text.find(_CLOSE, start)
                close = found if found >= 0 else -2  # -2: there is none after here
            following = _find_open(text, start + 1)
            ends = [i for i in (close + len(_CLOSE) if close >= 0 else -1, following) if i >= 0]
            pos = min(ends, default=len(text))
            continue
        yield element


def _local(name: str) -> str:
    return name.rpartition("}")[2]


def content_of(text: str) -> str:
    """The ``content`` an element's text stands for.

    Text that starts right after the opening tag is taken as it is. Text that starts on a
    new line is laid out for reading: that first line break, the indentation of the closing
    tag and the common indentation of every line are removed.
    """
    if not text.startswith("\n"):  # expat has already turned CRLF into LF
        return text
    body = text.split("\n", 1)[1]
    head, _, last = body.rpartition("\n")
    if not last.strip():
        body = head + "\n" if head else ""
    return textwrap.dedent(body)


def _result(block: int, command: str, tool: str, path: str | None, result: CallToolResult) -> CommandResult:
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    error = error_of(result)
    if error:
        status, code = int(error.get("status", 500)), str(error.get("code", "INTERNAL"))
        return CommandResult(block, command, status, str(error.get("message", text)), tool, code, path)
    if result.is_error:
        return CommandResult(block, command, 500, text, tool, "INTERNAL", path)
    return CommandResult(block, command, 200, text, tool, None, path, data_of(result))


class XmlRunner:
    """Runs blocks of XML commands on one server, keeping its working directory between runs.

    ``target`` is anything the MCP client connects to: a server built by ``build_server``
    (in-process), a ``StdioServerParameters`` or an HTTP URL::

        async with XmlRunner(build_server(mounts)) as runner:
            for result in await runner.run(text):
                print(result.status, result.message)
    """

    def __init__(self, target: Connectable) -> None:
        self.target = target
        self._stack = AsyncExitStack()
        self._client: Client | None = None
        self._tools: dict[str, Tool] = {}

    async def __aenter__(self) -> XmlRunner:
        self._client = await self._stack.enter_async_context(Client(self.target))
        self._tools = {tool.name: tool for tool in (await self._client.list_tools()).tools}
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._client = None
        await self._stack.aclose()

    async def results(self, text: str) -> AsyncIterator[CommandResult]:
        """Run every command of every block in ``text``, yielding each result as it comes."""
        for number, block in enumerate(blocks(text), 1):
            if isinstance(block, BlockError):
                yield CommandResult(number, "mcp:filesystem", 400, str(block), code="INVALID_ARGUMENT")
                continue
            for element in block:
                yield await self.run_command(number, element)

    async def run(self, text: str) -> list[CommandResult]:
        """Every result of ``text``, in order."""
        return [result async for result in self.results(text)]

    async def run_command(self, block: int, element: Element) -> CommandResult:
        """Run one command element. A failed command is a result; only a lost connection raises."""
        if self._client is None:
            raise RuntimeError("XmlRunner must be used within 'async with'")
        command = _local(element.tag)
        attributes = {_local(k): v for k, v in element.attrib.items()}
        path = attributes.get("path")
        too_long = [k for k, v in attributes.items() if len(v) > MAX_ATTRIBUTE_CHARS]
        if too_long:
            return CommandResult(
                block,
                command,
                400,
                f"attribute {too_long[0]} is {len(attributes[too_long[0]]):,} characters, over the "
                f"{MAX_ATTRIBUTE_CHARS:,}-character limit",
                None,
                "INVALID_ARGUMENT",
                _shortened(path),
            )

        def refused(message: str, tool: str | None = None) -> CommandResult:
            return CommandResult(block, command, 400, message, tool, "INVALID_ARGUMENT", path)

        name = ALIASES.get(command, command)
        tool = self._tools.get(name)
        if tool is None:
            return refused(
                f"unknown command <{command}>; use read, write, list, search, cd, get_working_directory, grep "
                "or a tool name (vfs-mcp tools lists them)"
            )
        if len(element):
            return refused(f"<{command}> takes attributes and text, not child elements", name)
        properties = tool.input_schema.get("properties") or {}
        text = element.text or ""
        if "content" in properties and "content" not in attributes:
            attributes["content"] = content_of(text)
        elif text.strip():
            return refused(f"<{command}> takes no text; pass arguments as attributes", name)
        defaults = {k: v for k, v in XML_DEFAULTS.get(command, {}).items() if k in properties}
        try:
            arguments = coerce_arguments(tool, {**defaults, **attributes})
            result = await self._client.call_tool(name, arguments)
        except UsageError as exc:
            return refused(str(exc), name)
        except MCPError as exc:
            status = 400 if exc.code == INVALID_PARAMS else 500
            code = "INVALID_ARGUMENT" if status == 400 else "INTERNAL"
            return CommandResult(block, command, status, exc.error.message, name, code, path)
        return _result(block, command, name, path, result)


def _shortened(value: str | None) -> str | None:
    """A caller's value as a result may repeat it: cut, saying how much was left out."""
    if value is None or len(value) <= MAX_ECHO:
        return value
    return f"{value[:MAX_ECHO]}...[{len(value) - MAX_ECHO:,} more characters]"


def _clean(text: str) -> str:
    return text.translate(_NOT_XML).encode("utf-8", "replace").decode("utf-8")


def to_xml(result: CommandResult) -> str:
    """One ``<result>`` element: status and success flag as attributes, the message as text."""
    attributes = {
        "block": result.block,
        "command": result.command,
        "tool": result.tool,
        "path": _shortened(result.path),
        "status": result.status,
        "success": "true" if result.success else "false",
        "code": result.code,
    }
    head = " ".join(f"{k}={quoteattr(_clean(str(v)))}" for k, v in attributes.items() if v is not None)
    return f"<result {head}>{escape(_clean(result.message), _TEXT_ENTITIES)}</result>"


async def run_and_print(text: str, target: Connectable, out: TextIO | None = None) -> int:
    """``vfs-mcp xml``: print a ``<results>`` document as commands finish; the exit code.

    0 when every command succeeded, 1 when any failed or there was no block at all.
    """
    out = out or sys.stdout
    ran = failed = 0
    print("<results>", file=out, flush=True)
    async with XmlRunner(target) as runner:
        async for result in runner.results(text):
            ran += 1
            failed += not result.success
            print(to_xml(result), file=out, flush=True)
    print("</results>", file=out, flush=True)
    if not ran:
        print(f"vfs-mcp xml: no commands found (wrap them in {_OPEN}>...{_CLOSE})", file=sys.stderr)
    return 1 if failed or not ran else 0


def run_text(text: str, target: Connectable) -> list[CommandResult]:
    """Synchronous convenience: run ``text`` on a fresh client and return every result."""

    async def go() -> list[CommandResult]:
        async with XmlRunner(target) as runner:
            return await runner.run(text)

    return anyio.run(go)
