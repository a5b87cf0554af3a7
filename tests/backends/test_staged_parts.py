"""A local staged file takes content as many parts at once (``writelines``): written in order,
``IOV_MAX`` parts a system call, and on from where a short write stopped; a patched file's new
bytes reach it as the pieces they were cut into, never joined."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mounts
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.ops.edits.patch import apply_patch
from vfs_mcp_backends import staged_files
from vfs_mcp_backends.localfs import DescriptorFileSystem

PARTS = [memoryview(b"%05d," % n)[1:] if n % 3 else b"<%d>" % n for n in range(3 * staged_files.IOV_MAX + 5)]


def written(tmp_path: Path) -> bytes:
    fs = DescriptorFileSystem(str(tmp_path))
    with fs.open(str(tmp_path / "out.bin"), "wb") as handle:
        handle.writelines(PARTS)
        assert handle.tell() == sum(map(len, PARTS))
    return (tmp_path / "out.bin").read_bytes()


def writev_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of buffers of each ``writev`` from here on."""
    calls: list[int] = []
    writev = os.writev

    def counted(fd: int, buffers: list[bytes | memoryview]) -> int:
        calls.append(len(buffers))
        return writev(fd, buffers)

    monkeypatch.setattr(os, "writev", counted)
    return calls


def test_many_parts_are_written_in_order_a_few_system_calls_in_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = writev_calls(monkeypatch)
    assert written(tmp_path) == b"".join(PARTS)
    assert calls == [staged_files.IOV_MAX] * 3 + [5]


def test_a_short_write_goes_on_from_where_it_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def short(fd: int, buffers: list[bytes | memoryview]) -> int:
        """Writes a little over half of what it is given, stopping inside a part."""
        whole = b"".join(buffers)
        return os.write(fd, whole[: len(whole) // 2 + 3])

    monkeypatch.setattr(os, "writev", short)
    assert written(tmp_path) == b"".join(PARTS)


def test_a_patched_file_is_written_from_the_pieces_it_was_cut_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f.txt").write_text("".join(f"line {n}\n" for n in range(100)))
    diff = "--- a/f.txt\n+++ b/f.txt\n" + "".join(
        f"@@ -{n},3 +{n},3 @@\n line {n - 1}\n-line {n}\n+LINE {n}\n line {n + 1}\n" for n in range(10, 90, 10)
    )
    buffers = writev_calls(monkeypatch)
    apply_patch(JailedFS(Jail(open_mounts([MountSpec(str(tmp_path))]))), diff)
    assert buffers == [2 * 8 + 1]  # the text around the 8 hunks, and each one's new line
    assert (tmp_path / "f.txt").read_text() == "".join(
        f"LINE {n}\n" if n % 10 == 0 and 10 <= n < 90 else f"line {n}\n" for n in range(100)
    )
