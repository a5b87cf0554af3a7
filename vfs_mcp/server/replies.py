"""What leaves the server, whatever an operation returned: encodable, and bounded.

Every request's reply is made encodable (``encodable_value``, by the server's outermost
middleware, ``calls.boundary.replies``): no string in it may hold a lone surrogate, which the
transport cannot encode. ``cap_reply`` cuts a reply to the
server's character limit in each view. ``lenient`` reads a request line that pydantic's JSON
parser refused because it holds a lone surrogate escape.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    TextContent,
    jsonrpc_message_adapter,
)
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from vfs_mcp.profiles.results import META_CUT, META_RESULT, compact_json


class WireResult(CallToolResult):
    """A tool result whose JSON dump hands its ``_meta`` over as it is, not copied: the SDK's
    runner dumps a result, then validates and dumps it again for the protocol version, then
    serializes it, and a big tree in ``_meta`` cost a copy each time. Its fields are
    JSON data already, and whatever is not is converted by the passes that follow."""

    def model_dump(self, **options: Any) -> dict[str, Any]:
        if self.meta is None or options.get("mode") != "json" or options.get("exclude") or options.get("include"):
            return super().model_dump(**options)
        dumped = super().model_dump(**options, exclude={"meta"})
        dumped["_meta" if options.get("by_alias") else "meta"] = self.meta
        return dumped


def wired(result: CallToolResult) -> CallToolResult:
    """``result`` as a ``WireResult`` (the same fields, not validated again)."""
    fields = {name: getattr(result, name) for name in type(result).model_fields}
    return WireResult.model_construct(_fields_set=result.model_fields_set, **fields)


def encodable_reply(result: Any) -> Any:
    """``result`` as it is when it goes on the wire as it is (``_encodes``), else with every
    lone surrogate in it replaced (``encodable_value``)."""
    return result if _encodes(result) else encodable_value(result)


def _encodes(result: Any) -> bool:
    """Whether ``result`` goes on the wire as it is: the text of its content blocks searched (a
    10 MB file's text is neither copied nor serialized here), the rest serialized as the
    transport will, in compiled code (not a walk over a tree's 20,000 names). A tool result
    comes as the SDK's ``CallToolResult`` or as the dict it dumps it to."""
    try:
        if isinstance(result, CallToolResult):
            blocks: list[Any] = list(result.content)
            data = [result.meta, result.structured_content]  # JSON data as the tools make it: orjson's
            rest: Any = result.model_copy(update={"content": [], "meta": None, "structured_content": None})
        elif isinstance(result, dict) and isinstance(result.get("content"), list):
            blocks, rest = result["content"], None
            data = [{key: value for key, value in result.items() if key != "content"}]
        else:
            to_json(result)
            return True
        for block in blocks:
            text = _text_of(block)
            if text is None:
                to_json(block)
            elif encodable(text) is not text:
                return False
        for value in data:
            _serializes(value)
        if rest is not None:
            to_json(rest)
    except PydanticSerializationError:
        return False
    return True


def _serializes(value: Any) -> None:
    """Serialize ``value`` as a check: with orjson (a tree's 20,000 nodes in a quarter of
    pydantic's time), or where orjson refuses it (a lone surrogate, a type it does not know)
    with pydantic, which decides (PydanticSerializationError)."""
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        to_json(value)


def _text_of(block: Any) -> str | None:
    """The text of a text block (a model or its dict); None for any other block."""
    if isinstance(block, TextContent):
        return block.text
    text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
    return text if isinstance(text, str) else None


MAX_REQUEST_DEPTH = 200
"""Nesting deeper than this in a request line is refused (no tool takes arguments that deep)."""
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,30})')


def reread(error: ValidationError) -> tuple[SessionMessage | None, list[SessionMessage]]:
    """A request line the SDK's parser refused: (the message to serve, read again by ``json``,
    which takes a lone surrogate escape, as a client names a file whose name is not valid
    UTF-8), or (None, the JSON-RPC errors to answer with): a batch, a line nested too deeply,
    a number too long, or JSON that is not JSON. Never silence: a request with an id (found
    in the raw line where the line cannot be parsed) gets its error."""
    problems = error.errors()
    raw = problems[0].get("input") if problems else None
    said = problems[0].get("msg") if problems else "unreadable"
    if isinstance(raw, list):
        return None, [SessionMessage(refusal) for refusal in refused_batch(raw, "per line")]
    if not isinstance(raw, str | bytes):
        request_id = raw.get("id") if isinstance(raw, dict) else None
        return None, [_refusal(request_id, INVALID_REQUEST, f"not a JSON-RPC message: {encodable(str(said))}")]
    line = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    request_id = _raw_id(line)
    if nesting(line) > MAX_REQUEST_DEPTH:
        return None, [
            _refusal(request_id, INVALID_REQUEST, f"request nested more than {MAX_REQUEST_DEPTH} levels deep")
        ]
    try:
        data = json.loads(line)
        return SessionMessage(jsonrpc_message_adapter.validate_python(data, by_name=False)), []
    except (ValueError, RecursionError, ValidationError) as exc:
        reason = "a number in it is too long" if "digits" in str(exc) or "out of range" in str(exc) else "invalid JSON"
        return None, [_refusal(request_id, PARSE_ERROR, f"cannot read the request: {reason}")]


_FIRST_ID = re.compile(
    rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,200}"\s*,)*\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,30})'
)
"""A request's id where it comes first, or after its ``jsonrpc`` and ``method`` (the Python SDK's order),"""
_LAST_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,30})\s*\}\s*\Z')
"""and where it comes last (the TypeScript SDK's)."""


