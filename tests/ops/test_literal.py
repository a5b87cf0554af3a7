"""``find_all``: ``memmem`` over big ASCII texts, ``str.find`` elsewhere, the same places either way."""

from __future__ import annotations

import sys
from typing import AnyStr

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfs_mcp.ops.text import find
from vfs_mcp.ops.text.find import MEMMEM_CHARS, find_all


def stepped(text: AnyStr, old: AnyStr, limit: int | None) -> list[int]:
    found, at = [], text.find(old)
    while at >= 0 and (limit is None or len(found) < limit):
        found.append(at)
        at = text.find(old, at + len(old))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's memmem is checked where it is sure to be")
def test_memmem_is_found_in_the_c_library_on_linux() -> None:
    assert find._MEMMEM is not None  # else the property below compares str.find with itself


@settings(max_examples=200, deadline=None)
@given(
    head=st.text(alphabet="ab\n", max_size=40),
    body=st.text(alphabet="ab\n", max_size=40),
    old=st.text(alphabet="ab\n", min_size=1, max_size=4),
    wide=st.sampled_from(["", "é", "😀"]),
    limit=st.sampled_from([None, 1, 6]),
    big=st.booleans(),
)
def test_the_places_are_those_of_str_find_for_big_and_small_and_non_ascii_texts(
    head: str, body: str, old: str, wide: str, limit: int | None, big: bool
) -> None:
    # Matches at the very start, in a long run of filler, and at the very end; overlapping ones.
    filler = "b" * (MEMMEM_CHARS if big else 3)
    text = head + old + filler + body + wide + old + old + "a" * len(head) + old
    assert find_all(text, old, limit) == stepped(text, old, limit)


def test_a_needle_longer_than_what_is_left_is_not_found_past_the_end() -> None:
    text = "x" * MEMMEM_CHARS + "abc"
    assert find_all(text, "abcd") == []
    assert find_all(text, "abc") == [MEMMEM_CHARS]
    assert find_all(text, "aa" * MEMMEM_CHARS) == []


@settings(max_examples=200, deadline=None)
@given(
    head=st.binary(max_size=40),
    old=st.binary(min_size=1, max_size=4),
    limit=st.sampled_from([None, 1, 2]),
    big=st.booleans(),
)
def test_bytes_are_searched_in_place_with_the_answers_of_bytes_find(
    head: bytes, old: bytes, limit: int | None, big: bool
) -> None:
    data = head + old + b"\x00" * (MEMMEM_CHARS if big else 3) + old + old + head + old
    assert find.find_all_bytes(data, old, limit) == stepped(data, old, limit)


@settings(max_examples=200, deadline=None)
@given(
    runs=st.lists(st.tuples(st.integers(1, 200), st.integers(0, 3 * find.COUNT_BLOCK)), min_size=1, max_size=6),
    start=st.integers(0, 10**7),
    end=st.integers(0, 10**7),
)
def test_newlines_are_counted_as_bytes_count_counts_them_across_long_and_short_lines(
    runs: list[tuple[int, int]], start: int, end: int
) -> None:
    # Runs of lines of one width each, so blocks change from long lines to short ones and back.
    data = b"".join((b"x" * (width - 1) + b"\n") * (size // width) for width, size in runs)
    start, end = sorted((start % (len(data) + 1), end % (len(data) + 1)))
    assert find.newlines(data, start, end) == data.count(b"\n", start, end)
