"""The local store keeps fsspec's contract where ``LocalFileSystem`` and ``MemoryFileSystem``
do (issue 29's defects, each against a real temp folder), and its deliberate differences hold."""

from __future__ import annotations

import errno
import gc
import gzip
import io
import os
import zipfile
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.local import LocalFileSystem

from vfs_mcp_backends.localfs import DescriptorFileSystem


@pytest.fixture
def d(tmp_path: Path) -> str:
    (tmp_path / "a.txt").write_bytes(b"alpha")
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "one.txt").write_bytes(b"one")
    (tmp_path / "src" / "sub" / "two.txt").write_bytes(b"two")
    return str(tmp_path)


@pytest.fixture
def fs(d: str) -> DescriptorFileSystem:
    return DescriptorFileSystem(d)


# -- 1. find, ls, du, glob, expand_path on files, missing paths and the start folder ---------


def test_find_of_a_file_is_the_file_as_in_fsspec(fs: DescriptorFileSystem, d: str) -> None:
    assert fs.find(d + "/a.txt") == [d + "/a.txt"] == LocalFileSystem().find(d + "/a.txt")
    assert fs.find(d + "/a.txt", detail=True)[d + "/a.txt"]["size"] == 5


def test_find_of_a_missing_path_is_empty(fs: DescriptorFileSystem, d: str) -> None:
    assert fs.find(d + "/nope") == [] == LocalFileSystem().find(d + "/nope")


def test_find_with_folders_and_glob_of_everything_include_the_start_folder(fs: DescriptorFileSystem, d: str) -> None:
    local = LocalFileSystem()
    assert fs.find(d + "/src", withdirs=True) == local.find(d + "/src", withdirs=True)
    assert d + "/src" in fs.find(d + "/src", withdirs=True)
    assert sorted(fs.glob(d + "/src/**")) == sorted(local.glob(d + "/src/**"))


def test_ls_du_and_expand_path_of_a_file(fs: DescriptorFileSystem, d: str) -> None:
    [entry] = fs.ls(d + "/a.txt", detail=True)
    assert entry["name"] == d + "/a.txt" and entry["type"] == "file"
    assert fs.ls(d + "/a.txt", detail=False) == [d + "/a.txt"]
    assert fs.du(d + "/a.txt") == 5
    assert fs.expand_path(d + "/a.txt", recursive=True) == [d + "/a.txt"]


def test_a_recursive_copy_whose_glob_matches_a_file_copies_it(fs: DescriptorFileSystem, d: str) -> None:
    fs.mkdir(d + "/out")
    fs.copy(d + "/src/*.txt", d + "/out/", recursive=True)
    assert fs.cat_file(d + "/out/one.txt") == b"one"


# -- 2. a recursive copy of a folder ----------------------------------------------------------


def test_a_recursive_copy_of_a_folder_copies_the_tree(fs: DescriptorFileSystem, d: str) -> None:
    fs.copy(d + "/src", d + "/dst", recursive=True)
    assert fs.cat_file(d + "/dst/sub/two.txt") == b"two"
    assert fs.cat_file(d + "/dst/one.txt") == b"one"


# -- 3. text modes and file-like wrappers -----------------------------------------------------


@pytest.mark.parametrize("mode", ["w", "a", "x"])
def test_text_modes_write_through_a_text_wrapper(fs: DescriptorFileSystem, d: str, mode: str) -> None:
    with fs.open(d + "/new.txt", mode, encoding="utf-8") as handle:
        handle.write("héllo\n")
    assert fs.cat_file(d + "/new.txt") == "héllo\n".encode()


def test_write_text_and_append_in_text_mode(fs: DescriptorFileSystem, d: str) -> None:
    fs.write_text(d + "/t.txt", "one\n")
    with fs.open(d + "/t.txt", "a") as handle:
        handle.write("two\n")
    assert fs.read_text(d + "/t.txt") == "one\ntwo\n"


def test_a_zip_archive_is_written_into_a_binary_file(fs: DescriptorFileSystem, d: str) -> None:
    with fs.open(d + "/z.zip", "wb") as raw, zipfile.ZipFile(raw, "w") as archive:
        archive.writestr("inside.txt", "zipped")
    with zipfile.ZipFile(io.BytesIO(fs.cat_file(d + "/z.zip"))) as archive:
        assert archive.read("inside.txt") == b"zipped"


def test_a_written_file_tells_its_position_and_says_what_it_can_do(fs: DescriptorFileSystem, d: str) -> None:
    with fs.open(d + "/p.bin", "wb") as handle:
        assert handle.writable() and not handle.readable() and not handle.seekable()
        handle.write(b"12345")
        handle.flush()
        assert handle.tell() == 5 and not handle.closed
    assert handle.closed


