"""The tool-call pipeline (``vfs_mcp.server.calls``): its stages run in the order
docs/architecture.md lists, each with a test that exists; the stages no other test file covers."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server import calls

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent


def listed_steps() -> list[tuple[str, str]]:
    """(stage module, test) of each line of the note's numbered pipeline, in order."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("## The call pipeline\n")
    end = text.find("\n## ", start + 1)
    found = re.findall(r"^\d+\. `vfs_mcp/server/calls/(\w+)\.py`.*?`(tests/[\w/]+\.py::\w+)`", text[start:end], re.M)
    return [(module, test) for module, test in found]


def test_the_note_lists_the_steps_in_the_order_they_run() -> None:
    running = [stage.__module__.rpartition(".")[2] for stage in calls.STAGES]
    assert [module for module, _ in listed_steps()] == running


@pytest.mark.parametrize("test", [test for _, test in listed_steps()])
def test_each_listed_steps_test_exists(test: str) -> None:
    path, _, name = test.partition("::")
    tree = ast.parse((ROOT / path).read_text())
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    assert name in names, f"docs/architecture.md names {test}, which does not exist"


async def test_steps_run_outermost_first_and_the_last_one_answers(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    server: Any = build_server(open_mounts([MountSpec(str(tmp_path))]))
    seen: list[str] = []

    async def outer(call: calls.Call, next_stage: calls.Next) -> calls.Result:
        seen.append("outer in")
        result = await next_stage(call)
        seen.append("outer out")
        return result

    async def inner(call: calls.Call, next_stage: calls.Next) -> calls.Result:
        seen.append(f"inner {call.name}")
        return await next_stage(call)

    call = calls.Call(server, "read_file", {"path": "a.txt"}, None)
    result = await calls.run(call, (outer, inner, *calls.STAGES[-3:]))
    assert seen == ["outer in", "inner read_file", "outer out"]
    assert not result.is_error and "hello" in result.content[0].text  # type: ignore[union-attr]
    with pytest.raises(AssertionError, match="must answer"):
        await calls.run(call, (outer,))


async def test_arguments_the_schema_rejects_are_invalid_argument_naming_each_and_what_it_must_be(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    async with Client(build_server(open_mounts([MountSpec(str(tmp_path))]))) as client:
        result = await client.call_tool("head_file", {"path": "a.txt", "lines": 0})
        mistyped = await client.call_tool("edit_file", {"path": {"a": 1}, "edits": [], "options": 3, "dry_run": "x"})
    error = error_of(result)
    assert error is not None and error["code"] == "INVALID_ARGUMENT"
    assert error["message"] == "head_file: lines must be greater than or equal to 1"
    assert error_of(mistyped)["message"] == (  # type: ignore[index]
        "edit_file: path must be a string; edits must have at least 1 item(s); dry_run must be a boolean; "
        "options must be an object"
    )


CONVERSIONS = {"failed", "MCPError", "ResourceError", "ResourceNotFoundError", "ToolError"}
"""What turns an error into an MCP reply: an error result (``results.failed``), a JSON-RPC error,
or the SDK's errors that become one."""
BOUNDARY = Path("vfs_mcp/server/calls/boundary.py")
OUTSIDE_THE_PIPELINE = {
    Path(
        "vfs_mcp/server/tasks.py"
    ): "tasks/get's error for an unknown task, a JSON-RPC error the schema fixes (-32602)",
    Path("vfs_mcp/testing/task_client.py"): "the client side of the tasks extension: it raises what a client meets",
}
"""Modules that raise a protocol error of a request no tool pipeline runs, and why."""


def conversions(root: Path) -> list[str]:
    """Each place under ``root``'s ``vfs_mcp/`` that turns an error into an MCP reply
    (``path:line name``), outside the boundary."""
    found = []
    for path in sorted((root / "vfs_mcp").rglob("*.py")):
        if path.relative_to(root) == BOUNDARY or path.relative_to(root) in OUTSIDE_THE_PIPELINE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in CONVERSIONS and not (name == "failed" and isinstance(func, ast.Attribute) and not node.args):
                found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_only_the_boundary_turns_errors_into_replies() -> None:
    assert conversions(ROOT) == []
    assert (ROOT / BOUNDARY).exists()