def refused_line(head: bytes, tail: bytes, size: int, limit: int) -> SessionMessage:
    """The answer to a request line of ``size`` bytes, over the ``limit`` any request needs,
    read no further than its first and last bytes: an error under its id, where clients write it."""
    found = _FIRST_ID.match(head) or _LAST_ID.search(tail)
    request_id = _raw_id(found.group(0)) if found else None
    return _refusal(
        request_id,
        INVALID_REQUEST,
        f"the request is {size:,} bytes, over the {limit:,}-byte limit of one request; "
        "send less in one call (split the patch or the file)",
    )


def refused_batch(items: list[Any], how: str) -> list[JSONRPCError]:
    """The answer to a JSON-RPC batch, which this protocol version has not: an error for each
    request in it, under its id (a client waits for each), or one without an id when it holds
    no request. ``how``: how to send requests instead (``per line``)."""
    message = f"batches are not part of this protocol version; send one request {how}"
    ids = [item["id"] for item in items if isinstance(item, dict) and "method" in item and _is_id(item.get("id"))]
    error = ErrorData(code=INVALID_REQUEST, message=message)
    return [JSONRPCError(jsonrpc="2.0", id=request_id, error=error) for request_id in ids or [None]]


def nesting(line: bytes) -> int:
    """How deeply brackets nest in ``line``, strings aside (linear, no parse)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            escaped = not escaped and byte == 0x5C
            in_string = escaped or byte != 0x22
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def json_value(text: str, kind: type) -> Any:
    """The JSON ``text`` as a value of ``kind`` (``object``: any); ValueError saying why not,
    nesting deeper than a server takes a request included (a RecursionError otherwise)."""
    if nesting(text.encode("utf-8", "surrogatepass")) > MAX_REQUEST_DEPTH:
        raise ValueError(f"it is nested more than {MAX_REQUEST_DEPTH} levels deep")
    value = json.loads(text)
    if not isinstance(value, kind):
        raise ValueError(f"it is not a JSON {'array' if kind is list else 'object'}")
    return value


def _raw_id(line: bytes) -> str | int | None:
    match = _ID.search(line[:4096])
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, str | int) else None


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _refusal(request_id: Any, code: int, message: str) -> SessionMessage:
    error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
    return SessionMessage(error)


def _json_size(value: Any) -> int:
    return len(compact_json(value))


def _fit(value: Any, room: int) -> Any:
    """``value`` cut to at most ``room`` characters of compact JSON, keeping its shape (strings
    shortened, lists ended early), so a cut structured result still fits its output schema."""
    size = _json_size(value)
    if size <= room:
        return value
    if isinstance(value, str):
        keep = len(value)
        while keep > 0 and (size := _json_size(value[:keep])) > room:
            keep = min(keep - 1, keep * room // size)  # escapes make the JSON longer than the text
        return value[:keep]
    if isinstance(value, list):
        kept: list[Any] = []
        used = 2
        for item in value:
            used += _json_size(item) + 1
            if used > room:
                break
            kept.append(item)
        return kept
    if isinstance(value, dict):
        fitted = dict(value)
        while (size := _json_size(fitted)) > room:
            key = max(fitted, key=lambda k: _json_size(fitted[k]))
            smaller = _fit(fitted[key], _json_size(fitted[key]) - (size - room))
            if _json_size(smaller) >= _json_size(fitted[key]):
                break  # nothing left to cut
            fitted[key] = smaller
        return fitted
    return value


def cap_reply(result: CallToolResult, limit: int) -> CallToolResult:
    """Cut a reply to ``limit`` characters in each view, saying what was cut and how to get the rest.

    The text blocks are cut to ``limit`` characters in all, the structured content to
    ``limit`` characters of JSON keeping its shape; the note is added when either was cut.
    The result fields in ``_meta`` (never shown to a model) are cut the same way, marked
    with ``META_CUT``.
    """
    total = sum(len(block.text) for block in result.content if isinstance(block, TextContent))
    structured = result.structured_content
    data = (result.meta or {}).get(META_RESULT)
    update: dict[str, Any] = {}
    if data is not None and _json_size(data) > limit:
        update["meta"] = {**(result.meta or {}), META_RESULT: _fit(data, limit), META_CUT: limit}
    if structured is not None and _json_size(structured) > limit:
        update["structured_content"] = _fit(structured, limit)
    if total > limit or "structured_content" in update:
        room, blocks = limit, []
        for block in result.content:
            if isinstance(block, TextContent):
                block = TextContent(type="text", text=block.text[: max(room, 0)])
                room -= len(block.text)
            blocks.append(block)
        size = max(total, _json_size(structured) if structured is not None else 0)
        note = (
            f"[cut: the reply was {size} characters, over the server's {limit}-character limit; "
            "ask for less: ranged reads (read_file offset_bytes/max_bytes, read_file_lines), paging "
            "(results_offset, offset/limit) or a narrower path or pattern]"
        )
        update["content"] = [*blocks, TextContent(type="text", text=note)]
    return result.model_copy(update=update) if update else result


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with every lone surrogate (an undecodable byte of a name or file, or a bad
    ``\\ud800`` escape) replaced by U+FFFD: JSON on the wire must be valid UTF-8, and one such
    character would make the transport fail and take the server down."""
    if text.isascii():  # known to the string itself: no scan (the search reads every character)
        return text
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def encodable_value(value: Any) -> Any:
    """``value`` (a pydantic model, dict, list or string, nested) with ``encodable`` strings;
    the same object when nothing needed replacing."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, BaseModel):
        changed = {}
        for name, item in value.__dict__.items():
            fixed = encodable_value(item)
            if fixed is not item:
                changed[name] = fixed
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, dict):
        pairs = [(encodable_value(k), encodable_value(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [encodable_value(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value
