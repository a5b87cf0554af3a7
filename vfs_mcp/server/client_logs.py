"""MCP log notifications: the server's ``vfs_mcp`` log records of a request, sent to the
client that asked for them, at the level it asked for, on that request's stream.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args

from mcp.server.context import ServerRequestContext
from mcp_types import LOG_LEVEL_META_KEY, LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParams

from vfs_mcp.server import watch
from vfs_mcp.server.replies import encodable

log = logging.getLogger("vfs_mcp")
T = TypeVar("T")

calls = logging.getLogger("vfs_mcp.calls")
"""Each call's outcome, a tool error being an answer, not a fault: quiet (WARNING) until a
client asks for log messages (``client_logs`` lowers it) or the command-line server logs at
INFO (``cli``). In an agent's own tests, where errors are what the tests check, it would be
noise in their output."""
calls.setLevel(logging.WARNING)

MCP_LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
"""The MCP levels, least severe first."""

_PYTHON_LEVELS = dict(zip(MCP_LEVELS, (10, 20, 25, 30, 40, 50, 55, 60), strict=True))
_LOG_LEVEL_STATE = "vfs_mcp.log_level"


def mcp_level(levelno: int) -> LoggingLevel:
    """The MCP level of a Python log level (``notice``, ``alert`` and ``emergency`` in between)."""
    chosen: LoggingLevel = "debug"
    for name, number in _PYTHON_LEVELS.items():
        if levelno >= number:
            chosen = name
    return chosen


@dataclass
class _RequestLogs:
    threshold: int
    records: list[logging.LogRecord] = field(default_factory=list)


_request_logs: ContextVar[_RequestLogs | None] = ContextVar("vfs_mcp_request_logs", default=None)


class _ToClient(logging.Handler):
    """Keeps the ``vfs_mcp`` records of the request being served (worker threads included:
    anyio copies the context into them) at or above the level its client asked for."""

    def emit(self, record: logging.LogRecord) -> None:
        logs = _request_logs.get()
        if logs is not None and record.levelno >= logs.threshold:
            logs.records.append(record)


def forward() -> None:
    """Keep every request's records for its client (once per process)."""
    if not any(isinstance(handler, _ToClient) for handler in log.handlers):
        log.addHandler(_ToClient())


def set_level(ctx: ServerRequestContext[Any, Any], level: LoggingLevel) -> None:
    """``logging/setLevel``: the connection's level from now on (before 2026-07-28)."""
    watch.connection_state(ctx)[0][_LOG_LEVEL_STATE] = level


async def forwarded(request: ServerRequestContext[Any, Any] | None, serve: Callable[[], Awaitable[T]]) -> T:
    """``serve()`` the request, collecting its records, and send them when it is answered."""
    level = client_log_level(request) if request is not None else None
    if level is None and _request_logs.get() is None:
        return await serve()  # the client asked for none: nothing to collect, no context to set
    logs = _RequestLogs(_PYTHON_LEVELS[level]) if level is not None else None
    if logs is not None:
        for logger in (log, calls):
            if logger.getEffectiveLevel() > logs.threshold:
                logger.setLevel(logs.threshold)  # stderr keeps its own level on its handler (cli)
    token = _request_logs.set(logs)
    try:
        served = await serve()
    finally:
        _request_logs.reset(token)
    if logs is not None and request is not None:
        await _send(request, logs.records)
    return served


def client_log_level(ctx: ServerRequestContext[Any, Any]) -> LoggingLevel | None:
    """The level this request's client wants log notifications at, or None for none.

    2026-07-28: the request's own ``_meta`` opt-in; earlier: the connection's ``logging/setLevel``
    (nothing before the client sends one).
    """
    level = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
    if level is None:
        level = watch.connection_state(ctx)[0].get(_LOG_LEVEL_STATE)
    return level if level in MCP_LEVELS else None


async def _send(request: ServerRequestContext[Any, Any], records: list[logging.LogRecord]) -> None:
    for record in records:
        params = LoggingMessageNotificationParams(
            level=mcp_level(record.levelno), logger=record.name, data=encodable(record.getMessage())
        )
        # Request-scoped: the only stream a 2026-07-28 client accepts log messages on.
        await request.session.send_notification(
            LoggingMessageNotification(params=params), related_request_id=request.request_id
        )
