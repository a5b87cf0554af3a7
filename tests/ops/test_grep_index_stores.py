"""The content index on every object store with versions: S3 (the ETag, its bytes' MD5), GCS (the
generation) and Azure (the ETag), each on its emulator; what a grep reads, counted as it reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Sandbox, make_sandbox, store_params

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.files.write import write_file
from vfs_mcp.ops.search import index
from vfs_mcp.ops.search.grep import GrepQuery, grep_files

pytestmark = pytest.mark.slow


class Reads:
    """The objects ``vfs`` fetches whole (``JailedFS.cat_each``: what a grep reads), by path."""

    def __init__(self, vfs: JailedFS) -> None:
        self.paths: list[str] = []
        fetch = vfs.cat_each

        def counted(files: Any, **options: Any) -> Iterator[Any]:
            fetched = fetch(files, **options)
            try:
                for target, data in fetched:
                    self.paths.append(target.rel.rsplit("/", 1)[-1])
                    yield target, data
            finally:
                fetched.close()

        vfs.cat_each = counted  # type: ignore[method-assign]

    def taken(self) -> list[str]:
        out, self.paths = sorted(self.paths), []
        return out


@pytest.fixture(params=store_params("s3", "gcs", "azure"))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return make_sandbox(request.param, tmp_path, request)


def grep(vfs: JailedFS, pattern: str, use_index: bool = True) -> Any:
    found = grep_files(vfs, ".", GrepQuery(pattern), use_index=use_index)
    assert index.settle(vfs)
    return found


def test_a_second_grep_reads_only_the_objects_that_may_match_and_what_changed(store: Sandbox) -> None:
    for i in range(12):
        store.put(f"docs/d{i}.txt", f"doc {i}\n" + ("the answer is 42\n" if i % 5 == 1 else "nothing\n"))
    store.put("blob.bin", b"\x00the answer is 42" * 4)
    vfs = store.vfs()
    reads = Reads(vfs)
    first = grep(vfs, "answer is")
    assert len(reads.taken()) == 13
    assert grep(vfs, "answer is") == first and reads.taken() == ["d1.txt", "d11.txt", "d6.txt"]
    store.put("docs/d2.txt", "doc 2\nnow the answer is 7\n")  # behind its back: a new version
    again = grep(vfs, "answer is")
    assert reads.taken() == ["d1.txt", "d11.txt", "d2.txt", "d6.txt"]
    assert again == grep(vfs, "answer is", use_index=False)
    reads.taken()
    assert grep(vfs, "doc 3").matches[0].path == store.path("docs/d3.txt") and reads.taken() == ["d3.txt"]


def test_an_edit_through_the_server_is_known_to_the_next_grep_without_a_read(store: Sandbox) -> None:
    for i in range(8):
        store.put(f"f{i}.txt", f"row {i}\n")
    vfs = store.vfs()
    reads = Reads(vfs)
    grep(vfs, "row")
    write_file(vfs, "f3.txt", "row 3, and a needle now\n")
    reads.taken()
    none = grep(vfs, "nowhere to be found")
    found = grep(vfs, "needle")
    # Its version is known without asking: on S3 the ETag is the bytes' MD5; on GCS and Azure
    # the write's answer gave the new generation or ETag. The one match's lines, nothing else.
    assert reads.taken() == ["f3.txt"]
    assert not none.matches and [m.path for m in found.matches] == [store.path("f3.txt")]
    assert found == grep(vfs, "needle", use_index=False)