# -- 4. a compressed write whose inner file fsspec never closes --------------------------------


def test_a_gzip_write_lands_although_fsspec_leaves_the_inner_file_open(fs: DescriptorFileSystem, d: str) -> None:
    with fs.open(d + "/data.gz", "wb", compression="gzip") as handle:
        handle.write(b"data")
    gc.collect()  # fsspec leaves the inner file to the garbage collector (a CPython refcount drop)
    assert gzip.decompress(fs.cat_file(d + "/data.gz")) == b"data"
    with fs.open(d + "/data.gz", "rb", compression="gzip") as handle:
        assert handle.read() == b"data"


# -- 5. appending to a file that does not exist yet ---------------------------------------------


def test_append_to_a_new_file_creates_it(fs: DescriptorFileSystem, d: str) -> None:
    with fs.open(d + "/log.txt", "ab") as handle:
        handle.write(b"first")
    with fs.open(d + "/log.txt", "ab") as handle:
        assert handle.tell() == 5
        handle.write(b" second")
    assert fs.cat_file(d + "/log.txt") == b"first second"


# -- 6. the protocol is registered under a name universal-pathlib reads back ---------------------


def test_the_local_store_protocol_is_registered_with_fsspec(d: str) -> None:
    fs = fsspec.filesystem("vfslocal", root=d)
    assert isinstance(fs, DescriptorFileSystem)
    assert fs.cat_file(d + "/a.txt") == b"alpha"
    with fsspec.open(f"vfslocal://{d}/a.txt", "rb") as handle:
        assert handle.read() == b"alpha"


def test_universal_pathlib_reads_the_protocol_back_from_a_string(d: str) -> None:
    upath = pytest.importorskip("upath")
    path = upath.UPath(f"vfslocal://{d}/a.txt")
    assert path.protocol == "vfslocal"
    assert upath.UPath(str(path)).read_bytes() == b"alpha"


# -- 7. errors name the path asked for -------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda fs, p: fs.cat_file(p), FileNotFoundError),
        (lambda fs, p: fs.info(p), FileNotFoundError),
        (lambda fs, p: fs.ls(p), FileNotFoundError),
        (lambda fs, p: fs.rm_file(p), FileNotFoundError),
        (lambda fs, p: fs.open(p, "rb"), FileNotFoundError),
        (lambda fs, p: fs.open(p, "wb"), FileNotFoundError),
    ],
)
def test_errors_name_the_whole_path_asked_for(fs: DescriptorFileSystem, d: str, call: object, kind: type) -> None:
    asked = d + "/sub/nope"
    with pytest.raises(kind) as caught:
        call(fs, asked)  # type: ignore[operator]
    assert caught.value.filename == asked
    assert asked in str(caught.value)


# -- the deliberate differences ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "how"), [("wb", {}), ("w", {}), ("wb", {"compression": "gzip"}), ("a", {})], ids=["wb", "w", "gzip", "a"]
)
@pytest.mark.parametrize("opener", ["fs.open", "fsspec.open"])
def test_a_write_failing_inside_with_keeps_the_old_content(
    fs: DescriptorFileSystem, d: str, opener: str, mode: str, how: dict[str, str]
) -> None:
    # fsspec.open's OpenFile closes its files whatever happened in the block: they learn of the failure themselves.
    opened = (
        fs.open(d + "/a.txt", mode, **how) if opener == "fs.open" else fsspec.open(f"vfslocal://{d}/a.txt", mode, **how)
    )
    with pytest.raises(RuntimeError), opened as handle:
        handle.write(b"half" if "b" in mode else "half")
        raise RuntimeError("the writer failed")
    assert fs.cat_file(d + "/a.txt") == b"alpha"


def test_a_link_out_of_the_root_is_refused(
    fs: DescriptorFileSystem, d: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_bytes(b"secret")
    os.symlink(outside, d + "/out")
    with pytest.raises(PermissionError):
        fs.cat_file(d + "/out")
    with pytest.raises(PermissionError):
        fs.cat_file(str(outside))


def test_read_write_mode_is_refused(fs: DescriptorFileSystem, d: str) -> None:
    with pytest.raises(ValueError, match="r\\+b"):
        fs.open(d + "/a.txt", "r+b")


def test_mv_renames_onto_the_destination_in_one_step(fs: DescriptorFileSystem, d: str) -> None:
    fs.mkdir(d + "/empty", create_parents=False)
    with pytest.raises(OSError) as caught:
        fs.mv(d + "/a.txt", d + "/empty")  # not into it, as fsspec's copy-and-delete would
    assert caught.value.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)
    fs.mv(d + "/a.txt", d + "/b.txt")
    assert fs.cat_file(d + "/b.txt") == b"alpha" and not fs.exists(d + "/a.txt")
