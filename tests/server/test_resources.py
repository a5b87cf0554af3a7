"""Files as MCP resources through the jail, the metrics resource, and the audit log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from conftest import CANARY, Sandbox, make_sandbox
from mcp import Client
from mcp.shared.exceptions import MCPError

from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.search.grep import SCAN_WINDOW
from vfs_mcp.ops.text.names import uri_of
from vfs_mcp.server.build import build_server
from vfs_mcp.server.resources import METRICS_URI, base_uri
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


def uri(sandbox: Sandbox, rel: str) -> str:
    return f"{base_uri(sandbox.mount).rstrip('/')}/{rel}"


@pytest.mark.parametrize("mode", MODES)
async def test_every_mount_offers_its_files_as_resources_text_or_blob(sandbox: Sandbox, mode: str) -> None:
    sandbox.put("docs/readme.md", "# hello\n")
    sandbox.put("img.bin", b"\x00\x01\x02")
    async with sandbox.client(mode=mode) as client:
        templates = (await client.list_resource_templates()).resource_templates
        text = (await client.read_resource(uri(sandbox, "docs/readme.md"))).contents[0]
        blob = (await client.read_resource(uri(sandbox, "img.bin"))).contents[0]
    assert [t.uri_template for t in templates] == [f"{base_uri(sandbox.mount).rstrip('/')}/{{+path}}"]
    assert getattr(text, "text", None) == "# hello\n"
    assert getattr(blob, "blob", None) == "AAEC"


@pytest.mark.parametrize("mode", MODES)
async def test_resource_reads_go_through_the_jail(local_sandbox: Sandbox, mode: str) -> None:
    sandbox = local_sandbox
    os.symlink(sandbox.outside / "secret.txt", sandbox.mount.fs_path("link.txt"))
    attacks = [
        uri(sandbox, "../outside/secret.txt"),
        uri(sandbox, "a/%2e%2e/%2e%2e/outside/secret.txt"),
        uri(sandbox, "link.txt"),
    ]
    async with sandbox.client(mode=mode) as client:
        for attack in attacks:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(attack)
            assert CANARY.decode().strip() not in str(refused.value)
            assert str(sandbox.outside) not in str(refused.value)


@pytest.mark.parametrize("folder", ["my docs", "notes #1", "100% done"])
async def test_a_mount_whose_folder_needs_escaping_serves_each_file_at_the_uri_results_give(
    tmp_path: Path, folder: str
) -> None:
    root = tmp_path / folder
    root.mkdir()
    (root / "a b.txt").write_text("hello\n")
    mount = open_mount(MountSpec(str(root)))
    uri = uri_of(Target(mount, "a b.txt"))  # as tools write a file's URI
    async with Client(build_server([mount], Settings())) as client:
        templates = (await client.list_resource_templates()).resource_templates
        contents = (await client.read_resource(uri)).contents[0]
    assert [t.uri_template for t in templates] == [f"{base_uri(mount)}/{{+path}}"]
    assert unquote(urlsplit(base_uri(mount)).path) == str(root)
    assert getattr(contents, "text", None) == "hello\n"


async def test_a_missing_file_resource_is_not_found(sandbox: Sandbox) -> None:
    async with sandbox.client() as client:
        with pytest.raises(MCPError, match="NOT_FOUND"):
            await client.read_resource(uri(sandbox, "missing.txt"))


async def test_metrics_count_calls_errors_latency_and_bytes(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "12345")
    async with sandbox.client() as client:
        await client.call_tool("read_file", {"path": sandbox.path("a.txt")})
        await client.call_tool("read_file", {"path": sandbox.path("missing.txt")})
        await client.call_tool("write_file", {"path": sandbox.path("b.txt"), "content": "xyz"})
        metrics = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    read = metrics["tools"]["read_file"]
    assert read["calls"] == 2
    assert read["errors"] == {"NOT_FOUND": 1}
    assert read["latency_ms"]["p50"] is not None
    assert metrics["tools"]["write_file"]["calls"] == 1
    assert metrics["bytes_read"] >= 5
    assert metrics["bytes_written"] == 3


async def test_the_audit_log_has_one_line_per_call_without_contents(sandbox: Sandbox, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    async with sandbox.client(audit_log=str(log)) as client:
        await client.call_tool("write_file", {"path": sandbox.path("s.txt"), "content": "TOP SECRET CONTENT"})
        await client.call_tool("read_file", {"path": "/etc/passwd"})
        await client.call_tool("copy_file", {"source": sandbox.path("s.txt"), "destination": sandbox.path("t.txt")})
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["tool"] for line in lines] == ["write_file", "read_file", "copy_file"]
    assert lines[0]["outcome"] == "OK"
    assert lines[0]["paths"] == [f"{sandbox.mount.url}::s.txt"]
    assert lines[1]["outcome"] in ("ACCESS_DENIED", "NOT_FOUND")
    assert "/etc/passwd" not in json.dumps(lines[1])
    assert lines[2]["paths"] == [f"{sandbox.mount.url}::s.txt", f"{sandbox.mount.url}::t.txt"]
    assert all(isinstance(line["ms"], float) for line in lines)
    assert "TOP SECRET" not in log.read_text()


async def test_metrics_count_bytes_per_tool_head_file_included(sandbox: Sandbox) -> None:
    sandbox.put("a.txt", "one\ntwo\nthree\n")
    async with sandbox.client() as client:
        await client.call_tool("read_file", {"path": sandbox.path("a.txt")})
        await client.call_tool("head_file", {"path": sandbox.path("a.txt"), "lines": 1})
        await client.call_tool("write_file", {"path": sandbox.path("b.txt"), "content": "xyz"})
        metrics = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    tools = metrics["tools"]
    assert (tools["read_file"]["bytes_read"], tools["read_file"]["bytes_written"]) == (14, 0)
    assert tools["head_file"]["bytes_read"] > 0
    assert (tools["write_file"]["bytes_read"], tools["write_file"]["bytes_written"]) == (0, 3)
    assert metrics["bytes_written"] == 3


async def test_metrics_count_the_matching_work_of_a_search_and_its_largest_piece(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The Python engine hands RE2 a window of lines at a time: 200 KB searched in four pieces."""
    box = make_sandbox("memory", tmp_path, request)
    text = ("b" * 99 + "\n") * 2_000
    box.put("a.txt", text)
    async with box.client() as client:
        await client.call_tool("grep_files", {"path": box.path(""), "pattern": "x"})
        metrics = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    grep = metrics["tools"]["grep_files"]
    assert grep["match_steps"] == len(text) - 3  # the newlines between the pieces are not searched
    assert grep["largest_match"] == SCAN_WINDOW + 100 - SCAN_WINDOW % 100 - 1


