"""A person asked before a change destroys (``--confirm``), in the client's own dialog: through
2025-11-25 an ``elicitation/create`` request sent mid-call; on 2026-07-28 an input round (an
``InputRequiredResult`` whose ``requestState``, sealed by the SDK's boundary, names the plan
asked about), answered by the same call made again, on this replica or another. Which changes
ask, and the check that the plan committed is the one accepted, are the write path's
(``vfs_mcp.changes.confirm``); this stage only asks.

A client that declared no form elicitation is never sent a request: under the default policy
(``auto``) nothing asks it; under a policy the operator named, a change that would ask is
DECLINED, saying the client cannot show the question. What this session read whole, or wrote,
is noted here from the results (``seen``: a path and the sha256 of its whole content): a
whole-file write over a file the session knows as it is asks nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio.from_thread
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ClientCapabilities,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from vfs_mcp import sessions
from vfs_mcp.errors import Declined, VfsError
from vfs_mcp.profiles.results import META_RESULT
from vfs_mcp.server.calls.call import Call, Next, Result

if TYPE_CHECKING:  # the write path loads with the first change, not with this stage
    from vfs_mcp.changes.confirm import Asker, Question

KEY = "vfs-mcp/confirm"
"""The input request's key in an input round, and the answer's."""

STATE_VERSION = 1
SEEN = 10_000
"""Files a session's ``seen`` remembers (the least recently noted go first)."""

FORM: dict[str, Any] = {"type": "object", "properties": {}}
"""The form: nothing to fill in; the person accepts or declines."""


class AskFirst(Exception):
    """Raised in the worker by a 2026-07-28 asker: the call ends with an input round asking ``question``."""

    def __init__(self, question: Question) -> None:
        super().__init__(question.action)
        self.question = question


async def stage(call: Call, next_stage: Next) -> Result:
    settings = call.server.vfs_settings
    policy = settings.confirm if settings is not None else "never"
    if policy == "never" or call.tool is None:
        return await next_stage(call)
    asker = _asker(call, explicit=policy != "auto")
    if asker is None:
        return await next_stage(call)
    seen = seen_of(call)
    hints = call.tool.annotations
    if hints is not None and hints.read_only_hint:
        result = await next_stage(call)
    else:
        from vfs_mcp.changes import confirm  # the write path loads with the first change

        call.confirming = confirm.Confirming("destructive" if policy == "auto" else policy, asker, seen)
        try:
            result = await next_stage(call)
        except AskFirst as asking:
            return _round(asking.question)
    _note(call, result, seen)
    return result


def _round(question: Question) -> InputRequiredResult:
    """The input round asking ``question``; its state names the plan asked about."""
    request = ElicitRequest(params=ElicitRequestFormParams(message=question.message(), requested_schema=FORM))
    state = json.dumps({"v": STATE_VERSION, "key": question.key})
    return InputRequiredResult(input_requests={KEY: request}, request_state=state)


def can_ask(call: Call) -> bool:
    """Whether the client declared form elicitation (a bare ``elicitation: {}`` is form)."""
    return _form(call.context.client_capabilities if call.context is not None and call.request else None)


def asks(policy: str, capabilities: ClientCapabilities | None, read_only: bool) -> bool:
    """Whether a call may ask the person (or be refused for a client that cannot be asked)
    before it changes anything: under ``policy``, from a client with ``capabilities``, of a tool
    that only reads or not (``vfs_mcp.server.tasks``: such a call is answered in its request)."""
    if policy == "never" or read_only:
        return False
    return policy != "auto" or _form(capabilities)


def _form(capabilities: ClientCapabilities | None) -> bool:
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _asker(call: Call, *, explicit: bool) -> Asker | None:
    request = call.request
    if request is None or call.context is None or not can_ask(call):
        return _Unaskable() if explicit else None
    if request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return _Rounds(call.context.input_responses, call.context.request_state)
    if not request.session.can_send_request:  # HTTP without a session: nothing to ask on
        return _Unaskable() if explicit else None
    return _Asking(call)


