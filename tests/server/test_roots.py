"""Client roots: they narrow the operator's mounts, or become the mounts when none were given.

Through 2025-11-25 the server asks with ``roots/list`` mid-call and asks again after
``notifications/roots/list_changed``; on 2026-07-28 it asks with an input round of the call
(``InputRequiredResult``), and again once ``roots_refresh`` seconds have passed, since that
era has no ``roots/list_changed``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import ListRootsResult, LoggingMessageNotificationParams, Root

from vfs_mcp import build_server
from vfs_mcp.cli.options import parser, server_from, uses_client_roots
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp.server.client_roots import plan_mounts, swap
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]


def uri(path: Path | str) -> str:
    return Path(path).as_uri()


class Roots:
    """A client's roots, changeable during the session; counts how often the server asked."""

    def __init__(self, *uris: str) -> None:
        self.uris = list(uris)
        self.asked = 0

    async def __call__(self, context: ClientRequestContext) -> ListRootsResult:
        self.asked += 1
        return ListRootsResult(roots=[Root(uri=u) for u in self.uris])


def local(path: Path, read_only: bool = False) -> Mount:
    return open_mount(MountSpec(str(path), read_only=read_only))


async def mounted(client: Client) -> list[str]:
    result = await client.call_tool("list_allowed_directories", {})
    return [d["root"] for d in data_of(result)["directories"]]


# -- the plan (no MCP) ----------------------------------------------------------------------


def test_a_root_inside_a_mount_narrows_it_and_keeps_its_policy(local_sandbox: Sandbox) -> None:
    base = Path(local_sandbox.root)
    (base / "src" / "pkg").mkdir(parents=True)
    operator = [local(base, read_only=True)]
    plan = plan_mounts([uri(base / "src" / "pkg")], "narrow", operator)
    assert [m.url for m in plan.mounts] == [str(base / "src" / "pkg")]
    assert plan.mounts[0].read_only
    assert plan.refused == []
    assert plan_mounts([uri(base)], "narrow", operator).mounts == operator  # the whole mount is the mount itself


def test_roots_outside_the_mounts_are_refused_with_a_reason(local_sandbox: Sandbox, tmp_path: Path) -> None:
    base = Path(local_sandbox.root)
    (base / "file.txt").write_text("x")
    (base / ".secret").mkdir()
    os.symlink(local_sandbox.outside, base / "escape")
    attempts = {
        uri(tmp_path / "app_evil"): "ACCESS_DENIED",  # a name prefix is not a component prefix
        uri(tmp_path): "ACCESS_DENIED",  # a parent would widen the mount
        f"{uri(base)}/../outside": "ACCESS_DENIED",
        uri(base / "escape"): "ACCESS_DENIED",  # a link out of the mount
        uri(base / "file.txt"): "NOT_A_DIRECTORY",
        uri(base / "missing"): "NOT_FOUND",
        uri(base / ".secret"): "NOT_FOUND",  # hidden by the deny list
        "file://otherhost" + str(base): "ACCESS_DENIED",
    }
    plan = plan_mounts(list(attempts), "narrow", [local(base)], deny=[".secret"])
    assert plan.mounts == []
    assert {r.uri: r.reason.split(":")[0] for r in plan.refused} == attempts


