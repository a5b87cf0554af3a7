"""What the server declares and serves: no prompts capability (it has none, and a prompt
asked for anyway is a -32601, not an internal error); instructions whose first sentence is
about the mounts actually served (Codex shows a model only their first ~200 characters); and
why a tool of its profile is not served."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]
SHOWN = 200
"""What Codex shows a model of the instructions."""


@pytest.mark.parametrize("mode", MODES)
async def test_no_prompts_capability_and_a_prompt_asked_for_anyway_is_method_not_found(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = build_server(open_mounts([MountSpec(str(tmp_path))]))
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        capabilities = client.server_capabilities
        with pytest.raises(MCPError) as listed:
            await client.list_prompts()
        with pytest.raises(MCPError) as got:
            await client.get_prompt("test_simple_prompt")
    assert capabilities.prompts is None and capabilities.tools is not None
    assert listed.value.code == got.value.code == METHOD_NOT_FOUND
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    ("roots", "shown", "not_shown"),
    [
        (["LOCAL"], ["local folders", "absolute paths", "relative to the working directory"], ["s3://", "memory://"]),
        (["memory://scratch"], ["in-memory folders", "memory://scratch/..."], ["s3://", "absolute paths"]),
        (["LOCAL", "memory://notes"], ["local folders and in-memory folders", "memory://notes/..."], ["s3://"]),
    ],
    ids=["local", "memory", "local-and-memory"],
)
async def test_the_first_sentences_of_the_instructions_are_about_the_mounts_served(
    tmp_path: Path, roots: list[str], shown: list[str], not_shown: list[str]
) -> None:
    specs = [MountSpec(str(tmp_path) if root == "LOCAL" else root) for root in roots]
    async with Client(build_server(open_mounts(specs))) as client:
        head = (client.instructions or "")[:SHOWN]
    for words in [*shown, "list_allowed_directories"]:
        assert words in head, head
    for words in not_shown:
        assert words not in head, head


async def test_a_read_only_server_says_so_first(tmp_path: Path) -> None:
    async with Client(build_server(open_mounts([MountSpec(str(tmp_path))], read_only=True))) as client:
        assert (client.instructions or "").startswith("Read-only filesystem tools over local folders")


@pytest.mark.parametrize(
    ("read_only", "tools", "says"),
    [
        (True, (), "write_file is not served: every mount is read-only, so no tool that writes is listed"),
        (False, ("read-only",), "write_file is not served: --tools read-only leaves it out"),
        (False, (), "there is no tool named 'write_fil'; did you mean 'write_file'?"),
        (False, (), "there is no tool named 'zzz'; tools/list shows the tools this server offers"),
    ],
    ids=["read-only", "tools", "misspelt", "unknown"],
)
async def test_a_tool_not_served_is_invalid_params_saying_why(
    tmp_path: Path, read_only: bool, tools: tuple[str, ...], says: str
) -> None:
    server = build_server(open_mounts([MountSpec(str(tmp_path))], read_only=read_only), Settings(tools=tools))
    for mode in ("auto", "legacy"):
        async with Client(server, mode=mode) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool(says.split("'")[1] if says.startswith("there") else "write_file", {"path": "x"})
        assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, says)  # -32602, in both eras
    assert not (tmp_path / "x").exists()


async def test_lists_are_cacheable_for_an_hour_by_any_client_and_a_file_read_never(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    server = build_server(open_mounts([MountSpec(str(tmp_path))]), Settings(client_roots="narrow"))
    seen = []
    for _ in range(2):  # two connections: the same lists (the client's roots narrow the jail, not the lists)
        async with Client(server) as client:
            tools, templates, listed = (
                await client.list_tools(),
                await client.list_resource_templates(),
                await client.list_resources(),
            )
            read = await client.read_resource((tmp_path / "a.txt").as_uri())
        seen.append((tools.tools, templates.resource_templates, listed.resources))
        for result in (tools, templates, listed):
            assert (result.ttl_ms, result.cache_scope) == (3_600_000, "public")
        assert (read.ttl_ms, read.cache_scope) == (0, "private")
    assert seen[0] == seen[1]
