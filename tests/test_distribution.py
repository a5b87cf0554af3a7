"""vfs-mcp as a user installs it: the built wheels in a fresh venv and with ``uvx``, their
metadata, and the MCP registry's ``server.json``.

The registry's schema (``2025-12-11``) is published at a URL this project's machines cannot
reach and ships in no package, so ``REGISTRY`` below holds its rules for the fields
``server.json`` uses, as the registry documents them (``docs/reference/server-json`` of
modelcontextprotocol/registry): reverse-DNS name, description of at most 100 characters, one
exact version, a repository, packages with a registry type, identifier and transport.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from emulators import Unavailable, cache_dir, pip_bin, unavailable
from jsonschema import Draft7Validator
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
UV = ("uv", "0.13.8")
INSTALL_TIMEOUT = 900

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "description": {"type": "string"},
        "isRequired": {"type": "boolean"},
        "isRepeated": {"type": "boolean"},
        "isSecret": {"type": "boolean"},
        "format": {"enum": ["string", "number", "boolean", "filepath"]},
        "value": {"type": "string"},
        "default": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "string"}},
    },
}
REGISTRY: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["name", "description", "version"],
    "properties": {
        "$schema": {"const": SCHEMA_URL},
        "name": {"type": "string", "pattern": "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$", "minLength": 3, "maxLength": 200},
        "description": {"type": "string", "minLength": 1, "maxLength": 100},
        "title": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "maxLength": 255, "not": {"pattern": r"[\^~<>=*\s]|(^|\.)[xX](\.|$)|^latest$"}},
        "websiteUrl": {"type": "string", "format": "uri"},
        "repository": {
            "type": "object",
            "required": ["url", "source"],
            "properties": {"url": {"type": "string", "format": "uri"}, "source": {"type": "string"}},
        },
        "packages": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["registryType", "identifier", "transport"],
                "properties": {
                    "registryType": {"enum": ["npm", "pypi", "nuget", "oci", "mcpb"]},
                    "identifier": {"type": "string", "minLength": 1},
                    "version": {"type": "string", "minLength": 1, "not": {"const": "latest"}},
                    "runtimeHint": {"type": "string"},
                    "transport": {
                        "type": "object",
                        "required": ["type"],
                        "properties": {"type": {"enum": ["stdio", "streamable-http", "sse"]}},
                    },
                    "packageArguments": {
                        "type": "array",
                        "items": {
                            "allOf": [
                                _INPUT,
                                {
                                    "required": ["type"],
                                    "properties": {"type": {"enum": ["positional", "named"]}},
                                    "if": {"properties": {"type": {"const": "positional"}}},
                                    "then": {"anyOf": [{"required": ["valueHint"]}, {"required": ["value"]}]},
                                    "else": {"required": ["name"]},
                                },
                            ]
                        },
                    },
                },
            },
        },
    },
}
"""The 2025-12-11 ``server.json`` rules for the fields vfs-mcp's uses."""


def pyproject(folder: Path = ROOT) -> dict[str, Any]:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def test_server_json_fits_the_registry_schema_and_names_this_release() -> None:
    server = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    problems = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in Draft7Validator(REGISTRY).iter_errors(server)]
    assert not problems, problems
    project = pyproject()
    (package,) = server["packages"]
    assert (package["registryType"], package["identifier"]) == ("pypi", project["name"])
    assert server["version"] == package["version"] == project["version"]
    assert server["repository"]["url"] == project["urls"]["Repository"]
    # The registry proves the package is this server's by the mcp-name line of its PyPI description.
    assert f"<!-- mcp-name: {server['name']} -->" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_registry_rules_refuse_what_the_registry_refuses() -> None:
    good = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    bad = [
        {**good, "description": "x" * 101},
        {**good, "name": "vfs-mcp"},
        {**good, "version": "^0.1.0"},
        {**good, "packages": [{**good["packages"][0], "transport": {"type": "pipe"}}]},
        {**good, "packages": [{**good["packages"][0], "packageArguments": [{"type": "positional"}]}]},
    ]
    assert all(list(Draft7Validator(REGISTRY).iter_errors(doc)) for doc in bad)


