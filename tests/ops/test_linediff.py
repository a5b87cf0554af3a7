"""A diff's line matching costs what the texts' differences cost, not the square of their
repeated lines (``ops/linediff.py``), and still gives a diff that turns one text into the other
with as few lines changed as can be."""

from __future__ import annotations

import itertools
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vfs_mcp.ops import linediff

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "}"]), max_size=14)


def longest_common(a: list[str], b: list[str]) -> int:
    """How many lines the longest common subsequence of ``a`` and ``b`` holds."""
    best = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for x in range(len(a) - 1, -1, -1):
        for y in range(len(b) - 1, -1, -1):
            best[x][y] = best[x + 1][y + 1] + 1 if a[x] == b[y] else max(best[x + 1][y], best[x][y + 1])
    return best[0][0]


def applied(a: list[str], b: list[str], opcodes: list[tuple[str, int, int, int, int]]) -> list[str]:
    out: list[str] = []
    for tag, i1, i2, j1, j2 in opcodes:
        out += a[i1:i2] if tag == "equal" else b[j1:j2]
    return out


@settings(max_examples=400, deadline=None)
@given(a=LINES, b=LINES)
def test_myers_matches_as_many_lines_as_can_be_in_order_and_its_opcodes_turn_one_text_into_the_other(
    a: list[str], b: list[str]
) -> None:
    blocks = linediff._myers(a, b, len(a) + len(b))
    assert blocks is not None and blocks[-1] == (len(a), len(b), 0)
    for (i, j, size), (i2, j2, _) in itertools.pairwise(blocks):
        assert size > 0 and a[i : i + size] == b[j : j + size]
        assert i + size <= i2 and j + size <= j2
    assert sum(size for *_, size in blocks) == longest_common(a, b)

    found = linediff._Matched(None, a, b)
    found.matching_blocks = [linediff.difflib.Match(*block) for block in blocks]
    assert applied(a, b, found.get_opcodes()) == b


def test_myers_stops_past_its_bound_and_the_matcher_falls_back_to_difflib() -> None:
    a, b = [str(n) for n in range(2000)], [str(n) for n in range(2000, 4000)]
    assert linediff._myers(a, b, 100) is None
    assert linediff.matcher(a, b).get_opcodes() == [("replace", 0, 2000, 0, 2000)]


def test_two_edits_far_apart_in_a_big_file_of_repeated_lines_diff_at_once(tmp_path: Path) -> None:
    # difflib's search compared each "p" line with every other: minutes of CPU for this edit.
    # The child gets 30 s of CPU time (not wall time: a loaded machine does not change it).
    script = textwrap.dedent(
        """
        from vfs_mcp.jail.filesystem import JailedFS
        from vfs_mcp.jail.mounts import MountSpec, open_mount
        from vfs_mcp.jail.resolve import Jail
        from vfs_mcp.ops.edit import TextEdit, edit_file
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