async def test_metrics_count_the_bytes_of_files_fetched_by_threads(sandbox: Sandbox) -> None:
    """read_multiple_files fetches from an object store on threads of its own: still the call's bytes."""
    sandbox.put("a.txt", "one\n")
    sandbox.put("b.txt", "two two\n")
    async with sandbox.client() as client:
        await client.call_tool("read_multiple_files", {"paths": [sandbox.path("a.txt"), sandbox.path("b.txt")]})
        metrics = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    assert metrics["tools"]["read_multiple_files"]["bytes_read"] == 12


async def test_made_up_tool_names_count_as_one_entry_and_never_reach_the_audit_log(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    memory = make_sandbox("memory", tmp_path, request)
    log = tmp_path / "audit.jsonl"
    async with memory.client(audit_log=str(log)) as client:
        for n in range(200):
            with pytest.raises(MCPError):
                await client.call_tool(f"made_up_{n}_" + "x" * 5000, {"path": "p" * 5000})
        metrics = json.loads((await client.read_resource(METRICS_URI)).contents[0].text)  # type: ignore[union-attr]
    assert list(metrics["tools"]) == ["(unknown tool)"]
    assert metrics["tools"]["(unknown tool)"]["calls"] == 200
    assert len(log.read_text()) < 200 * 200
    assert "made_up" not in log.read_text()
