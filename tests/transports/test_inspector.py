"""vfs-mcp as a TypeScript-SDK client sees it: the MCP Inspector's command line.

Claude Desktop, Claude Code, Cursor and VS Code are built on the TypeScript SDK, which
checks ``structuredContent`` against the tool's output schema, error results included; the
Inspector's CLI (``@modelcontextprotocol/inspector``, pinned below) runs the same checks and
prints the result as a client receives it. The test installs it once into a cache folder
(``$VFS_MCP_INSPECTOR_DIR``, default ``~/.cache/vfs-mcp-tests/inspector``) from the npm
registry, and skips only where node or npm is missing.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import make_sandbox, png
from emulators import unavailable

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.transports.http import http_app, serving_in_thread

pytestmark = pytest.mark.inspector

INSPECTOR = "@modelcontextprotocol/inspector"
VERSION = "2.12.0"
TOOL_IS_ERROR = 5  # the CLI's exit code for an isError result


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One installer at a time (several test runs may share the cache)."""
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _installed(folder: Path) -> bool:
    manifest = folder / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    try:
        return bool(json.loads(manifest.read_text())["version"] == VERSION)
    except (OSError, ValueError, KeyError):
        return False


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The Inspector's executable, installed on first use."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        unavailable("the MCP Inspector needs node and npm, and this machine has no " + ("npm" if node else "node"))
    folder = Path(os.environ.get("VFS_MCP_INSPECTOR_DIR") or Path.home() / ".cache" / "vfs-mcp-tests" / "inspector")
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".install.lock"):
        if not _installed(folder):
            # A package.json of its own: npm would otherwise install into a parent folder that has one.
            (folder / "package.json").write_text(json.dumps({"name": "vfs-mcp-inspector", "private": True}))
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), f"{INSPECTOR}@{VERSION}"],
                check=True,
                capture_output=True,
                timeout=600,
            )
    return folder / "node_modules" / ".bin" / "mcp-inspector"


@dataclass
class Answer:
    exit_code: int
    result: dict[str, Any]

    @property
    def text(self) -> str:
        return "\n".join(block.get("text", "") for block in self.result.get("content", []))


