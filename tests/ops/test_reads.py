"""Reads a model can use: images and audio as blocks, and replies bounded in every view."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import Sandbox, make_sandbox, png
from mcp_types import AudioContent, CallToolResult, ImageContent, TextContent

from vfs_mcp.profiles.results import META_CUT, META_RESULT, data_of, error_of, views

pytestmark = pytest.mark.anyio


@pytest.fixture
def memory(tmp_path: Path, request: pytest.FixtureRequest) -> Sandbox:
    return make_sandbox("memory", tmp_path, request)


def wav(frames: int = 64) -> bytes:
    """A real (silent, 8 kHz mono 8-bit) WAV file."""
    data = b"\x80" * frames
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + (struct.pack("<I", len(data)) + data)
    )


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


# -- images and audio ------------------------------------------------------------------------


async def test_read_file_returns_an_image_block_on_every_backend(sandbox: Sandbox) -> None:
    sandbox.put("shots/pic.png", png())
    sandbox.put("shots/misnamed.jpg", png())  # the content decides the type
    async with sandbox.client() as client:
        image = await client.call_tool("read_file", {"path": sandbox.path("shots/pic.png")})
        misnamed = await client.call_tool("read_file", {"path": sandbox.path("shots/misnamed.jpg")})
    for result in (image, misnamed):
        assert not result.is_error, texts(result)
        assert result.structured_content is None, "a structured-first client would show that instead of the image"
        block = result.content[0]
        assert isinstance(block, ImageContent) and block.mime_type == "image/png"
        assert base64.b64decode(block.data) == png()
        assert texts(result)[0].endswith(f": image/png, {len(png())} bytes]")
    assert data_of(image)["mime_type"] == "image/png"  # type: ignore[index]


async def test_read_file_returns_an_audio_block(sandbox: Sandbox) -> None:
    sandbox.put("voice.wav", wav())
    async with sandbox.client() as client:
        result = await client.call_tool("read_file", {"path": sandbox.path("voice.wav")})
    block = result.content[0]
    assert isinstance(block, AudioContent) and block.mime_type == "audio/wav"
    assert base64.b64decode(block.data) == wav()


async def test_media_reads_obey_the_read_limit_and_base64_or_ranges_still_give_text(sandbox: Sandbox) -> None:
    sandbox.put("pic.png", png())
    sandbox.put("logo.svg", '<svg xmlns="http://www.w3.org/2000/svg"/>')  # text: no image block
    async with sandbox.client(max_read_bytes=50) as client:
        too_large = await client.call_tool("read_file", {"path": sandbox.path("pic.png")})
    async with sandbox.client() as client:
        as_base64 = await client.call_tool("read_file", {"path": sandbox.path("pic.png"), "encoding": "base64"})
        svg = await client.call_tool("read_file", {"path": sandbox.path("logo.svg")})
    assert error_of(too_large)["code"] == "TOO_LARGE"  # type: ignore[index]
    assert base64.b64decode(texts(as_base64)[0]) == png()
    assert texts(svg)[0].startswith("<svg")


async def test_the_official_profile_keeps_images_to_read_media_file(sandbox: Sandbox) -> None:
    sandbox.put("pic.png", png())
    async with sandbox.client(profiles=("official",)) as client:
        text = await client.call_tool("read_text_file", {"path": sandbox.path("pic.png")})
        media = await client.call_tool("read_media_file", {"path": sandbox.path("pic.png")})
    assert error_of(text)["code"] == "BINARY_CONTENT"  # type: ignore[index]
    assert isinstance(media.content[0], ImageContent)


# -- whole reads ---------------------------------------------------------------------------


async def test_a_whole_read_of_a_big_file_reports_the_hash_of_its_bytes(sandbox: Sandbox) -> None:
    content = "".join(f"line {n} ✓\n" for n in range(100_000))  # over a megabyte: hashed on another thread
    sandbox.put("big.txt", content)
    async with sandbox.client() as client:
        result = await client.call_tool("read_file", {"path": sandbox.path("big.txt")})
    assert texts(result)[0] == content
    assert data_of(result)["sha256"] == hashlib.sha256(content.encode()).hexdigest()  # type: ignore[index]


# -- several files in one reply ------------------------------------------------------------


async def test_read_multiple_files_bounds_the_sum_of_its_files(sandbox: Sandbox) -> None:
    for name in ("a", "b", "c"):
        sandbox.put(f"{name}.txt", name * 400)
    sandbox.put("small.txt", "s" * 100)
    paths = [sandbox.path(p) for p in ("a.txt", "b.txt", "c.txt", "small.txt")]
    async with sandbox.client(max_read_bytes=1000) as client:
        result = await client.call_tool("read_multiple_files", {"paths": paths})
    data = data_of(result)
    assert data is not None
    assert [f["ok"] for f in data["files"]] == [True, True, False, True]
    refused = data["files"][2]["error"]
    assert refused["code"] == "TOO_LARGE" and "800 bytes already" in refused["message"]
    assert "another call" in refused["message"]
    shown = texts(result)
    assert shown[2].startswith(f"{paths[2]}: TOO_LARGE: ")
    assert sum(len(t) for t in shown) < 1000 + 500  # the files admitted, and one line each for the rest


async def test_forty_copies_of_a_large_file_do_not_build_a_reply_forty_times_its_size(memory: Sandbox) -> None:
    memory.put("big.txt", "x" * 10_000)
    async with memory.client(max_read_bytes=10_000) as client:
        result = await client.call_tool("read_multiple_files", {"paths": [memory.path("big.txt")] * 40})
        official = await memory.server(profiles=("official",), max_read_bytes=10_000).call_tool(
            "read_multiple_files", {"paths": [memory.path("big.txt")] * 40}
        )
    assert sum(len(t) for t in texts(result)) < 20_000
    assert data_of(result)["succeeded"] == 1  # type: ignore[index]
    assert sum(len(t) for t in texts(official)) < 20_000  # type: ignore[arg-type]


# -- the server-wide cap -------------------------------------------------------------------


async def test_the_reply_cap_bounds_structured_content_and_keeps_it_valid(memory: Sandbox) -> None:
    memory.put("big.txt", 'line with "quotes"\n' * 2000)
    async with memory.client(profiles=("fs",), max_response_chars=1000) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("fs_read_file", {"path": "big.txt"})
    structured_first, content_first = views(result)
    assert len(json.dumps(result.structured_content, separators=(",", ":"))) <= 1000
    jsonschema.validate(result.structured_content, tools["fs_read_file"].output_schema)
    assert len(structured_first) <= 1000 and "[cut:" in content_first
    assert result.structured_content["content"].startswith("line with")  # type: ignore[index]


async def test_the_reply_cap_bounds_the_fields_in_meta_and_notes_only_what_a_model_sees(memory: Sandbox) -> None:
    for i in range(300):
        memory.put(f"many/file-{i:03}.txt", "x")
    async with memory.client(max_response_chars=2000) as client:
        result = await client.call_tool("list_directory", {"path": "many"})
    meta: dict[str, Any] = (result.meta or {})[META_RESULT]
    assert len(json.dumps(meta, separators=(",", ":"))) <= 2000
    assert 0 < len(meta["entries"]) < 300
    assert sum(len(t) for t in texts(result)[:-1]) <= 2000 and texts(result)[-1].startswith("[cut:")
    assert (result.meta or {})[META_CUT] == 2000

    for i in range(30):
        memory.put(f"some/f{i:02}", "x")
    async with memory.client(max_response_chars=2000) as client:
        whole = await client.call_tool("list_directory", {"path": "some"})
    assert (whole.meta or {})[META_CUT] == 2000  # the fields, with paths and times, were longer
    assert not any(t.startswith("[cut:") for t in texts(whole)), "the text was not cut"
    assert texts(whole)[0].count("[FILE]") == 30
