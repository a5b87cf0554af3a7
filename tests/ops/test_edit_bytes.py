"""An exact edit of a plain UTF-8 file works on its bytes (``edit._exact_bytes``); every
answer must be the one the text path gives: the bytes written, the reports, the diff, the error.

The properties run ``edit_file`` twice on the same file, once as it is and once with the byte
path turned off, over ASCII and non-ASCII text, a BOM, CRLF and lone CR line ends, big files
(``memmem`` and the block count) and small, exact edits, ``replace_all``, several edits in a
row, and edits the byte path hands back (no match, several, whitespace-normalised ones).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from vfs_mcp.errors import VfsError
from vfs_mcp.jail import entries
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.diff import unified
from vfs_mcp.ops.edits import replace as edit_ops
from vfs_mcp.ops.edits.replace import TextEdit, edit_file
from vfs_mcp.ops.text import document, find

LINES = ["a", "b", "ab", "a b", "  a", "", "é", "😀 b", "\ta", "a\r", "b\x0c"]
NEW = st.text(alphabet="ab \n\té😀", max_size=8)


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def outcome(vfs: JailedFS, path: Path, data: bytes, edits: list[TextEdit], plain: bool) -> tuple[Any, bytes]:
    """What ``edit_file`` answers (its result, or its error's code and message) and the file's bytes after."""
    path.write_bytes(data)
    kept = document.TextFile.plain
    if not plain:
        document.TextFile.plain = property(lambda self: False)  # type: ignore[method-assign,assignment]
    try:
        answer: Any = edit_file(vfs, path.name, edits).model_dump()
    except VfsError as err:
        answer = (err.code, str(err))
    finally:
        document.TextFile.plain = kept  # type: ignore[method-assign]
    return answer, path.read_bytes()


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=25),
    picks=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(1, 7), NEW, st.booleans(), st.booleans()), min_size=1, max_size=3
    ),
    bom=st.booleans(),
    ending=st.sampled_from(["\n", "\r\n"]),
    big=st.booleans(),
    final=st.booleans(),
)
def test_an_edit_on_the_bytes_answers_as_the_edit_on_the_text(
    folder: Path,
    lines: list[str],
    picks: list[tuple[int, int, str, bool, bool]],
    bom: bool,
    ending: str,
    big: bool,
    final: bool,
) -> None:
    pad = ending.join(["p"] * (find.MEMMEM_CHARS // 2)) + ending if big else ""
    text = ("\ufeff" if bom else "") + pad + ending.join(lines) + (ending if final else "") + pad
    edits = []
    for at, width, new, everything, copied in picks:
        # Mostly a piece of the text (found once or several times), else text of its own (not
        # found exactly: the text path's other strategies or its error; only in a small file,
        # where fuzzy scoring takes no seconds).
        start = len(pad) + at % max(1, len(text) - 2 * len(pad))
        old = text[start : start + width] if copied or big else new[::-1] or "zz"
        if big and old in pad:
            continue  # a replace_all of most of a big file would make difflib the slow part
        edits.append(TextEdit(oldText=old, newText=new, replace_all=everything))
    assume(edits)
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder)))]))
    data = text.encode("utf-8")
    on_text = outcome(vfs, folder / "f.txt", data, edits, plain=False)
    assert outcome(vfs, folder / "f.txt", data, edits, plain=True) == on_text


def test_the_byte_path_is_taken_for_an_exact_edit_of_a_plain_file_and_only_then(folder: Path) -> None:
    # Without this the property above could compare the text path with itself.
    path = folder / "taken.txt"
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder)))]))
    for data, plain in [
        (b"x = 1\ny = 2\n", True),
        ("\ufeffcaf\u00e9 = 1\ny = 2\n".encode(), True),
        (b"x = 1\r\ny = 2\r\n", False),  # CRLF: the text is edited with \n line ends
        (b"x = 1\ny = \xff2\n", False),  # foreign bytes kept by surrogateescape
    ]:
        path.write_bytes(data)
        doc = document.TextFile.load(vfs, vfs.resolve(path.name), "utf-8")
        assert doc.plain is plain, data
        assert doc.text == data.decode("utf-8", "surrogateescape").replace("\r\n", "\n")
        spliced = edit_ops._exact_bytes(doc.data, [TextEdit(oldText="y = ", newText="z = ")])
        if plain:
            assert spliced is not None and spliced[0].joined() == data.replace(b"y = ", b"z = ")
    # Read as another coding, or not exactly found: the text path.
    path.write_bytes(b"x = 1\ny = 2\n")
    assert not document.TextFile.load(vfs, vfs.resolve(path.name), "latin-1").plain
    assert edit_ops._exact_bytes(b"x = 1\ny  = 2\n", [TextEdit(oldText="y = 2", newText="z")]) is None
    assert edit_ops._exact_bytes(b"y = 1\ny = 2\n", [TextEdit(oldText="y = ", newText="z")]) is None


def test_edits_that_put_back_what_they_replaced_change_nothing_and_write_nothing(folder: Path) -> None:
    # Whether the byte path changed the file is told from the bytes between its first and last
    # places only (``edit_ops._changed``): edits of the same length there, one undoing the other.
    path = folder / "undone.txt"
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder)))]))
    data = b"head\n" * find.MEMMEM_CHARS + b"x = 1\n" + b"tail\n" * 100
    path.write_bytes(data)
    written = path.stat().st_mtime_ns, path.stat().st_ino
    undone = [TextEdit(oldText="x = 1", newText="x = 2"), TextEdit(oldText="x = 2", newText="x = 1")]
    result = edit_file(vfs, path.name, undone)
    assert (result.changed, result.diff, result.sha256) == (False, "", None)
    assert path.read_bytes() == data and (path.stat().st_mtime_ns, path.stat().st_ino) == written
    changed = edit_file(vfs, path.name, [TextEdit(oldText="x = 1", newText="x = 3")])
    assert changed.changed and path.read_bytes() == data.replace(b"x = 1", b"x = 3")


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(
        st.tuples(st.sampled_from(["a", "b", "ab", "a b", "é", ""]), st.integers(1, 12)), min_size=1, max_size=8
    ),
    picks=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(1, 6), st.text(alphabet="abcé \n", max_size=6), st.booleans()),
        min_size=1,
        max_size=3,
    ),
    big=st.booleans(),
)
@example(runs=[("b", 1), ("a", 12)], picks=[(0, 3, "b\na\na", False)], big=True)
def test_the_diff_of_the_bytes_is_the_diff_of_the_texts_found_from_their_ends(
    runs: list[tuple[str, int]], picks: list[tuple[int, int, str, bool]], big: bool
) -> None:
    # Runs of equal lines make where a change starts ambiguous (a line added after the first
    # of twelve equal ones is shown after the last): the diff must still be the one found by
    # comparing the whole texts, though only the lines around the change are decoded.
    pad = "p\n" * (find.MEMMEM_CHARS // 2) if big else ""
    old = pad + "\n".join(line for line, times in runs for _ in range(times)) + "\n" + pad
    data, reports = old.encode(), []
    for at, width, new, everything in picks:
        text = data.decode()
        start = len(pad) + at % max(1, len(text) - 2 * len(pad))
        wanted = text[start : start + width]
        if pad and wanted in pad:
            continue  # a replace_all of most of a big file would make difflib the slow part
        done = edit_ops._exact_bytes(data, [TextEdit(oldText=wanted, newText=new, replace_all=everything)])
        if done is None:
            continue
        data, (report,) = done[0].joined(), done[1]
        pieces = done[0]
        reports.append(report)
    assume(reports)
    on_text = unified.unified_diff(old, data.decode(), "f.txt")
    assert unified.unified_diff_bytes(old.encode(), data, "f.txt", edit_ops._known(reports)) == on_text
    # What an edit diffs: the lines around the places, cut from the pieces (never joined whole).
    around = edit_ops._around(old.encode(), pieces, edit_ops._known(reports))
    assert unified.unified_diff_bytes(*around[:2], "f.txt", around[2]) == on_text


def modules_after_edit(folder: Path, old: str) -> list[str]:
    """The regular-expression engines a fresh interpreter holds after one ``edit_file`` of ``old``."""
    (folder / "first.txt").write_text("one alpha  beta two\ngamma\n")
    probe = (
        "import json, sys\n"
        "from vfs_mcp.jail.filesystem import JailedFS\n"
        "from vfs_mcp.jail.mounts import MountSpec, open_mount\n"
        "from vfs_mcp.jail.resolve import Jail\n"
        "from vfs_mcp.ops.edits.replace import TextEdit, edit_file\n"
        f"vfs = JailedFS(Jail([open_mount(MountSpec({str(folder)!r}))]))\n"
        f"edit_file(vfs, 'first.txt', [TextEdit(oldText={old!r}, newText='delta')], dry_run=True)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m in ('re2', 'vfs_mcp.ops.search.regex'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return list(json.loads(out.stdout.splitlines()[-1]))


def test_a_first_exact_edit_loads_no_regex_engine_and_a_whitespace_normalised_one_does(folder: Path) -> None:
    """A call right after start pays for the imports of its path only: RE2 is the token match's."""
    assert modules_after_edit(folder, "gamma") == []
    assert modules_after_edit(folder, "alpha beta") == ["re2", "vfs_mcp.ops.search.regex"]


def test_an_exact_edit_on_local_disk_writes_its_pieces_and_never_joins_the_new_bytes(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 100 MB file's join was a 100 MB copy (benchmarks/README.md): the head and tail go out
    # as views of the bytes read, the new text between them.
    path = folder / "pieces.txt"
    data = b"head\n" * 1000 + b"x = 1\n" + b"tail\n" * 1000
    path.write_bytes(data)
    vfs = JailedFS(Jail([open_mount(MountSpec(str(folder)))]))

    def joined(self: entries.Pieces) -> bytes:
        raise AssertionError("the new bytes were joined")

    monkeypatch.setattr(entries.Pieces, "joined", joined)
    result = edit_file(vfs, path.name, [TextEdit(oldText="x = 1", newText="x = 22")])
    assert path.read_bytes() == data.replace(b"x = 1", b"x = 22")
    assert result.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert result.diff.count("\n-x = 1") == 1 and result.diff.count("\n+x = 22") == 1
