"""A successful call's changes kept as its session's (their records are in the change
log already): the reply names each change's id, in its text and in ``_meta``, and says when a
change cannot be undone or pushed older ones out of the log (in ``_meta`` alone for a profile
whose text is its original's byte for byte: ``profiles.TEXT_EXACT``)."""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult, TextContent

from vfs_mcp import profiles
from vfs_mcp.config import DEFAULT_UNDO_BYTES
from vfs_mcp.jail.context import Recording
from vfs_mcp.profiles.results import META_RESULT
from vfs_mcp.server.calls.call import Call, Next, Result


async def stage(call: Call, next_stage: Next) -> Result:
    hints = call.tool.annotations if call.tool is not None else None
    if hints is not None and hints.read_only_hint:
        return await next_stage(call)  # a read-only tool changes nothing: no record
    record = call.recording = Recording(call.name, DEFAULT_UNDO_BYTES)  # the write path fills it (``CallContext``)
    result = await next_stage(call)
    if isinstance(result, CallToolResult) and not result.is_error and (record.changes or record.why_not):
        return kept(call, record, result)
    return result


def kept(call: Call, record: Recording, result: CallToolResult) -> CallToolResult:
    """``result`` with the ids of its changes, and a note when one could not be kept or pushed
    older ones out."""
    # The write path is imported by the first change, not at start (as the operations are, by the adapters).
    from vfs_mcp.changes import log_of
    from vfs_mcp.changes.kept import session_journal

    vfs, settings = call.server.vfs, call.server.vfs_settings
    if vfs is None or settings is None:
        return result
    changelog = log_of(vfs)
    journal = session_journal(changelog.sessions, settings.undo_limit)
    changelog.sessions.keep(record, journal)
    ids = list(record.changes)
    notes = [f"change {change_id}" for change_id in ids]
    if record.why_not:
        notes.append(f"[this change cannot be undone: {record.why_not}]")
    dropped = (journal or changelog.sessions.sessionless).unnoted_drops()
    if dropped and journal is not None:
        notes.append(f"[{dropped} older change(s) can no longer be undone (the undo log's limits)]")
    meta: dict[str, Any] = dict(result.meta or {})
    fields = dict(meta.get(META_RESULT) or {})
    if ids:
        fields["change_id"] = ids[-1]
        if len(ids) > 1:
            fields["change_ids"] = ids
    if call.tool is not None and profiles.profile_of(call.tool.fn.__module__) in profiles.TEXT_EXACT:
        if notes[len(ids) :]:
            fields["notes"] = notes[len(ids) :]
        meta[META_RESULT] = fields
        return result.model_copy(update={"meta": meta})
    if ids:
        meta[META_RESULT] = fields
    return result.model_copy(
        update={"content": [*result.content, TextContent(type="text", text="\n".join(notes))], "meta": meta or None}
    )
