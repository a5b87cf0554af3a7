"""Memory in proportion to the reply, not to the request: the calls that once grew the server
by gigabytes, through the real CLI over stdio, each leave its peak RSS under 300 MB; a request
refused for its size is refused before it is held (150 MB)."""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from processes import INITIALIZE, RawStdio, peak_rss_mb, vfs_mcp_http_process
from raw_http import HEADERS

pytestmark = pytest.mark.slow

PEAK_MB = 300
REFUSED_PEAK_MB = 150
"""A server's peak RSS after refusing a request too big to take: it was never held."""
BIG = 10 * 1024 * 1024
MiB = 1 << 20


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[RawStdio, Path]]:
    with RawStdio(tmp_path) as box:
        yield box, tmp_path


def test_reading_one_big_file_forty_times_stays_small(server: tuple[RawStdio, Path]) -> None:
    box, folder = server
    (folder / "big.txt").write_bytes(b"x" * 80 + b"\n" * (BIG // 81))
    answer = box.call("read_multiple_files", paths=["big.txt"] * 40)
    assert len(json.dumps(answer)) < 40 * BIG // 4
    assert peak_rss_mb(box.proc.pid) < PEAK_MB


def test_grep_with_wide_context_and_a_huge_result_limit_stays_small(server: tuple[RawStdio, Path]) -> None:
    box, folder = server
    (folder / "m.txt").write_text("m line\n" * 600_000)
    answer = box.call("grep_files", path=".", pattern="m", context_lines=100, max_results=100000)
    assert len(json.dumps(answer)) < 5 * 1024 * 1024
    assert peak_rss_mb(box.proc.pid) < PEAK_MB


def test_a_pinned_write_over_a_gigabyte_file_hashes_it_in_pieces(server: tuple[RawStdio, Path]) -> None:
    box, folder = server
    with open(folder / "huge.bin", "wb") as handle:
        handle.truncate(1024 * 1024 * 1024)  # sparse: a gigabyte of zeros that costs no disk
    digest = hashlib.sha256()
    with open(folder / "huge.bin", "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    answer = box.call("write_file", path="huge.bin", content="small now", expected_hash=digest.hexdigest())
    assert answer["result"]["isError"] is False, answer  # type: ignore[index]
    assert (folder / "huge.bin").read_text() == "small now"
    assert peak_rss_mb(box.proc.pid) < PEAK_MB


def test_copying_a_gigabyte_into_a_memory_mount_stops_at_its_limit(tmp_path: Path) -> None:
    with open(tmp_path / "huge.bin", "wb") as handle:
        handle.truncate(1024 * 1024 * 1024)  # sparse
    with RawStdio(tmp_path, "memory://scratch", "--memory-max-bytes", "64MiB") as box:
        answer = box.call("copy_file", source="huge.bin", destination="memory://scratch/huge.bin")
        small = box.call("write_file", path="memory://scratch/small.txt", content="fits")
        assert peak_rss_mb(box.proc.pid) < PEAK_MB
    assert answer["result"]["isError"] is True, answer  # type: ignore[index]
    assert answer["result"]["content"][0]["text"].startswith("TOO_LARGE"), answer  # type: ignore[index]
    assert small["result"]["isError"] is False, small  # type: ignore[index]


def post_blanks(port: int, token: str, size: int, chunked: bool) -> bytes:
    """POST ``size`` bytes of blanks to /mcp with the bearer token, framed by Content-Length or
    chunked, a MiB at a time (as long as the server reads); the status line of the answer."""
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{framing}\r\n\r\n"
    )
    piece = b" " * MiB
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        try:
            sock.sendall(head.encode())
            for _ in range(size // MiB):
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed the connection before the body ended
        return sock.recv(4096).split(b"\r\n", 1)[0]


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_200_mib_http_body_is_refused_with_413_before_the_server_holds_it(tmp_path: Path, chunked: bool) -> None:
    (tmp_path / "token").write_text("tok-for-tests")
    flags = ("--auth-token-file", str(tmp_path / "token"))
    with vfs_mcp_http_process(str(tmp_path), {}, *flags) as (port, pid):
        status = post_blanks(port, "tok-for-tests", 200 * MiB, chunked)
        assert status.split(b" ")[1] == b"413", status
        assert peak_rss_mb(pid) <= REFUSED_PEAK_MB
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
        answered = httpx2.post(
            f"http://127.0.0.1:{port}/mcp",
            content=body,
            headers={**HEADERS, "authorization": "Bearer tok-for-tests"},
            timeout=30,
        )
        assert answered.status_code == 200, answered.text


def add_file_request(request_id: int, lines: int, line: str, id_last: bool) -> Iterator[bytes]:
    """An apply_patch request (dry run) adding a file of ``lines`` copies of ``line``, in
    OpenAI's format, made a line of the patch at a time; its id where the Python SDK writes it
    (first) or the TypeScript SDK (last)."""
    head, tail = '{"method":"tools/call","params":', f',"jsonrpc":"2.0","id":{request_id}}}'
    if not id_last:
        head, tail = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":', "}"
    yield (head + '{"name":"apply_patch","arguments":{"dry_run":true,"patch":"').encode()
    yield json.dumps("*** Begin Patch\n*** Add File: big.txt\n")[1:-1].encode()
    escaped = json.dumps(f"+{line}\n")[1:-1].encode()
    for _ in range(lines):
        yield escaped
    yield (json.dumps("*** End Patch\n")[1:-1] + '"}}' + tail).encode()


@pytest.mark.parametrize("id_last", [False, True], ids=["id-first", "id-last"])
def test_a_400_mib_patch_over_stdio_is_refused_before_it_is_held(server: tuple[RawStdio, Path], id_last: bool) -> None:
    box, _ = server
    answer = box.stream(add_file_request(1000, 400, "x" * MiB, id_last))
    assert peak_rss_mb(box.proc.pid) <= REFUSED_PEAK_MB
    assert answer["id"] == 1000, answer
    assert answer["error"]["code"] == -32600 and "over the" in answer["error"]["message"], answer
    again = box.call("apply_patch", patch="*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n", dry_run=True)
    assert again["result"]["isError"] is False, again


def test_a_patch_over_the_write_limit_is_refused_within_150_mb(server: tuple[RawStdio, Path]) -> None:
    box, _ = server
    answer = box.stream(add_file_request(1000, 330_000, "x" * 99, False))  # 33 MB: the longest request line
    assert answer["result"]["content"][0]["text"].startswith("TOO_LARGE"), answer
    assert peak_rss_mb(box.proc.pid) <= REFUSED_PEAK_MB


@pytest.mark.parametrize("line", ["", "a line of some ordinary text"], ids=["empty-lines", "ordinary-lines"])
def test_a_16_mb_patch_costs_a_small_multiple_of_its_size(server: tuple[RawStdio, Path], line: str) -> None:
    box, _ = server
    started = peak_rss_mb(box.proc.pid)
    lines = 16_000_000 // (len(line) + 2)
    answer = box.stream(add_file_request(1000, lines, line, False))
    assert answer["result"]["isError"] is False, answer
    assert answer["result"]["_meta"]["vfs-mcp/result"]["files"][0]["added"] == lines
    # The reply holds the diff (up to the 10 MiB read limit) twice: as text and in _meta.
    assert peak_rss_mb(box.proc.pid) - started <= 8 * 16
