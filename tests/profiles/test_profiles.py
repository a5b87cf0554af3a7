"""Choosing profiles and tool-name styles."""

from __future__ import annotations

import re

import pytest

from vfs_mcp import build_server
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def mounts():  # type: ignore[no-untyped-def]
    return open_mounts([MountSpec("memory://p")])


@pytest.mark.parametrize("profiles", [("nope",), ()])
def test_unknown_or_missing_profiles_are_refused_at_start(profiles: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="profile"):
        build_server(mounts(), Settings(profiles=profiles))


async def test_default_tool_names_are_safe_for_every_client() -> None:
    tools = await build_server(mounts()).list_tools()
    assert tools
    assert all(SAFE_NAME.match(tool.name) for tool in tools)


async def test_naming_a_profile_twice_registers_it_once() -> None:
    tools = await build_server(mounts(), Settings(profiles=("default", "default"))).list_tools()
    names = [tool.name for tool in tools]
    assert len(names) == len(set(names))
