"""Every tool call a server answered, kept as it happened, saved as JSON lines and replayed.

    client.save_calls("session.jsonl")                  # a session, paths made mount-relative
    report = await replay("session.jsonl", other)       # the same calls against another server
    assert report.same, report                          # or: which call differs first, and how

A recorded line holds the tool, its arguments, the outcome (``ok`` or ``error``), the error code
and a digest of what the model saw, the ids of the changes it made, and the version of every
file it read (``reads``: the ETag, with the VersionId on a bucket that keeps versions, else the
sha256 of the bytes read; ``vfs_mcp.jail.versions``). The mount root is written ``${root}``
throughout, so a session recorded on ``memory://`` replays on a local folder or a bucket; change
ids are new on every run, so the digest reads each as ``${change}`` and a replayed
``undo(change_id=…)`` names the id its change got in the replay.

Outcomes are compared by default. ``strict=True`` stops at the first call that read a file at
another version than the recording says (its inputs drifted: the difference names the file and
both versions), and compares the digests too (they hold sizes and times, which differ between
stores). ``pin_versions=True``, on a bucket that keeps versions, reads each file a call read at
the version the recording names, so a session replays against the bucket as it was.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp import Client
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.methods import is_input_required
from pydantic import BaseModel

from vfs_mcp.jail import versions
from vfs_mcp.jail.versions import Version
from vfs_mcp.profiles.results import META_ERROR, META_RESULT, error_of
from vfs_mcp.server.replies import json_value

ROOT = "${root}"
"""How a recording writes the mount root, in arguments and in the digested text."""
CHANGE = re.compile(r"(?<=change )[A-Za-z0-9_-]{22}\b")
"""A change id where a reply names one."""


@dataclass(frozen=True)
class ToolCall:
    """One ``tools/call`` the server answered, in the order the answers came."""

    tool: str
    arguments: dict[str, Any]
    is_error: bool
    code: str | None
    """The stable error code (``NOT_FOUND``, ``READ_ONLY``, ...) of a failed call; None otherwise."""
    text: str
    """The result's text blocks, joined by newlines (for a failure, the message the model saw)."""
    structured: dict[str, Any] | None = None
    """The result's fields (as ``data_of`` gives them); None for a failure."""
    reads: tuple[tuple[str, Version], ...] = ()
    """Every file it read, as results name it, with the version it read (the first, if several)."""

    @property
    def outcome(self) -> str:
        """``ok``, or the error code of a failure (``error`` when it has none)."""
        return (self.code or "error") if self.is_error else "ok"


@dataclass(frozen=True)
class RecordedCall:
    """One line of a recording: a call with the mount root written ``${root}``."""

    tool: str
    arguments: dict[str, Any]
    outcome: str
    """``ok``, or the error code of a failure."""
    digest: str
    """sha256 of the text the model saw, the mount root written ``${root}``."""
    changes: tuple[str, ...] = ()
    """The ids of the changes it made."""
    reads: tuple[tuple[str, Version], ...] = ()
    """Every file it read (the root written ``${root}``) with the version it read."""

    def to_json(self) -> str:
        line: dict[str, Any] = {
            "tool": self.tool,
            "arguments": self.arguments,
            "outcome": self.outcome,
            "digest": self.digest,
        }
        if self.changes:
            line["changes"] = list(self.changes)
        if self.reads:
            line["reads"] = [{"path": path, **version.to_json()} for path, version in self.reads]
        return json.dumps(line, ensure_ascii=False, sort_keys=True)

    @classmethod
    def of(cls, call: ToolCall, root: str) -> RecordedCall:
        """``call`` as recorded on a mount whose root is ``root``."""
        ids = tuple(CHANGE.findall(call.text)) if not call.is_error else ()
        reads = tuple((_rooted(path, root, ROOT), version) for path, version in call.reads)
        return cls(call.tool, _rooted(call.arguments, root, ROOT), call.outcome, _digest(call.text, root), ids, reads)


@dataclass(frozen=True)
class Drift:
    """A file a call read at another version on replay than when it was recorded."""

    path: str
    """As the recording names it (the root written ``${root}``)."""
    recorded: Version
    replayed: Version

    def __str__(self) -> str:
        return f"it read {self.path} at {self.recorded} when recorded, at {self.replayed} on replay"


