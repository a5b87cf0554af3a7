"""Contract tests for read_file_lines, head_file and tail_file (SPEC §4; the default profile's original, §6.10/6.11/6.20).

Paging must give back the file exactly (CRLF, a last line without newline, multi-byte
characters cut by block boundaries), deep pages must reuse the per-version line index,
and tail must read from the end: its cost does not grow with the file.
"""

from __future__ import annotations

import contextlib
import os
import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from conftest import ScopedSandbox

from vfs_mcp.ops.files import lines as line_ops
from vfs_mcp.profiles.results import data_of, error_of

pytestmark = pytest.mark.anyio


# One mount per backend for the whole module, one folder per test inside it: creating an
# S3 bucket on moto costs about a second, and building a server tens of milliseconds.
@pytest.fixture
def sandbox(scoped_sandbox: ScopedSandbox) -> ScopedSandbox:
    """A folder of its own in a mount and server shared by this module: fast on s3."""
    return scoped_sandbox


TAIL_BLOCK = 64 * 1024


def split_lines(data: bytes) -> list[bytes]:
    """Lines as the tools count them: cut after every b'\\n'; a last line may lack one."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


async def call(client: Any, tool: str, **args: Any) -> Any:
    return await client.call_tool(tool, args)


def text_and_meta(result: Any) -> tuple[str, dict[str, Any]]:
    assert not result.is_error, result.content[0].text
    text: str = result.content[0].text if result.content else ""
    meta: dict[str, Any] = data_of(result)
    return text, meta


def failed_with(result: Any, code: str) -> None:
    assert result.is_error, f"expected {code}, got success: {result.content}"
    text = result.content[0].text
    assert error_of(result), f"expected {code}, got an error without a code: {text!r}"
    assert error_of(result)["code"] == code, text
    assert result.content[0].text.startswith(f"{code}: ")


def numbered(count: int, width: int = 63) -> bytes:
    """``count`` distinct ASCII lines of ``width`` characters plus a newline."""
    return b"".join(f"{i:06d}".ljust(width, "f").encode() + b"\n" for i in range(count))


def head_straddle(char: str) -> bytes:
    """A file whose multi-byte ``char`` starts at byte 65535, so it spans offset 65536."""
    pre = numbered(TAIL_BLOCK // 64 - 1)  # 1023 lines of 64 bytes
    pad = b"p" * (TAIL_BLOCK - 1 - len(pre))
    data = pre + pad + char.encode() + b" after\n" + numbered(50)
    assert data[TAIL_BLOCK] & 0xC0 == 0x80  # offset 65536 is inside the character
    return data


def tail_straddle(char: str, final_newline: bool = True) -> bytes:
    """A file whose multi-byte ``char`` spans the point 64 KiB before its end."""
    encoded = char.encode()
    post = numbered(1000)  # 64000 bytes after the character's line
    end = b"" if final_newline else b"tail without newline"
    rest = TAIL_BLOCK + 1 - len(encoded) - 1 - len(post) - len(end)
    data = numbered(20) + b"start " + encoded + b"r" * rest + b"\n" + post + end
    boundary = len(data) - TAIL_BLOCK
    assert data[boundary] & 0xC0 == 0x80  # the block boundary is inside the character
    return data


def mixed_file() -> bytes:
    return (
        b"plain\n"
        b"crlf line\r\n"
        b"\n"
        b"\r\n" + "ünïcödé 😀 €\n".encode() + b"   \t \n" + b"another crlf\r\n" + b"last line without newline"
    )


# -- read_file_lines ---------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2, 3, 100])
async def test_paging_with_next_offset_reassembles_the_file_exactly(sandbox, limit):
    data = mixed_file()
    sandbox.put("mixed.txt", data)
    total = len(split_lines(data))
    pieces, offset, pages = [], 0, 0
    async with sandbox.client() as client:
        while True:
            text, meta = text_and_meta(
                await call(client, "read_file_lines", path=sandbox.path("mixed.txt"), offset=offset, limit=limit)
            )
            assert meta["start_line"] == offset
            assert meta["lines_returned"] == min(limit, total - offset)
            assert meta["path"] == sandbox.path("mixed.txt")
            pieces.append(text)
            pages += 1
            if not meta["has_more"]:
                assert meta["next_offset"] is None
                assert meta["total_lines"] == total
                break
            assert meta["next_offset"] == offset + meta["lines_returned"]
            offset = meta["next_offset"]
            assert pages <= total
    assert "".join(pieces).encode() == data
    assert pages == -(-total // limit)


async def test_read_without_limit_returns_every_line_from_the_offset(sandbox):
    sandbox.put("five.txt", "a\nb\nc\nd\ne\n")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "read_file_lines", path=sandbox.path("five.txt"), offset=2))
    assert text == "c\nd\ne\n"
    assert meta["start_line"] == 2
    assert meta["lines_returned"] == 3
    assert meta["total_lines"] == 5
    assert meta["has_more"] is False
    assert meta["next_offset"] is None


async def test_default_offset_is_zero_and_metadata_says_what_follows(sandbox):
    sandbox.put("five.txt", "a\nb\nc\nd\ne\n")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "read_file_lines", path=sandbox.path("five.txt"), limit=2))
    assert text == "a\nb\n"
    assert (meta["start_line"], meta["lines_returned"], meta["has_more"], meta["next_offset"]) == (0, 2, True, 2)
    assert meta["total_lines"] in (None, 5)
    assert meta["encoding"] == "utf-8"


async def test_a_page_that_ends_exactly_at_the_end_has_no_more(sandbox):
    sandbox.put("five.txt", "a\nb\nc\nd\ne")
    async with sandbox.client() as client:
        text, meta = text_and_meta(
            await call(client, "read_file_lines", path=sandbox.path("five.txt"), offset=3, limit=2)
        )
    assert text == "d\ne"
    assert (meta["lines_returned"], meta["has_more"], meta["next_offset"], meta["total_lines"]) == (2, False, None, 5)


@pytest.mark.parametrize("content", ["a\nb\nc\n", "a\nb\nc"], ids=["final-newline", "no-final-newline"])
@pytest.mark.parametrize("offset", [3, 4, 1000])
async def test_an_offset_at_or_past_the_end_returns_no_lines_and_the_total(sandbox, content, offset):
    sandbox.put("three.txt", content)
    async with sandbox.client() as client:
        text, meta = text_and_meta(
            await call(client, "read_file_lines", path=sandbox.path("three.txt"), offset=offset, limit=5)
        )
    assert text == ""
    assert meta["start_line"] == offset
    assert meta["lines_returned"] == 0
    assert meta["has_more"] is False
    assert meta["next_offset"] is None
    assert meta["total_lines"] == 3


async def test_read_file_lines_decodes_the_given_encoding(sandbox):
    sandbox.put("l1.txt", "première\ndeuxième\ntroisième\n".encode("latin-1"))
    async with sandbox.client() as client:
        text, meta = text_and_meta(
            await call(client, "read_file_lines", path=sandbox.path("l1.txt"), offset=1, limit=1, encoding="latin-1")
        )
    assert text == "deuxième\n"
    assert meta["encoding"] in ("latin-1", "iso8859-1", "latin_1")


async def test_read_file_lines_of_a_binary_file_is_binary_content(sandbox):
    sandbox.put("b.bin", b"\x00\x01\x02\nabc\n")
    async with sandbox.client() as client:
        failed_with(await call(client, "read_file_lines", path=sandbox.path("b.bin")), "BINARY_CONTENT")


async def test_read_file_lines_of_a_missing_file_is_not_found(sandbox):
    async with sandbox.client() as client:
        failed_with(await call(client, "read_file_lines", path=sandbox.path("nope.txt")), "NOT_FOUND")


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_only_newlines_end_lines_in_every_encoding(sandbox, encoding):
    """Form feeds, U+2028 and a lone CR stay inside their line, as in head, tail and wc -l."""
    text = "page one\x0cpage two\nsep\u2028still line 2\nold mac\rline 3\n"
    sandbox.put("odd.txt", text.encode(encoding))
    path = sandbox.path("odd.txt")
    async with sandbox.client() as client:
        second, meta = text_and_meta(
            await call(client, "read_file_lines", path=path, offset=1, limit=1, encoding=encoding)
        )
        assert second == "sep\u2028still line 2\n"
        _, meta = text_and_meta(await call(client, "read_file_lines", path=path, offset=1, encoding=encoding))
        assert (meta["lines_returned"], meta["total_lines"]) == (2, 3)
        last, meta = text_and_meta(await call(client, "tail_file", path=path, lines=1, encoding=encoding))
        assert last == "old mac\rline 3\n"
        first, meta = text_and_meta(await call(client, "head_file", path=path, lines=1, encoding=encoding))
        assert first == "page one\x0cpage two\n"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file_lines", {"offset": -1}),
        ("read_file_lines", {"limit": 0}),
        ("head_file", {"lines": 0}),
        ("tail_file", {"lines": -3}),
    ],
    ids=["negative-offset", "zero-limit", "head-zero-lines", "tail-negative-lines"],
)
async def test_a_bad_range_is_a_one_line_invalid_argument(sandbox, tool, args):
    sandbox.put("five.txt", "a\nb\nc\nd\ne\n")
    async with sandbox.client() as client:
        result = await call(client, tool, path=sandbox.path("five.txt"), **args)
    failed_with(result, "INVALID_ARGUMENT")
    assert "\n" not in result.content[0].text


def deep_file() -> bytes:
    """About 3 MiB of distinct lines full of 2-, 3- and 4-byte characters, so 1 MiB blocks cut them."""
    chars = "é€😀x"
    return b"".join((f"{i:06d} " + chars[i % 4] * (i % 53) + "\n").encode() for i in range(40_000)) + "fin 😀".encode()


async def test_a_second_call_deep_into_a_file_gives_the_same_answer(sandbox):
    data = deep_file()
    sandbox.put("deep.txt", data)
    expected = split_lines(data)
    path = sandbox.path("deep.txt")
    async with sandbox.client() as client:
        first = text_and_meta(await call(client, "read_file_lines", path=path, offset=35_000, limit=4))
        again = text_and_meta(await call(client, "read_file_lines", path=path, offset=35_000, limit=4))
        nearby = text_and_meta(await call(client, "read_file_lines", path=path, offset=35_002, limit=3))
        earlier = text_and_meta(await call(client, "read_file_lines", path=path, offset=12_345, limit=2))
        rest = text_and_meta(await call(client, "read_file_lines", path=path, offset=39_998))
    assert first == again
    assert first[0].encode() == b"".join(expected[35_000:35_004])
    assert first[1]["next_offset"] == 35_004
    assert nearby[0].encode() == b"".join(expected[35_002:35_005])
    assert earlier[0].encode() == b"".join(expected[12_345:12_347])
    assert rest[0].encode() == b"".join(expected[39_998:])
    assert rest[1]["total_lines"] == len(expected) == 40_001
    assert rest[1]["has_more"] is False


def put_a_new_version(box: ScopedSandbox, rel: str, data: bytes) -> None:
    """Replace a file as a version the store tells apart from the old whatever the grain of its
    clock: an object store's ETag follows the content; a local file's modification time and a
    memory file's are set a second past the old one (no waiting for the clock to move on)."""
    raw = box._raw(rel)
    old = box.mount.fs.info(raw)
    box.put(rel, data)
    if box.kind == "local":
        later = int((old["mtime"] + 1) * 1e9)
        os.utime(raw, ns=(later, later))
    elif box.kind == "memory":
        box.mount.fs.store[raw].created = old["created"] + timedelta(seconds=1)


