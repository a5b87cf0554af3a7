"""The layers below the server know nothing of MCP: a Python program that reads through the
``vfs`` fsspec protocol, or catches our errors, never pays for loading the MCP SDK."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SDK = ("mcp.", "starlette", "sse_starlette", "uvicorn")
"""Prefixes of the modules of the MCP SDK (and of ``mcp`` itself) and the web stack it brings."""


def loaded_sdk_modules(code: str) -> list[str]:
    """The MCP SDK's (and its web stack's) modules a fresh interpreter holds after ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m == 'mcp' or m.startswith({SDK!r}))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return list(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import vfs_mcp.errors",
        "import vfs_mcp.transports.fsspec_protocol",
        "import fsspec; fsspec.get_filesystem_class('vfs')",
    ],
)
def test_the_errors_and_the_vfs_protocol_load_no_part_of_the_mcp_sdk(code: str) -> None:
    assert loaded_sdk_modules(code) == []


def test_the_probe_sees_the_sdk_when_the_server_is_loaded() -> None:
    assert "mcp.server.mcpserver" in loaded_sdk_modules("import vfs_mcp.server.build")
