"""The content index of object-store mounts: grep answers exactly as a full scan does, reading less."""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import re2
from conftest import Sandbox, make_sandbox
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp import Client

from vfs_mcp import build_server, changes
from vfs_mcp.changes import log
from vfs_mcp.changes.state import ObjectState
from vfs_mcp.cli.options import parser, settings_from
from vfs_mcp.errors import VfsError
from vfs_mcp.jail.entries import Pieces
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Config, Mount, MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.files.write import delete_path, write_file
from vfs_mcp.ops.search import index
from vfs_mcp.ops.search.grep import GrepQuery, grep_files
from vfs_mcp.ops.search.trigrams import AllOf, fold, needed
from vfs_mcp.server.resources import METRICS_URI
from vfs_mcp.settings import Settings


class Requests:
    """The requests one mount's S3 client sends, as (method, path and query)."""

    def __init__(self, mount: Mount) -> None:
        self.sent: list[tuple[str, str]] = []
        fs: Any = mount.fs
        fs.connect()
        fs.s3.meta.events.register("before-send.s3", self._sent)

    def _sent(self, request: Any, **_: Any) -> None:
        self.sent.append((request.method, request.url.split("/", 3)[3]))

    def gets(self) -> list[str]:
        return [path.split("?")[0] for method, path in self.sent if method == "GET" and "list-type" not in path]

    def lists(self) -> int:
        return sum(1 for method, path in self.sent if method == "GET" and "list-type" in path)


def grep(vfs: JailedFS, pattern: str, path: str = ".", use_index: bool = True, **options: Any) -> Any:
    return grep_files(vfs, path, GrepQuery(pattern, **options), use_index=use_index)


def scan_and_indexed(vfs: JailedFS, pattern: str, path: str = ".", **options: Any) -> tuple[Any, Any]:
    return grep(vfs, pattern, path, use_index=False, **options), grep(vfs, pattern, path, **options)


# -- what a pattern needs -----------------------------------------------------------------


def satisfied(need: AllOf, text: str) -> bool:
    """Whether ``text`` (folded) holds what ``need`` asks for: the index's answer, in Python."""
    folded = fold(text)
    return all(run in folded or _grams_in(run, folded) for run in need.runs) and all(
        any(satisfied(option, text) for option in part.options) for part in need.parts
    )


def _grams_in(run: str, folded: str) -> bool:
    return all(run[i : i + 3] in folded for i in range(len(run) - 2))


@pytest.mark.parametrize(
    ("pattern", "is_regex", "runs"),
    [
        ("Needle", False, ("needle",)),
        ("ab", False, None),
        (r"foo\d+bar", True, ("foo", "bar")),
        (r"colou?r", True, ("colo",)),
        (r"colou?red", True, ("colo", "red")),
        (r"a+bcd", True, ("abcd",)),
        (r"x[yz]+wvu", True, ("wvu",)),
        (r"(?i)HELLO world", True, ("hello world",)),
        (r"\.conf\b", True, (".conf",)),
        (r"(abc)?def", True, ("def",)),
        (r"\Qa.b\E", True, None),
        (r"\x41BCD", True, None),
        (r"a{,3}bcd", True, None),
    ],
)
def test_a_pattern_needs_the_literal_runs_every_match_holds(pattern: str, is_regex: bool, runs: Any) -> None:
    need = needed(pattern, is_regex=is_regex)
    assert (need.runs if need is not None else None) == runs


def test_an_alternation_needs_one_of_its_branches_and_a_bare_branch_needs_nothing() -> None:
    need = needed("alpha|beta", is_regex=True)
    assert need is not None and [o.runs for o in need.parts[0].options] == [("alpha",), ("beta",)]
    assert needed("alpha|b.", is_regex=True) is None


def test_casefolding_gives_every_character_re2_matches_case_insensitively_the_same_form() -> None:
    cased = [
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and len({chr(c), chr(c).lower(), chr(c).upper(), chr(c).casefold()}) > 1
    ]
    options = re2.Options()
    options.case_sensitive = False
    haystack = "\n".join(cased)
    for char in cased:
        for found in re2.compile(re2.escape(char), options).finditer(haystack):
            assert found.group(0).casefold() == char.casefold(), (hex(ord(char)), hex(ord(found.group(0))))
    known = set(cased)
    uncased = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and chr(c) not in known)
    any_cased = re2.compile("[" + "".join(re2.escape(c) for c in cased) + "]", options)
    assert any_cased.search(uncased) is None  # nothing uncased matches a cased character either