@pytest.mark.parametrize("folder", [ROOT, ROOT / "backends"], ids=["vfs-mcp", "vfs-mcp-backends"])
def test_each_distribution_has_a_license_classifiers_urls_and_a_long_description(folder: Path) -> None:
    project = pyproject(folder)
    assert project["license"] == "MIT" and (folder / "LICENSE").read_text().startswith("MIT License")
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    assert {"Homepage", "Repository", "Issues"} <= set(project["urls"])
    readme = (folder / project["readme"]).read_text(encoding="utf-8")
    assert readme.startswith(f"# {project['name']}\n")


def test_the_server_pins_the_backends_of_its_own_release_and_offers_the_other_clouds() -> None:
    project, backends = pyproject(), pyproject(ROOT / "backends")
    pin = f"vfs-mcp-backends=={backends['version']}"
    assert pin in project["dependencies"]
    extras = project["optional-dependencies"]
    assert extras["gcs"] == [pin.replace("backends==", "backends[gcs]==")]
    assert extras["azure"] == [pin.replace("backends==", "backends[azure]==")]


# -- the built artefacts (slow: builds, installs from PyPI) -----------------------------------


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both distributions built as ``./dev dist`` builds them (wheel and sdist), checked by twine."""
    out = tmp_path_factory.mktemp("dist")
    for folder in (ROOT / "backends", ROOT):
        run([sys.executable, "-m", "build", "--outdir", str(out), str(folder)])
    run([str(Path(sys.executable).parent / "twine"), "check", "--strict", *map(str, sorted(out.iterdir()))])
    return out


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, **kwargs)
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    return done


def wheel(dist: Path) -> Path:
    (found,) = dist.glob("vfs_mcp-*.whl")
    return found


@pytest.mark.slow
def test_the_built_distributions_pass_twine_and_hold_the_server(dist: Path) -> None:
    names = sorted(path.name for path in dist.iterdir())
    assert [re.sub(r"-[\d.]+(-py3-none-any\.whl|\.tar\.gz)$", r"\1", n) for n in names] == [
        "vfs_mcp-py3-none-any.whl",
        "vfs_mcp.tar.gz",
        "vfs_mcp_backends-py3-none-any.whl",
        "vfs_mcp_backends.tar.gz",
    ]


@pytest.mark.slow
@pytest.mark.anyio
async def test_one_pip_install_of_the_built_wheels_serves_a_folder(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    # --no-compile: no .pyc for the dozens of packages' modules the server never imports (it compiles its own on start)
    run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-compile", "--find-links", str(dist), str(wheel(dist))])
    served = tmp_path / "served"
    served.mkdir()
    (served / "notes.txt").write_text("hello\n")
    vfs_mcp = str(venv / "bin" / "vfs-mcp")
    assert "usage: vfs-mcp" in run([vfs_mcp, "--help"]).stdout
    listed = run([vfs_mcp, "call", "list_allowed_directories", "--", str(served)], cwd=tmp_path)
    assert f"{served} (local)" in listed.stdout
    async with Client(StdioServerParameters(command=vfs_mcp, args=[str(served)])) as client:
        read = await client.call_tool("read_file", {"path": "notes.txt"})
    assert read.content[0].text == "hello\n"  # type: ignore[union-attr]


@pytest.mark.slow
def test_uvx_runs_the_built_wheel(dist: Path, tmp_path: Path) -> None:
    try:
        uvx = pip_bin(UV, "uvx")
    except Unavailable as exc:
        unavailable(f"uv cannot be had: {exc}")
    env = {**os.environ, "UV_CACHE_DIR": str(cache_dir() / "uv-cache")}
    command = [str(uvx), "--from", str(wheel(dist)), "--find-links", str(dist), "vfs-mcp"]
    assert "usage: vfs-mcp" in run([*command, "--help"], env=env).stdout
    listed = run([*command, "call", "list_allowed_directories", "--", str(tmp_path)], env=env, cwd=tmp_path)
    assert f"{tmp_path} (local)" in listed.stdout