async def test_after_the_file_changes_a_deep_read_reflects_the_new_content(sandbox):
    data = deep_file()
    sandbox.put("deep.txt", data)
    path = sandbox.path("deep.txt")
    async with sandbox.client() as client:
        before, _ = text_and_meta(await call(client, "read_file_lines", path=path, offset=30_000, limit=2))
        assert before.encode() == b"".join(split_lines(data)[30_000:30_002])
        same_size = data.replace(b"\n", b" ", 1)  # one line fewer, same size: every later line moves up
        put_a_new_version(sandbox, "deep.txt", same_size)
        after, meta = text_and_meta(await call(client, "read_file_lines", path=path, offset=30_000, limit=2))
        assert after.encode() == b"".join(split_lines(same_size)[30_000:30_002])
        smaller = b"".join(split_lines(data)[1_000:])
        sandbox.put("deep.txt", smaller)
        last, meta = text_and_meta(await call(client, "read_file_lines", path=path, offset=30_000, limit=2))
        assert last.encode() == b"".join(split_lines(smaller)[30_000:30_002])
        end, meta = text_and_meta(await call(client, "read_file_lines", path=path, offset=38_999))
        assert meta["total_lines"] == 39_001
        assert end.encode() == b"".join(split_lines(smaller)[38_999:])


