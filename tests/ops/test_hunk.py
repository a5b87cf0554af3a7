"""One ``Hunk`` for a diff and a patch (``vfs_mcp/ops/diff/hunk.py``): a hunk made by the diff
engine (as runs cut from the texts) and the same hunk read back from the diff it renders (as
a patch's body) are one hunk in every form — numbers, signs, texts, lines, runs, the two
"no newline" flags — and a hunk given as signs and texts agrees with both."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfs_mcp.ops.diff.hunk import Hunk
from vfs_mcp.ops.diff.unified import diff, rendered
from vfs_mcp.ops.edits.patch_formats import parse_patch

LINES = st.lists(st.sampled_from(["a", "b", "c", "", " x", "dd"]), max_size=30)
TEXTS = st.tuples(LINES, st.booleans()).map(lambda made: "\n".join(made[0]) + ("\n" if made[1] and made[0] else ""))


def forms(hunk: Hunk) -> tuple[object, ...]:
    return (
        tuple(hunk.count(sign) for sign in " -+"),  # first: before a form of its lines is made
        hunk.header(),
        hunk.signs,
        hunk.texts,
        list(hunk.lines()),
        hunk.old_ends_without_newline,
        hunk.new_ends_without_newline,
        hunk.old,
        hunk.new,
        hunk.body,
    )


@given(TEXTS, TEXTS)
def test_a_diffs_hunks_read_back_from_its_text_are_the_same_hunks(old: str, new: str) -> None:
    made = diff(old, new, context=2)
    if not made.hunks:
        assert old == new
        return
    read = parse_patch(rendered(made, "x"))[0].hunks
    assert [forms(hunk) for hunk in read] == [forms(hunk) for hunk in made.hunks]


@given(TEXTS, TEXTS)
def test_a_hunk_given_as_signs_and_texts_has_the_runs_of_the_diff_that_made_it(old: str, new: str) -> None:
    for hunk in diff(old, new, context=1).hunks:
        again = Hunk(
            hunk.old_start,
            hunk.old_lines,
            hunk.new_start,
            hunk.new_lines,
            signs=hunk.signs,
            texts=hunk.texts,
            old_ends_without_newline=hunk.old_ends_without_newline,
            new_ends_without_newline=hunk.new_ends_without_newline,
        )
        assert [line for _, block in again.rows for line in block.splitlines(keepends=True)] == [
            line for _, line in hunk.lines()
        ]
        assert forms(again) == forms(hunk)


def test_an_insertion_without_context_keeps_where_its_header_puts_it() -> None:
    hunk = parse_patch("--- a/x\n+++ b/x\n@@ -5,0 +6,2 @@\n+new\n+lines\n")[0].hunks[0]
    assert (hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines) == (6, 0, 6, 2)
    assert hunk.header() == "@@ -5,0 +6,2 @@\n"


def test_a_read_hunk_counts_a_blank_line_as_context_and_a_note_as_no_line() -> None:
    patch = "--- a/x\n+++ b/x\n@@ -1,4 +1,3 @@\n a\n\n-b\n-c\n\\ No newline at end of file\n+c\n"
    hunk = parse_patch(patch)[0].hunks[0]
    assert [hunk.count(sign) for sign in " -+"] == [2, 2, 1]
    assert [hunk.signs.count(sign) for sign in " -+"] == [2, 2, 1]


def test_a_hunk_is_made_from_one_form_of_its_lines() -> None:
    with pytest.raises(ValueError, match="one form"):
        Hunk(body="+a", signs="+", texts=["a"])
