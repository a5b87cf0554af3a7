"""The diff-making tools (``edit_file``, ``edit_file_at_line``, ``apply_patch`` with and without
dry_run, ``compare_files``) over random texts of up to 200,000 lines, some share of them
repeated, and any number of changes, each call through a server in a child process
(``hostile_diffs.py``):

- its matching work, as the server counts it (``match_steps``: a diff's steps, a patch's line
  comparisons), is at most ``MAX_STEPS`` and ``STEPS_PER_LINE`` a line of what it read and
  answered (the child runs under a CPU limit too: a call that never ends fails, not hangs);
- its peak RSS, from the call's start, is at most 150 MB, four times what it read and answered
  and ``MEM_PER_LINE`` bytes a line of it (``hostile_diffs.peak_allowed_mb``);
- each view of its reply is at most ``--max-response-chars`` (and the server's note when it cut it);
- a diff that does not show every line it counts, or whose last hunk stops short, says what it
  left out.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hostile_diffs import peak_allowed_mb
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from processes import run_limited

from vfs_mcp.ops.diff.line_matching import BASE_WORK, WORK_PER_LINE
from vfs_mcp.ops.edits.hunk_placing import PLACING_BUDGET

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("hostile_diffs.py")
MAX_STEPS = BASE_WORK + PLACING_BUDGET
"""Steps any call may take, whatever its size: a diff's base work and a patch's placing."""
STEPS_PER_LINE = 2 * WORK_PER_LINE
"""Steps more for each line: a diff's, of the two texts, and a round of its search past its budget."""
CPU_LIMIT = 120
"""Seconds of CPU after which the kernel stops the child: a hang fails the case, never the suite."""
CUT_NOTE = 300
"""Characters of the note the server's reply cap adds when it cuts a reply."""
HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@$", re.MULTILINE)

CASES = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["edit_file", "edit_file_at_line", "apply_patch", "compare_files"]),
        "dry_run": st.booleans(),
        "lines": st.one_of(st.integers(1, 200), st.integers(20_000, 200_000)),
        "repeat": st.floats(0, 1),
        "distinct": st.one_of(st.integers(1, 8), st.integers(1, 100_000)),
        "pad": st.integers(0, 60),
        "changes": st.one_of(st.integers(0, 20), st.integers(1_000, 200_000)),
        "seed": st.integers(0, 2**32),
        "cap": st.sampled_from([4_000, 200_000, 2_000_000]),
    }
)


def shown_lines(text: str) -> tuple[list[tuple[int, int, int, int]], int, int]:
    """Each hunk's counts as its header says them and as its body holds them (old, new), and
    the lines added and removed the text shows."""
    hunks, added, removed = [], 0, 0
    headers = list(HEADER.finditer(text))
    for number, header in enumerate(headers):
        stop = headers[number + 1].start() if number + 1 < len(headers) else len(text)
        old = new = 0
        for line in text[header.end() + 1 : stop].split("\n"):
            if not line or line[0] not in " -+\\":
                break
            old += line[0] in " -"
            new += line[0] in " +"
            added += line[0] == "+"
            removed += line[0] == "-"
        said = (int(header[1] or 1), int(header[2] or 1))
        hunks.append((*said, old, new))
    return hunks, added, removed


def counted(reply: dict[str, Any]) -> tuple[int, int] | None:
    """The lines added and removed the tool says its diff holds, where it says."""
    fields = reply["fields"]
    if "files" in fields:
        return sum(f["added"] for f in fields["files"]), sum(f["removed"] for f in fields["files"])
    if "added" in fields:
        return fields["added"], fields["removed"]
    return None


def hostile(tool: str, lines: int, repeat: float, distinct: int, changes: int) -> dict[str, Any]:
    """A case of issue 37's shape, run before the random ones."""
    shape = {"tool": tool, "lines": lines, "repeat": repeat, "distinct": distinct, "changes": changes}
    return {"dry_run": True, "pad": 4, "seed": 37, "cap": 200_000, **shape}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=CASES)
@example(case=hostile("edit_file", 200_000, 0.5, 1, 1))  # one line everywhere among unique ones
@example(case=hostile("edit_file_at_line", 20_000, 0.0, 1, 10_000))
@example(case=hostile("compare_files", 100_000, 1.0, 1_000, 600))  # 1,000 lines repeated
@example(case=hostile("edit_file_at_line", 100_000, 0.0, 1, 100_000))  # every line: more edits than a call may make
@example(case=hostile("edit_file_at_line", 100_000, 0.0, 1, 20_000))  # as many as a call may make
def test_a_diff_costs_work_and_memory_linear_in_what_it_reads_and_answers_and_says_what_it_leaves_out(
    case: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("case")
    cap = case["cap"]
    done = run_limited([str(CHILD), json.dumps(case), str(folder), "{}", str(cap)], CPU_LIMIT, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-1500:]
    reply: dict[str, Any] = json.loads(done.stdout)
    assert reply["steps"] <= MAX_STEPS + STEPS_PER_LINE * reply["lines"], (reply["steps"], reply["lines"])
    assert reply["peak_mb"] <= peak_allowed_mb(reply)
    assert reply["text_chars"] <= cap + CUT_NOTE and reply["meta_chars"] <= cap
    text = reply["text"]
    cut = "[diff cut at " in text or "[cut: the reply was" in text
    hunks, added, removed = shown_lines(text)
    if any((old, new) != (said_old, said_new) for said_old, said_new, old, new in hunks):
        assert cut, "a hunk stops short without saying so"
    if not reply["is_error"] and (total := counted(reply)) and (added, removed) != total:
        assert cut, "lines counted but not shown, without saying so"