async def test_deep_reads_count_right_where_lines_change_from_long_to_short_between_blocks(sandbox):
    # Long lines are counted by deleting their newlines, short ones by bytes.count: which one
    # a block gets depends on the block before it (find.LONG_LINE).
    block = line_ops.BLOCK
    long, short, longer = 2 * block // 100, block // 3, 2 * block // 200
    data = numbered(long, 99) + b"ab\n" * short + numbered(longer, 199) + b"\n" * 1000 + b"end"
    sandbox.put("changing.txt", data)
    expected = split_lines(data)
    # Deepest first: the first call counts every block from the top, the others start at its checkpoints.
    offsets = [len(expected) - 1, len(expected) - 1002, long + short + 3, long + short - 2, long + 5, long - 1]
    async with sandbox.client() as client:
        for offset in offsets:
            text, meta = text_and_meta(
                await call(client, "read_file_lines", path=sandbox.path("changing.txt"), offset=offset, limit=4)
            )
            assert text.encode() == b"".join(expected[offset : offset + 4]), offset
            assert meta["start_line"] == offset


@pytest.mark.parametrize("char", ["€", "😀"], ids=["3-byte", "4-byte"])
async def test_read_file_lines_pages_across_a_multi_byte_character_at_64_kib(sandbox, char):
    data = head_straddle(char)
    sandbox.put("wide.txt", data)
    expected = split_lines(data)
    async with sandbox.client() as client:
        text, _ = text_and_meta(
            await call(client, "read_file_lines", path=sandbox.path("wide.txt"), offset=1022, limit=3)
        )
    assert text.encode() == b"".join(expected[1022:1025])
    assert char in text


