"""Step 7: a successful call's change kept in its session's undo journal (the steps that take
it back); the reply says when it cannot be undone, and when older changes were let go."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_types import CallToolResult, TextContent

from vfs_mcp.config import DEFAULT_UNDO_BYTES
from vfs_mcp.server.calls.call import Call, Next, Result
from vfs_mcp.server.tools import profile_tools

if TYPE_CHECKING:
    from vfs_mcp.changes.journal import Recording


async def step(call: Call, next_step: Next) -> Result:
    settings = call.server.vfs_settings
    if settings is not None and profile_tools(settings).get(call.name, False):
        return await next_step(call)  # a read-only tool changes nothing: no record, no write path to import
    # The write path is imported by the first change, not at start (as the operations are, by the adapters).
    from vfs_mcp.changes.journal import recording

    with recording(DEFAULT_UNDO_BYTES) as record:
        result = await next_step(call)
    if isinstance(result, CallToolResult) and not result.is_error and call.name != "undo":
        return kept(call, record, result)
    return result


def kept(call: Call, record: Recording, result: CallToolResult) -> CallToolResult:
    """``result``, with a note when its change could not be kept or pushed older ones out."""
    from vfs_mcp.changes.journal import Change, session_journal

    vfs, settings = call.server.vfs, call.server.vfs_settings
    if vfs is None or settings is None or not record.changes:
        return result
    journal = session_journal(vfs, settings.undo_limit, settings.undo_bytes)
    why_not = record.why_not
    if why_not is None and not journal.add(Change(call.name, record.steps())):
        why_not = "it is larger than the undo journal holds (--undo-bytes)"
    notes = [f"this change cannot be undone: {why_not}"] if why_not else []
    dropped = journal.unnoted_drops()
    if dropped:
        notes.append(f"{dropped} older change(s) can no longer be undone (the undo journal's limits)")
    if not notes:
        return result
    return result.model_copy(
        update={"content": [*result.content, TextContent(type="text", text=f"[{'; '.join(notes)}]")]}
    )
