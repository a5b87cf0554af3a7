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
from vfs_mcp.http import free_port

pytestmark = pytest.mark.slow


def refusal(*args: str, env: dict[str, str]) -> str:
    """The one line `vfs-mcp ARGS` prints when it refuses to start (it must), with only
    ``env``'s AWS settings (none of the machine's own)."""
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
    assert "Traceback (most recent call last)" not in done.stderr.split("Exception ignored")[0], done.stderr
    line = [line for line in done.stderr.splitlines() if line.startswith("vfs-mcp: ")]
    assert len(line) == 1, done.stderr
    return line[0]


def test_s3_without_credentials_refuses_to_start(tmp_path: Path) -> None:
    nowhere = str(tmp_path / "none")
    said = refusal("s3://some-bucket", env={"AWS_SHARED_CREDENTIALS_FILE": nowhere, "AWS_CONFIG_FILE": nowhere})
    assert "cannot mount s3://some-bucket: no credentials for the store" in said


def test_an_unreachable_endpoint_refuses_to_start() -> None:
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
    }
    said = refusal("s3://some-bucket", env=env)
    # botocore retries a refused connection with backoff: on a busy machine the bound comes first
    assert "cannot mount s3://some-bucket: " in said
    assert "the store's endpoint cannot be reached" in said or "did not answer within 10 s" in said


def test_a_missing_bucket_refuses_to_start(s3_endpoint: str) -> None:
    env = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    said = refusal("s3://no-such-bucket-here/prefix", env=env)
    assert "cannot mount s3://no-such-bucket-here/prefix: its root does not exist" in said


def test_a_plug_in_missing_its_options_refuses_to_start() -> None:
    said = refusal(f"ftp://127.0.0.1:{free_port()}/x", env={})
    assert "needs options the URL does not give" in said and "[[mount]]" in said


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