@dataclass(frozen=True)
class Difference:
    """The first replayed call whose outcome (or, strictly, whose inputs or result) differs."""

    index: int
    """Its position in the recording, from 0."""
    recorded: RecordedCall
    replayed: RecordedCall
    text: str
    """What the model saw on replay."""
    drift: Drift | None = None
    """Strictly: the first file it read at another version (its inputs differ)."""

    def __str__(self) -> str:
        if self.drift is not None:
            what = f"its inputs differ: {self.drift}"
        elif self.recorded.outcome != self.replayed.outcome:
            what = f"outcome {self.recorded.outcome} was {self.replayed.outcome}"
        else:
            what = "the same outcome with a different result"
        shown = self.text if len(self.text) <= 300 else self.text[:300] + "..."
        arguments = json.dumps(self.recorded.arguments, ensure_ascii=False)
        return f"call {self.index + 1} ({self.recorded.tool} {arguments}): {what}; the replay said: {shown}"


@dataclass(frozen=True)
class Replay:
    """What a replay found: how many calls ran, and the first that differs (None: none)."""

    calls: int
    difference: Difference | None

    @property
    def same(self) -> bool:
        return self.difference is None

    def __str__(self) -> str:
        if self.difference is None:
            return f"{self.calls} calls replayed, every outcome the same"
        return f"{self.difference.index + 1} of {self.calls} calls replayed; {self.difference}"


def save_calls(path: str | os.PathLike[str], calls: Iterable[ToolCall], root: str) -> None:
    """Write ``calls`` made on a mount whose root is ``root`` as a JSON lines file."""
    with open(path, "w", encoding="utf-8") as out:
        for call in calls:
            out.write(RecordedCall.of(call, root).to_json() + "\n")


