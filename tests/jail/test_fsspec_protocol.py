"""The jail as an fsspec filesystem (protocol ``vfs``): fsspec's abstract suite on it, pandas
and pyarrow through it on a local mount and on S3 (moto), and its errors as OSErrors."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any

import fsspec
import pandas
import pytest
from fsspec.tests.abstract import AbstractFixtures

from vfs_mcp.fsspec_protocol import JailFileSystem
from vfs_mcp_backends.testkit import FsspecSuite


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A mount root with a CSV, a secret the deny list hides, and a link leading out."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "x.csv").write_text("a,b\n1,2\n3,4\n")
    (root / "keys").mkdir()
    (root / "keys" / "id.pem").write_text("secret")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("a,b\n6,6\n")
    os.symlink(outside / "secret.csv", root / "out.csv")
    return root


def options(root: Path, **more: Any) -> dict[str, Any]:
    return {"roots": [str(root)], "deny": ["*.pem"], "skip_instance_cache": True, **more}


# -- fsspec's abstract suite: 137 tests, on a local mount and on a memory mount (URL paths) ---------


class TestJailOnALocalMount(AbstractFixtures, FsspecSuite):  # type: ignore[misc]
    @pytest.fixture
    def fs(self, tmp_path: Path) -> JailFileSystem:
        (tmp_path / "store").mkdir()
        return fsspec.filesystem("vfs", roots=[str(tmp_path / "store")], skip_instance_cache=True)

    @pytest.fixture
    def fs_path(self, tmp_path: Path) -> str:
        return str(tmp_path / "store")


class TestJailOnAMemoryMount(AbstractFixtures, FsspecSuite):  # type: ignore[misc]
    """Paths in a mount's URL form (``memory://kit/source/file1``), names the same way."""

    @pytest.fixture
    def fs(self) -> JailFileSystem:
        return fsspec.filesystem("vfs", roots=["memory://kit"], skip_instance_cache=True)

    @pytest.fixture
    def fs_path(self) -> str:
        return "memory://kit"

    @pytest.fixture
    def fs_join(self) -> Any:
        return posixpath.join


# -- the protocol is fsspec's ----------------------------------------------------------------


def test_the_vfs_protocol_is_registered_and_reads_urls(data: Path) -> None:
    fs, path = fsspec.core.url_to_fs(f"vfs://{data}/x.csv", **options(data))
    assert isinstance(fs, JailFileSystem) and path == f"{data}/x.csv"
    with fsspec.open(f"vfs://{data}/x.csv", "rt", **options(data)) as handle:
        assert handle.read() == "a,b\n1,2\n3,4\n"
    assert fs.unstrip_protocol(path) == f"vfs://{data}/x.csv"


def test_a_filesystem_without_roots_is_refused() -> None:
    with pytest.raises(ValueError, match="roots"):
        fsspec.filesystem("vfs", skip_instance_cache=True)


def test_names_come_back_as_the_tools_write_them(data: Path) -> None:
    fs = fsspec.filesystem("vfs", **options(data, roots=[str(data), "memory://scratch"]))
    fs.pipe_file("memory://scratch/notes/a.txt", b"note")
    assert fs.find("memory://scratch") == ["memory://scratch/notes/a.txt"]
    assert fs.ls(str(data), detail=False) == [f"{data}/keys", f"{data}/out.csv", f"{data}/x.csv"]
    fs.copy("memory://scratch/notes/a.txt", f"{data}/copied.txt")
    assert (data / "copied.txt").read_bytes() == b"note"


# -- pandas and pyarrow through the jail -----------------------------------------------------


def test_pandas_reads_and_writes_csv_and_parquet_on_a_local_mount(data: Path) -> None:
    frame = pandas.read_csv(f"vfs://{data}/x.csv", storage_options=options(data))
    assert frame["b"].tolist() == [2, 4]
    frame.assign(c=frame.a * 10).to_csv(f"vfs://{data}/out/y.csv", index=False, storage_options=options(data))
    assert (data / "out" / "y.csv").read_text() == "a,b,c\n1,2,10\n3,4,30\n"
    frame.to_parquet(f"vfs://{data}/x.parquet", storage_options=options(data))
    back = pandas.read_parquet(f"vfs://{data}/x.parquet", storage_options=options(data))
    assert back.equals(frame)


@pytest.mark.slow
@pytest.mark.s3
def test_pandas_reads_and_writes_csv_and_parquet_on_s3(s3_endpoint: str, tmp_path: Path) -> None:
    config = tmp_path / "vfs.toml"
    config.write_text(f'[[mount]]\nroot = "s3://frames/data"\noptions = {{ endpoint_url = "{s3_endpoint}" }}\n')
    fsspec.filesystem("s3", endpoint_url=s3_endpoint, skip_instance_cache=True).mkdir("frames")
    storage = {"config": str(config), "skip_instance_cache": True}
    frame = pandas.DataFrame({"a": [1, 3], "b": [2, 4]})
    frame.to_csv("vfs://s3://frames/data/x.csv", index=False, storage_options=storage)
    assert pandas.read_csv("vfs://s3://frames/data/x.csv", storage_options=storage).equals(frame)
    frame.to_parquet("vfs://s3://frames/data/sub/x.parquet", storage_options=storage)
    assert pandas.read_parquet("vfs://s3://frames/data/sub/x.parquet", storage_options=storage).equals(frame)
    with pytest.raises(PermissionError, match="outside every mount"):
        pandas.read_csv("vfs://s3://frames/elsewhere.csv", storage_options=storage)


def test_through_pandas_a_denied_file_is_missing_a_read_only_mount_refuses_and_a_link_out_is_refused(
    data: Path,
) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        pandas.read_csv(f"vfs://{data}/keys/id.pem", storage_options=options(data))
    frame = pandas.DataFrame({"a": [1]})
    with pytest.raises(PermissionError, match="read-only"):
        frame.to_csv(f"vfs://{data}/new.csv", storage_options=options(data, read_only=True))
    with pytest.raises(PermissionError, match="read-only"):
        frame.to_parquet(f"vfs://{data}/new.parquet", storage_options=options(data, read_only=True))
    assert not (data / "new.csv").exists() and not (data / "new.parquet").exists()
    with pytest.raises(PermissionError, match="symbolic link"):
        pandas.read_csv(f"vfs://{data}/out.csv", storage_options=options(data))