def test_without_operator_mounts_file_roots_become_mounts(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    fallback = local(tmp_path, read_only=True)
    plan = plan_mounts(
        [uri(tmp_path / "a"), uri(tmp_path / "missing"), "file://elsewhere/x", "https://example.com/x"],
        "mount",
        [fallback],
    )
    assert [m.url for m in plan.mounts] == [str(tmp_path / "a")]
    assert plan.mounts[0].read_only  # --read-only holds for client roots too
    assert [r.reason.split(":")[0] for r in plan.refused] == ["NOT_FOUND", "ACCESS_DENIED", "INVALID_ARGUMENT"]


def test_a_swap_keeps_the_working_directory_where_it_still_is(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "c").mkdir()
    jail = Jail([local(tmp_path)])
    jail.chdir(jail.resolve(str(tmp_path / "a" / "b")))
    narrowed = local(tmp_path / "a")
    swap(jail, [narrowed])
    assert jail.mounts == [narrowed]
    assert jail.cwd == Target(narrowed, "b")
    other = local(tmp_path / "c")
    swap(jail, [other])
    assert jail.cwd == Target(other, "")


# -- over MCP, in both eras -----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_client_roots_narrow_the_operator_mounts_and_refusals_are_reported(
    local_sandbox: Sandbox, tmp_path: Path, mode: str
) -> None:
    base = Path(local_sandbox.root)
    (base / "project").mkdir()
    (base / "project" / "a.txt").write_text("inside")
    (base / "other.txt").write_text("narrowed away")
    roots = Roots(uri(base / "project"), uri(tmp_path / "outside"))
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    server = build_server([local_sandbox.mount], Settings(client_roots="narrow"))
    async with Client(
        server, mode=mode, list_roots_callback=roots, logging_callback=on_log, log_level="warning"
    ) as client:
        if mode == "legacy":
            with pytest.warns(MCPDeprecationWarning):
                await client.set_logging_level("warning")
        assert await mounted(client) == [str(base / "project")]
        inside = await client.call_tool("read_file", {"path": str(base / "project" / "a.txt")})
        away = await client.call_tool("read_file", {"path": str(base / "other.txt")})
        relative = await client.call_tool("read_file", {"path": "a.txt"})  # the working directory moved in
        resource = await client.read_resource(uri(base / "project" / "a.txt"))
        with pytest.raises(MCPError, match="ACCESS_DENIED"):
            await client.read_resource(uri(base / "other.txt"))
    assert inside.content[0].text == "inside"
    assert relative.content[0].text == "inside"
    assert getattr(resource.contents[0], "text", None) == "inside"
    assert error_of(away)["code"] == "ACCESS_DENIED"
    refusals = [entry.data for entry in logs if entry.level == "warning"]
    assert any(str(tmp_path / "outside") in text and "refused" in text for text in refusals)
    assert roots.asked == 1


@pytest.mark.parametrize("mode", MODES)
async def test_client_roots_never_widen_the_mounts(local_sandbox: Sandbox, tmp_path: Path, mode: str) -> None:
    roots = Roots(uri(tmp_path), "file:///")  # both hold the mount: widening, refused
    server = build_server([local_sandbox.mount], Settings(client_roots="narrow"))
    async with Client(server, mode=mode, list_roots_callback=roots) as client:
        assert await mounted(client) == [local_sandbox.root]
        outside = await client.call_tool("read_file", {"path": str(local_sandbox.outside / "secret.txt")})
    assert error_of(outside)["code"] == "ACCESS_DENIED"


@pytest.mark.parametrize("mode", MODES)
async def test_without_operator_mounts_the_client_roots_are_the_mounts(tmp_path: Path, mode: str) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "w.txt").write_text("work")
    (tmp_path / "fallback").mkdir()
    server = build_server([local(tmp_path / "fallback")], Settings(client_roots="mount"))
    async with Client(server, mode=mode, list_roots_callback=Roots(uri(tmp_path / "work"))) as client:
        assert await mounted(client) == [str(tmp_path / "work")]
        read = await client.call_tool("read_file", {"path": "w.txt"})
        resource = await client.read_resource(uri(tmp_path / "work" / "w.txt"))
    assert read.content[0].text == "work"
    assert getattr(resource.contents[0], "text", None) == "work"


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_roots_gets_the_fallback_and_one_with_no_usable_root_is_denied(
    tmp_path: Path, mode: str
) -> None:
    server = build_server([local(tmp_path)], Settings(client_roots="mount"))
    async with Client(server, mode=mode) as client:  # no roots capability: the current folder
        assert await mounted(client) == [str(tmp_path)]
    async with Client(server, mode=mode, list_roots_callback=Roots(uri(tmp_path / "gone"))) as client:
        denied = await client.call_tool("list_allowed_directories", {})
        with pytest.raises(MCPError, match="ACCESS_DENIED"):
            await client.read_resource(uri(tmp_path / "x.txt"))
    error = error_of(denied)
    assert error["code"] == "ACCESS_DENIED"
    assert str(tmp_path / "gone") in error["message"] and "NOT_FOUND" in error["message"]


