"""Default profile: the one tool of a server with mounts under review (listed only then)."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.errors import AccessDenied
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.text.names import plural
from vfs_mcp.profiles.results import answer
from vfs_mcp.review import Review
from vfs_mcp.settings import Settings


def review_ready(
    vfs: JailedFS,
    settings: Settings,
    apply: Annotated[bool, Field(description="Apply them yourself: only where the server allows it")] = False,
) -> CallToolResult:
    pending = Review(vfs)
    if apply:
        if not settings.agent_may_apply:
            raise AccessDenied(
                "the person applies pending changes (vfs-mcp review --apply); this server does not let you "
                "(--agent-may-apply would). Say what you changed instead"
            )
        applied = pending.apply()
        lines = [f"applied {plural(len(applied.paths), 'path')} (change {applied.change_id})", *applied.paths]
        if applied.refused:
            lines += ["could not be applied (they stay pending):", *applied.refused]
        made = {"applied": applied.paths, "change_id": applied.change_id, "refused": applied.refused}
        return answer("\n".join(lines), data=made)
    found = pending.pending()
    head = f"{plural(len(found), 'path')} pending for review" if found else "nothing pending"
    lines = [f"{item.status} {item.path}" + (f" (from {item.moved_from})" if item.moved_from else "") for item in found]
    tail = "the person applies them with `vfs-mcp review --apply` (or drops them with --discard)"
    data = [{"path": item.path, "status": item.status, "changes": list(item.changes)} for item in found]
    return answer("\n".join([head, *lines, tail]), data={"pending": data})
