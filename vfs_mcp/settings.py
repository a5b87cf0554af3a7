"""Server-wide settings shared by every profile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from vfs_mcp.config import DEFAULT_MAX_EDIT_BYTES, DEFAULT_MAX_READ_BYTES, DEFAULT_SERVER_UNDO_BYTES

ToolNames = Literal["safe", "seed"]
ClientRootsMode = Literal["off", "narrow", "mount"]
ConfirmPolicy = Literal["auto", "never", "destructive", "writes"]

DEFAULT_MAX_WRITE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """What every profile reads: the profiles to list, limits and naming."""

    profiles: tuple[str, ...] = ("default",)
    tools: tuple[str, ...] = ()
    """Only these tools (names, or sets such as ``read-only``; see ``profiles.toolset``); all when empty."""
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES
    max_edit_bytes: int = DEFAULT_MAX_EDIT_BYTES
    undo_limit: int = 100
    """Changes ``undo()`` can take back in each session (the oldest go first)."""
    undo_bytes: int = DEFAULT_SERVER_UNDO_BYTES
    """Bytes of before-images the change log keeps (the oldest change goes first)."""
    state: str | None = None
    """The state store's URL (``--state``): None for the default, a private folder for these mounts."""
    review: bool = False
    """Every mount under review (``--review``): its changes stay pending in the state store until a
    person applies them (``vfs-mcp review``); mounts may also be put under review one by one."""
    agent_may_apply: bool = False
    """The model may apply the pending changes itself (``review_ready`` with ``apply``)."""
    max_write_bytes: int = DEFAULT_MAX_WRITE_BYTES
    deny: tuple[str, ...] = field(default_factory=tuple)
    tool_names: ToolNames = "safe"
    audit_log: str | None = None
    call_timeout: float | None = 300.0
    """Seconds before a call returns INTERNAL instead of waiting on a slow mount (None: never)."""
    max_response_chars: int | None = None
    """Cut any reply's text beyond this many characters, with a note on how to ask for less."""
    client_roots: ClientRootsMode = "off"
    """What the client's roots do: nothing, narrow the mounts (ROOTs given), or become them (see roots.py)."""
    roots_refresh: float = 30.0
    """Seconds a 2026-07-28 client's roots are trusted before asking again (that era has no list_changed)."""
    poll_interval: float = 5.0
    """Seconds between checks of a subscribed file on a backend without change events (S3, memory)."""
    confirm: ConfirmPolicy = "auto"
    """Which changes a person is asked to accept first, in the client's dialog (``--confirm``;
    ``vfs_mcp.changes.confirm``): ``auto`` is ``destructive`` for a client that declared form
    elicitation and ``never`` for one that did not, which is never sent a request."""
    task_after: float | None = 2.0
    """Seconds a long call runs before a client that declared the tasks extension gets a task
    handle for it instead of waiting (``--task-after``; ``vfs_mcp.server.tasks``); None: never."""
    request_state_key: str | None = field(default=None, repr=False)
    """The secret (32+ bytes) the ``requestState`` of a 2026-07-28 input round (the client's
    roots, a confirmation) is sealed under: replicas that share it finish each other's calls;
    None: a key of this process's own (``--request-state-key-file``, ``$VFS_MCP_REQUEST_STATE_KEY``)."""
    index: bool = True
    """Keep a content index of each object-store mount, so a grep reads only the objects that may
    match (``vfs_mcp.ops.search.index``); ``--no-index`` or ``index = false`` in the config turn it off."""
    warm_up: bool = False
    """Once ``tools/list`` is answered, import what calls need on a thread of its own
    (``server.tools.warm``), so the first call after a start does not pay for it. On for the
    server processes (``vfs-mcp`` over stdio or HTTP) and only there: inside someone else's
    process (an embedded server, the test harness, an in-process ``Client``) a thread importing
    while the process parses on another (pytest's assertion rewriting) breaks CPython before
    3.11.8 ("AST constructor recursion depth mismatch")."""

    @property
    def diff_chars(self) -> int:
        """Characters of a diff's hunks one reply holds: the read limit, or half the reply cap
        where that is less (the rest of the reply, and what the diff leaves out, fit beside)."""
        cap = self.max_response_chars
        return min(self.max_read_bytes, max(cap // 2, 1)) if cap else self.max_read_bytes

    def name(self, safe: str, original: str) -> str:
        """A tool's name: `^[a-zA-Z0-9_-]{1,64}$` by default, the original's spelling with --tool-names seed."""
        return original if self.tool_names == "seed" else safe