# -- head_file ---------------------------------------------------------------------------


async def test_head_returns_the_first_ten_lines_by_default(sandbox):
    data = numbered(15, width=5)
    sandbox.put("n.txt", data)
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "head_file", path=sandbox.path("n.txt")))
    assert text.encode() == b"".join(split_lines(data)[:10])
    assert (meta["start_line"], meta["lines_returned"], meta["has_more"], meta["next_offset"]) == (0, 10, True, 10)


async def test_head_returns_the_number_of_lines_asked_for(sandbox):
    sandbox.put("n.txt", numbered(15, width=5))
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "head_file", path=sandbox.path("n.txt"), lines=3))
    assert text == "000000\n000001\n000002\n"
    assert meta["lines_returned"] == 3


@pytest.mark.parametrize("char", ["€", "😀"], ids=["3-byte", "4-byte"])
async def test_head_keeps_a_multi_byte_character_that_spans_offset_65536(sandbox, char):
    data = head_straddle(char)
    sandbox.put("wide.txt", data)
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "head_file", path=sandbox.path("wide.txt"), lines=1030))
    assert text.encode() == b"".join(split_lines(data)[:1030])
    assert meta["lines_returned"] == 1030


async def test_head_of_more_lines_than_the_file_has_returns_it_all(sandbox):
    sandbox.put("three.txt", "a\nb\nc")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "head_file", path=sandbox.path("three.txt"), lines=50))
    assert text == "a\nb\nc"
    assert (meta["lines_returned"], meta["has_more"], meta["total_lines"], meta["next_offset"]) == (3, False, 3, None)


async def test_head_keeps_crlf_line_endings(sandbox):
    sandbox.put("w.txt", b"a\r\nb\r\nc\r\n")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "head_file", path=sandbox.path("w.txt"), lines=2))
    assert text == "a\r\nb\r\n"
    assert meta["lines_returned"] == 2


async def test_head_of_an_empty_file_is_empty(sandbox):
    sandbox.put("empty.txt", b"")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "head_file", path=sandbox.path("empty.txt")))
    assert text == ""
    assert (meta["lines_returned"], meta["has_more"]) == (0, False)
    assert meta["total_lines"] in (0, None)


async def test_head_of_a_binary_file_is_binary_content(sandbox):
    sandbox.put("b.bin", bytes(range(256)) * 4)
    async with sandbox.client() as client:
        failed_with(await call(client, "head_file", path=sandbox.path("b.bin")), "BINARY_CONTENT")


async def test_head_decodes_the_given_encoding(sandbox):
    sandbox.put("l1.txt", "première\ndeuxième\n".encode("latin-1"))
    async with sandbox.client() as client:
        text, _ = text_and_meta(
            await call(client, "head_file", path=sandbox.path("l1.txt"), lines=1, encoding="latin-1")
        )
    assert text == "première\n"


