"""apply_patch's engine against the diffs ``difflib`` writes: a diff of two texts applied to
the first gives the second, byte for byte (either line ending, with or without a final
newline), and the two ways of making the new text (cut from the old text between the hunks,
or line by line) and its diff agree."""

from __future__ import annotations

import difflib

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from vfs_mcp.errors import Conflict
from vfs_mcp.ops.edits import hunk_placing
from vfs_mcp.ops.edits.patch_formats import parse_patch


def line(number: int) -> str:
    return ("  " if number % 3 == 0 else "\t" if number % 5 == 0 else "") + f"line {number}"


@settings(max_examples=300, deadline=None)
@given(
    numbers=st.lists(st.integers(0, 40), min_size=1, max_size=60),
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 40)),
        min_size=1,
        max_size=5,
    ),
    end=st.sampled_from(["\n", "\r\n"]),
    final_newline=st.booleans(),
    context=st.integers(0, 3),
)
def test_a_difflib_diff_gives_its_target_and_both_ways_of_applying_it_agree(
    numbers: list[int], edits: list[tuple[int, str, int]], end: str, final_newline: bool, context: int
) -> None:
    before = [line(n) for n in numbers]
    after = list(before)
    for at, how, number in edits:
        at %= len(after) + 1
        if how == "insert":
            after.insert(at, line(number) + " new")
        elif at < len(after):
            after[at : at + 1] = [] if how == "delete" else [line(number) + " changed"]
    assume(after and after != before)
    # A file of one or two CRLF lines without a final newline has no usual ending: new lines
    # at its start would take "\n" (documented; not what this test is about).
    assume(end == "\n" or final_newline or len(before) > 2)
    diff = "".join(difflib.unified_diff([t + "\n" for t in before], [t + "\n" for t in after], "a/f", "b/f", n=context))
    raw = end.join(before) + (end if final_newline else "")
    target = end.join(after) + (end if final_newline else "")
    old = hunk_placing.Lines.of(raw)
    try:
        placed = hunk_placing.place(old, parse_patch(diff)[0].hunks, "f", hunk_placing.Comparisons())
    except Conflict:
        return  # context lines that repeat: refused, as a call would be
    applied = hunk_placing.apply(old, placed, "f")
    assert applied.join() == target
    cut = hunk_placing.spliced(raw, old, placed)
    if cut is not None:
        assert cut == target
        assert "".join(hunk_placing.diff_lines(old, placed, None)) == "".join(
            hunk_placing.diff_lines(old, placed, applied)
        )


def search_of_every_line(texts: list[str], olds: list[list[str]]) -> list[int] | None:
    """Where each hunk's old lines are, each after the one before, found by trying every line
    of the file; None where one is nowhere or in two places."""
    places, cursor = [], 0
    for old in olds:
        found = [at for at in range(cursor, len(texts) - len(old) + 1) if texts[at : at + len(old)] == old]
        if len(found) != 1:
            return None
        places.append(found[0])
        cursor = found[0] + len(old)
    return places


@settings(max_examples=400, deadline=None)
@given(
    texts=st.lists(st.sampled_from("abcd") | st.integers(0, 40).map(str), min_size=1, max_size=90),
    cuts=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 9), st.integers(0, 10**6)), min_size=1, max_size=4),
    changed=st.booleans(),
)
@example(texts=["a", "b"] * 10 + ["x", "a", "b", "a"], cuts=[(20, 4, 0)], changed=False)  # "a" all over
def test_hunks_are_placed_where_trying_every_line_of_the_file_finds_them(
    texts: list[str], cuts: list[tuple[int, int, int]], changed: bool
) -> None:
    # Hunks cut from the file (one line of each maybe changed), their lines repeating all over
    # it: the index the placer looks them up in, of every line or of every few, misses none.
    olds = []
    for at, size, which in cuts:
        at %= len(texts)
        old = texts[at : at + size]
        if changed:
            old[which % len(old)] = str(which % 50)
        olds.append(old)
    body = "".join(f"@@ -1,{len(old)} +1,{len(old)} @@\n" + "".join(f" {line}\n" for line in old) for old in olds)
    hunks = parse_patch(f"--- a/f\n+++ b/f\n{body}")[0].hunks
    expected = search_of_every_line(texts, olds)
    try:
        placed = hunk_placing.place(
            hunk_placing.Lines.of("\n".join(texts) + "\n"), hunks, "f", hunk_placing.Comparisons()
        )
    except Conflict:
        assert expected is None
    else:
        assert [(item.at, item.trimmed) for item in placed] == [(at, False) for at in expected or []]


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(st.integers(0, 30).map(line), min_size=6, max_size=40),
    changes=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 30)), min_size=1, max_size=4),
    end=st.sampled_from(["\n", "\r\n"]),
    final_newline=st.booleans(),
)
def test_an_ascii_file_is_cut_from_its_bytes_as_from_its_text(
    before: list[str], changes: list[tuple[int, int]], end: str, final_newline: bool
) -> None:
    after = list(before)
    for at, number in changes:  # short of the last lines: the new file can be cut from the old
        after[at % (len(after) - 3)] = line(number) + " new"
    diff = "".join(difflib.unified_diff([t + "\n" for t in before], [t + "\n" for t in after], "a/f", "b/f", n=1))
    raw = end.join(before) + (end if final_newline else "")
    old = hunk_placing.Lines.of(raw)
    try:
        placed = hunk_placing.place(old, parse_patch(diff)[0].hunks, "f", hunk_placing.Comparisons())
    except Conflict:
        return  # context lines that repeat
    if placed and placed[-1].at + len(placed[-1].old) == len(old.texts):
        return  # difflib aligned the change onto the last line after all (a text cut only short of it)
    cut = hunk_placing.spliced(raw, old, placed)
    assert cut is not None
    pieces = hunk_placing.spliced_bytes(raw.encode(), raw, old, placed)
    assert pieces is not None and pieces.joined() == cut.encode()


@settings(max_examples=400, deadline=None)
@given(
    texts=st.lists(st.sampled_from("abcd") | st.integers(0, 60).map(str), min_size=1, max_size=90),
    at=st.integers(0, 10**6),
    size=st.integers(1, 9),
    start=st.integers(0, 10**6),
    changed=st.integers(-1, 60),
)
@example(texts=["x", "1", "2", "3", "4", "x", "1", "2", "3", "4"], at=0, size=5, start=0, changed=-1)  # there twice
@example(texts=["1", "2", "3", "4", "5", "6"], at=2, size=4, start=3, changed=-1)  # only before the start
def test_the_placer_s_short_way_finds_a_hunk_where_its_search_does_or_leaves_it_to_the_search(
    texts: list[str], at: int, size: int, start: int, changed: int
) -> None:
    # The usual hunk is placed without the search's steps (``_only_place``): wherever it
    # answers, the search finds that one place and no other; where it does not, the search runs.
    at %= len(texts)
    start %= len(texts) + 1
    old = texts[at : at + size]
    if changed >= 0:
        old[changed % len(old)] = str(changed)
    step = min(hunk_placing.STEP, len(old))
    index = hunk_placing._Index(texts, [old])
    quick = hunk_placing._only_place(index.of(False, step), texts, old, start, step)
    searched = hunk_placing._matches(texts, index, old, start, step, False, hunk_placing.Comparisons())
    assert quick == -1 or searched == [quick]
    if searched and sum(len(index.of(False, step).get(line, ())) for line in old[:step]) == 1:
        assert quick == searched[0]  # the usual hunk: its first lines once in the sparse table
