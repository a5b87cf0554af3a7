"""Where the state store may be, and who may reach it: never through a mount, whoever named the
mount (the operator's ROOTs and config, a client's roots at start and after a change), however
its place is spelt; private all the way up; made again, with the same checks, when it goes away;
and no error that names where it is, or repeats a caller's long input back at it."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
from conftest import Sandbox
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ListRootsResult, Root
from processes import stdio_params
from results import assert_error, changed, ok, text_of

from vfs_mcp import changes
from vfs_mcp.changes.state import LocalState, ObjectState, open_state
from vfs_mcp.jail.mounts import MountSpec, open_mount, open_mounts
from vfs_mcp.jail.state_place import StateUnavailable, default_folder
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings

pytestmark = pytest.mark.anyio

NOBODY = 65534


class Roots:
    """A client's roots, changeable during the session."""

    def __init__(self, *folders: Path) -> None:
        self.folders = list(folders)

    async def __call__(self, context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=folder.as_uri()) for folder in self.folders])


def modes_below(top: Path, folder: Path) -> dict[str, int]:
    """The permission bits of every folder from ``top`` (excluded) down to ``folder``."""
    found = {}
    while folder != top:
        found[str(folder)] = stat.S_IMODE(os.stat(folder).st_mode)
        folder = folder.parent
    return found


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A folder another user can reach, as /tmp is (1777): ``tmp_path`` is root's alone."""
    folder = Path(tempfile.mkdtemp(prefix="vfs-mcp-place-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """A command run by another user (nobody), as a second person on the machine would."""
    if os.geteuid() != 0:
        pytest.skip("running as another user needs root")
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )


# -- 1. never through a mount, whoever named it -----------------------------------------------


async def test_a_client_root_that_holds_the_named_store_is_refused_over_stdio_and_its_records_stay_unread(
    tmp_path: Path,
) -> None:
    """`vfs-mcp --state ~/.vfs-state --deny .env` with no ROOT, the client offering ~ and
    ~/proj: ~ is refused, saying why; deleting proj/cfg (which holds a .env) keeps the secret
    in a record no tool can read."""
    home, store = tmp_path / "home", tmp_path / "home" / ".vfs-state"
    (home / "proj" / "cfg").mkdir(parents=True)
    (home / "proj" / "cfg" / ".env").write_text("TOKEN=hunter2-secret\n")
    params = stdio_params("--state", str(store), "--deny", ".env")
    params.cwd = home / "proj"
    async with Client(params, mode="legacy", list_roots_callback=Roots(home, home / "proj")) as client:  # type: ignore[arg-type]
        listed = ok(await client.call_tool("list_allowed_directories", {}))
        deleted = ok(await client.call_tool("delete_path", {"path": str(home / "proj" / "cfg"), "recursive": True}))
        record = store / "changes" / f"{deleted['change_id']}.rec"
        read = await client.call_tool("read_file", {"path": str(record), "encoding": "base64"})
        found = await client.call_tool("grep_files", {"path": str(home / "proj"), "pattern": "hunter2"})
    assert [d["root"] for d in listed["directories"]] == [str(home / "proj")]
    assert record.exists() and b"hunter2-secret" in record.read_bytes()  # it is there, and unreachable
    assert_error(read, "ACCESS_DENIED")
    assert "hunter2" not in text_of(read) and text_of(found).startswith("No matches")


async def test_a_client_offering_only_a_root_that_holds_the_store_is_told_why(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    params = stdio_params("--state", str(home / ".vfs-state"))
    params.cwd = elsewhere  # the fallback mount, for a client without roots
    async with Client(params, mode="legacy", list_roots_callback=Roots(home)) as client:  # type: ignore[arg-type]
        denied = await client.call_tool("list_allowed_directories", {})
    message = assert_error(denied, "ACCESS_DENIED")
    assert home.as_uri() in message and "holds this server's state store" in message
    assert ".vfs-state" not in message  # where it is stays the operator's to know


async def test_a_roots_change_that_would_reach_the_default_store_is_refused_over_stdio(tmp_path: Path) -> None:
    """No --state: the default store is opened while the client's root is ~/proj; the client
    then says its roots changed, offering ~, which holds ~/.local/state/vfs-mcp: refused."""
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    params = stdio_params(env={"XDG_STATE_HOME": str(home / ".local" / "state"), "HOME": str(home)})
    params.cwd = home / "proj"
    roots = Roots(home / "proj")
    async with Client(params, mode="legacy", list_roots_callback=roots) as client:  # type: ignore[arg-type]
        made = ok(await client.call_tool("write_file", {"path": "a.txt", "content": "secret-ish\n"}))
        records = list((home / ".local" / "state" / "vfs-mcp").glob(f"*/changes/{made['change_id']}.rec"))
        roots.folders = [home, home / "proj"]
        with pytest.warns(MCPDeprecationWarning):
            await client.send_roots_list_changed()
        listed = ok(await client.call_tool("list_allowed_directories", {}))
        read = await client.call_tool("read_file", {"path": str(records[0])})
        roots.folders = [home]
        with pytest.warns(MCPDeprecationWarning):
            await client.send_roots_list_changed()
        alone = await client.call_tool("list_directory", {"path": str(home)})
    assert len(records) == 1
    assert [d["root"] for d in listed["directories"]] == [str(home / "proj")]
    assert_error(read, "ACCESS_DENIED")
    assert "holds this server's state store" in assert_error(alone, "ACCESS_DENIED")


def test_a_client_root_that_reaches_the_store_is_refused_however_it_is_spelt(tmp_path: Path) -> None:
    store, fallback = tmp_path / "state", tmp_path / "work"
    (store / "changes").mkdir(parents=True)
    fallback.mkdir()
    (tmp_path / "link").symlink_to(tmp_path)
    server = build_server([open_mount(MountSpec(str(fallback)))], Settings(client_roots="mount", state=str(store)))
    roots = server.client_roots  # type: ignore[attr-defined]
    offered = [
        (store / "changes").as_uri(),
        f"file://localhost{store}/../state/changes",
        (tmp_path / "link").as_uri(),
        f"FILE://localhost{tmp_path}/work/..",
        fallback.as_uri(),
    ]
    roots.settle(server.vfs.jail, offered)  # type: ignore[attr-defined]
    reasons = {refusal.uri: refusal.reason for refusal in roots.refused}
    assert list(reasons) == offered[:4] and all(r.startswith("ACCESS_DENIED: ") for r in reasons.values())
    assert "lies inside this server's state store" in reasons[offered[0]]
    assert "holds this server's state store" in reasons[offered[2]]
    assert [m.url for m in server.vfs.mounts] == [str(fallback)]  # type: ignore[attr-defined]


def test_a_config_file_naming_the_store_inside_its_mount_stops_the_server(tmp_path: Path) -> None:
    (tmp_path / "served").mkdir()
    config = tmp_path / "vfs.toml"
    config.write_text(f'state = "file://localhost{tmp_path}/served/.st"\n\n[[mount]]\nroot = "{tmp_path}/served"\n')
    started = subprocess.run(
        [sys.executable, "-m", "vfs_mcp", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert started.returncode != 0 and f"is inside the served mount {tmp_path}/served" in started.stderr
    assert list((tmp_path / "served").iterdir()) == []


@pytest.mark.parametrize(
    "state",
    [
        "s3://{bucket}/data/.st",
        "S3://{bucket}/data/.st",
        "s3a://{bucket}/data/.st",
        "s3://{bucket}/other/../data/.st",
        "s3://{bucket}/data",
        "s3://{bucket}",
    ],
)
def test_a_state_prefix_the_served_prefix_reaches_is_refused_before_anything_is_written_there(
    s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, state: str
) -> None:
    bucket = f"place-{abs(hash(state)) % 10**8}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint, key="testing", secret="testing", skip_instance_cache=True)
    fs.mkdir(bucket)
    fs.pipe_file(f"{bucket}/data/kept.txt", b"served")
    mounts = open_mounts([MountSpec(f"s3://{bucket}/data")])
    with pytest.raises(StateUnavailable, match="served mount"):
        build_server(mounts, Settings(state=state.format(bucket=bucket)))
    fs.invalidate_cache()
    assert sorted(fs.find(bucket)) == [f"{bucket}/data/kept.txt"]  # no lease, no folder, nothing


def test_a_state_prefix_beside_the_served_one_is_used(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint, key="testing", secret="testing", skip_instance_cache=True)
    fs.mkdir("place-beside")
    store = open_state("s3://place-beside/data-state", served=[], urls=["s3://place-beside/data"])
    try:
        assert isinstance(store, ObjectState)
    finally:
        store.close()


def test_a_file_url_of_localhost_names_the_absolute_folder(tmp_path: Path) -> None:
    store = open_state(f"file://localhost{tmp_path}/st", served=[], urls=[])
    assert isinstance(store, LocalState) and store.folder == str(tmp_path / "st")
    store.close()
    with pytest.raises(StateUnavailable, match="another host"):
        open_state(f"file://elsewhere{tmp_path}/st", served=[], urls=[])


def test_a_store_reached_through_a_link_into_a_served_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "served").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "served")
    with pytest.raises(StateUnavailable, match="served mount"):
        build_server([open_mount(MountSpec(str(tmp_path / "served")))], Settings(state=str(tmp_path / "link" / "st")))
    assert list((tmp_path / "served").iterdir()) == []


# -- 2. private all the way up ------------------------------------------------------------------


def test_every_folder_the_server_makes_is_private_whatever_the_umask(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    was = os.umask(0)
    try:
        store = open_state(str(home / ".local" / "state" / "vfs-mcp" / "abc"), served=[], urls=[])
    finally:
        os.umask(was)
    made = modes_below(home, Path(store.folder) / "changes")
    store.close()
    assert made and set(made.values()) == {0o700}, made


def test_a_store_below_a_folder_other_users_can_write_is_refused_naming_it_and_the_fix(open_tmp: Path) -> None:
    shared = open_tmp / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "mine").mkdir(mode=0o700)
    moved = as_nobody("mv", str(shared / "mine"), str(shared / "taken"))
    assert moved.returncode == 0, moved.stderr  # what another user can do to a private folder there
    with pytest.raises(StateUnavailable) as refused:
        open_state(str(shared / "st"), served=[], urls=[])
    assert f"the folder {shared}" in str(refused.value) and f"chmod go-w {shared}" in str(refused.value)
    assert not (shared / "st").exists()
    (shared / "st").mkdir(mode=0o700)  # made before: refused all the same
    with pytest.raises(StateUnavailable, match="writable by other users"):
        open_state(str(shared / "st"), served=[], urls=[])


def test_a_fallback_folder_another_user_made_first_is_refused(open_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With $XDG_STATE_HOME and /var/tmp served, the default is $TMPDIR/vfs-mcp-UID; another
    user made that folder first (and could empty it or swap what is in it): refused."""
    monkeypatch.setenv("XDG_STATE_HOME", str(open_tmp / "served" / ".state"))
    monkeypatch.setenv("TMPDIR", str(open_tmp))
    served = [str(open_tmp / "served"), "/var/tmp"]
    planted = open_tmp / f"vfs-mcp-{os.geteuid()}"
    made = as_nobody("mkdir", "-m", "0755", str(planted))
    assert made.returncode == 0, made.stderr
    assert default_folder(served, ["/a"]).startswith(str(planted) + "/")
    with pytest.raises(StateUnavailable, match="belongs to another user"):
        open_state(None, served=served, urls=["/a"])
    assert list(planted.iterdir()) == []


def test_a_store_folder_of_ours_left_open_by_an_old_umask_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "st").mkdir()
    (tmp_path / "st").chmod(0o777)
    store = open_state(str(tmp_path / "st"), served=[], urls=[])
    store.close()
    assert stat.S_IMODE(os.stat(tmp_path / "st").st_mode) == 0o700


# -- 3. a store that went away ------------------------------------------------------------------


async def test_a_store_removed_while_the_server_runs_is_made_again_and_the_log_says_so(
    local_sandbox: Sandbox, caplog: pytest.LogCaptureFixture
) -> None:
    box = local_sandbox
    box.put("tree/a.txt", "a\n")
    box.put("tree/b.txt", "b\n")
    box.put("one.txt", "one\n")
    server = box.server()
    async with Client(server) as client:
        changed(await client.call_tool("write_file", {"path": box.path("first.txt"), "content": "x"}))
        folder = changes.log_of(server.vfs).store.host_folder  # type: ignore[attr-defined]
        assert folder is not None
        shutil.rmtree(folder)  # a cleaner, a person emptying ~/.local/state
        with caplog.at_level(logging.WARNING, logger="vfs_mcp"):
            copied = ok(
                await client.call_tool(
                    "copy_file", {"source": box.path("tree"), "destination": box.path("t2"), "recursive": True}
                )
            )
            edited = ok(
                await client.call_tool(
                    "edit_file", {"path": box.path("one.txt"), "edits": [{"oldText": "one", "newText": "two"}]}
                )
            )
            undone = ok(await client.call_tool("undo", {"change_id": edited["change_id"]}))
            again = ok(await client.call_tool("undo", {"change_id": copied["change_id"]}))
    assert box.get("one.txt") == b"one\n" and undone["restored"] == [box.path("one.txt")]
    assert again["removed"] and not os.path.exists(box.path("t2"))
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert any("went away" in r.getMessage() and folder in r.getMessage() for r in caplog.records)


async def test_a_store_that_cannot_be_made_again_never_names_its_folder_and_undo_says_what_happened(
    open_tmp: Path,
) -> None:
    served, home = open_tmp / "served", open_tmp / "home"
    (served / "tree").mkdir(parents=True)
    (served / "tree" / "a.txt").write_text("a\n")
    (served / "one.txt").write_text("one\n")
    home.mkdir(mode=0o700)
    server = build_server([open_mount(MountSpec(str(served)))], Settings(state=str(home / "st")))
    async with Client(server) as client:
        shutil.rmtree(home / "st")
        home.chmod(0o777)  # and another user can now write where it was: it is not made again
        copied = await client.call_tool(
            "copy_file", {"source": str(served / "tree"), "destination": "t2", "recursive": True}
        )
        edited = await client.call_tool(
            "edit_file", {"path": str(served / "one.txt"), "edits": [{"oldText": "one", "newText": "two"}]}
        )
        undone = await client.call_tool("undo", {})
    assert "the state store cannot be written" in assert_error(copied, "INTERNAL")
    assert not (served / "t2").exists()
    assert not edited.is_error and "cannot be undone" in text_of(edited)
    assert "the last change (edit_file: the state store could not be written" in assert_error(undone, "NOT_FOUND")
    for result in (copied, edited, undone):
        assert str(home) not in text_of(result)
    assert not (home / "st").exists()


# -- 4. errors echo a short prefix --------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("undo", {"change_id": "x" * 5000}),
        ("read_file", {"path": "a.txt", "encoding": "e" * 5000}),
        ("read_file", {"path": "a.txt", "k" * 5000: 1}),
        ("t" * 5000, {}),
    ],
    ids=["change id", "encoding", "argument name", "tool name"],
)
async def test_an_error_echoes_at_most_a_short_prefix_of_what_the_caller_sent(
    local_sandbox: Sandbox, tool: str, arguments: dict[str, object]
) -> None:
    local_sandbox.put("a.txt", "a\n")
    async with local_sandbox.client() as client:
        try:
            result = await client.call_tool(tool, arguments)
            message = text_of(result)
        except Exception as err:  # an unknown tool is a protocol error
            message = str(err)
    assert "5,000 characters" in message and len(message) < 1000, message[:300]
