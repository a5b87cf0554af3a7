"""Deny patterns make files invisible to every tool that reads, lists or searches (and refuse writes)."""

from __future__ import annotations

import pytest
from conftest import Sandbox
from mcp.shared.exceptions import MCPError

from vfs_mcp.resources import base_uri
from vfs_mcp.tooling import data_of, error_of

pytestmark = pytest.mark.anyio
DENY = (".env", "*.pem")
SECRET = "TOPSECRET-VALUE"


def seed(sandbox: Sandbox) -> None:
    sandbox.put("app/.env", f"KEY={SECRET}\n")
    sandbox.put("app/cert.pem", SECRET)
    sandbox.put("app/main.py", "print('hello')\n")
    sandbox.put("app/copy.py", "print('hello')\n")


READS = [
    ("read_file", {"path": "app/.env"}),
    ("read_file_lines", {"path": "app/.env"}),
    ("head_file", {"path": "app/cert.pem"}),
    ("tail_file", {"path": "app/cert.pem"}),
    ("get_file_info", {"path": "app/.env"}),
    ("compare_files", {"file1": "app/.env", "file2": "app/main.py"}),
    ("copy_file", {"source": "app/.env", "destination": "app/leak.txt"}),
    ("move_file", {"source": "app/cert.pem", "destination": "app/leak.pem.txt"}),
    ("edit_file", {"path": "app/.env", "edits": [{"oldText": "KEY", "newText": "X"}]}),
    ("write_file", {"path": "app/new.pem", "content": "x"}),
    ("delete_path", {"path": "app/.env"}),
]


async def test_denied_files_cannot_be_read_changed_or_named(sandbox: Sandbox) -> None:
    seed(sandbox)
    async with sandbox.client(deny=DENY) as client:
        for tool, args in READS:
            args = {k: sandbox.path(v) if isinstance(v, str) and k != "content" else v for k, v in args.items()}
            result = await client.call_tool(tool, args)
            assert result.is_error, tool
            assert error_of(result)["code"] == "NOT_FOUND", tool
            assert SECRET not in str(result.content), tool
        multi = await client.call_tool(
            "read_multiple_files", {"paths": [sandbox.path("app/.env"), sandbox.path("app/main.py")]}
        )
        with pytest.raises(MCPError):
            await client.read_resource(f"{base_uri(sandbox.mount).rstrip('/')}/app/.env")
    codes = [f["error"]["code"] if f["error"] else "OK" for f in data_of(multi)["files"]]
    assert codes == ["NOT_FOUND", "OK"]
    assert SECRET not in str(multi.content)
    assert sandbox.get("app/.env") == f"KEY={SECRET}\n".encode()
    assert sandbox.exists("app/cert.pem")
    assert not sandbox.exists("app/new.pem")


LISTINGS = [
    ("list_directory", {"path": "app", "include_hidden": True}),
    ("directory_tree", {"path": "."}),
    ("search_files", {"path": ".", "pattern": "*"}),
    ("grep_files", {"path": ".", "pattern": "TOPSECRET"}),
    ("grep_files", {"path": ".", "pattern": "KEY", "count_only": True}),
    ("find_large_files", {"path": ".", "min_size_mb": 0}),
    ("find_duplicate_files", {"path": "."}),
    ("calculate_directory_size", {"path": ".", "format": "json"}),
]


async def test_denied_files_are_absent_from_every_listing_and_search(sandbox: Sandbox) -> None:
    seed(sandbox)
    async with sandbox.client(deny=DENY) as client:
        for tool, args in LISTINGS:
            args = {k: sandbox.path(v) if k == "path" else v for k, v in args.items()}
            result = await client.call_tool(tool, args)
            assert not result.is_error, (tool, result.content)
            shown = str(result.content) + str(data_of(result))
            for name in (".env", "cert.pem", SECRET):
                assert name not in shown, (tool, name)
        size = await client.call_tool("calculate_directory_size", {"path": sandbox.path("."), "format": "json"})
    assert data_of(size)["files"] == 2  # main.py and copy.py only