# -- tail_file ---------------------------------------------------------------------------


async def test_tail_returns_the_last_ten_lines_by_default(sandbox):
    data = numbered(15, width=5)
    sandbox.put("n.txt", data)
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("n.txt")))
    assert text.encode() == b"".join(split_lines(data)[5:])
    assert meta["lines_returned"] == 10
    assert meta["has_more"] is True  # earlier lines precede
    assert meta["start_line"] in (None, 5)


async def test_tail_returns_the_number_of_lines_asked_for(sandbox):
    sandbox.put("n.txt", numbered(15, width=5))
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("n.txt"), lines=2))
    assert text == "000013\n000014\n"
    assert meta["lines_returned"] == 2


@pytest.mark.parametrize("final_newline", [True, False], ids=["final-newline", "no-final-newline"])
@pytest.mark.parametrize("char", ["€", "😀"], ids=["3-byte", "4-byte"])
async def test_tail_keeps_a_multi_byte_character_that_spans_its_64_kib_block_boundary(sandbox, char, final_newline):
    data = tail_straddle(char, final_newline)
    sandbox.put("wide.txt", data)
    expected = split_lines(data)
    async with sandbox.client() as client:
        for count in (1000 + (0 if final_newline else 1), 1001 + (0 if final_newline else 1), 1005):
            text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("wide.txt"), lines=count))
            assert text.encode() == b"".join(expected[-count:]), count
            assert meta["lines_returned"] == count
            assert meta["has_more"] is True
            assert meta["start_line"] in (None, len(expected) - count)
    assert char in text


async def test_tail_of_a_file_without_final_newline_ends_with_its_last_line(sandbox):
    sandbox.put("t.txt", "a\nb\nc")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("t.txt"), lines=2))
    assert text == "b\nc"
    assert meta["lines_returned"] == 2


async def test_tail_keeps_crlf_line_endings(sandbox):
    sandbox.put("w.txt", b"a\r\nb\r\nc\r\n")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("w.txt"), lines=2))
    assert text == "b\r\nc\r\n"
    assert meta["lines_returned"] == 2


async def test_tail_counts_blank_lines_at_the_end_as_lines(sandbox):
    sandbox.put("blank.txt", "a\n\n\n")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("blank.txt"), lines=2))
    assert text == "\n\n"
    assert meta["lines_returned"] == 2


async def test_tail_of_an_empty_file_is_empty(sandbox):
    sandbox.put("empty.txt", b"")
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("empty.txt")))
    assert text == ""
    assert (meta["lines_returned"], meta["has_more"]) == (0, False)


async def test_tail_of_a_binary_file_is_binary_content(sandbox):
    sandbox.put("b.bin", b"text first\n" + bytes(range(256)) * 4)
    async with sandbox.client() as client:
        failed_with(await call(client, "tail_file", path=sandbox.path("b.bin"), lines=1), "BINARY_CONTENT")


@pytest.mark.parametrize("content", ["a\nb\nc\n", "a\nb\nc"], ids=["final-newline", "no-final-newline"])
async def test_tail_of_more_lines_than_the_file_has_returns_it_all(sandbox, content):
    sandbox.put("three.txt", content)
    async with sandbox.client() as client:
        text, meta = text_and_meta(await call(client, "tail_file", path=sandbox.path("three.txt"), lines=50))
    assert text == content
    assert (meta["lines_returned"], meta["has_more"], meta["start_line"], meta["total_lines"]) == (3, False, 0, 3)


async def test_tail_decodes_the_given_encoding(sandbox):
    sandbox.put("l1.txt", "première\ndeuxième\n".encode("latin-1"))
    async with sandbox.client() as client:
        text, _ = text_and_meta(
            await call(client, "tail_file", path=sandbox.path("l1.txt"), lines=1, encoding="latin-1")
        )
    assert text == "deuxième\n"


async def test_tail_of_a_missing_file_is_not_found(sandbox):
    async with sandbox.client() as client:
        failed_with(await call(client, "tail_file", path=sandbox.path("nope.txt")), "NOT_FOUND")


# -- bounded reads on a large local file -------------------------------------------------

FILL = b"x" * 99 + b"\n"
HALF = 250_000
BIG_TOTAL = 2 * HALF + 3
BIG_END = b"end-1\nend-2\nend-3"
BIG_SIZE = len(FILL) * (2 * HALF - 1) + len(b"MARK\n") + len(BIG_END)


