"""Every mount is checked once at start: a store that cannot be used refuses to start with
one line naming the mount and the cause, never a traceback and never a server that answers
every call with INTERNAL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vfs_mcp.errors import AccessDenied, Internal, translate
from vfs_mcp.jail.mounts import MountSpec, endpoint_of, open_mount
from vfs_mcp.transports.http import free_port

pytestmark = pytest.mark.slow


def said(*args: str, env: dict[str, str]) -> list[str]:
    """What `vfs-mcp ARGS` says when it refuses to start (it must), its refusal last, with only
    ``env``'s AWS settings (none of the machine's own): lines that start with ``vfs-mcp:``
    and nothing else, no traceback."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = subprocess.run(
        [sys.executable, "-m", "vfs_mcp", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "AWS_EC2_METADATA_DISABLED": "true", **env},
    )
    assert done.returncode == 2, done
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("vfs-mcp: ") for line in lines), done.stderr
    return lines


def refusal(*args: str, env: dict[str, str]) -> str:
    """The one line `vfs-mcp ARGS` prints when it refuses to start at once."""
    lines = said(*args, env=env)
    assert len(lines) == 1, lines
    return lines[0]


def test_s3_without_credentials_refuses_to_start(tmp_path: Path) -> None:
    nowhere = str(tmp_path / "none")
    refused = said("s3://some-bucket", env={"AWS_SHARED_CREDENTIALS_FILE": nowhere, "AWS_CONFIG_FILE": nowhere})[-1]
    assert "cannot mount s3://some-bucket: no credentials for the store" in refused


def test_an_unreachable_endpoint_says_what_it_waits_for_then_refuses_to_start_naming_the_endpoint() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    waiting, refused = said("s3://some-bucket", env=env)
    named = f"(endpoint {endpoint}, from $AWS_ENDPOINT_URL)"
    assert waiting == f"vfs-mcp: waiting up to 10 s for s3://some-bucket to answer {named}"
    # botocore retries a refused connection with backoff: on a busy machine the bound comes first
    assert refused.startswith("vfs-mcp: cannot mount s3://some-bucket: ") and refused.endswith(named)
    assert "the store's endpoint cannot be reached" in refused or "did not answer within 10 s" in refused


def test_the_endpoint_is_named_with_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    from_env = endpoint_of(open_mount(MountSpec("s3://bucket")))
    from_option = endpoint_of(open_mount(MountSpec("s3://bucket", options={"endpoint_url": "http://minio:9000"})))
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    default = endpoint_of(open_mount(MountSpec("s3://bucket")))
    assert from_env == "http://127.0.0.1:9000, from $AWS_ENDPOINT_URL"
    assert from_option == "http://minio:9000, from the mount's endpoint_url option"
    assert default is None


def test_a_missing_bucket_refuses_to_start(s3_endpoint: str) -> None:
    env = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    refused = said("s3://no-such-bucket-here/prefix", env=env)[-1]  # after a waiting line, on a busy machine
    assert "cannot mount s3://no-such-bucket-here/prefix: its root does not exist" in refused


@pytest.mark.parametrize("root", ["ftp://127.0.0.1:21/x", "zip://x"])
def test_an_fsspec_filesystem_missing_its_options_refuses_to_start_in_one_line(root: str) -> None:
    line = refusal(root, env={})
    protocol = root.split(":")[0]
    assert line.startswith(f"vfs-mcp: cannot mount {root}: fsspec's {protocol} filesystem cannot be made from the URL")
    assert line.endswith("give the options it needs (host, fo, ...) to a [[mount]] in a --config file")


def test_credential_and_connection_errors_met_later_have_codes_and_a_next_step() -> None:
    class NoCredentialsError(Exception):
        pass

    class EndpointConnectionError(Exception):
        pass

    wrapped = OSError("s3fs wrapper")
    wrapped.__cause__ = NoCredentialsError()
    no_credentials = translate(wrapped, "s3://b/x.txt")
    unreachable = translate(EndpointConnectionError(), "s3://b/x.txt")
    assert isinstance(no_credentials, AccessDenied) and "set them" in str(no_credentials)
    assert isinstance(unreachable, Internal) and "check endpoint_url" in str(unreachable)
