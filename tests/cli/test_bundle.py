"""The MCP Bundle (``./dev bundle``, Claude Desktop's one-click install): its manifest passes
``mcpb validate``, and the packed bundle, unpacked, starts the server the way its manifest
says (``python3`` on the PATH, the user's settings substituted as Claude Desktop does), with
nothing but what the bundle holds: the folders chosen are the mounts, the read-only switch
leaves out the tools that write, and hidden files stay hidden.

The bundle is packed once (pip installs vfs-mcp and its packages into it; ``mcpb`` comes from
npm, installed once into the test cache); where node and npm cannot be had, the tests skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from emulators import unavailable
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

BUNDLE = Path(__file__).resolve().parents[2] / "bundle"


def builder() -> ModuleType:
    """``bundle/build.py``, what ``./dev bundle`` runs."""
    spec = importlib.util.spec_from_file_location("bundle_build", BUNDLE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mcpb() -> Path:
    build = builder()
    try:
        return Path(build.mcpb())
    except build.Unavailable as exc:
        unavailable(exc)


@pytest.fixture(scope="module")
def unpacked(mcpb: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle ``./dev bundle`` packs, unpacked as Claude Desktop unpacks it on install."""
    scratch = tmp_path_factory.mktemp("bundle")
    packed = scratch / "vfs-mcp.mcpb"
    subprocess.run([sys.executable, str(BUNDLE / "build.py"), str(packed)], check=True, timeout=1200)
    folder = scratch / "installed"
    with zipfile.ZipFile(packed) as archive:
        archive.extractall(folder)
        for info in archive.infolist():  # zipfile drops the modes: keep ripgrep executable
            mode = info.external_attr >> 16
            if mode:
                os.chmod(folder / info.filename, mode)
    return folder


def substituted(value: str, dirname: Path, settings: Mapping[str, Any]) -> list[str]:
    """One manifest argument as Claude Desktop passes it: ``${__dirname}`` and ``${HOME}``
    replaced, ``${user_config.KEY}`` by the setting (a list of folders: one argument each)."""
    for key, setting in settings.items():
        if value == f"${{user_config.{key}}}" and isinstance(setting, list):
            return [str(item) for item in setting]
        shown = json.dumps(setting) if isinstance(setting, bool) else str(setting)
        value = value.replace(f"${{user_config.{key}}}", shown)
    return [value.replace("${__dirname}", str(dirname)).replace("${HOME}", str(Path.home()))]


def launch(folder: Path, settings: Mapping[str, Any], python_dir: Path) -> StdioServerParameters:
    """The server the bundle's manifest starts with these settings, on this platform."""
    manifest = json.loads((folder / "manifest.json").read_text())
    config = manifest["server"]["mcp_config"]
    config = {**config, **config.get("platform_overrides", {}).get(sys.platform, {})}
    defaults = {key: spec.get("default") for key, spec in manifest["user_config"].items()}
    chosen = {**defaults, **settings}
    args = [arg for value in config["args"] for arg in substituted(value, folder, chosen)]
    env = {key: substituted(value, folder, chosen)[0] for key, value in config.get("env", {}).items()}
    env |= {"PATH": f"{python_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(Path.home())}
    return StdioServerParameters(command=config["command"], args=args, env=env, cwd=str(folder.parent))


@pytest.fixture(scope="module")
def python_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``python3`` is this Python without this environment's packages: a user's."""
    base = Path(getattr(sys, "_base_executable", sys.executable))
    folder = tmp_path_factory.mktemp("python")
    for name in ("python3", "python"):
        (folder / name).symlink_to(base)
    alone = subprocess.run([str(folder / "python3"), "-c", "import vfs_mcp"], cwd=folder, capture_output=True)
    assert alone.returncode != 0, "this Python imports vfs_mcp without the bundle: the test would prove nothing"
    return folder


def test_the_shipped_manifest_passes_mcpb_validate(mcpb: Path) -> None:
    done = subprocess.run([str(mcpb), "validate", str(BUNDLE / "manifest.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_packed_manifest_passes_mcpb_validate_and_names_this_platform_and_the_tools(
    mcpb: Path, unpacked: Path
) -> None:
    done = subprocess.run([str(mcpb), "validate", str(unpacked / "manifest.json")], capture_output=True, text=True)
    manifest = json.loads((unpacked / "manifest.json").read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert manifest["compatibility"]["platforms"] == [sys.platform]
    assert {"read_file", "edit_file", "grep_files"} <= {tool["name"] for tool in manifest["tools"]}


async def test_the_unpacked_bundle_serves_the_folders_chosen_as_claude_desktop_starts_it(
    unpacked: Path, python_dir: Path, tmp_path: Path
) -> None:
    notes, code = tmp_path / "notes", tmp_path / "code"
    notes.mkdir()
    code.mkdir()
    (notes / "todo.md").write_text("- ship the bundle\n")
    (code / "app.py").write_text("print('bundled')\n")
    (code / ".env").write_text("SECRET=1\n")
    async with Client(launch(unpacked, {"folders": [notes, code]}, python_dir)) as client:
        mounts = await client.call_tool("list_allowed_directories", {})
        tools = {tool.name for tool in (await client.list_tools()).tools}
        found = await client.call_tool("grep_files", {"path": str(code), "pattern": "bundled|SECRET", "is_regex": True})
    shown = "\n".join(getattr(block, "text", "") for block in mounts.content)
    assert str(notes) in shown and str(code) in shown
    assert {"write_file", "edit_file"} <= tools
    assert f"{code / 'app.py'}:1" in found.content[0].text and "SECRET" not in found.content[0].text  # .env: hidden


async def test_the_read_only_setting_leaves_out_the_tools_that_write(
    unpacked: Path, python_dir: Path, tmp_path: Path
) -> None:
    settings = {"folders": [tmp_path], "read_only": True, "deny": ""}
    async with Client(launch(unpacked, settings, python_dir)) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        with pytest.raises(MCPError, match="not served"):
            await client.call_tool("write_file", {"path": str(tmp_path / "x.txt"), "content": "x"})
    assert "read_file" in tools and "write_file" not in tools and "edit_file" not in tools
    assert not (tmp_path / "x.txt").exists()
