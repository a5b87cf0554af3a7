"""Pack vfs-mcp as an MCP Bundle (``.mcpb``) for Claude Desktop's one-click install: ``./dev bundle``.

    python bundle/build.py [OUT.mcpb]     (default: dist/vfs-mcp-VERSION-PLATFORM.mcpb)

The bundle holds ``manifest.json``, ``server/main.py`` and, in ``server/lib``, vfs-mcp and every
package it needs, installed by pip for this machine's platform and Python version (some are
compiled): the manifest says so in its ``compatibility``, and lists the tools. The packing is
done by ``mcpb`` (npm ``@anthropic-ai/mcpb``), installed once into a cache folder
(``~/.cache/vfs-mcp-tests/node``, ``$VFS_MCP_TEST_CACHE`` moves it), which validates the manifest.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MCPB = ("@anthropic-ai/mcpb", "2.1.2")
PLATFORMS = {"darwin": "macos", "linux": "linux", "win32": "windows"}


class Unavailable(RuntimeError):
    """What a bundle needs (node and npm, for mcpb) cannot be had here; the message says why."""


def mcpb() -> Path:
    """The ``mcpb`` command, installed from npm into the cache on first use."""
    name, version = MCPB
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise Unavailable("packing a bundle needs mcpb, from npm: install node and npm")
    cache = Path(os.environ.get("VFS_MCP_TEST_CACHE") or Path.home() / ".cache" / "vfs-mcp-tests")
    folder = cache / "node" / "mcpb"
    binary = folder / "node_modules" / ".bin" / "mcpb"
    stamp = folder / "node_modules" / name / "package.json"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time
        if not (binary.exists() and stamp.exists() and json.loads(stamp.read_text())["version"] == version):
            # A package.json of its own: npm would otherwise install into a parent folder's project.
            (folder / "package.json").write_text(json.dumps({"name": "vfs-mcp-mcpb", "private": True}))
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--no-save", f"{name}@{version}"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not binary.exists():
                raise Unavailable(f"npm install {name}@{version} failed: {done.stderr.strip()[-500:]}")
    return binary


def version() -> str:
    """vfs-mcp's version, as pyproject.toml states it."""
    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["version"])


def manifest() -> dict[str, Any]:
    """``bundle/manifest.json`` for this build: its version, this platform and Python, the tools."""
    data: dict[str, Any] = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    data["version"] = version()
    python = sys.version_info
    data["compatibility"] = {
        "platforms": [sys.platform],
        "runtimes": {"python": f">={python.major}.{python.minor} <{python.major}.{python.minor + 1}"},
    }
    data["tools"] = tools()
    return data


def tools() -> list[dict[str, str]]:
    """The default profile's tools, each with its first sentence (what the install screen shows)."""
    import anyio

    from vfs_mcp.cli.client import list_tools
    from vfs_mcp.cli.printing import one_line
    from vfs_mcp.jail.mounts import MountSpec, open_mount
    from vfs_mcp.server.build import build_server

    server = build_server([open_mount(MountSpec("memory://vfs-mcp-bundle"))])
    return [{"name": tool.name, "description": one_line(tool)} for tool in anyio.run(list_tools, server)]


def build(out: Path) -> Path:
    """Pack the bundle into ``out``; CalledProcessError when pip or mcpb fails."""
    packer = mcpb()
    with tempfile.TemporaryDirectory(prefix="vfs-mcp-bundle-") as scratch:
        staging = Path(scratch) / "vfs-mcp"
        shutil.copytree(HERE / "server", staging / "server", ignore=shutil.ignore_patterns("__pycache__", "lib"))
        (staging / "manifest.json").write_text(json.dumps(manifest(), indent=2) + "\n", encoding="utf-8")
        # No .pyc: a fifth smaller, and the first start writes them into the installed bundle.
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-warn-script-location", "--no-compile"]
        subprocess.run(
            [*pip, "--target", str(staging / "server" / "lib"), str(REPO / "backends"), str(REPO)], check=True
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(packer), "pack", str(staging), str(out)], check=True, stdout=subprocess.DEVNULL)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev bundle", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, help="the .mcpb file to write")
    args = parser.parse_args(argv)
    out = args.out or REPO / "dist" / f"vfs-mcp-{version()}-{PLATFORMS.get(sys.platform, sys.platform)}.mcpb"
    try:
        build(out)
    except Unavailable as exc:
        print(f"./dev bundle: {exc}", file=sys.stderr)
        return 2
    print(f"{out}: install it in Claude Desktop (Settings > Extensions > Install Extension, or open the file)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