class _Asking:
    """2025-11-25 and before: ``elicitation/create`` sent from the worker thread, waited for."""

    def __init__(self, call: Call) -> None:
        assert call.request is not None
        self.session, self.request_id = call.request.session, call.request.request_id

    def ask(self, question: Question) -> None:
        try:
            answer: ElicitResult = anyio.from_thread.run(self._elicit, question.message())
        except MCPError as err:  # the client could not show it: nobody accepted
            raise Declined(
                f"the client could not ask the person to {question.action} ({err.error.message}); nothing was "
                "changed: do not retry, ask the user to do it"
            ) from None
        if answer.action != "accept":
            raise declined(question, answer.action)

    async def _elicit(self, message: str) -> ElicitResult:
        return await self.session.elicit_form(message, FORM, related_request_id=self.request_id)


class _Rounds:
    """2026-07-28: the answer comes with the call made again; until then, an input round."""

    def __init__(self, responses: Any, state: str | None) -> None:
        self.answer = (responses or {}).get(KEY)
        self.asked: str | None = None
        with contextlib.suppress(ValueError):
            decoded = json.loads(state) if state else None
            if isinstance(decoded, dict) and decoded.get("v") == STATE_VERSION and isinstance(decoded.get("key"), str):
                self.asked = decoded["key"]

    def ask(self, question: Question) -> None:
        from vfs_mcp.changes.confirm import changed_since

        if not isinstance(self.answer, ElicitResult) or self.asked is None:
            raise AskFirst(question)
        if self.asked != question.key:
            raise changed_since(question)
        if self.answer.action != "accept":
            raise declined(question, self.answer.action)


class _Unaskable:
    """A client that cannot show a form, under a policy the operator named: refused, never sent."""

    def ask(self, question: Question) -> None:
        raise Declined(
            f"this server asks a person before it will {question.action}, and this client cannot show the "
            "question (it declared no elicitation); nothing was changed: do not retry, ask the user to do it"
        )


def declined(question: Question, action: str) -> Declined:
    how = "declined" if action == "decline" else "dismissed"
    return Declined(
        f"the person {how} the request to {question.action}; nothing was changed: do not retry, ask the user "
        "what to do instead"
    )


SEEN_FILES: sessions.Slot[OrderedDict[str, str]] = sessions.Slot("what the session read whole or wrote")


def seen_of(call: Call) -> OrderedDict[str, str]:
    """What this session read whole or wrote, path -> the sha256 of the content it saw."""
    vfs = call.server.vfs
    return sessions.kept_by(call.session, SEEN_FILES, OrderedDict, vfs.kept if vfs is not None else sessions.Slots())


def _note(call: Call, result: Result, seen: OrderedDict[str, str]) -> None:
    """Note each file a successful result says it read or wrote whole: its path and the sha256
    of its whole content (``_meta["vfs-mcp/result"]``: a whole read, ``read_multiple_files``'
    files, a write)."""
    if not isinstance(result, CallToolResult) or result.is_error or call.server.vfs is None:
        return
    fields = (result.meta or {}).get(META_RESULT)
    if not isinstance(fields, dict):
        return
    listed = fields.get("files")
    files: list[Any] = listed if isinstance(listed, list) else [fields]
    for one in files:
        path, digest = (one.get("path"), one.get("sha256")) if isinstance(one, dict) else (None, None)
        if not isinstance(path, str) or not isinstance(digest, str):
            continue
        try:
            shown = call.server.vfs.resolve(path).display
        except VfsError:
            continue
        seen[shown] = digest
        seen.move_to_end(shown)
    while len(seen) > SEEN:
        seen.popitem(last=False)


__all__ = ["KEY", "AskFirst", "asks", "can_ask", "stage"]