async def test_roots_list_changed_moves_the_mounts_legacy(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    roots = Roots(uri(tmp_path / "one"))
    server = build_server([local(tmp_path)], Settings(client_roots="narrow"))
    async with Client(server, mode="legacy", list_roots_callback=roots) as client:
        assert await mounted(client) == [str(tmp_path / "one")]
        assert await mounted(client) == [str(tmp_path / "one")]
        assert roots.asked == 1  # asked once, until the client says they changed
        roots.uris = [uri(tmp_path / "two"), uri(tmp_path / "one")]
        with pytest.warns(MCPDeprecationWarning):
            await client.send_roots_list_changed()
        assert await mounted(client) == [str(tmp_path / "two"), str(tmp_path / "one")]
    assert roots.asked == 2


async def test_a_modern_client_is_asked_again_once_its_roots_are_old(tmp_path: Path) -> None:
    # 2026-07-28 has no roots/list_changed: the answer is trusted for roots_refresh seconds.
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    roots = Roots(uri(tmp_path / "one"))
    cached = build_server([local(tmp_path)], Settings(client_roots="narrow"))
    async with Client(cached, list_roots_callback=roots) as client:
        assert client.protocol_version == "2026-07-28"
        assert await mounted(client) == [str(tmp_path / "one")]
        roots.uris = [uri(tmp_path / "two")]
        assert await mounted(client) == [str(tmp_path / "one")]
    fresh = build_server([local(tmp_path)], Settings(client_roots="narrow", roots_refresh=0))
    async with Client(fresh, list_roots_callback=roots) as client:
        assert await mounted(client) == [str(tmp_path / "two")]
        roots.uris = [uri(tmp_path / "one")]
        assert await mounted(client) == [str(tmp_path / "one")]


async def test_a_legacy_subscription_waits_for_the_roots(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "away.txt").write_text("x")
    server = build_server([local(tmp_path)], Settings(client_roots="narrow"))
    async with Client(server, mode="legacy", list_roots_callback=Roots(uri(tmp_path / "work"))) as client:
        with pytest.warns(MCPDeprecationWarning), pytest.raises(MCPError, match="ACCESS_DENIED"):
            await client.subscribe_resource(uri(tmp_path / "away.txt"))


# -- the command line -----------------------------------------------------------------------


def cli_settings(*argv: str) -> Settings:
    args = parser().parse_args(list(argv))
    server: Any = server_from(args, args.roots, uses_client_roots(args))
    return server.vfs_settings  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), "mount"),
        (("ROOT",), "narrow"),
        (("ROOT", "--ignore-client-roots"), "off"),
        (("--transport", "http"), "off"),
    ],
)
def test_the_command_line_chooses_what_client_roots_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: Sequence[str], expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_settings(*(str(tmp_path) if a == "ROOT" else a for a in argv)).client_roots == expected


@pytest.mark.parametrize("mode", MODES)
async def test_vfs_mcp_with_no_root_serves_the_client_roots_over_stdio(tmp_path: Path, mode: str) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "w.txt").write_text("from a root")
    params = StdioServerParameters(command=sys.executable, args=["-m", "vfs_mcp"], cwd=tmp_path)
    async with Client(params, mode=mode, list_roots_callback=Roots(uri(tmp_path / "work"))) as client:  # type: ignore[arg-type]
        assert await mounted(client) == [str(tmp_path / "work")]
        read = await client.call_tool("read_file", {"path": "w.txt"})
    assert read.content[0].text == "from a root"


async def test_a_modern_listen_watches_only_inside_known_roots(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "w.txt").write_text("w")
    watched = uri(tmp_path / "work" / "w.txt")
    server: Any = build_server([local(tmp_path)], Settings(client_roots="narrow"))
    async with Client(server, list_roots_callback=Roots(uri(tmp_path / "work"))) as client:
        async with client.listen(resource_subscriptions=[watched]):
            assert server.watches.uris == []  # a stream cannot ask for the roots: a call has to first
        await mounted(client)
        async with client.listen(resource_subscriptions=[watched, uri(tmp_path / "elsewhere.txt")]):
            assert server.watches.uris == [watched]
