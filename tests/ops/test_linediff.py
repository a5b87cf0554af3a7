"""A diff's line matching costs what the texts' differences cost, not the square of their
repeated lines (``ops/diff/line_matching.py``), and still gives a diff that turns one text into the other
with as few lines changed as can be."""

from __future__ import annotations

import difflib
import itertools
import resource
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vfs_mcp.ops.diff import line_matching

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "}"]), max_size=14)
ONE_SIDED = st.lists(st.sampled_from(["a", "b", "c", "", "}", "only here"]), max_size=14)
"""Lines that one text has and the other may not: what matching sets aside first."""


def longest_common(a: list[str], b: list[str]) -> int:
    """How many lines the longest common subsequence of ``a`` and ``b`` holds."""
    best = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for x in range(len(a) - 1, -1, -1):
        for y in range(len(b) - 1, -1, -1):
            best[x][y] = best[x + 1][y + 1] + 1 if a[x] == b[y] else max(best[x + 1][y], best[x][y + 1])
    return best[0][0]


def applied(a: list[str], b: list[str], opcodes: Iterable[tuple[str, int, int, int, int]]) -> list[str]:
    out: list[str] = []
    for tag, i1, i2, j1, j2 in opcodes:
        out += a[i1:i2] if tag == "equal" else b[j1:j2]
    return out


def blocks_hold(a: list[str], b: list[str], found: line_matching.Matching) -> None:
    """Each block is lines both texts have, in order, and the opcodes turn ``a`` into ``b``."""
    blocks = list(found.blocks())
    assert blocks[-1] == (len(a), len(b), 0)
    assert sum(size for *_, size in blocks) == found.same
    for (i, j, size), (i2, j2, _) in itertools.pairwise(blocks):
        assert size > 0 and a[i : i + size] == b[j : j + size]
        assert i + size <= i2 and j + size <= j2
    assert applied(a, b, found.opcodes()) == b


@settings(max_examples=400, deadline=None)
@given(a=LINES, b=ONE_SIDED)
def test_matching_finds_as_many_lines_as_can_be_in_order_and_its_opcodes_turn_one_text_into_the_other(
    a: list[str], b: list[str]
) -> None:
    found = line_matching.match(a, b)
    blocks_hold(a, b, found)
    assert found.cut is None
    assert found.same == longest_common(a, b)


@settings(max_examples=400, deadline=None)
@given(a=ONE_SIDED, b=ONE_SIDED, work=st.integers(0, 12))
def test_matching_stopped_by_its_budget_still_turns_one_text_into_the_other_and_says_where_it_stopped(
    a: list[str], b: list[str], work: int
) -> None:
    found = line_matching.match(a, b, work)
    blocks_hold(a, b, found)
    if found.cut is None:
        assert found.same == longest_common(a, b)
    else:  # past where it stopped, one replacement: no lines match but those both texts end with
        x, y = found.cut
        past = [(i, j, size) for i, j, size in list(found.blocks())[:-1] if i + size > x or j + size > y]
        assert len(past) <= 1 and all(i + size == len(a) and j + size == len(b) for i, j, size in past)


def test_lines_of_two_values_alternating_match_within_the_budget_where_difflib_took_seconds() -> None:
    a, b = ["x", "y"] * 50_000, ["x", "x", "y", "y"] * 25_000
    found = line_matching.match(a, b, 200_000)
    blocks_hold(a, b, found)
    assert found.cut is not None


@settings(max_examples=200, deadline=None)
@given(a=LINES, b=ONE_SIDED, context=st.integers(0, 3))
def test_hunks_are_difflibs_grouped_opcodes(a: list[str], b: list[str], context: int) -> None:
    found = line_matching.match(a, b)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    matcher.get_matching_blocks = lambda: [difflib.Match(*block) for block in found.blocks()]  # type: ignore[method-assign]
    hunks: list[list[tuple[str, int, int, int, int]]] = [[]]
    for code in found.hunks(context):
        if code is None:
            hunks.append([])
        else:
            hunks[-1].append(code)
    assert hunks.pop() == []
    assert hunks == [list(group) for group in matcher.get_grouped_opcodes(context)]


def test_two_edits_far_apart_in_a_big_file_of_repeated_lines_diff_at_once(tmp_path: Path) -> None:
    # difflib's search compared each "p" line with every other: minutes of CPU for this edit.
    # The child gets 30 s of CPU time (not wall time: a loaded machine does not change it).
    script = textwrap.dedent(
        """
        from vfs_mcp.jail.filesystem import JailedFS
        from vfs_mcp.jail.mounts import MountSpec, open_mount
        from vfs_mcp.jail.resolve import Jail
        from vfs_mcp.ops.edits.replace import TextEdit, edit_file
        import sys
        folder = sys.argv[1]
        pad = "p\\n" * 32768
        open(folder + "/f.txt", "w").write("first\\n" + pad + "middle\\n" + pad + "last\\n")
        vfs = JailedFS(Jail([open_mount(MountSpec(folder))]))
        edits = [TextEdit(oldText="first", newText="start"), TextEdit(oldText="last", newText="end")]
        print(edit_file(vfs, "f.txt", edits).diff)
        """
    )

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (30, 30))

    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, preexec_fn=limited, check=False
    )

    assert done.returncode == 0, done.stderr[-500:]
    assert "-first\n+start\n" in done.stdout and "-last\n+end\n" in done.stdout
    assert done.stdout.count("@@ -") == 2
