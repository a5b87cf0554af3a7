"""The object stores beyond S3 on moto, against their real servers: schemes, capabilities,
conditional writes (``BackendMount.put_if``), and all of them behind one jail over stdio."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox, store_params
from mcp import Client, StdioServerParameters

from vfs_mcp.profiles.results import data_of, error_of
from vfs_mcp_backends import BackendUnavailable, PreconditionFailed, create_mount, known_schemes
from vfs_mcp_backends.azure import AzureMount
from vfs_mcp_backends.gcs import GCSMount
from vfs_mcp_backends.s3 import S3Mount

pytestmark = pytest.mark.anyio

CONDITIONAL = store_params("s3", "gcs", "azure")
"""Stores whose servers decide a conditional write: S3 on moto, GCS, Azure."""
ETAG_TOKENS = store_params("s3", "azure")
"""Stores whose version token is the ETag (on GCS it is the generation)."""
WRITERS = 8


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return make_sandbox(request.param, tmp_path, request)


def put_if(box: Sandbox, rel: str, data: bytes, **condition: Any) -> str | None:
    return box.mount.backend.put_if(box.mount.fs_path(rel), data, **condition)


def token(box: Sandbox, rel: str) -> str | None:
    box.mount.backend.invalidate(box.mount.fs_path(rel))
    return box.mount.backend.version_token(box.mount.fs.info(box.mount.fs_path(rel)))


# -- schemes and capabilities ------------------------------------------------------------------


def test_gcs_and_azure_schemes_have_backends_of_their_own() -> None:
    assert {"gs", "gcs", "az", "abfs", "abfss"} <= set(known_schemes())


@pytest.mark.parametrize(
    ("url", "options", "kind", "root"),
    [
        ("gs://bucket/some/prefix/", {"token": "anon"}, GCSMount, "bucket/some/prefix"),
        ("gcs://bucket", {"token": "anon"}, GCSMount, "bucket"),
        ("az://container/prefix", {"account_name": "acct", "anon": True}, AzureMount, "container/prefix"),
        ("abfs://container@acct.dfs.core.windows.net/prefix", {"anon": True}, AzureMount, "container/prefix"),
        ("abfss://container/", {"account_name": "acct", "anon": True}, AzureMount, "container"),
    ],
)
def test_gcs_and_azure_urls_give_their_mount_root_without_touching_the_network(
    url: str, options: dict[str, Any], kind: type, root: str
) -> None:
    mount = create_mount(url, options)
    assert isinstance(mount, kind)
    assert mount.root == root
    assert mount.capabilities.etags and mount.capabilities.conditional_writes
    assert not mount.capabilities.empty_dirs and not mount.capabilities.host_paths


def test_an_abfs_url_with_an_account_host_names_the_account() -> None:
    mount = create_mount("abfs://container@myacct.dfs.core.windows.net/p", {"anon": True})
    assert mount.fs.account_name == "myacct"


@pytest.mark.parametrize(("url", "missing", "extra"), [("gs://b", "gcsfs", "gcs"), ("az://c", "adlfs", "azure")])
def test_a_missing_extra_says_which_one_to_install(
    url: str, missing: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # import now raises ImportError
    monkeypatch.setitem(sys.modules, f"{missing}.core", None)
    with pytest.raises(BackendUnavailable, match=rf"pip install 'vfs-mcp-backends\[{extra}\]'"):
        create_mount(url, {})


@pytest.mark.parametrize("url", ["gs://", "az://", "abfs:///"])
def test_a_store_url_without_a_bucket_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="needs a"):
        create_mount(url, {"token": "anon"} if url.startswith("gs") else {"account_name": "a", "anon": True})


@pytest.mark.parametrize("store", ["memory", "local"], indirect=True)
def test_stores_without_conditional_writes_say_so(store: Sandbox) -> None:
    assert not store.mount.capabilities.conditional_writes
    with pytest.raises(NotImplementedError):
        put_if(store, "a.txt", b"x", create_only=True)


# -- conditional writes: what issue 16 builds every read-modify-write on ----------------------


@pytest.mark.parametrize("store", CONDITIONAL, indirect=True)
def test_put_if_with_the_token_read_replaces_the_object_and_returns_the_new_token(store: Sandbox) -> None:
    store.put("a.txt", b"one")
    first = token(store, "a.txt")
    assert first
    second = put_if(store, "a.txt", b"two", if_match=first)
    assert store.get("a.txt") == b"two"
    assert second and second != first
    assert token(store, "a.txt") == second
    assert put_if(store, "a.txt", b"three", if_match=second)
    assert store.get("a.txt") == b"three"


@pytest.mark.parametrize("store", CONDITIONAL, indirect=True)
def test_put_if_after_another_writer_changed_the_object_fails_and_writes_nothing(store: Sandbox) -> None:
    store.put("a.txt", b"one")
    read = token(store, "a.txt")
    store.put("a.txt", b"another writer")
    with pytest.raises(PreconditionFailed):
        put_if(store, "a.txt", b"lost update", if_match=read)
    assert store.get("a.txt") == b"another writer"


@pytest.mark.parametrize("store", CONDITIONAL, indirect=True)
def test_put_if_on_a_deleted_object_fails(store: Sandbox) -> None:
    store.put("a.txt", b"one")
    read = token(store, "a.txt")
    store.mount.fs.rm_file(store.mount.fs_path("a.txt"))
    with pytest.raises(PreconditionFailed):
        put_if(store, "a.txt", b"resurrected", if_match=read)
    assert not store.exists("a.txt")


@pytest.mark.parametrize("store", CONDITIONAL, indirect=True)
def test_put_if_create_only_creates_once_and_never_overwrites(store: Sandbox) -> None:
    assert put_if(store, "new.txt", b"first", create_only=True)
    with pytest.raises(PreconditionFailed):
        put_if(store, "new.txt", b"second", create_only=True)
    assert store.get("new.txt") == b"first"


@pytest.mark.parametrize("store", CONDITIONAL, indirect=True)
def test_put_if_takes_one_condition_at_a_time(store: Sandbox) -> None:
    with pytest.raises(ValueError, match="not both"):
        put_if(store, "a.txt", b"x", if_match="abc", create_only=True)
    assert not store.exists("a.txt")


@pytest.mark.parametrize("store", ETAG_TOKENS, indirect=True)
def test_put_if_takes_the_etag_as_vfs_mcp_shows_it_without_quotes(store: Sandbox) -> None:
    store.put("a.txt", b"one")
    shown = store.vfs().info(store.vfs().resolve(store.path("a.txt"))).etag
    read = token(store, "a.txt")
    assert shown and read and shown == read.strip('"')
    assert put_if(store, "a.txt", b"two", if_match=shown)
    assert store.get("a.txt") == b"two"


def race(store: Sandbox, attempt: Any) -> list[Any]:
    """Run ``attempt(i)`` in WRITERS threads released together; each gives its outcome."""
    outcomes: list[Any] = [None] * WRITERS
    start = threading.Barrier(WRITERS)

    def run(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = attempt(i)
        except PreconditionFailed:
            outcomes[i] = "refused"

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


@pytest.mark.parametrize("store", CONDITIONAL, indirect=True)
def test_writers_racing_from_one_version_exactly_one_wins_and_its_bytes_are_there(store: Sandbox) -> None:
    store.put("shared.txt", b"base")
    read = token(store, "shared.txt")
    outcomes = race(store, lambda i: put_if(store, "shared.txt", f"writer {i}".encode(), if_match=read))
    winners = [i for i, outcome in enumerate(outcomes) if outcome != "refused"]
    assert len(winners) == 1, outcomes
    assert outcomes.count("refused") == WRITERS - 1
    assert store.get("shared.txt") == f"writer {winners[0]}".encode()


@pytest.mark.parametrize("store", CONDITIONAL, indirect=True)
def test_creators_racing_for_one_name_exactly_one_wins(store: Sandbox) -> None:
    outcomes = race(store, lambda i: put_if(store, "claimed.txt", f"creator {i}".encode(), create_only=True))
    winners = [i for i, outcome in enumerate(outcomes) if outcome != "refused"]
    assert len(winners) == 1, outcomes
    assert store.get("claimed.txt") == f"creator {winners[0]}".encode()


@pytest.mark.parametrize("store", store_params("s3rver"), indirect=True)
def test_s3rver_ignores_if_match_so_its_mounts_declare_no_conditional_writes(store: Sandbox) -> None:
    # What was seen: s3rver 3.7.1 accepts If-Match and If-None-Match on PutObject and ignores
    # them. Should it learn them, this fails and conftest can drop conditional_writes=false.
    store.put("a.txt", b"one")
    stale = token(store, "a.txt")
    store.put("a.txt", b"another writer")
    store.mount.fs.pipe_file(store.mount.fs_path("a.txt"), b"lost update", IfMatch=stale)
    assert store.get("a.txt") == b"lost update"
    assert isinstance(store.mount.backend, S3Mount)
    assert not store.mount.capabilities.conditional_writes
    with pytest.raises(NotImplementedError):
        put_if(store, "a.txt", b"x", if_match=stale)


# -- one jail over all of them, as a user runs it ------------------------------------------------


@pytest.mark.emulator
@pytest.mark.gcs
@pytest.mark.azure
async def test_vfs_mcp_serves_gs_az_and_s3_through_one_jail_over_stdio(
    s3_endpoint: str, gcs_endpoint: str, azure_connection_string: str
) -> None:
    for url, options in (
        ("s3://stdio-s3", {"endpoint_url": s3_endpoint}),
        ("gs://stdio-gs", {"endpoint_url": gcs_endpoint}),
        ("az://stdio-az", {"connection_string": azure_connection_string}),
    ):
        fs = create_mount(url, options).fs
        fs.mkdir(url.split("://")[1])
        fs.pipe_file(url.split("://")[1] + "/hello.txt", f"hello from {url}\n".encode())
    env = {
        **{k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")},
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,  # each cloud's own variable reaches its backend
        "STORAGE_EMULATOR_HOST": gcs_endpoint,
        "AZURE_STORAGE_CONNECTION_STRING": azure_connection_string,
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "vfs_mcp", "gs://stdio-gs", "az://stdio-az", "s3://stdio-s3"], env=env
    )
    async with Client(params) as client:
        mounts = data_of(await client.call_tool("list_allowed_directories", {}))["directories"]
        reads = {
            m: await client.call_tool("read_file", {"path": f"{m}/hello.txt"})
            for m in ("gs://stdio-gs", "az://stdio-az", "s3://stdio-s3")
        }
        copied = await client.call_tool(
            "copy_file", {"source": "gs://stdio-gs/hello.txt", "destination": "az://stdio-az/from-gcs.txt"}
        )
        moved = await client.call_tool(
            "move_file", {"source": "az://stdio-az/from-gcs.txt", "destination": "s3://stdio-s3/via-azure.txt"}
        )
        final = await client.call_tool("read_file", {"path": "s3://stdio-s3/via-azure.txt"})
        escape = await client.call_tool("read_file", {"path": "gs://stdio-gs/../stdio-s3/hello.txt"})
        other = await client.call_tool("read_file", {"path": "abfs://stdio-az/hello.txt"})
    assert [(m["root"], m["backend"], m["empty_directories"]) for m in mounts] == [
        ("gs://stdio-gs", "gs", False),
        ("az://stdio-az", "az", False),
        ("s3://stdio-s3", "s3", False),
    ]
    for mount, result in reads.items():
        assert result.content[0].text == f"hello from {mount}\n", result.content
    assert not copied.is_error and not moved.is_error, (copied.content, moved.content)
    assert final.content[0].text == "hello from gs://stdio-gs\n"
    assert error_of(escape)["code"] == "ACCESS_DENIED"
    assert error_of(other)["code"] == "ACCESS_DENIED"  # another scheme is another mount
    assert not create_mount("az://stdio-az", {"connection_string": azure_connection_string}).fs.exists(
        "stdio-az/from-gcs.txt"
    )
