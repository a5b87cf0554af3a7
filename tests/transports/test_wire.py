"""Every request line gets an answer, over stdio and HTTP: nesting 100,000 deep, a number of
100,000 digits, broken JSON and lone surrogates each get a JSON-RPC error (or a tool error),
each request of a refused batch its own, never silence, and the server answers the next
request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processes import INITIALIZE as INITIALIZE_PARAMS
from processes import RawStdio, vfs_mcp_http

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": INITIALIZE_PARAMS,
}
HOSTILE = {
    "deep": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":'
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}}}",
    "long number": b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":'
    + b'{"path":"x","max_bytes":'
    + b"9" * 100_000
    + b"}}}",
    "broken": b'{"jsonrpc":"2.0","id":5,',
    "surrogate in a tool name": b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_\\udc80"}}',
    "surrogate in a key": b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file",'
    + b'"arguments":{"pa\\udc80th":"x"}}}',
}
ANSWER_WITHIN = 20.0
"""Seconds within which every line must be answered (a guard against silence, never a measure)."""
ALIVE = b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"list_allowed_directories","arguments":{}}}'


@pytest.fixture(scope="module")
def stdio_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawStdio]:
    with RawStdio(tmp_path_factory.mktemp("wire")) as server:
        yield server


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_line_over_stdio_gets_an_answer_and_the_server_goes_on(stdio_server: RawStdio, case: str) -> None:
    answer = stdio_server.exchange(HOSTILE[case], ANSWER_WITHIN)
    assert "error" in answer or answer.get("result", {}).get("isError") is True, answer  # type: ignore[union-attr]
    assert stdio_server.exchange(ALIVE, ANSWER_WITHIN).get("id") == 99


def test_the_ids_of_refused_lines_come_back_where_they_can_be_read(stdio_server: RawStdio) -> None:
    assert stdio_server.exchange(HOSTILE["deep"], ANSWER_WITHIN)["id"] == 1
    assert stdio_server.exchange(HOSTILE["long number"], ANSWER_WITHIN)["id"] == 2
    assert stdio_server.exchange(HOSTILE["broken"], ANSWER_WITHIN)["id"] == 5


def test_hostile_requests_over_http_get_an_answer_and_the_server_goes_on(tmp_path: Path) -> None:
    with vfs_mcp_http(str(tmp_path), {}) as port, httpx2.Client(timeout=30) as http:
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        started = http.post(url, content=json.dumps(INITIALIZE), headers=headers)
        headers |= {"mcp-session-id": started.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post(url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
        for case, line in HOSTILE.items():
            answer = http.post(url, content=line, headers=headers)
            assert answer.status_code in (200, 400), (case, answer.status_code)
            assert "error" in answer.text or '"isError":true' in answer.text, (case, answer.text[:200])
        alive = http.post(url, content=ALIVE, headers=headers)
    assert alive.status_code == 200 and '"id":99' in alive.text


BATCH = (
    b'[{"jsonrpc":"2.0","id":9005,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/progress"},'
    b' {"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"read_file","arguments":{"path":"x"}}}]'
)
"""Two requests and a notification: a client waits for 9005 and "b", and must hear of both."""


def refused_each(answers: list[dict[str, object]]) -> None:
    assert sorted(str(answer["id"]) for answer in answers) == ["9005", "b"], answers
    for answer in answers:
        error = answer["error"]
        assert isinstance(error, dict) and error["code"] == -32600 and "one request" in error["message"], answer


def test_each_request_of_a_refused_batch_over_stdio_gets_its_own_answer(stdio_server: RawStdio) -> None:
    first = stdio_server.exchange(BATCH, ANSWER_WITHIN)
    assert stdio_server.proc.stdout is not None
    reader = ThreadPoolExecutor(1)  # the second answer may already sit in the reader's buffer
    try:
        second = reader.submit(stdio_server.proc.stdout.readline).result(timeout=ANSWER_WITHIN)
    finally:
        reader.shutdown(wait=False)
    refused_each([first, json.loads(second)])
    assert stdio_server.exchange(ALIVE, ANSWER_WITHIN).get("id") == 99


@pytest.mark.parametrize("session", [True, False], ids=["in-a-session", "without-one"])
def test_each_request_of_a_refused_batch_over_http_gets_its_own_answer(tmp_path: Path, session: bool) -> None:
    with vfs_mcp_http(str(tmp_path), {}) as port, httpx2.Client(timeout=30) as http:
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if session:
            started = http.post(url, content=json.dumps(INITIALIZE), headers=headers)
            headers |= {"mcp-session-id": started.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        answer = http.post(url, content=BATCH, headers=headers)
        refused_each(answer.json())
        alive = http.post(url, content=ALIVE if session else json.dumps(INITIALIZE), headers=headers)
    assert answer.headers["content-type"] == "application/json"
    assert alive.status_code == 200


ODD_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
TOOLS = ["read_file", "grep_files", "search_files", "directory_tree", "edit_file", "write_file", "list_directory"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tool=st.sampled_from(TOOLS),
    arguments=st.dictionaries(st.sampled_from(["path", "pattern", "edits", "content", "x"]), ODD_JSON, max_size=3),
)
def test_odd_arguments_to_any_tool_over_stdio_always_get_an_answer(
    stdio_server: RawStdio, tool: str, arguments: dict[str, object]
) -> None:
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    )
    answer = stdio_server.exchange(line.encode(), ANSWER_WITHIN)
    assert answer.get("id") == 42 and ("result" in answer or "error" in answer)