def load_calls(path: str | os.PathLike[str]) -> list[RecordedCall]:
    """The calls of a recording; ValueError naming the line that is not one, and why."""
    calls = []
    with open(path, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                calls.append(_recorded_call(line))
            except ValueError as exc:
                raise ValueError(f"{os.fspath(path)} line {number} is not a recorded call: {exc}") from None
    return calls


_FIELDS = {"tool": str, "arguments": dict, "outcome": str, "digest": str}


def _recorded_call(line: str) -> RecordedCall:
    """One line as a call; ValueError saying what is wrong with it (nesting deeper than a
    request may be included: it would end in a RecursionError on the way to the server)."""
    raw = json_value(line, dict)
    for name, kind in _FIELDS.items():
        if not isinstance(raw.get(name), kind):
            raise ValueError(f"{name!r} must be a JSON {'object' if kind is dict else 'string'}")
    ids = raw.get("changes", [])
    if not isinstance(ids, list) or not all(isinstance(one, str) for one in ids):
        raise ValueError("'changes' must be a JSON array of strings")
    reads = raw.get("reads", [])
    if not isinstance(reads, list) or not all(
        isinstance(one, dict) and isinstance(one.get("path"), str) for one in reads
    ):
        raise ValueError("'reads' must be a JSON array of objects with a path")
    read = tuple((one["path"], Version.from_json(one)) for one in reads)
    return RecordedCall(raw["tool"], raw["arguments"], raw["outcome"], raw["digest"], tuple(ids), read)


async def replay(
    recording: str | os.PathLike[str] | Sequence[RecordedCall],
    client: Client,
    *,
    root: str,
    strict: bool = False,
    pin_versions: bool = False,
) -> Replay:
    """Make the recorded calls on ``client``'s server, whose mount root is ``root``, in order;
    stops at the first whose outcome (``strict``: or inputs, or result) differs from the
    recording. ``pin_versions``: each file a call read is read at the version the recording
    names (a bucket that keeps versions). The versions a call reads are known, and pinned, on a
    client of the harness (``connect``, ``memory_server``, ...: its server records them);
    ValueError for ``pin_versions`` on another client, or with a recording that names no
    version to pin.
    """
    calls = load_calls(recording) if isinstance(recording, (str, os.PathLike)) else list(recording)
    recorder: Recorder | None = getattr(client, "recorder", None)
    if pin_versions:
        if recorder is None:
            raise ValueError("pin_versions needs a client of the harness (vfs_mcp.testing.connect): its server pins")
        if not any(version.version_id for call in calls for _, version in call.reads):
            raise ValueError("the recording names no VersionId to pin (it was made on a store that keeps no versions)")
    renamed: dict[str, str] = {}
    """A recorded change id -> the id its change got in this replay."""
    for index, recorded in enumerate(calls):
        arguments = _renamed(_rooted(recorded.arguments, ROOT, root), renamed)
        ids: tuple[str, ...] = ()
        answered = len(recorder.calls) if recorder is not None else 0
        if recorder is not None and pin_versions:
            recorder.pins = {_rooted(path, ROOT, root): v.version_id for path, v in recorded.reads if v.version_id}
        try:
            result = await client.call_tool(recorded.tool, arguments)
        except MCPError as exc:  # a tool the server does not serve
            outcome, text = _refusal(exc) or "error", exc.message
        else:
            error = error_of(result) or {}
            text = "\n".join(getattr(block, "text", "") for block in result.content)
            outcome = str(error.get("code") or "error") if result.is_error else "ok"
            ids = tuple(CHANGE.findall(text)) if not result.is_error else ()
        finally:
            if recorder is not None:
                recorder.pins = {}
        renamed.update(zip(recorded.changes, ids, strict=False))
        made = recorder.calls[answered:] if recorder is not None else []
        reads = tuple((_rooted(path, root, ROOT), version) for path, version in made[-1].reads) if made else ()
        now = RecordedCall(recorded.tool, recorded.arguments, outcome, _digest(text, root), ids, reads)
        drift = _drift(recorded, now) if strict else None
        if drift or now.outcome != recorded.outcome or (strict and now.digest != recorded.digest):
            return Replay(len(calls), Difference(index, recorded, now, text, drift))
    return Replay(len(calls), None)


def _drift(recorded: RecordedCall, replayed: RecordedCall) -> Drift | None:
    """The first file both runs of a call read, at versions that hold different bytes."""
    now = dict(replayed.reads)
    for path, version in recorded.reads:
        other = now.get(path)
        if other is not None and version.same(other) is False:
            return Drift(path, version, other)
    return None


def _renamed(value: Any, ids: dict[str, str]) -> Any:
    """``value`` (JSON data) with each recorded change id written as the replay's."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_renamed(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, ids) for k, v in value.items()}
    return value


def _root_pattern(root: str) -> re.Pattern[str]:
    """``root`` where it stands as a path or a path's start (not ``/tmp/ab`` in ``/tmp/abc``)."""
    return re.compile(re.escape(root.rstrip("/") or root) + r"(?![\w.~-])")


def _rooted(value: Any, old: str, new: str) -> Any:
    """``value`` (JSON data) with every mention of the root ``old`` written ``new``."""
    if isinstance(value, str):
        return _root_pattern(old).sub(lambda _: new.rstrip("/") or new, value)
    if isinstance(value, list):
        return [_rooted(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rooted(v, old, new) for k, v in value.items()}
    return value


def _digest(text: str, root: str) -> str:
    shown = CHANGE.sub("${change}", _rooted(text, root, ROOT))
    return "sha256:" + hashlib.sha256(shown.encode("utf-8", "surrogatepass")).hexdigest()


class Recorder:
    """Server middleware that appends a ``ToolCall`` for every ``tools/call`` it sees answered,
    with the version of every file the call read (an input round of the 2026-07-28 era is no
    answer: the call made again with the client's answer is).

    On the server rather than in the client, so calls made through ``client.session`` or by
    another client connected to the same server are recorded too. ``pins`` (set by ``replay``,
    in this process: never by a request) are the versions the next call reads its files at.
    """

    def __init__(self, calls: list[ToolCall]) -> None:
        self.calls = calls
        self.pins: dict[str, str] = {}
        """How results name a file -> the VersionId the calls read of it."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = dict(ctx.params or {})
        tool = str(params.get("name", ""))
        arguments = copy.deepcopy(dict(params.get("arguments") or {}))
        with versions.noting(self.pins) as reads:
            try:
                result = await call_next(ctx)
            except Exception as exc:
                read = tuple(reads.seen.items())
                self.calls.append(ToolCall(tool, arguments, True, _refusal(exc), str(exc), reads=read))
                raise
        if is_input_required(result):
            return result  # an input round (roots, a confirmation): the call comes again with the answer
        self.calls.append(dataclasses.replace(_tool_call(tool, arguments, result), reads=tuple(reads.seen.items())))
        return result


def _refusal(exc: Exception) -> str | None:
    """The code of a call refused with a protocol error: -32602 (a tool the server does not
    serve) is INVALID_ARGUMENT, whose JSON-RPC code it is (``vfs_mcp.errors``)."""
    return "INVALID_ARGUMENT" if isinstance(exc, MCPError) and exc.code == INVALID_PARAMS else None


def _tool_call(tool: str, arguments: dict[str, Any], result: HandlerResult) -> ToolCall:
    wire: dict[str, Any] = (
        result.model_dump(by_alias=True, mode="json") if isinstance(result, BaseModel) else dict(result or {})
    )
    is_error = bool(wire.get("isError"))
    meta: dict[str, Any] = wire.get("_meta") or {}
    error = meta.get(META_ERROR) if is_error else None
    structured = wire.get("structuredContent") if isinstance(wire.get("structuredContent"), dict) else None
    if structured is None and not is_error and isinstance(meta.get(META_RESULT), dict):
        structured = meta[META_RESULT]
    texts = [block.get("text", "") for block in wire.get("content") or [] if block.get("type") == "text"]
    return ToolCall(
        tool,
        arguments,
        is_error=is_error,
        code=str(error["code"]) if isinstance(error, dict) and "code" in error else None,
        text="\n".join(texts),
        structured=structured,
    )
