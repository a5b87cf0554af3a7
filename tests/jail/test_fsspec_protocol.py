"""The jail as an fsspec filesystem (protocol ``vfs``): fsspec's abstract suite on it, pandas
and pyarrow through it on a local mount and on S3 (moto), and its errors as OSErrors."""

from __future__ import annotations

import gzip
import os
import posixpath
from pathlib import Path
from typing import Any

import fsspec
import pandas
import pytest
from fsspec.tests.abstract import AbstractFixtures

from vfs_mcp.transports.fsspec_protocol import JailFileSystem
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


# -- a write left on an exception ------------------------------------------------------------


class Failed(Exception):
    """Raised in the middle of a write."""


class Unprintable:
    """A cell pandas fails on when it reaches it (after writing the rows before it)."""

    def __str__(self) -> str:
        raise Failed

    __repr__ = __str__


def halfway(handle: Any, text: bool, fail: bool) -> None:
    """Write 30 kB (past every buffer on the way), then fail if ``fail``."""
    handle.write("partial\n" * 3750 if text else b"partial\n" * 3750)
    if fail:
        raise Failed


def open_and_write(url: str, storage: dict[str, Any], fail: bool, mode: str, **how: Any) -> None:
    with fsspec.open(url, mode, **storage, **how) as handle:
        halfway(handle, "b" not in mode, fail)


def fs_open_and_write(url: str, storage: dict[str, Any], fail: bool, mode: str, **how: Any) -> None:
    fs, path = fsspec.core.url_to_fs(url, **storage)
    with fs.open(path, mode, **how) as handle:
        halfway(handle, "b" not in mode, fail)


def pandas_to_csv(url: str, storage: dict[str, Any], fail: bool, **how: Any) -> None:
    frame = pandas.DataFrame({"a": ["x"] * 150_000 + [Unprintable() if fail else "y"]}, dtype=object)
    frame.to_csv(url, storage_options=storage, **how)


WRITES_THAT_FAIL_HALFWAY = {
    "fsspec.open wb": lambda url, so, fail: open_and_write(url, so, fail, "wb"),
    "fsspec.open w (text)": lambda url, so, fail: open_and_write(url, so, fail, "w"),
    "fsspec.open wb gzip": lambda url, so, fail: open_and_write(url, so, fail, "wb", compression="gzip"),
    "fsspec.open wt gzip": lambda url, so, fail: open_and_write(url, so, fail, "wt", compression="gzip"),
    "fs.open wb": lambda url, so, fail: fs_open_and_write(url, so, fail, "wb"),
    "fs.open wb gzip": lambda url, so, fail: fs_open_and_write(url, so, fail, "wb", compression="gzip"),
    "pandas to_csv": lambda url, so, fail: pandas_to_csv(url, so, fail),
    "pandas to_csv gzip": lambda url, so, fail: pandas_to_csv(url, so, fail, compression="gzip"),
}
_memory_names = iter(range(1_000_000))


@pytest.fixture(params=["local", "memory", pytest.param("s3", marks=[pytest.mark.slow, pytest.mark.s3])])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A file's vfs URL holding ``old``, and the storage options that reach it."""
    name = f"kept{next(_memory_names)}"
    if request.param == "local":
        root, storage = str(tmp_path), {"roots": [str(tmp_path)], "skip_instance_cache": True}
    elif request.param == "memory":  # one cached instance, so the memory store outlives each call
        root, storage = f"memory://{name}", {"roots": [f"memory://{name}"]}
    else:
        endpoint = request.getfixturevalue("s3_endpoint")
        fsspec.filesystem("s3", endpoint_url=endpoint, skip_instance_cache=True).mkdir(name)
        config = tmp_path / "vfs.toml"
        config.write_text(f'[[mount]]\nroot = "s3://{name}/data"\noptions = {{ endpoint_url = "{endpoint}" }}\n')
        root, storage = f"s3://{name}/data", {"config": str(config), "skip_instance_cache": True}
    url = f"vfs://{root}/f.csv"
    fsspec.core.url_to_fs(url, **storage)[0].pipe_file(f"{root}/f.csv", b"old")
    return url, storage


def read_back(url: str, storage: dict[str, Any]) -> bytes:
    with fsspec.open(url, "rb", **storage) as handle:
        return bytes(handle.read())


@pytest.mark.parametrize("write", WRITES_THAT_FAIL_HALFWAY)
def test_a_write_left_on_an_exception_keeps_the_old_content(place: tuple[str, dict[str, Any]], write: str) -> None:
    url, storage = place
    with pytest.raises(Failed):
        WRITES_THAT_FAIL_HALFWAY[write](url, storage, True)
    assert read_back(url, storage) == b"old"


@pytest.mark.parametrize("write", WRITES_THAT_FAIL_HALFWAY)
def test_the_same_write_finished_replaces_the_content(place: tuple[str, dict[str, Any]], write: str) -> None:
    url, storage = place
    WRITES_THAT_FAIL_HALFWAY[write](url, storage, False)
    data = read_back(url, storage)
    text = (gzip.decompress(data) if "gzip" in write else data).decode()
    assert text.startswith("partial\n" if "pandas" not in write else ",a\n0,x\n") and text.endswith(
        ("partial\n", "y\n")
    )


def test_a_file_opened_while_another_failure_is_handled_still_commits(place: tuple[str, dict[str, Any]]) -> None:
    url, storage = place
    try:
        raise Failed
    except Failed:
        open_and_write(url, storage, False, "w")  # a log written in an except block lands
    assert read_back(url, storage) == b"partial\n" * 3750


# -- a config file that changes while a program runs ----------------------------------------------


def test_a_config_file_that_gains_deny_or_read_only_is_obeyed_by_the_next_call(data: Path, tmp_path: Path) -> None:
    config = tmp_path / "vfs.toml"
    config.write_text(f'[[mount]]\nroot = "{data}"\n')
    storage = {"config": str(config)}  # fsspec's instance cache in use, as a program's calls use it
    assert pandas.read_csv(f"vfs://{data}/x.csv", storage_options=storage)["b"].tolist() == [2, 4]
    assert fsspec.filesystem("vfs", **storage) is fsspec.filesystem("vfs", **storage)  # cached while unchanged

    config.write_text(f'deny = ["*.csv"]\n\n[[mount]]\nroot = "{data}"\n')
    with pytest.raises(FileNotFoundError):
        pandas.read_csv(f"vfs://{data}/x.csv", storage_options=storage)
    with pytest.raises(FileNotFoundError):
        fsspec.filesystem("vfs", **storage).cat_file(f"{data}/x.csv")

    config.write_text(f'read_only = true\n\n[[mount]]\nroot = "{data}"\n')
    with pytest.raises(PermissionError, match="read-only"):
        fsspec.filesystem("vfs", **storage).pipe_file(f"{data}/new.txt", b"x")
    with pytest.raises(PermissionError, match="read-only"):
        pandas.DataFrame({"a": [1]}).to_csv(f"vfs://{data}/new.csv", storage_options=storage)
    assert not (data / "new.txt").exists() and not (data / "new.csv").exists()