WORDS = ["alpha", "Beta", "GAMMA", "delta", "straße", "STRASSE", "\u017ftop", "Kelvin", "naïve", "x_1", "a.b", "(q)"]
PIECES = [*WORDS, ".", r"\d+", r"\w*", "[a-c]", "s?", "e+", r"\.", "(?i)", "(alpha|beta)", "(ta)?", "K", " "]


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=4),
    lines=st.lists(st.lists(st.sampled_from([*WORDS, "1", " ", ".", "ß", "ẞ", "ς"]), max_size=6), max_size=5),
    case_sensitive=st.booleans(),
)
def test_a_text_with_a_match_always_holds_what_the_pattern_needs(
    pieces: list[str], lines: list[list[str]], case_sensitive: bool
) -> None:
    pattern = "".join(pieces)
    options = re2.Options()
    options.case_sensitive = case_sensitive
    try:
        regex = re2.compile(pattern, options)
    except re2.error:
        return
    text = "\n".join("".join(line) for line in lines)
    need = needed(pattern, is_regex=True)
    if need is not None and regex.search(text):
        assert satisfied(need, text), (pattern, text)


# -- grep through the index, on moto -------------------------------------------------------


@pytest.fixture
def s3(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return make_sandbox("s3", tmp_path, request)


pytestmark_s3 = pytest.mark.slow


@pytestmark_s3
def test_a_second_grep_reads_only_the_objects_that_may_match(s3: Sandbox) -> None:
    for i in range(20):
        s3.put(f"src/m{i}.py", f"def f{i}():\n    return {i}\n" + ("needle = 1\n" if i == 7 else ""))
    s3.put("blob.bin", b"\x00needle" * 10)
    vfs = s3.vfs()
    requests = Requests(s3.mount)
    first = grep(vfs, "needle")
    assert index.settle(vfs)
    assert len(requests.gets()) == 21 and requests.lists() == 1
    requests.sent.clear()
    second = grep(vfs, "needle")
    assert second == first and [m.path for m in second.matches] == [s3.path("src/m7.py")]
    assert [path.rsplit("/", 1)[1] for path in requests.gets()] == ["m7.py"]
    assert requests.lists() == 1 and len(requests.sent) == 2
    assert index.stats_of(vfs)["objects_skipped"] == 20  # type: ignore[index]


@pytestmark_s3
@pytest.mark.anyio
async def test_under_review_a_second_grep_reads_from_the_bucket_only_the_objects_that_may_match(
    s3: Sandbox, tmp_path: Path
) -> None:
    for i in range(20):
        s3.put(f"src/m{i}.py", f"def f{i}():\n    return {i}\n" + ("needle = 1\n" if i == 7 else ""))
    server = build_server([s3.mount], Settings(review=True, state=str(tmp_path / "state")))
    async with Client(server) as client:  # pending: a needle added, a file deleted, the needle's file moved
        for tool, args in (
            ("edit_file", {"path": "src/m3.py", "edits": [{"oldText": "return 3", "newText": "return 3  # needle"}]}),
            ("delete_path", {"path": "src/m5.py"}),
            ("move_file", {"source": "src/m7.py", "destination": "src/moved.py"}),
        ):
            result = await client.call_tool(tool, args)
            assert not result.is_error, (tool, result.content)
    vfs, requests = server.vfs, Requests(s3.mount)
    first = grep(vfs, "needle")
    assert index.settle(vfs)
    assert len(requests.gets()) == 18, "the store's 18 objects the view shows are read once; the edit is the layer's"
    requests.sent.clear()
    second = grep(vfs, "needle")
    assert [path.rsplit("/", 1)[1] for path in requests.gets()] == ["m7.py"], "the moved needle, read at its key"
    assert index.stats_of(vfs)["objects_skipped"] == 17  # type: ignore[index]
    assert second == first == grep(vfs, "needle", use_index=False)
    assert [m.path for m in second.matches] == [s3.path("src/m3.py"), s3.path("src/moved.py")]


@pytestmark_s3
def test_an_object_changed_behind_the_servers_back_is_read_again_by_its_etag(s3: Sandbox) -> None:
    for i in range(10):
        s3.put(f"f{i}.txt", f"line {i}\n")
    vfs = s3.vfs()
    grep(vfs, "needle")
    assert index.settle(vfs)
    s3.put("f3.txt", "now a needle\n")  # behind its back
    requests = Requests(s3.mount)
    result = grep(vfs, "needle")
    assert [m.path for m in result.matches] == [s3.path("f3.txt")]
    assert [path.rsplit("/", 1)[1] for path in requests.gets()] == ["f3.txt"]
    assert index.settle(vfs)
    requests.sent.clear()
    assert grep(vfs, "line 4").matches[0].path == s3.path("f4.txt")
    assert [path.rsplit("/", 1)[1] for path in requests.gets()] == ["f4.txt"]


@pytestmark_s3
def test_after_an_edit_through_the_server_a_grep_it_does_not_match_reads_nothing(s3: Sandbox) -> None:
    for i in range(10):
        s3.put(f"f{i}.txt", f"line {i}\n")
    vfs = s3.vfs()
    grep(vfs, "line")
    assert index.settle(vfs)
    write_file(vfs, "f3.txt", "line 3 and a needle\n")
    write_file(vfs, "new.txt", "a new file\n")
    requests = Requests(s3.mount)
    assert not grep(vfs, "nowhere").matches
    assert requests.gets() == [] and requests.lists() == 1  # the listing only: every object known
    assert [m.path for m in grep(vfs, "needle").matches] == [s3.path("f3.txt")]
    assert [path.rsplit("/", 1)[1] for path in requests.gets()] == ["f3.txt"]  # the match's lines
    assert index.settle(vfs)  # the segment of that search files the writes: another replica knows them
    other = s3.vfs()
    changes.attach(other, log.ChangeLog(changes.log_of(vfs).store))
    requests.sent.clear()
    assert not grep(other, "nowhere").matches and requests.gets() == []


class CountedPieces(Pieces):
    """An edit's new bytes as pieces, counting the times they are joined into one copy."""

    __slots__ = ("joins",)

    def __init__(self, parts: list[bytes]) -> None:
        super().__init__(parts)
        self.joins = 0

    def joined(self) -> bytes:
        self.joins += 1
        return super().joined()


def test_a_change_on_a_mount_without_an_index_never_joins_its_pieces(local_sandbox: Sandbox) -> None:
    local_sandbox.put("big.txt", b"x\n" * 10)
    vfs = local_sandbox.vfs()
    pieces = CountedPieces([b"head\n" * 1000, b"new line\n", b"tail\n" * 1000])
    # What a server with an indexed object-store mount beside this one tells of every change.
    indexes = index.Indexes(vfs)
    indexes.made([changes.Put(vfs.resolve("big.txt", write=True), pieces)], {})
    assert pieces.joins == 0  # the pieces of an edit (up to 4 MB) were joined before the mount was looked up


@pytestmark_s3
def test_a_regex_without_a_literal_trigram_reads_every_object(s3: Sandbox) -> None:
    for i in range(5):
        s3.put(f"f{i}.txt", f"v{i}\n")
    vfs = s3.vfs()
    grep(vfs, "v1")
    assert index.settle(vfs)
    requests = Requests(s3.mount)
    scan, indexed = scan_and_indexed(vfs, r"v\d", is_regex=True)
    assert indexed == scan and len(requests.gets()) == 10


@pytestmark_s3
def test_a_segment_that_fails_its_checks_is_dropped_and_the_objects_are_read_again(s3: Sandbox) -> None:
    for i in range(6):
        s3.put(f"f{i}.txt", f"text {i}\n")
    vfs = s3.vfs()
    grep(vfs, "text 2")
    assert index.settle(vfs)
    store = changes.log_of(vfs).store
    (name,) = [item.name for item in store.listing("index")]
    good = store.read(f"index/{name}")
    store.delete(f"index/{name}")
    store.write(f"index/{name}", good[:-100] + b"\x01" * 100)  # corrupt: its bytes no longer hash to its name
    fresh = s3.vfs()
    changes.attach(fresh, log.ChangeLog(store))
    requests = Requests(s3.mount)
    assert grep(fresh, "text 2") == grep(vfs, "text 2", use_index=False)
    assert len(requests.gets()) == 12  # the index was not trusted: every object read, by each search
    assert index.stats_of(fresh)["segments_dropped"] == 1  # type: ignore[index]
    assert index.settle(fresh)  # rebuilt from the objects it read: the same segment, whole again
    assert [item.name for item in store.listing("index")] == [name] and store.read(f"index/{name}") == good


@pytestmark_s3
def test_an_index_built_through_one_replica_serves_the_other(s3: Sandbox, request: pytest.FixtureRequest) -> None:
    for i in range(30):
        s3.put(f"docs/d{i}.md", f"# doc {i}\n" + ("the answer is 42\n" if i % 10 == 3 else "nothing\n"))
    endpoint = {"endpoint_url": request.getfixturevalue("s3_endpoint")}
    bucket = s3.mount.backend.root.split("/")[0]
    other = open_mount(MountSpec(s3.mount.url, options=endpoint))  # a second server: its own client
    one, two = s3.vfs(), JailedFS(Jail([other]))
    changes.attach(one, log.ChangeLog(ObjectState(f"s3://{bucket}-other/state", endpoint)))
    changes.attach(two, log.ChangeLog(ObjectState(f"s3://{bucket}-other/state", endpoint)))
    built = grep(one, "answer is")
    assert index.settle(one)
    requests = Requests(other)
    served = grep(two, "answer is")
    assert served == built and len(served.matches) == 3
    assert sorted(path.rsplit("/", 1)[1] for path in requests.gets()) == ["d13.md", "d23.md", "d3.md"]
    assert index.stats_of(two)["objects_skipped"] == 27  # type: ignore[index]


@pytestmark_s3
def test_with_the_index_off_grep_keeps_none(s3: Sandbox) -> None:
    s3.put("a.txt", "hello\n")
    vfs = s3.vfs()
    vfs.kept.put(index.INDEXES, False)
    grep(vfs, "hello")
    assert index.stats_of(vfs) is None and not changes.log_of(vfs).store.listing("index")


# -- the property: indexed == full scan ------------------------------------------------------

TEXTS = st.lists(
    st.lists(st.sampled_from([*WORDS, "1", "22", " ", ".", "ß", "ẞ", "ς", "K", "\ufffd", "\t"]), max_size=8),
    max_size=6,
).map(lambda lines: "\n".join("".join(line) for line in lines))
CONTENTS = st.one_of(
    TEXTS.map(str.encode),
    TEXTS.map(lambda t: b"\xef\xbb\xbf" + t.encode()),  # a BOM
    TEXTS.map(lambda t: t.encode() + b"\xff\xfe bad utf-8 alpha\n"),
    TEXTS.map(lambda t: b"\x00binary " + t.encode()),  # a NUL in the first 8 KiB: binary
    TEXTS.map(lambda t: b"x" * 8200 + b"\n\x00after alpha " + t.encode()),  # a NUL later: text
)
NAMES = st.sampled_from(["a.txt", "b.md", "src/c.py", "src/d.txt", "src/deep/e.txt", "f.log", ".gitignore", "g.bin"])
QUERIES = st.fixed_dictionaries(
    {
        "pattern": st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map("".join),
        "is_regex": st.booleans(),
        "case_sensitive": st.booleans(),
        "whole_word": st.booleans(),
        "before": st.integers(0, 2),
        "after": st.integers(0, 2),
        "max_results": st.integers(1, 6),
        "offset": st.integers(0, 3),
        "count_only": st.booleans(),
        "respect_gitignore": st.booleans(),
        "include": st.sampled_from([None, ["*.txt"], ["src/**"]]),
        "exclude": st.sampled_from([None, ["*.md"]]),
    }
)
WRITES = st.lists(
    st.tuples(st.sampled_from(["server", "behind", "delete"]), NAMES, CONTENTS | st.just(b"*.log\n")), max_size=4
)
_examples = itertools.count()


_ASKED = {
    "is_regex": True,
    "case_sensitive": True,
    "whole_word": False,
    "before": 1,
    "after": 0,
    "max_results": 5,
    "offset": 0,
    "count_only": False,
    "respect_gitignore": True,
    "include": None,
    "exclude": None,
}


@pytestmark_s3
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(  # an optional letter: the index must not ask for it
    tree={"a.txt": b"alpha beta\n", "b.md": b"gamma\n"},
    rounds=[([], [{**_ASKED, "pattern": "alphas?"}, {**_ASKED, "pattern": "alphas?"}])],
)
@example(  # case folded on both sides: one index for every case
    tree={"a.txt": "STRASSE \u017ftop Kelvin\n".encode(), "src/c.py": b"x\n"},
    rounds=[
        (
            [("behind", "src/c.py", "stra\u00dfe".encode())],
            [{**_ASKED, "pattern": "(?i)strasse"}, {**_ASKED, "pattern": "STOP", "case_sensitive": False}],
        )
    ],
)
@given(
    tree=st.dictionaries(NAMES, CONTENTS, min_size=1, max_size=6),
    rounds=st.lists(st.tuples(WRITES, st.lists(QUERIES, min_size=1, max_size=3)), min_size=1, max_size=3),
)
def test_the_indexed_answer_is_the_full_scans_every_time(s3: Sandbox, tree: dict[str, bytes], rounds: Any) -> None:
    folder = f"ex{next(_examples)}"
    for name, data in tree.items():
        s3.put(f"{folder}/{name}", data)
    vfs = s3.vfs()
    for writes, queries in rounds:
        for how, name, data in writes:
            rel = f"{folder}/{name}"
            if how == "behind":
                s3.put(rel, data)
            elif how == "delete":
                if s3.mount.fs.exists(f"{s3.mount.backend.root}/{rel}"):
                    delete_path(vfs, rel)
            elif not data.startswith(b"\x00") and _utf8(data):
                write_file(vfs, rel, data.decode("utf-8"), create_dirs=True)
        for query in queries:
            scan, indexed = (answer(vfs, query, folder, use_index) for use_index in (False, True))
            assert indexed == scan, query  # an error (a pattern RE2 refuses, a folder now empty) alike
            assert index.settle(vfs)


def answer(vfs: JailedFS, query: dict[str, Any], folder: str, use_index: bool) -> object:
    try:
        return grep(vfs, path=folder, use_index=use_index, **query)
    except VfsError as err:
        return type(err), str(err)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_no_index_on_the_command_line_or_in_the_config_turns_the_index_off(tmp_path: Path) -> None:
    assert settings_from(parser().parse_args([]), None).index
    assert not settings_from(parser().parse_args(["--no-index"]), None).index
    config_file = tmp_path / "vfs.toml"
    config_file.write_text("index = false\n")
    config = Config.load(config_file)
    assert not settings_from(parser().parse_args(["--config", str(config_file)]), config).index


@pytestmark_s3
@pytest.mark.anyio
async def test_metrics_show_what_the_index_spared(s3: Sandbox) -> None:
    for i in range(8):
        s3.put(f"f{i}.txt", f"row {i}\n")
    server = s3.server()
    async with Client(server) as client:  # type: ignore[arg-type]
        for _ in range(2):
            await client.call_tool("grep_files", {"path": s3.root, "pattern": "row 5"})
            assert index.settle(server.vfs)  # type: ignore[attr-defined]
        figures = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    assert figures["search_index"]["objects_skipped"] == 7 and figures["search_index"]["bytes_saved"] == 7 * 6


@pytestmark_s3
@pytest.mark.anyio
async def test_a_server_started_with_no_index_reads_every_object(s3: Sandbox) -> None:
    s3.put("a.txt", "row\n")
    server = s3.server(index=False)
    async with Client(server) as client:  # type: ignore[arg-type]
        await client.call_tool("grep_files", {"path": s3.root, "pattern": "row"})
        figures = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    assert "search_index" not in figures


# -- bounded, checked, counted ------------------------------------------------------------


def test_the_figures_lose_no_count_to_threads_counting_at_once() -> None:
    stats = index.Stats()
    threads_at_once, each = 4, 2000

    def counting() -> None:
        for _ in range(each):
            stats.count(searches=1, objects_skipped=2, bytes_saved=6)

    def every_opcode(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True  # a thread may be switched out between any two steps of a count
        return every_opcode

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [
            threading.Thread(target=lambda: (sys.settrace(every_opcode), counting())) for _ in range(threads_at_once)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(switch)
    figures = stats.as_dict()
    total = threads_at_once * each
    assert (figures["searches"], figures["objects_skipped"], figures["bytes_saved"]) == (total, 2 * total, 6 * total)


@pytestmark_s3
def test_segments_past_the_bound_are_compacted_into_the_next(s3: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "MAX_SEGMENTS", 2)
    vfs = s3.vfs()
    store = changes.log_of(vfs).store
    for round_ in range(4):  # each search reads the new objects and writes a segment of them
        s3.put(f"r{round_}.txt", f"round {round_}\n")
        scan, indexed = scan_and_indexed(vfs, "round")
        assert indexed == scan
        assert index.settle(vfs)
        assert len(store.listing("index")) <= index.MAX_SEGMENTS + 1
    requests = Requests(s3.mount)
    assert [m.path for m in grep(vfs, "round 2").matches] == [s3.path("r2.txt")]
    assert [path.rsplit("/", 1)[1] for path in requests.gets()] == ["r2.txt"]  # all indexed still


@pytestmark_s3
def test_a_segment_of_another_format_is_dropped_never_trusted(s3: Sandbox) -> None:
    for i in range(3):
        s3.put(f"f{i}.txt", f"text {i}\n")
    vfs = s3.vfs()
    grep(vfs, "text")
    assert index.settle(vfs)
    store = changes.log_of(vfs).store
    (segment,) = list(index.iter_segments(vfs))
    copy = Path(segment.path).read_bytes() if store.host_folder else store.read(f"index/{segment.name}")
    tmp_db = Path(segment.path).with_name("other.db")
    tmp_db.write_bytes(copy)
    with sqlite3.connect(tmp_db) as db:
        db.execute("UPDATE meta SET value = '0' WHERE name = 'format'")
    data = tmp_db.read_bytes()
    name = f"{segment.name.split('.')[0]}.{hashlib.sha256(data).hexdigest()[:32]}.db"
    store.delete(f"index/{segment.name}")
    store.write(f"index/{name}", data)  # its bytes hash to its name: only its format is wrong
    fresh = s3.vfs()
    changes.attach(fresh, log.ChangeLog(store))
    requests = Requests(s3.mount)
    assert grep(fresh, "text 1") == grep(fresh, "text 1", use_index=False)
    assert len(requests.gets()) == 6 and index.stats_of(fresh)["segments_dropped"] == 1  # type: ignore[index]


@pytestmark_s3
def test_indexing_holds_at_most_its_queue_and_fetches_the_rest_after(
    s3: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index, "QUEUE_BYTES", 100)
    for i in range(10):
        s3.put(f"f{i}.txt", f"{i:02d} " + "x" * 37 + "\n")  # 41 bytes each: two fit the queue
    vfs = s3.vfs()
    held = threading.Event()
    add = index.Build.add

    def waiting(build: index.Build, entry: Any, data: bytes) -> None:
        held.wait()
        add(build, entry, data)

    monkeypatch.setattr(index.Build, "add", waiting)
    grep(vfs, "nothing")
    (mount_index,) = index.indexes(vfs).mounts.values()  # type: ignore[union-attr]
    assert mount_index.queued <= index.QUEUE_BYTES
    held.set()
    assert index.settle(vfs)
    assert index.stats_of(vfs)["objects_indexed"] == 10  # type: ignore[index]
    requests = Requests(s3.mount)
    assert [m.path for m in grep(vfs, "07 x").matches] == [s3.path("f7.txt")]
    assert [path.rsplit("/", 1)[1] for path in requests.gets()] == ["f7.txt"]


@pytestmark_s3
def test_the_index_of_source_code_is_a_small_share_of_its_text(s3: Sandbox) -> None:
    package = Path(index.__file__).parents[2]
    text = 0
    for path in sorted(package.glob("**/*.py"))[:150]:  # about 1 MB of this project's own code
        data = path.read_bytes()
        s3.put(f"src/{path.relative_to(package)}", data)
        text += len(data)
    vfs = s3.vfs()
    grep(vfs, "nothing")
    assert index.settle(vfs)
    store = changes.log_of(vfs).store
    size = sum(item.size for item in store.listing("index"))
    assert size < text * 0.4, (size, text)  # docs/s3.md: a third at this size, 7 % at 15 MB