@pytest.fixture
def big_file(local_sandbox):
    """~50 MB: 250k filler lines, a marker, 250k-1 filler lines, three distinct last lines."""
    local_sandbox.put("big.log", FILL * HALF + b"MARK\n" + FILL * (HALF - 1) + BIG_END)
    return local_sandbox


class CountingReader:
    def __init__(self, handle: Any, counter: list[int]) -> None:
        self._handle, self._counter = handle, counter

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._handle.read(size)
        self._counter.append(len(data))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


@contextlib.contextmanager
def measured() -> Iterator[dict[str, float]]:
    stats: dict[str, float] = {}
    tracemalloc.start()
    try:
        yield stats
    finally:
        stats["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def count_reads(vfs: Any) -> list[int]:
    counter: list[int] = []
    real = vfs.open_read

    @contextlib.contextmanager
    def open_read(target: Any) -> Iterator[Any]:
        with real(target) as handle:
            yield CountingReader(handle, counter)

    vfs.open_read = open_read
    return counter


async def test_tail_of_a_50_mb_local_file_reads_only_its_end(big_file):
    vfs = big_file.vfs()
    fetched: list[int] = []
    real_cat = vfs.cat

    def cat(target: Any, start: int | None = None, end: int | None = None) -> bytes:
        data: bytes = real_cat(target, start=start, end=end)
        fetched.append(len(data))
        return data

    vfs.cat = cat
    with measured() as stats:
        text, meta = line_ops.tail_file(vfs, big_file.path("big.log"), 3)
    assert sum(fetched) <= 2 * TAIL_BLOCK, fetched
    assert text == "end-1\nend-2\nend-3"
    assert meta.lines_returned == 3
    assert meta.has_more is True
    assert stats["peak"] < 2 * 1024 * 1024, stats
    async with big_file.client() as client:
        text, _ = text_and_meta(await call(client, "tail_file", path=big_file.path("big.log"), lines=4))
    assert text.encode() == FILL + b"end-1\nend-2\nend-3"


async def test_read_file_lines_deep_in_a_50_mb_local_file_is_bounded_and_reuses_its_index(big_file):
    vfs = big_file.vfs()
    reads = count_reads(vfs)
    path = big_file.path("big.log")
    with measured() as stats:
        text, meta = line_ops.read_file_lines(vfs, path, HALF, 2)
    assert text.encode() == b"MARK\n" + FILL
    assert (meta.start_line, meta.lines_returned, meta.has_more, meta.next_offset) == (HALF, 2, True, HALF + 2)
    assert stats["peak"] < 8 * 1024 * 1024, stats
    first_pass = sum(reads)
    assert first_pass >= 25_000_000

    reads.clear()
    again, _ = line_ops.read_file_lines(vfs, path, HALF + 1, 1)
    assert again.encode() == FILL
    assert sum(reads) <= 2 * line_ops.BLOCK, "the second deep read rescanned the file"

    reads.clear()
    with measured() as stats:
        end, meta = line_ops.read_file_lines(vfs, path, 2 * HALF, 10)
    assert end == "end-1\nend-2\nend-3"
    assert (meta.lines_returned, meta.has_more, meta.next_offset, meta.total_lines) == (3, False, None, BIG_TOTAL)
    assert sum(reads) <= BIG_SIZE - HALF * len(FILL) + line_ops.BLOCK, "paging on started again from the top"
    assert stats["peak"] < 8 * 1024 * 1024, stats

    async with big_file.client() as client:
        text, meta = text_and_meta(await call(client, "read_file_lines", path=path, offset=HALF - 1, limit=3))
    assert text.encode() == FILL + b"MARK\n" + FILL


async def test_a_page_of_lines_at_a_known_line_reads_a_page_not_a_block(big_file):
    # Paging on from where the last page ended: the index knows where its first line starts,
    # and the few lines asked for are read from there (a MiB read and counted was 0.4 ms a page).
    vfs = big_file.vfs()
    path = big_file.path("big.log")
    line_ops.read_file_lines(vfs, path, HALF, 2)
    reads = count_reads(vfs)

    text, meta = line_ops.read_file_lines(vfs, path, HALF, 2)

    assert text.encode() == b"MARK\n" + FILL
    assert meta.next_offset == HALF + 2
    assert sum(reads) <= line_ops.FIRST_TAKE < line_ops.BLOCK