def inspect(
    inspector: Path, target: list[str], tool: str, arguments: dict[str, Any], env: dict[str, str] | None = None
) -> Answer:
    """``tools/call`` through the Inspector's CLI; ``target`` is a server command line or a URL."""
    command = [str(inspector), "--cli", "--method", "tools/call", "--tool-name", tool]
    for key, value in arguments.items():
        command += ["--tool-arg", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    for key, value in (env or {}).items():
        command += ["-e", f"{key}={value}"]
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    done = subprocess.run(
        [*command, "--", *target],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MCP_CATALOG_PATH": str(scratch / "vfs-mcp-inspector-catalog.json")},
    )
    assert done.stdout.strip(), f"the Inspector printed nothing (exit {done.returncode}): {done.stderr[-2000:]}"
    return Answer(done.returncode, json.loads(done.stdout))


def served(root: Path | str, *options: str) -> list[str]:
    return [sys.executable, "-m", "vfs_mcp", str(root), *options]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text('def main():\n    print("hello")\n')
    (root / "notes.txt").write_text("alpha\nbeta marker-line gamma\n")
    (root / "pic.png").write_bytes(png())
    return root


# Per profile: (tool, arguments, code) for a missing file, a listing of a file, a path outside
# the mount and an invalid regex, where the profile has such a tool.
FAILURES = {
    "default": [
        ("read_file", {"path": "nope.txt"}, "NOT_FOUND"),
        ("list_directory", {"path": "notes.txt"}, "NOT_A_DIRECTORY"),
        ("read_file", {"path": "/etc/passwd"}, "ACCESS_DENIED"),
        ("grep_files", {"path": ".", "pattern": "(", "is_regex": True}, "INVALID_ARGUMENT"),
    ],
    "official": [
        ("read_text_file", {"path": "nope.txt"}, "NOT_FOUND"),
        ("list_directory", {"path": "notes.txt"}, "NOT_A_DIRECTORY"),
        ("read_text_file", {"path": "/etc/passwd"}, "ACCESS_DENIED"),
        ("search_files", {"path": ".", "pattern": "[z-a]"}, "INVALID_ARGUMENT"),
    ],
    "fs": [
        ("fs_read_file", {"path": "nope.txt"}, "NOT_FOUND"),
        ("fs_list_files", {"root": "notes.txt"}, "NOT_A_DIRECTORY"),
        ("fs_read_file", {"path": "/etc/passwd"}, "ACCESS_DENIED"),
        ("fs_search_text", {"query": "(", "mode": "regex"}, "INVALID_ARGUMENT"),
    ],
    "ide": [
        ("file_read", {"uri": "file:///nowhere/nope.txt"}, "ACCESS_DENIED"),
        ("file_open", {"uri": "ROOT/nope.txt"}, "NOT_FOUND"),
        ("file_read", {"uri": "ROOT/src"}, "IS_A_DIRECTORY"),
    ],
}


@pytest.mark.parametrize(
    ("profile", "tool", "arguments", "code"),
    [pytest.param(p, *case, id=f"{p}-{case[0]}-{case[2]}") for p, cases in FAILURES.items() for case in cases],
)
def test_errors_reach_the_inspector_as_is_error_results_starting_with_their_code(
    inspector: Path, folder: Path, profile: str, tool: str, arguments: dict[str, Any], code: str
) -> None:
    filled = {k: v.replace("ROOT", folder.as_uri()) if isinstance(v, str) else v for k, v in arguments.items()}
    answer = inspect(inspector, served(folder, "--profile", profile), tool, filled)
    assert answer.exit_code == TOOL_IS_ERROR, answer.result
    assert answer.result["isError"] is True
    assert "structuredContent" not in answer.result
    assert answer.text.startswith(f"{code}: "), answer.text


def test_a_read_reaches_the_inspector_as_the_file_text(inspector: Path, folder: Path) -> None:
    answer = inspect(inspector, served(folder), "read_file", {"path": "src/app.py"})
    assert answer.exit_code == 0
    assert "structuredContent" not in answer.result
    assert answer.result["content"][0]["text"] == 'def main():\n    print("hello")\n'


def test_grep_and_listing_reach_the_inspector_as_lines(inspector: Path, folder: Path) -> None:
    grep = inspect(inspector, served(folder), "grep_files", {"path": ".", "pattern": "marker-line"})
    listing = inspect(inspector, served(folder), "list_directory", {"path": "."})
    assert f"{folder / 'notes.txt'}:2:6: beta marker-line gamma" in grep.text
    assert listing.text.splitlines()[:3] == ["[FILE] notes.txt (29 B)", "[FILE] pic.png (73 B)", "[DIR] src"]


def test_the_seed_profiles_structured_results_pass_the_inspectors_schema_check(inspector: Path, folder: Path) -> None:
    fs = inspect(inspector, served(folder, "--profile", "fs"), "fs_read_file", {"path": "notes.txt"})
    ide = inspect(inspector, served(folder, "--profile", "ide"), "file_read", {"uri": (folder / "notes.txt").as_uri()})
    assert fs.exit_code == 0 and fs.result["structuredContent"]["content"] == "alpha\nbeta marker-line gamma\n"
    assert ide.exit_code == 0 and ide.result["structuredContent"]["content"] == "alpha\nbeta marker-line gamma\n"


def _image(answer: Answer) -> tuple[str, bytes]:
    assert answer.exit_code == 0, answer.result
    assert "structuredContent" not in answer.result
    block = answer.result["content"][0]
    assert block["type"] == "image"
    return block["mimeType"], base64.b64decode(block["data"])


def test_a_png_on_a_local_disk_reaches_the_inspector_as_an_image(inspector: Path, folder: Path) -> None:
    assert _image(inspect(inspector, served(folder), "read_file", {"path": "pic.png"})) == ("image/png", png())


def test_a_png_in_memory_reaches_the_inspector_as_an_image(inspector: Path) -> None:
    mounts = open_mounts([MountSpec("memory://inspector-png")])
    mounts[0].fs.pipe_file(mounts[0].fs_path("shots/pic.png"), png())
    with serving_in_thread(http_app(build_server(mounts))) as url:
        answer = inspect(inspector, [url], "read_file", {"path": "memory://inspector-png/shots/pic.png"})
    assert _image(answer) == ("image/png", png())


@pytest.mark.s3
def test_a_png_in_a_bucket_reaches_the_inspector_as_an_image(
    inspector: Path, tmp_path: Path, request: pytest.FixtureRequest, s3_endpoint: str
) -> None:
    bucket = make_sandbox("s3", tmp_path, request)
    bucket.put("shots/pic.png", png())
    env = {
        "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
        "AWS_ENDPOINT_URL": s3_endpoint,
    }
    answer = inspect(inspector, served(bucket.root), "read_file", {"path": bucket.path("shots/pic.png")}, env)
    assert _image(answer) == ("image/png", png())
