"""Contract tests for edit_file and edit_file_at_line (SPEC §4; the default profile's original, §6.9/§6.21; the original XML interface).

Every test runs on memory, local and s3 (moto's server); files are seeded and checked
through the sandbox's back door, byte for byte, so "nothing changed" means exactly that.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from conftest import ScopedSandbox
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vfs_mcp.errors import VfsError
from vfs_mcp.ops.diff import unified
from vfs_mcp.ops.edits import numbered as line_ops
from vfs_mcp.ops.edits import replace as edit_ops
from vfs_mcp.ops.text import document, find
from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio


# One mount per backend for the whole module, one folder per test inside it: creating an
# S3 bucket on moto costs about a second, and building a server tens of milliseconds.
@pytest.fixture
def sandbox(scoped_sandbox: ScopedSandbox) -> ScopedSandbox:
    """A folder of its own in a mount and server shared by this module: fast on s3."""
    return scoped_sandbox


SHOP = (
    "class Shop:\n"
    "    def total(self):\n"
    "        return self.price * self.qty\n"
    "\n"
    "    def name(self):\n"
    '        return "shop"\n'
)

GREET = "import os\n\ndef greet(name):\n    print('hello world')\n    return name\n\nvalue = compute_total(items)\n"

SIX = "l1\nl2\nl3\nl4\nl5\nl6\n"


async def call(sandbox: Any, tool: str, **args: Any) -> Any:
    async with sandbox.client() as client:
        return await client.call_tool(tool, args)


async def edit(sandbox: Any, rel: str, edits: list[dict[str, Any]], **args: Any) -> Any:
    return await call(sandbox, "edit_file", path=sandbox.path(rel), edits=edits, **args)


async def edit_lines(sandbox: Any, rel: str, line_edits: list[dict[str, Any]], **args: Any) -> Any:
    return await call(sandbox, "edit_file_at_line", path=sandbox.path(rel), line_edits=line_edits, **args)


def succeeded(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    structured: dict[str, Any] = data_of(result)
    return structured


def failed_with(result: Any, code: str) -> str:
    assert result.is_error, f"expected {code}, got success: {result.content[0].text}"
    text: str = result.content[0].text
    assert error_of(result), f"expected {code}, got an error without a code: {text!r}"
    assert error_of(result)["code"] == code, text
    assert text.startswith(f"{code}: "), text
    return text


# -- edit_file: matching strategies ------------------------------------------------------


async def test_exact_match_replaces_the_text_and_reports_strategy_confidence_and_line(sandbox):
    sandbox.put("a.txt", "one\ntwo\nthree\nfour\n")
    result = await edit(sandbox, "a.txt", [{"oldText": "three", "newText": "3"}])
    body = succeeded(result)
    assert sandbox.get("a.txt") == b"one\ntwo\n3\nfour\n"
    [match] = body["matches"]
    assert match["edit"] == 0
    assert match["strategy"] == "exact"
    assert match["confidence"] == 1.0
    assert match["occurrences"] == 1
    assert (match["line_start"], match["line_end"]) == (3, 3)
    assert body["changed"] is True
    assert body["dry_run"] is False
    assert body["path"] == sandbox.path("a.txt")
    assert body["sha256"] == hashlib.sha256(b"one\ntwo\n3\nfour\n").hexdigest()


async def test_a_multi_line_exact_match_reports_its_first_and_last_line(sandbox):
    sandbox.put("a.txt", "one\ntwo\nthree\nfour\n")
    body = succeeded(await edit(sandbox, "a.txt", [{"oldText": "two\nthree", "newText": "2-3"}]))
    assert sandbox.get("a.txt") == b"one\n2-3\nfour\n"
    assert (body["matches"][0]["line_start"], body["matches"][0]["line_end"]) == (2, 3)


async def test_edit_returns_a_git_style_unified_diff_as_text_then_what_was_written(sandbox):
    sandbox.put("a.txt", "one\ntwo\nthree\n")
    result = await edit(sandbox, "a.txt", [{"oldText": "two", "newText": "TWO"}])
    body = succeeded(result)
    text = result.content[0].text
    diff, written = text.rsplit("\n", 1)
    assert diff + "\n" == body["diff"]
    assert written == f"[wrote {sandbox.path('a.txt')}, sha256 {body['sha256']}]"
    lines = diff.splitlines()
    assert lines[0] == f"--- {sandbox.path('a.txt')}"
    assert lines[1] == f"+++ {sandbox.path('a.txt')}"
    assert lines[2].startswith("@@ -1,3 +1,3 @@")
    assert lines[3:] == [" one", "-two", "+TWO", " three"]


async def test_the_diff_counts_only_newlines_as_line_ends(sandbox):
    sandbox.put("sep.js", 'const s = "a\u2028b";\nlet x = 1;\n'.encode())
    result = await edit(sandbox, "sep.js", [{"oldText": "let x = 1;", "newText": "let x = 2;"}])
    body = succeeded(result)
    assert sandbox.get("sep.js") == 'const s = "a\u2028b";\nlet x = 2;\n'.encode()
    assert body["diff"].split("\n")[2:] == [
        "@@ -1,2 +1,2 @@",
        ' const s = "a\u2028b";',
        "-let x = 1;",
        "+let x = 2;",
        "",
    ]


async def test_whitespace_normalised_match_is_used_when_spacing_differs(sandbox):
    sandbox.put("calc.py", "def f():\n    total = price  *  qty\n    return total\n")
    body = succeeded(
        await edit(sandbox, "calc.py", [{"oldText": "total = price * qty", "newText": "total = price * qty * rate"}])
    )
    assert sandbox.get("calc.py") == b"def f():\n    total = price * qty * rate\n    return total\n"
    [match] = body["matches"]
    assert match["strategy"] == "whitespace"
    assert match["confidence"] == 1.0
    assert (match["line_start"], match["line_end"]) == (2, 2)


async def test_indentation_of_the_file_is_kept_when_old_text_is_dedented(sandbox):
    sandbox.put("shop.py", SHOP)
    old = "def total(self):\n    return self.price * self.qty"
    new = "def total(self):\n    subtotal = self.price * self.qty\n    return subtotal"
    body = succeeded(await edit(sandbox, "shop.py", [{"oldText": old, "newText": new}]))
    expected = SHOP.replace(
        "        return self.price * self.qty\n",
        "        subtotal = self.price * self.qty\n        return subtotal\n",
    )
    assert sandbox.get("shop.py") == expected.encode()
    assert body["matches"][0]["strategy"] == "whitespace"
    assert (body["matches"][0]["line_start"], body["matches"][0]["line_end"]) == (2, 3)


async def test_indentation_of_the_file_is_kept_when_old_text_is_over_indented_with_tabs(sandbox):
    sandbox.put("shop.py", SHOP)
    old = '\t\tdef name(self):\n\t\t\treturn "shop"'
    new = "\t\tdef name(self):\n\t\t\tlabel = 'shop'\n\t\t\treturn label"
    succeeded(await edit(sandbox, "shop.py", [{"oldText": old, "newText": new}]))
    expected = SHOP.replace(
        '        return "shop"\n',
        "        label = 'shop'\n        return label\n",
    )
    assert sandbox.get("shop.py") == expected.encode()


async def test_fuzzy_match_replaces_the_closest_lines_and_reports_its_confidence(sandbox):
    sandbox.put("greet.py", GREET)
    body = succeeded(await edit(sandbox, "greet.py", [{"oldText": "print('helo world')", "newText": "print('bye')"}]))
    assert sandbox.get("greet.py") == GREET.replace("print('hello world')", "print('bye')").encode()
    [match] = body["matches"]
    assert match["strategy"] == "fuzzy"
    assert 0.8 <= match["confidence"] < 1.0
    assert (match["line_start"], match["line_end"]) == (4, 4)


async def test_fuzzy_match_of_several_lines_keeps_the_file_indentation(sandbox):
    sandbox.put("greet.py", GREET)
    old = "def greet(nme):\n    print('hello wrld')"
    new = "def greet(name):\n    print('hi')"
    body = succeeded(await edit(sandbox, "greet.py", [{"oldText": old, "newText": new}]))
    assert sandbox.get("greet.py") == GREET.replace("print('hello world')", "print('hi')").encode()
    assert body["matches"][0]["strategy"] == "fuzzy"
    assert (body["matches"][0]["line_start"], body["matches"][0]["line_end"]) == (3, 4)


async def test_a_match_ending_in_a_newline_reports_the_line_it_ends_on(sandbox):
    sandbox.put("a.txt", "one\ntwo\nthree\n")
    body = succeeded(await edit(sandbox, "a.txt", [{"oldText": "two\n", "newText": "2\n"}]))
    assert sandbox.get("a.txt") == b"one\n2\nthree\n"
    assert (body["matches"][0]["line_start"], body["matches"][0]["line_end"]) == (2, 2)


async def test_a_substring_with_different_spacing_never_takes_the_rest_of_its_line_with_it(sandbox):
    """oldText 'can be substring' (the original XML interface): text outside it must survive, whatever the strategy."""
    original = b"x = compute(alpha,  beta); y = 1\nz = 2\n"
    sandbox.put("s.py", original)
    result = await edit(
        sandbox, "s.py", [{"oldText": "x = compute(alpha, beta);", "newText": "x = compute(alpha, gamma);"}]
    )
    if result.is_error:
        failed_with(result, "CONFLICT")
        assert sandbox.get("s.py") == original
    else:
        assert sandbox.get("s.py") == b"x = compute(alpha, gamma); y = 1\nz = 2\n"


async def test_new_lines_deeper_than_old_text_follow_the_files_tab_indentation(sandbox):
    sandbox.put("t.go", "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n")
    old = "if x {\n    y()"
    new = "if x {\n    for i := range r {\n        y(i)\n    }"
    body = succeeded(await edit(sandbox, "t.go", [{"oldText": old, "newText": new}]))
    assert body["matches"][0]["strategy"] == "whitespace"
    assert sandbox.get("t.go") == b"func f() {\n\tif x {\n\t\tfor i := range r {\n\t\t\ty(i)\n\t\t}\n\t}\n}\n"


async def test_old_text_running_past_the_end_of_the_file_is_a_conflict_or_a_match_never_a_crash(sandbox):
    original = b"line one\nline two"
    sandbox.put("short.txt", original)
    result = await edit(sandbox, "short.txt", [{"oldText": "line one\nline two\nx", "newText": "NEW"}])
    if result.is_error:
        failed_with(result, "CONFLICT")
        assert sandbox.get("short.txt") == original
    else:
        assert sandbox.get("short.txt") == b"NEW"


async def test_text_found_twice_is_a_conflict_naming_both_lines_and_changes_nothing(sandbox):
    original = b"x = 1\ny = 2\nx = 1\n"
    sandbox.put("dup.txt", original)
    message = failed_with(await edit(sandbox, "dup.txt", [{"oldText": "x = 1", "newText": "x = 9"}]), "CONFLICT")
    assert "2 times" in message
    assert "1, 3" in message
    assert "replace_all" in message
    assert sandbox.get("dup.txt") == original


async def test_a_text_found_more_often_than_listed_says_how_many_lines_were_left_out(sandbox):
    sandbox.put("many.txt", "a\nx\nx\nx\nb\nx\nx\nx\nx\n")
    message = failed_with(await edit(sandbox, "many.txt", [{"oldText": "x", "newText": "y"}]), "CONFLICT")
    assert "occurs 7 times (lines 2, 3, 4, 6, 7, … 2 more)" in message
    loose = failed_with(await edit(sandbox, "many.txt", [{"oldText": "x ", "newText": "y"}]), "CONFLICT")
    assert "7 times (lines 2, 3, 4, 6, 7, … 2 more)" in loose


async def test_replace_all_replaces_every_occurrence_and_counts_them(sandbox):
    sandbox.put("dup.txt", "x = 1\ny = 2\nx = 1\n")
    body = succeeded(await edit(sandbox, "dup.txt", [{"oldText": "x = 1", "newText": "x = 9", "replace_all": True}]))
    assert sandbox.get("dup.txt") == b"x = 9\ny = 2\nx = 9\n"
    assert body["matches"][0]["occurrences"] == 2
    assert body["matches"][0]["line_start"] == 1


async def test_text_found_twice_once_whitespace_is_normalised_is_a_conflict_unless_replace_all(sandbox):
    original = b"a  =  1\nb = 2\n    a = 1\n"
    sandbox.put("dup.txt", original)
    message = failed_with(await edit(sandbox, "dup.txt", [{"oldText": "a = 1 ", "newText": "a = 5"}]), "CONFLICT")
    assert "1, 3" in message
    assert sandbox.get("dup.txt") == original
    body = succeeded(await edit(sandbox, "dup.txt", [{"oldText": "a = 1 ", "newText": "a = 5", "replace_all": True}]))
    assert sandbox.get("dup.txt") == b"a = 5\nb = 2\n    a = 5\n"
    assert body["matches"][0]["strategy"] == "whitespace"
    assert body["matches"][0]["occurrences"] == 2


async def test_text_not_found_is_a_conflict_naming_the_closest_lines_and_their_confidence(sandbox):
    sandbox.put("greet.py", GREET)
    result = await edit(sandbox, "greet.py", [{"oldText": "value = calc_sum(stuff, 3)", "newText": "x"}])
    message = failed_with(result, "CONFLICT")
    assert "not found" in message
    assert re.search(r"lines 7-7\b", message), message
    assert "value = compute_total(items)" in message
    confidence = re.search(r"confidence (0\.\d+)", message)
    assert confidence, message
    assert 0.0 < float(confidence.group(1)) < 0.8
    assert sandbox.get("greet.py") == GREET.encode()


async def test_turning_partial_match_off_makes_a_near_miss_a_conflict(sandbox):
    sandbox.put("greet.py", GREET)
    result = await edit(
        sandbox,
        "greet.py",
        [{"oldText": "print('helo world')", "newText": "print('bye')"}],
        options={"partial_match": False},
    )
    failed_with(result, "CONFLICT")
    assert sandbox.get("greet.py") == GREET.encode()


async def test_turning_normalize_whitespace_off_never_reports_a_whitespace_match(sandbox):
    sandbox.put("calc.py", "total = price  *  qty\n")
    body = succeeded(
        await edit(
            sandbox,
            "calc.py",
            [{"oldText": "total = price * qty", "newText": "total = 0"}],
            options={"normalize_whitespace": False},
        )
    )
    assert body["matches"][0]["strategy"] != "whitespace"


async def test_turning_both_fallbacks_off_makes_a_spacing_difference_a_conflict(sandbox):
    original = b"total = price  *  qty\n"
    sandbox.put("calc.py", original)
    result = await edit(
        sandbox,
        "calc.py",
        [{"oldText": "total = price * qty", "newText": "total = 0"}],
        options={"normalize_whitespace": False, "partial_match": False},
    )
    failed_with(result, "CONFLICT")
    assert sandbox.get("calc.py") == original


async def test_turning_preserve_indentation_off_writes_new_text_as_given(sandbox):
    sandbox.put("shop.py", SHOP)
    old = "def total(self):\n    return self.price * self.qty"
    new = "def total(self):\n    return 0"
    succeeded(
        await edit(sandbox, "shop.py", [{"oldText": old, "newText": new}], options={"preserve_indentation": False})
    )
    expected = SHOP.replace("    def total(self):\n        return self.price * self.qty\n", new + "\n")
    assert sandbox.get("shop.py") == expected.encode()


@pytest.mark.parametrize(
    ("spelling", "value"),
    [("dryRun", True), ("options", {"partialMatch": False})],
    ids=["dryRun", "options.partialMatch"],
)
async def test_seed_004_camel_case_spellings_are_honoured_or_refused_never_silently_ignored(sandbox, spelling, value):
    """The original XML interface names dryRun and options.partialMatch; a preview must never write the file."""
    sandbox.put("greet.py", GREET)
    result = await edit(
        sandbox, "greet.py", [{"oldText": "print('helo world')", "newText": "print('bye')"}], **{spelling: value}
    )
    if result.is_error:  # refused (INVALID_ARGUMENT), or partialMatch honoured (CONFLICT)
        assert error_of(result)["code"] in ("INVALID_ARGUMENT", "CONFLICT")
    assert sandbox.get("greet.py") == GREET.encode()


# -- edit_file: literal text, line endings, encodings ------------------------------------


async def test_dollar_groups_and_backslashes_in_new_text_stay_literal(sandbox):
    sandbox.put("r.txt", "name = 'x'\nother\n")
    new = "name = '$1' + r'\\1' + 'C:\\\\dir\\new' + \\g<0> + $&"
    succeeded(await edit(sandbox, "r.txt", [{"oldText": "name = 'x'", "newText": new}]))
    assert sandbox.get("r.txt") == (new + "\nother\n").encode()


async def test_backslashes_stay_literal_when_the_whitespace_strategy_reindents(sandbox):
    sandbox.put("r.py", "def f():\n    path  =  'a'\n")
    new = "path = 'C:\\\\temp\\n' + '$1' + '\\1'"
    body = succeeded(await edit(sandbox, "r.py", [{"oldText": "path = 'a'", "newText": new}]))
    assert body["matches"][0]["strategy"] == "whitespace"
    assert sandbox.get("r.py") == ("def f():\n    " + new + "\n").encode()


async def test_regex_metacharacters_in_old_text_match_literally(sandbox):
    sandbox.put("r.txt", "a.*b(c)[d]\nabbbc\n")
    succeeded(await edit(sandbox, "r.txt", [{"oldText": "a.*b(c)[d]", "newText": "plain"}]))
    assert sandbox.get("r.txt") == b"plain\nabbbc\n"


async def test_a_crlf_file_stays_crlf_byte_for_byte_outside_the_edit(sandbox):
    sandbox.put("w.txt", b"first\r\nsecond\r\nthird\r\nlast\r\n")
    succeeded(await edit(sandbox, "w.txt", [{"oldText": "second\nthird", "newText": "2nd\nline\n3rd"}]))
    assert sandbox.get("w.txt") == b"first\r\n2nd\r\nline\r\n3rd\r\nlast\r\n"


async def test_old_text_written_with_crlf_matches_a_crlf_file(sandbox):
    sandbox.put("w.txt", b"first\r\nsecond\r\nthird\r\n")
    succeeded(await edit(sandbox, "w.txt", [{"oldText": "first\r\nsecond", "newText": "one\r\ntwo"}]))
    assert sandbox.get("w.txt") == b"one\r\ntwo\r\nthird\r\n"


async def test_a_crlf_file_stays_crlf_after_a_whitespace_match(sandbox):
    sandbox.put("w.py", b"def f():\r\n    x  =  1\r\n    return x\r\n")
    body = succeeded(await edit(sandbox, "w.py", [{"oldText": "x = 1\nreturn x", "newText": "x = 2\nreturn x"}]))
    assert body["matches"][0]["strategy"] == "whitespace"
    assert sandbox.get("w.py") == b"def f():\r\n    x = 2\r\n    return x\r\n"


async def test_a_file_with_a_final_newline_keeps_it(sandbox):
    sandbox.put("n.txt", "a\nlast\n")
    succeeded(await edit(sandbox, "n.txt", [{"oldText": "last", "newText": "end"}]))
    assert sandbox.get("n.txt") == b"a\nend\n"


async def test_a_file_without_a_final_newline_keeps_having_none(sandbox):
    sandbox.put("n.txt", "a\nlast")
    succeeded(await edit(sandbox, "n.txt", [{"oldText": "last", "newText": "end"}]))
    assert sandbox.get("n.txt") == b"a\nend"


async def test_a_file_without_a_final_newline_gets_none_from_a_whitespace_match_ending_in_one(sandbox):
    sandbox.put("n.py", "def f():\n    x  =  1")
    succeeded(await edit(sandbox, "n.py", [{"oldText": "x = 1\n", "newText": "x = 2\n"}]))
    assert sandbox.get("n.py") == b"def f():\n    x = 2"


async def test_a_latin_1_file_round_trips_in_its_own_encoding(sandbox):
    sandbox.put("l1.txt", "café crème\nnaïve\n".encode("latin-1"))
    body = succeeded(
        await edit(sandbox, "l1.txt", [{"oldText": "café crème", "newText": "thé glacé"}], encoding="latin-1")
    )
    assert sandbox.get("l1.txt") == "thé glacé\nnaïve\n".encode("latin-1")
    assert body["sha256"] == hashlib.sha256("thé glacé\nnaïve\n".encode("latin-1")).hexdigest()


async def test_utf8_text_with_multi_byte_characters_is_edited_in_place(sandbox):
    sandbox.put("u.txt", "héllo wörld\n🌍 ok\n")
    succeeded(await edit(sandbox, "u.txt", [{"oldText": "wörld", "newText": "мир 🌏"}]))
    assert sandbox.get("u.txt") == "héllo мир 🌏\n🌍 ok\n".encode()


async def test_editing_a_latin_1_file_as_utf8_keeps_its_foreign_bytes(sandbox):
    original = "café\n".encode("latin-1")
    sandbox.put("l1.txt", original)
    succeeded(await edit(sandbox, "l1.txt", [{"oldText": "caf", "newText": "tea"}]))
    assert sandbox.get("l1.txt") == "teaé\n".encode("latin-1")


async def test_editing_a_binary_file_as_text_is_binary_content_and_changes_nothing(sandbox):
    original = b"caf\x00\x01\n"
    sandbox.put("b.bin", original)
    failed_with(await edit(sandbox, "b.bin", [{"oldText": "caf", "newText": "tea"}]), "BINARY_CONTENT")
    assert sandbox.get("b.bin") == original


# -- edit_file: dry run, atomicity, preconditions ----------------------------------------


async def test_dry_run_changes_nothing_and_returns_the_diff(sandbox):
    original = b"one\ntwo\nthree\n"
    sandbox.put("a.txt", original)
    result = await edit(sandbox, "a.txt", [{"oldText": "two", "newText": "2"}], dry_run=True)
    body = succeeded(result)
    assert sandbox.get("a.txt") == original
    assert body["dry_run"] is True
    assert body["changed"] is True
    assert body["sha256"] is None
    assert result.content[0].text == body["diff"] + "[dry run: nothing written]"
    assert "-two\n+2\n" in body["diff"]


async def test_a_failing_edit_in_a_list_leaves_the_file_byte_identical(sandbox):
    original = b"alpha\nbeta\ngamma\n"
    sandbox.put("a.txt", original)
    result = await edit(
        sandbox,
        "a.txt",
        [
            {"oldText": "alpha", "newText": "ALPHA"},
            {"oldText": "beta", "newText": "BETA"},
            {"oldText": "something that is nowhere in the file at all", "newText": "x"},
        ],
    )
    message = failed_with(result, "CONFLICT")
    assert "edit 2" in message
    assert sandbox.get("a.txt") == original


async def test_an_ambiguous_edit_after_a_good_one_leaves_the_file_byte_identical(sandbox):
    original = b"alpha\nbeta\nbeta\n"
    sandbox.put("a.txt", original)
    result = await edit(sandbox, "a.txt", [{"oldText": "alpha", "newText": "A"}, {"oldText": "beta", "newText": "B"}])
    failed_with(result, "CONFLICT")
    assert sandbox.get("a.txt") == original


async def test_several_edits_apply_in_order_and_each_is_reported(sandbox):
    sandbox.put("a.txt", "alpha\nbeta\ngamma\ndelta\n")
    body = succeeded(
        await edit(
            sandbox,
            "a.txt",
            [
                {"oldText": "delta", "newText": "DELTA"},
                {"oldText": "alpha", "newText": "ALPHA"},
                {"oldText": "ALPHA\nbeta", "newText": "AB"},
            ],
        )
    )
    assert sandbox.get("a.txt") == b"AB\ngamma\nDELTA\n"
    assert [m["edit"] for m in body["matches"]] == [0, 1, 2]
    assert [m["line_start"] for m in body["matches"]] == [4, 1, 1]


async def test_a_mismatched_expected_hash_is_a_conflict_and_changes_nothing(sandbox):
    original = b"one\ntwo\n"
    sandbox.put("a.txt", original)
    stale = hashlib.sha256(b"something else").hexdigest()
    result = await edit(sandbox, "a.txt", [{"oldText": "two", "newText": "2"}], expected_hash=stale)
    failed_with(result, "CONFLICT")
    assert sandbox.get("a.txt") == original


async def test_a_matching_expected_hash_lets_the_edit_through(sandbox):
    sandbox.put("a.txt", b"one\ntwo\n")
    current = hashlib.sha256(b"one\ntwo\n").hexdigest()
    succeeded(await edit(sandbox, "a.txt", [{"oldText": "two", "newText": "2"}], expected_hash=current))
    assert sandbox.get("a.txt") == b"one\n2\n"


async def test_an_empty_old_text_is_an_invalid_argument(sandbox):
    sandbox.put("a.txt", b"one\n")
    failed_with(await edit(sandbox, "a.txt", [{"oldText": "", "newText": "x"}]), "INVALID_ARGUMENT")
    assert sandbox.get("a.txt") == b"one\n"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("edit_file", {"edits": []}),
        ("edit_file", {"edits": [{"oldText": "a"}]}),
        ("edit_file_at_line", {"line_edits": [{"line_number": 1, "action": "upsert", "content": "x"}]}),
        ("edit_file_at_line", {"line_edits": [{"line_number": 1, "action": "delete"}], "offset": -1}),
    ],
    ids=["no-edits", "edit-without-newText", "unknown-action", "negative-offset"],
)
async def test_malformed_arguments_are_a_one_line_invalid_argument(sandbox, tool, args):
    sandbox.put("a.txt", b"a\n")
    message = failed_with(await call(sandbox, tool, path=sandbox.path("a.txt"), **args), "INVALID_ARGUMENT")
    assert "\n" not in message
    assert sandbox.get("a.txt") == b"a\n"


async def test_editing_a_missing_file_is_not_found(sandbox):
    failed_with(await edit(sandbox, "nope.txt", [{"oldText": "a", "newText": "b"}]), "NOT_FOUND")
    assert not sandbox.exists("nope.txt")


async def test_editing_a_binary_file_is_binary_content(sandbox):
    original = b"\x00\x01\x02abc\n"
    sandbox.put("b.bin", original)
    failed_with(await edit(sandbox, "b.bin", [{"oldText": "abc", "newText": "x"}]), "BINARY_CONTENT")
    assert sandbox.get("b.bin") == original


# -- edit_file_at_line -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "line", "content", "expected"),
    [
        ("replace", 2, "two", "l1\ntwo\nl3\nl4\nl5\nl6\n"),
        ("replace", 2, "two\ntwo-b", "l1\ntwo\ntwo-b\nl3\nl4\nl5\nl6\n"),
        ("insert_before", 1, "l0", "l0\nl1\nl2\nl3\nl4\nl5\nl6\n"),
        ("insert_before", 4, "new\nnewer", "l1\nl2\nl3\nnew\nnewer\nl4\nl5\nl6\n"),
        ("insert_after", 6, "l7", "l1\nl2\nl3\nl4\nl5\nl6\nl7\n"),
        ("insert_after", 3, "mid", "l1\nl2\nl3\nmid\nl4\nl5\nl6\n"),
        ("delete", 2, None, "l1\nl3\nl4\nl5\nl6\n"),
        ("delete", 6, None, "l1\nl2\nl3\nl4\nl5\n"),
    ],
    ids=[
        "replace",
        "replace-2-lines",
        "insert_before-1",
        "insert_before",
        "insert_after-last",
        "insert_after",
        "delete",
        "delete-last",
    ],
)
async def test_each_line_action_edits_the_numbered_line(sandbox, action, line, content, expected):
    sandbox.put("six.txt", SIX)
    edit_spec: dict[str, Any] = {"line_number": line, "action": action}
    if content is not None:
        edit_spec["content"] = content
    result = await edit_lines(sandbox, "six.txt", [edit_spec])
    body = succeeded(result)
    assert sandbox.get("six.txt") == expected.encode()
    [outcome] = body["edits"]
    assert outcome["line_number"] == line
    assert outcome["action"] == action
    assert outcome["applied"] is True
    assert outcome["verified"] is None
    assert (body["applied"], body["failed"], body["changed"]) == (1, 0, True)
    assert body["diff"] in result.content[0].text


async def test_out_of_order_line_edits_apply_bottom_up_against_the_original_numbering(sandbox):
    sandbox.put("six.txt", SIX)
    body = succeeded(
        await edit_lines(
            sandbox,
            "six.txt",
            [
                {"line_number": 2, "action": "delete"},
                {"line_number": 5, "action": "replace", "content": "five\nfive-b"},
                {"line_number": 1, "action": "insert_before", "content": "zero"},
                {"line_number": 3, "action": "insert_after", "content": "three-and-a-half"},
                {"line_number": 6, "action": "replace", "content": "six"},
            ],
        )
    )
    assert sandbox.get("six.txt") == b"zero\nl1\nl3\nthree-and-a-half\nl4\nfive\nfive-b\nsix\n"
    assert [o["line_number"] for o in body["edits"]] == [2, 5, 1, 3, 6]
    assert all(o["applied"] for o in body["edits"])


def bottom_up(lines: list[str], edits: list[tuple[int, str, str]]) -> list[str]:
    """Line edits made one by one from the bottom up, as the numbering promises: at one line,
    what goes after it first, then the line itself, then what goes before it."""
    order = {"insert_after": 0, "replace": 1, "delete": 1, "insert_before": 2}
    out = list(lines)
    ranked = sorted(enumerate(edits), key=lambda e: (e[1][0], -order[e[1][1]], e[0]), reverse=True)
    for _, (index, action, content) in ranked:
        new = content.split("\n")
        if action == "replace":
            out[index : index + 1] = new
        elif action == "delete":
            del out[index]
        elif action == "insert_before":
            out[index:index] = new
        else:
            out[index + 1 : index + 1] = new
    return out


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(1, 8),
    edits=st.lists(
        st.tuples(
            st.integers(0, 7),
            st.sampled_from(["replace", "delete", "insert_before", "insert_after"]),
            st.sampled_from(["x", "y\nz", ""]),
        ),
        max_size=10,
    ),
)
def test_many_line_edits_of_one_line_apply_in_one_pass_as_they_would_from_the_bottom_up(
    size: int, edits: list[tuple[int, str, str]]
) -> None:
    edits = [(index % size, action, content) for index, action, content in edits]
    targeted = [index for index, action, _ in edits if action in ("replace", "delete")]
    assume(len(set(targeted)) == len(targeted))  # two edits of one line's content are refused
    lines = [f"l{n}" for n in range(size)]
    plan = [
        (index, number, line_ops.LineEdit(line_number=index + 1, action=action, content=content))  # type: ignore[arg-type]
        for number, (index, action, content) in enumerate(edits)
    ]
    doc = document.TextFile(None, b"", "utf-8", False, None)  # type: ignore[arg-type]
    assert line_ops._applied(lines, plan, doc) == bottom_up(lines, edits)


async def test_relative_line_numbers_count_from_zero_at_the_offset(sandbox):
    sandbox.put("six.txt", SIX)
    body = succeeded(
        await edit_lines(
            sandbox,
            "six.txt",
            [
                {"line_number": 0, "action": "replace", "content": "four", "expected_content": "l4"},
                {"line_number": 2, "action": "delete", "expected_content": "l6"},
            ],
            offset=3,
            relative_line_numbers=True,
        )
    )
    assert sandbox.get("six.txt") == b"l1\nl2\nl3\nfour\nl5\n"
    assert [o["line_number"] for o in body["edits"]] == [4, 6]
    assert [o["verified"] for o in body["edits"]] == [True, True]


async def test_offset_without_relative_numbers_still_takes_absolute_line_numbers(sandbox):
    sandbox.put("six.txt", SIX)
    succeeded(
        await edit_lines(sandbox, "six.txt", [{"line_number": 4, "action": "replace", "content": "four"}], offset=3)
    )
    assert sandbox.get("six.txt") == b"l1\nl2\nl3\nfour\nl5\nl6\n"


@pytest.mark.parametrize(
    ("line", "relative"),
    [(2, False), (5, False), (-1, True), (2, True)],
    ids=["before-window", "after-window", "relative-negative", "relative-after-window"],
)
async def test_an_edit_outside_the_offset_limit_window_is_invalid_and_changes_nothing(sandbox, line, relative):
    sandbox.put("six.txt", SIX)
    result = await edit_lines(
        sandbox,
        "six.txt",
        [
            {"line_number": 3 if not relative else 0, "action": "replace", "content": "inside"},
            {"line_number": line, "action": "replace", "content": "outside"},
        ],
        offset=2,
        limit=2,
        relative_line_numbers=relative,
    )
    failed_with(result, "INVALID_ARGUMENT")
    assert sandbox.get("six.txt") == SIX.encode()


async def test_an_edit_inside_the_offset_limit_window_is_applied(sandbox):
    sandbox.put("six.txt", SIX)
    succeeded(
        await edit_lines(
            sandbox,
            "six.txt",
            [{"line_number": 4, "action": "replace", "content": "four"}],
            offset=2,
            limit=2,
        )
    )
    assert sandbox.get("six.txt") == b"l1\nl2\nl3\nfour\nl5\nl6\n"


@pytest.mark.parametrize("line", [0, 7], ids=["line-0", "past-the-end"])
async def test_a_line_number_outside_the_file_is_invalid_and_changes_nothing(sandbox, line):
    sandbox.put("six.txt", SIX)
    failed_with(
        await edit_lines(sandbox, "six.txt", [{"line_number": line, "action": "replace", "content": "x"}]),
        "INVALID_ARGUMENT",
    )
    assert sandbox.get("six.txt") == SIX.encode()


async def test_a_verification_failure_is_reported_per_edit_and_the_other_edits_are_applied(sandbox):
    sandbox.put("six.txt", SIX)
    result = await edit_lines(
        sandbox,
        "six.txt",
        [
            {"line_number": 1, "action": "replace", "content": "one", "expected_content": "l1"},
            {"line_number": 2, "action": "replace", "content": "two", "expected_content": "not l2"},
            {"line_number": 6, "action": "delete", "expected_content": "l6\n"},
        ],
    )
    body = succeeded(result)
    assert sandbox.get("six.txt") == b"one\nl2\nl3\nl4\nl5\n"
    first, second, third = body["edits"]
    assert (first["verified"], first["applied"]) == (True, True)
    assert (second["verified"], second["applied"]) == (False, False)
    assert second["actual_content"] == "l2"
    assert second["message"]
    assert (third["verified"], third["applied"]) == (True, True)
    assert (body["applied"], body["failed"]) == (2, 1)
    assert "line 2" in result.content[0].text


async def test_abort_on_verification_failure_is_a_conflict_and_leaves_the_file_byte_identical(sandbox):
    original = b"l1\r\nl2\r\nl3\r\n"
    sandbox.put("crlf.txt", original)
    result = await edit_lines(
        sandbox,
        "crlf.txt",
        [
            {"line_number": 1, "action": "replace", "content": "one", "expected_content": "l1"},
            {"line_number": 3, "action": "delete", "expected_content": "not l3"},
        ],
        abort_on_verification_failure=True,
    )
    message = failed_with(result, "CONFLICT")
    assert "3" in message
    assert sandbox.get("crlf.txt") == original


async def test_abort_on_verification_failure_applies_everything_when_all_lines_match(sandbox):
    sandbox.put("six.txt", SIX)
    succeeded(
        await edit_lines(
            sandbox,
            "six.txt",
            [{"line_number": 1, "action": "replace", "content": "one", "expected_content": "l1"}],
            abort_on_verification_failure=True,
        )
    )
    assert sandbox.get("six.txt") == b"one\nl2\nl3\nl4\nl5\nl6\n"


async def test_line_edit_dry_run_changes_nothing_and_returns_outcomes_and_diff(sandbox):
    sandbox.put("six.txt", SIX)
    result = await edit_lines(
        sandbox,
        "six.txt",
        [{"line_number": 3, "action": "replace", "content": "three", "expected_content": "l3"}],
        dry_run=True,
    )
    body = succeeded(result)
    assert sandbox.get("six.txt") == SIX.encode()
    assert body["dry_run"] is True
    assert body["changed"] is True
    assert body["sha256"] is None
    assert body["edits"][0]["verified"] is True
    assert "-l3\n+three\n" in body["diff"]
    assert "-l3\n+three\n" in result.content[0].text


async def test_line_edits_keep_crlf_and_a_missing_final_newline(sandbox):
    sandbox.put("crlf.txt", b"l1\r\nl2\r\nl3")
    succeeded(
        await edit_lines(
            sandbox,
            "crlf.txt",
            [
                {"line_number": 1, "action": "insert_after", "content": "a\nb", "expected_content": "l1"},
                {"line_number": 3, "action": "replace", "content": "three", "expected_content": "l3"},
            ],
        )
    )
    assert sandbox.get("crlf.txt") == b"l1\r\na\r\nb\r\nl2\r\nthree"


async def test_line_edits_keep_a_final_newline(sandbox):
    sandbox.put("six.txt", SIX)
    succeeded(await edit_lines(sandbox, "six.txt", [{"line_number": 6, "action": "replace", "content": "end"}]))
    assert sandbox.get("six.txt") == b"l1\nl2\nl3\nl4\nl5\nend\n"


async def test_line_edits_round_trip_a_latin_1_file(sandbox):
    sandbox.put("l1.txt", "première\ndeuxième\n".encode("latin-1"))
    body = succeeded(
        await edit_lines(
            sandbox,
            "l1.txt",
            [{"line_number": 2, "action": "replace", "content": "troisième", "expected_content": "deuxième"}],
            encoding="latin-1",
        )
    )
    assert body["edits"][0]["verified"] is True
    assert sandbox.get("l1.txt") == "première\ntroisième\n".encode("latin-1")


async def test_replace_without_content_is_invalid_and_changes_nothing(sandbox):
    sandbox.put("six.txt", SIX)
    failed_with(await edit_lines(sandbox, "six.txt", [{"line_number": 1, "action": "replace"}]), "INVALID_ARGUMENT")
    assert sandbox.get("six.txt") == SIX.encode()


async def test_two_edits_replacing_the_same_line_are_invalid_and_change_nothing(sandbox):
    sandbox.put("six.txt", SIX)
    result = await edit_lines(
        sandbox,
        "six.txt",
        [
            {"line_number": 2, "action": "replace", "content": "a"},
            {"line_number": 2, "action": "delete"},
        ],
    )
    failed_with(result, "INVALID_ARGUMENT")
    assert sandbox.get("six.txt") == SIX.encode()


async def test_more_line_edits_than_one_call_may_make_are_invalid_and_change_nothing(sandbox):
    text = "".join(f"line {n}\n" for n in range(line_ops.MAX_LINE_EDITS + 1))
    sandbox.put("many.txt", text.encode())
    edits = [{"line_number": n, "action": "replace", "content": "x"} for n in range(1, line_ops.MAX_LINE_EDITS + 2)]
    message = failed_with(await edit_lines(sandbox, "many.txt", edits), "INVALID_ARGUMENT")
    assert f"{line_ops.MAX_LINE_EDITS:,}" in message and "split" in message
    assert sandbox.get("many.txt") == text.encode()


async def test_line_editing_a_missing_file_is_not_found(sandbox):
    failed_with(await edit_lines(sandbox, "nope.txt", [{"line_number": 1, "action": "delete"}]), "NOT_FOUND")


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab\n", max_size=120),
    changes=st.lists(st.tuples(st.integers(0, 130), st.sampled_from(["insert", "delete", "replace"])), max_size=3),
    chunk=st.sampled_from([1, 2, 3, 7, 1 << 16]),
)
def test_the_common_prefix_and_suffix_of_two_texts_are_found_by_halving_as_by_stepping(
    text: str, changes: list[tuple[int, str]], chunk: int
) -> None:
    new = list(text)
    for at, how in changes:
        at = min(at, len(new))
        if how == "insert":
            new.insert(at, "c")
        elif at < len(new):
            new[at : at + 1] = [] if how == "delete" else ["z"]
    other = "".join(new)
    kept, unified.CHUNK = unified.CHUNK, chunk
    try:
        head = unified.same_head(text, other)
        tail = unified.same_tail(text, other, head)
    finally:
        unified.CHUNK = kept
    stepped = next((i for i, (x, y) in enumerate(zip(text, other, strict=False)) if x != y), min(len(text), len(other)))
    room = min(len(text), len(other)) - stepped
    back = next((i for i in range(room) if text[-1 - i] != other[-1 - i]), room)
    assert (head, tail) == (stepped, back)


@settings(max_examples=120, deadline=None)
@given(
    lines=st.lists(st.sampled_from(["a", "b", "ab", "a b", "  a", ""]), min_size=1, max_size=30),
    picks=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(1, 6), st.text(alphabet="abc \n", max_size=6), st.booleans()),
        min_size=1,
        max_size=3,
    ),
    big=st.booleans(),
)
def test_the_diff_of_edits_counted_from_what_they_know_is_the_diff_found_from_the_ends(
    lines: list[str], picks: list[tuple[int, int, str, bool]], big: bool
) -> None:
    # Edits that change the text where they match (exact, replace_all, whitespace-normalised,
    # whole windows) tell the diff where the unchanged start and end are and what line they
    # begin on; the diff from there must be the one found by comparing and counting it all.
    pad = "p\n" * (find.MEMMEM_CHARS // 2) if big else ""
    old = pad + "\n".join(lines) + "\n" + pad
    text, reports = old, []
    for at, width, new, everything in picks:
        # Within the lines, never the padding: a replace_all of most of a big file would make
        # the diff itself (difflib) the slow part of the test.
        middle = len(text) - 2 * len(pad)
        start = len(pad) + at % max(1, middle)
        wanted = text[start : min(start + width, len(pad) + middle)]
        if not wanted.strip():
            continue
        step = edit_ops.TextEdit(oldText=wanted, newText=new, replace_all=everything)
        try:
            text, report = edit_ops._apply_one(text, len(reports), step, edit_ops.EditOptions())
        except VfsError:
            continue  # not unique: refused, as a call would be
        reports.append(report)
    assume(reports)
    assert edit_ops._diff(old, text, reports, "f.txt") == unified.unified_diff(old, text, "f.txt")
