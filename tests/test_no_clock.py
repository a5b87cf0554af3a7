"""The tests keep no clock: no assert on how long something took, and no sleep to let something
happen first (order with events and barriers; bound work by counts: steps, bytes, calls). What
is left is named below, each with why: a poll with a deadline (waiting for what gives no
event, such as a process's port opening), the moments of a kill, the pauses of the warm-up's
tests (its subject is a time: no call for ``WARM_AFTER``) and a finalizer that lets threads
run. The scripts tests run in child processes are read too. A new one fails this test; one
that is gone must leave the list."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent

CLOCKED = re.compile(
    r"\b(?:monotonic|perf_counter|process_time|time\.time|took|seconds|elapsed|slowest|cpu_seconds|\w*BOUND)\b"
)
"""What an assert on a duration names: a clock, or what such asserts call their figures."""

POLLS = "a poll with a deadline: what it waits for gives no event to wait on"
REPLAYED = "test_a_broken_call_stream_is_resumed_and_the_reply_comes_on_the_new_connection"
LEASE = "test_a_change_a_dead_replica_left_half_made_is_taken_back_by_a_live_one_within_its_lease"
TORN = "test_a_server_killed_mid_write_leaves_old_or_new_content_never_a_torn_file"
WARM_GAPS = "test_the_warm_up_waits_while_a_client_reads_each_large_reply_before_its_next_call"

ALLOWED: dict[tuple[str, str, str], str] = {
    # -- polls, each within a deadline (a sleep between looks, an assert on the deadline) ---------
    ("emulators.py", "_wait_for_http", "sleep"): POLLS + " (an emulator's HTTP port opening)",
    ("processes.py", "wait_for_port", "sleep"): POLLS + " (a server process's port opening)",
    ("processes.py", "wait_for_port", "assert"): POLLS + " (a server process's port opening)",
    ("cli/test_terminal.py", "stopped_within", "sleep"): POLLS + " (a process's exit: os.waitpid has no timeout)",
    ("server/test_subscriptions.py", "until", "sleep"): POLLS + " (a listen stream's end, seen by the server)",
    ("transports/test_stdio.py", "ask", "sleep"): POLLS + " (a reply the server writes to a file, not a pipe)",
    ("transports/test_resumption.py", REPLAYED, "assert"): POLLS + " (the server handing a broken stream over)",
    ("changes/test_replicas.py", LEASE, "sleep"): POLLS + " (the first copies in the bucket; the survivor's takeover)",
    ("changes/test_state_store.py", "waiting", "sleep"): POLLS
    + " (a record file another thread writes beside the step)",
    # -- sleeps that are the subject: the warm-up waits for WARM_AFTER seconds with no call -------
    ("server/test_schemas.py", "test_the_warm_up_waits_while_calls_follow_each_other", "sleep"): (
        "calls that last 5 ms each, one after another for longer than WARM_AFTER"
    ),
    ("server/test_schemas.py", WARM_GAPS, "sleep"): "a client's pauses between calls, shorter than WARM_AFTER",
    # -- a sleep that lets other threads run: the race it provokes, not an order it waits for -----
    ("testing/test_testing_plugin.py", "__del__", "sleep"): "a finalizer that lets the server's thread parse meanwhile",
    # -- sleeps that pick the moment of a kill (a random point of a write, not an order of events) --
    ("ops/test_faults.py", TORN, "sleep"): "the random moment of a SIGKILL mid-write",
    (
        "changes/test_crash.py",
        "_killed_at_every_point",
        "sleep",
    ): "the moments of the SIGKILLs, spread over a measured call",
}
"""(file under tests/, enclosing function, ``sleep`` or ``assert``) -> why it stays. A script a test
runs in a child process counts as the test's (its functions by their own names)."""


def clocked(path: Path, root: Path = TESTS) -> set[tuple[str, str, str]]:
    """The sleeps and the asserts on a duration in one test module, by enclosing function."""
    found: set[tuple[str, str, str]] = set()
    rel = path.relative_to(root).as_posix()

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            if isinstance(child, ast.Call):
                called = child.func
                name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                if name == "sleep" and not _is_self(called):
                    found.add((rel, function, "sleep"))
            if isinstance(child, ast.Assert) and CLOCKED.search(ast.unparse(child.test)):
                found.add((rel, function, "assert"))
            script = _script(child)
            if script is not None:
                visit(script, function)
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def _script(node: ast.AST) -> ast.Module | None:
    """A string of Python lines a test runs in a child process (``python -c SCRIPT``), parsed:
    its sleeps and asserts are the test's too."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value):
        return None
    try:
        return ast.parse(node.value)
    except SyntaxError:
        return None


def _is_self(called: ast.expr) -> bool:
    """A test's own fake clock (``self.sleep``, a stand-in object's method) is no sleep."""
    return isinstance(called, ast.Attribute) and isinstance(called.value, ast.Name) and called.value.id == "self"


def everything() -> set[tuple[str, str, str]]:
    return {hit for path in sorted(TESTS.rglob("*.py")) if path.name != Path(__file__).name for hit in clocked(path)}


def test_no_test_sleeps_to_order_events_or_asserts_a_duration_but_those_named_with_why() -> None:
    found = everything()
    unexplained = sorted(found - set(ALLOWED))
    assert not unexplained, (
        "order with events or barriers, bound work by counts (or name it in ALLOWED with why):\n"
        + "\n".join(map(str, unexplained))
    )
    gone = sorted(set(ALLOWED) - found)
    assert not gone, "no longer there: take them off ALLOWED:\n" + "\n".join(map(str, gone))


def test_the_scan_finds_a_sleep_and_a_timing_assert_but_not_a_fake_clock(tmp_path: Path) -> None:
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        "import time\n\n\ndef test_x():\n    started = time.monotonic()\n    time.sleep(0.1)\n"
        "    assert time.monotonic() - started < 1\n\n\n"
        "class Clock:\n    def tick(self):\n        self.sleep(1)\n        assert self.now == 1\n"
    )
    assert clocked(planted, tmp_path) == {
        ("test_planted.py", "test_x", "sleep"),
        ("test_planted.py", "test_x", "assert"),
    }


def test_the_scan_reads_the_scripts_a_test_runs_in_a_child_process(tmp_path: Path) -> None:
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        'CHILD = """\nimport time\ntime.sleep(0.2)\n"""\n\n\n'
        "def test_y():\n    run('import time\\ntime.sleep(0.3)\\n')\n    run('not a script: sleep(1)')\n"
    )
    assert clocked(planted, tmp_path) == {
        ("test_planted.py", "<module>", "sleep"),
        ("test_planted.py", "test_y", "sleep"),
    }
