"""The client side of the tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28 schema),
for agent tests and benchmarks with the SDK's ``mcp.Client``, which has no tasks of its own.

    async with Client(server, extensions=[TasksClient()]) as client:
        result = await client.call_tool("calculate_directory_size", {"path": "s3://big"})

``TasksClient`` declares the extension on every request and resolves a task handle the way a
client of the extension does: it polls ``tasks/get`` until the task ends and gives its result
as the call's own (``poll_every``: seconds between polls; None, the default, keeps the
server's ``pollIntervalMs``). ``client.session.call_tool(..., allow_claimed=True)`` gives the
``TaskHandle`` itself; ``get_task`` and ``cancel_task`` send the other requests.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import anyio
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CallToolResult, ErrorData, Request, RequestParams, Result
from pydantic import ConfigDict

IDENTIFIER = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})


class TaskHandle(Result):
    """A ``CreateTaskResult``: ``resultType: "task"`` and the task as it was made."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskIdParams(RequestParams):
    task_id: str


class GetTask(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class _TaskReply(Result):
    """A ``tasks/*`` result, every field as it came."""

    model_config = ConfigDict(extra="allow")


async def get_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    """The task as ``tasks/get`` gives it now (its wire fields: ``status``, ``statusMessage``, ...)."""
    found = await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), _TaskReply)
    return found.model_dump(by_alias=True, mode="json", exclude_none=True)


async def cancel_task(session: ClientSession, task_id: str) -> None:
    """Ask the server to cancel the task (acknowledged; ``get_task`` shows how it ended)."""
    await session.send_request(CancelTask(params=TaskIdParams(task_id=task_id)), _TaskReply)


class TasksClient(ClientExtension):
    """Declares the extension; a task handle becomes the call's result once the task ends."""

    identifier = IDENTIFIER

    def __init__(self, poll_every: float | None = None, max_polls: int = 1_000_000) -> None:
        self.poll_every, self.max_polls = poll_every, max_polls

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self._resolve)]

    async def _resolve(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        pause = self.poll_every
        for _ in range(self.max_polls):
            state = await get_task(ctx.session, handle.task_id)
            if state["status"] == "completed":
                return CallToolResult.model_validate(state["result"])
            if state["status"] in TERMINAL:
                error = state.get("error") or {"code": INTERNAL_ERROR, "message": f"the task was {state['status']}"}
                raise MCPError.from_error_data(ErrorData.model_validate(error))
            interval = state.get("pollIntervalMs", 1000) / 1000 if pause is None else pause
            await anyio.sleep(interval)
        raise MCPError(INTERNAL_ERROR, f"task {handle.task_id} did not end within {self.max_polls} polls")
