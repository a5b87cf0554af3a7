"""Recordings that notice drift: every call's recorded line names the version of each file it
read (an object's ETag, with its VersionId on a versioned bucket; elsewhere the sha256 of what
was read); a strict replay stops at the first call that read a file at another version, naming
the file and both versions; on a versioned bucket, ``pin_versions`` replays against the
versions recorded, byte for byte. No request ever chooses a version."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from vfs_mcp.cli.main import main
from vfs_mcp.testing import HarnessFS, VfsClient, connect, local_server, memory_server, replay, s3_fs

pytestmark = pytest.mark.anyio

FILES = {
    "notes.md": "alpha\nbeta\n",
    "data/b.csv": "id,name\n1,one\n2,two\n",
    "data/c.csv": "id,name\n3,three\n",
}


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def reading(client: VfsClient) -> None:
    """A session that reads, every way a file is read."""
    await client.call_tool("read_file", {"path": "notes.md"})
    await client.call_tool("read_file", {"path": "data/b.csv"})
    await client.call_tool("grep_files", {"path": ".", "pattern": "two|three", "is_regex": True})
    await client.call_tool("read_file_lines", {"path": "data/b.csv", "offset": 1, "limit": 1})
    await client.call_tool("tail_file", {"path": "data/b.csv", "lines": 1})
    await client.call_tool("head_file", {"path": "notes.md", "lines": 1})
    await client.call_tool("read_multiple_files", {"paths": ["notes.md", "data/b.csv", "data/c.csv"]})


def bucket(endpoint: str, versioned: bool = False) -> HarnessFS:
    fs = s3_fs(f"drift-{uuid.uuid4().hex[:10]}", prefix="work", endpoint_url=endpoint)
    if versioned:
        name = fs.mount.backend.root.split("/")[0]
        fs.mount.fs.call_s3("put_bucket_versioning", Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    fs.seed(FILES)
    return fs


async def recorded(fs: HarnessFS, session: Path) -> list[dict[str, Any]]:
    async with connect(fs) as client:
        await reading(client)
        client.save_calls(session)
    return [json.loads(line) for line in session.read_text().splitlines()]


async def test_a_recording_names_the_etag_of_every_object_each_call_read(s3_endpoint: str, tmp_path: Path) -> None:
    lines = await recorded(bucket(s3_endpoint), tmp_path / "session.jsonl")
    b_csv = {"path": "${root}/data/b.csv", "etag": md5(FILES["data/b.csv"])}
    assert lines[1]["reads"] == [b_csv]
    grep_read = sorted(read["path"] for read in lines[2]["reads"])
    assert grep_read == ["${root}/data/b.csv", "${root}/data/c.csv", "${root}/notes.md"]
    assert [line["reads"] for line in lines[3:5]] == [[b_csv], [b_csv]]
    assert len(lines[6]["reads"]) == 3  # read_multiple_files fetches by threads: each noted as the call's


async def test_elsewhere_a_recording_names_the_sha256_of_what_each_call_read(tmp_path: Path) -> None:
    async with memory_server(FILES) as memory, local_server(FILES, folder=tmp_path / "local") as local:
        for client in (memory, local):
            await client.call_tool("read_file", {"path": "data/b.csv"})
            await client.call_tool("list_directory", {"path": "data"})
    for client in (memory, local):
        assert client.calls[0].reads == ((client.fs.path("data/b.csv"), client.calls[0].reads[0][1]),)
        assert client.calls[0].reads[0][1].sha256 == sha(FILES["data/b.csv"])
        assert client.calls[1].reads == ()  # a listing reads no file


async def test_a_strict_replay_after_an_object_was_rewritten_names_it_and_both_etags(
    s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = bucket(s3_endpoint)
    session = tmp_path / "session.jsonl"
    await recorded(fs, session)
    fs.write("data/b.csv", "id,name\n1,one\n2,TWO\n")
    async with connect(fs) as client:
        loose = await replay(session, client, root=fs.root)
        strict = await replay(session, client, root=fs.root, strict=True)
    assert loose.same, str(loose)  # every outcome is still ok
    assert strict.difference is not None and strict.difference.index == 1
    drift = strict.difference.drift
    assert drift is not None and drift.path == "${root}/data/b.csv"
    old, new = md5(FILES["data/b.csv"]), md5("id,name\n1,one\n2,TWO\n")
    assert (drift.recorded.etag, drift.replayed.etag) == (old, new)
    shown = f"its inputs differ: it read ${{root}}/data/b.csv at ETag {old} when recorded, at ETag {new} on replay"
    assert shown in str(strict)

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    assert await anyio.to_thread.run_sync(main, ["replay", str(session), "--strict", "--", fs.root]) == 1
    assert shown in capsys.readouterr().out


async def test_pinned_versions_replay_a_session_byte_for_byte_after_its_objects_were_rewritten(
    s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = bucket(s3_endpoint, versioned=True)
    session = tmp_path / "session.jsonl"
    lines = await recorded(fs, session)
    assert all(read.get("version_id") for line in lines for read in line["reads"])
    fs.write("data/b.csv", "id,name\n1,uno\n2,dos\n3,tres\n")
    fs.write("notes.md", "gamma\n")
    async with connect(fs) as client:
        drifted = await replay(session, client, root=fs.root, strict=True)
        pinned = await replay(session, client, root=fs.root, strict=True, pin_versions=True)
    assert drifted.difference is not None and drifted.difference.index == 0
    assert pinned.same, str(pinned)
    assert fs.read_text("notes.md") == "gamma\n"  # nothing written back

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    argv = ["replay", str(session), "--strict", "--pin-versions", "--", fs.root]
    assert await anyio.to_thread.run_sync(main, argv) == 0
    assert "7 calls replayed, every outcome the same" in capsys.readouterr().out


async def test_a_pinned_replay_edits_what_is_there_now_never_an_old_version(s3_endpoint: str, tmp_path: Path) -> None:
    fs = bucket(s3_endpoint, versioned=True)
    session = tmp_path / "session.jsonl"
    async with connect(fs) as client:
        await client.call_tool("read_file", {"path": "notes.md"})
        await client.call_tool("edit_file", {"path": "notes.md", "edits": [{"oldText": "beta", "newText": "BETA"}]})
        client.save_calls(session)
    fs.write("notes.md", "alpha\nbeta\ndelta\n")
    async with connect(fs) as client:
        report = await replay(session, client, root=fs.root, strict=True, pin_versions=True)
    assert report.difference is not None and report.difference.index == 1  # the read replays as recorded
    assert report.difference.drift is not None and report.difference.drift.path == "${root}/notes.md"
    assert fs.read_text("notes.md") == "alpha\nBETA\ndelta\n"


async def test_no_request_chooses_the_version_it_reads(s3_endpoint: str, tmp_path: Path) -> None:
    fs = bucket(s3_endpoint, versioned=True)
    session = tmp_path / "session.jsonl"
    lines = await recorded(fs, session)
    old = lines[0]["reads"][0]["version_id"]
    fs.write("notes.md", "gamma\n")
    async with connect(fs) as client:
        spelt = await client.call_tool("read_file", {"path": f"notes.md?versionId={old}"})
        now = await client.call_tool("read_file", {"path": "notes.md"})
    # S3 reads the name as a key of its own (NOT_FOUND); moto's server takes the "?" as the
    # start of a query and answers the newest version. Never the version the string names.
    assert spelt.is_error or spelt.content[0].text == "gamma\n"
    assert now.content[0].text == "gamma\n"


async def test_pinning_a_recording_made_where_files_have_no_versions_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "session.jsonl"
    async with memory_server(FILES) as client:
        await reading(client)
        client.save_calls(session)
        with pytest.raises(ValueError, match="names no VersionId to pin"):
            await replay(session, client, root=client.fs.root, pin_versions=True)
    folder = tmp_path / "work"
    for rel, text in FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    argv = ["replay", str(session), "--pin-versions", "--", str(folder)]
    assert await anyio.to_thread.run_sync(main, argv) == 2
    assert "names no VersionId to pin" in capsys.readouterr().err


async def test_a_strict_replay_on_memory_names_a_changed_file_by_the_sha256_of_what_was_read(tmp_path: Path) -> None:
    session = tmp_path / "session.jsonl"
    async with memory_server(FILES) as client:
        await reading(client)
        client.save_calls(session)
    async with memory_server({**FILES, "data/c.csv": "id,name\n4,four\n"}, name="later") as client:
        report = await replay(session, client, root=client.fs.root, strict=True)
    assert report.difference is not None and report.difference.index == 2  # grep, the first to read c.csv
    drift = report.difference.drift
    assert drift is not None and drift.path == "${root}/data/c.csv"
    assert (drift.recorded.sha256, drift.replayed.sha256) == (sha(FILES["data/c.csv"]), sha("id,name\n4,four\n"))
