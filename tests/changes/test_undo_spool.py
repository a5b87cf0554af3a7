"""Before-images past the server's resident bound go to a private folder on disk: an undo
reads them back exactly on every backend; their files go with their changes, their session
and their server; a spool that cannot be written keeps the edit working and says what it dropped."""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Sandbox

from vfs_mcp import changes
from vfs_mcp.changes import journal, spool
from vfs_mcp.changes.ops import DirImage, Image, Spooled
from vfs_mcp.errors import Internal, NotFound
from vfs_mcp.ops import write
from vfs_mcp.ops.undo import undo

BINARY = bytes(range(256)) * 4096 + b"\r\n\x00 the end"
"""A little over 1 MiB that no text decoding would keep as it is."""


def spooled_journal(parent: Path, resident: int = 0, changes: int = 100) -> journal.Journal:
    """A journal whose server keeps ``resident`` bytes of before-images in memory, the rest in ``parent``."""
    ledger = journal.Ledger(resident=resident, keeper=spool.Spool(parent=str(parent)))
    return journal.Journal(changes, ledger=ledger)


def make(log: journal.Journal, *calls: Callable[[], object]) -> None:
    """Each call's change kept in ``log``, as the server keeps a tool call's."""
    for call in calls:
        with journal.recording() as record:
            call()
        assert log.add(journal.Change("test", record.steps()))


def images(log: journal.Journal) -> list[Image]:
    def inside(image: Image) -> Iterator[Image]:
        yield image
        if isinstance(image, DirImage):
            for _, inner in image.inside:
                yield from inside(inner)

    return [
        found
        for change in log.changes
        for op in change.undo
        if isinstance(op, changes.Restore)
        for found in inside(op.image)
    ]


def spooled_files(log: journal.Journal) -> list[str]:
    folder = log.ledger.spool.folder
    return sorted(os.listdir(folder)) if folder is not None else []


def test_an_undo_of_spooled_images_puts_back_the_bytes_modes_and_links(sandbox: Sandbox, tmp_path: Path) -> None:
    box = sandbox
    box.put("big.bin", BINARY)
    box.put("kit/a.txt", "a\n")
    box.put("kit/deep/b.txt", "b\n" * 1000)
    box.put("notes.txt", "version one\n")
    if box.mount.capabilities.modes:
        os.chmod(box.mount.fs_path("big.bin"), 0o640)
        os.chmod(box.mount.fs_path("kit/a.txt"), 0o600)
    if box.mount.capabilities.symlinks:
        os.symlink("a.txt", box.mount.fs_path("kit/link"))
    vfs = box.vfs()
    log = spooled_journal(tmp_path)
    make(
        log,
        lambda: write.delete_path(vfs, "big.bin"),
        lambda: write.delete_path(vfs, "kit", recursive=True),
        lambda: write.write_file(vfs, "notes.txt", "version two\n"),
    )
    spool.settled()
    kept = [image for image in images(log) if isinstance(image, Spooled)]
    assert len(kept) == 4 and not [image for image in images(log) if type(image).__name__ == "FileImage"]
    folder = log.ledger.spool.folder
    assert folder is not None and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert len(spooled_files(log)) == 3
    assert {stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode) for name in spooled_files(log)} == {0o600}

    for _ in range(3):
        undo(vfs, log)
    assert box.get("big.bin") == BINARY and box.get("notes.txt") == b"version one\n"
    assert box.get("kit/a.txt") == b"a\n" and box.get("kit/deep/b.txt") == b"b\n" * 1000
    if box.mount.capabilities.modes:
        assert stat.S_IMODE(os.stat(box.mount.fs_path("big.bin")).st_mode) == 0o640
        assert stat.S_IMODE(os.stat(box.mount.fs_path("kit/a.txt")).st_mode) == 0o600
    if box.mount.capabilities.symlinks:
        assert os.readlink(box.mount.fs_path("kit/link")) == "a.txt"
    assert spooled_files(log) == []


def test_spooled_files_go_when_their_change_is_dropped_undone_or_its_session_ends(
    local_sandbox: Sandbox, tmp_path: Path
) -> None:
    box = local_sandbox
    box.put("f.txt", "0")
    vfs = box.vfs()
    log = spooled_journal(tmp_path, changes=2)
    make(log, *(lambda n=n: write.write_file(vfs, "f.txt", str(n)) for n in range(1, 4)))
    spool.settled()
    assert len(spooled_files(log)) == 2 and log.unnoted_drops() == 1  # the oldest went with its change
    undo(vfs, log)
    assert len(spooled_files(log)) == 1 and box.get("f.txt") == b"2"
    ledger = log.ledger
    folder = ledger.spool.folder
    assert folder is not None
    del log  # the session's state goes with its session
    gc.collect()
    assert os.listdir(folder) == []
    del ledger  # the server's goes with the server
    gc.collect()
    assert not os.path.exists(folder)


@contextlib.contextmanager
def refused_by(how: str, parent: Path) -> Iterator[None]:
    """A spool that cannot be written, for real: no folder can be made where it would go, or
    the file system takes no more than 512 KiB in one file (as a full disk would stop it)."""
    if how == "unwritable":
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 1024, hard))  # Python ignores SIGXFSZ: writes say EFBIG
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@pytest.mark.parametrize("how", ["unwritable", "full"])
def test_a_spool_that_cannot_be_written_keeps_the_edits_and_drops_the_oldest_saying_so(
    local_sandbox: Sandbox, tmp_path: Path, how: str
) -> None:
    box = local_sandbox
    first, second = "one\n" * 150_000, "two\n" * 150_000  # 600 kB each: one fits in the 1 MiB kept in memory
    box.put("a.txt", first)
    box.put("b.txt", second)
    parent = tmp_path / "spool"
    if how == "unwritable":
        parent.write_text("a file where the folder should be")
    else:
        parent.mkdir()
    vfs = box.vfs()
    log = spooled_journal(parent, resident=1024 * 1024)
    with refused_by(how, parent):
        make(log, lambda: write.write_file(vfs, "a.txt", "A\n"), lambda: write.write_file(vfs, "b.txt", "B\n"))
        spool.settled()
    assert (box.get("a.txt"), box.get("b.txt")) == (b"A\n", b"B\n")  # both edits made
    assert log.unnoted_drops() == 1 and len(log.changes) == 1
    assert log.ledger.resident == len(second.encode())
    assert undo(vfs, log).restored == [box.path("b.txt")] and box.get("b.txt") == second.encode()
    with pytest.raises(NotFound, match="1 older changes were dropped"):
        undo(vfs, log)
    assert box.get("a.txt") == b"A\n"
    if how == "full":
        assert spooled_files(log) == []  # the part written before the refusal went too


def test_a_spool_folder_inside_a_served_folder_is_never_made_and_the_edits_still_work(
    local_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = local_sandbox
    root = Path(box.mount.fs_path(""))
    monkeypatch.setattr(tempfile, "tempdir", str(root / "tmp"))  # the temp folder the server would use
    (root / "tmp").mkdir()
    for n in range(3):
        box.put(f"f{n}.txt", "x" * 2_000_000)
    vfs = box.vfs()
    log = journal.session_journal(vfs, 100)
    make(log, *(lambda n=n: write.write_file(vfs, f"f{n}.txt", "new\n") for n in range(3)))
    spool.settled()
    assert os.listdir(root / "tmp") == [] and log.ledger.spool.refused is not None
    assert len(log.changes) == 2 and log.unnoted_drops() == 1
    undo(vfs, log)
    assert box.get("f2.txt") == b"x" * 2_000_000


def test_a_spooled_image_that_is_not_what_was_written_refuses_the_whole_undo(
    local_sandbox: Sandbox, tmp_path: Path
) -> None:
    box = local_sandbox
    box.put("kit/a.txt", "a\n")
    box.put("kit/b.txt", "b\n")
    vfs = box.vfs()
    log = spooled_journal(tmp_path)
    make(log, lambda: write.delete_path(vfs, "kit", recursive=True))
    spool.settled()
    (name,) = spooled_files(log)
    path = os.path.join(str(log.ledger.spool.folder), name)
    with open(path, "r+b") as kept:  # another program of the same user
        kept.seek(2)
        kept.write(b"B")
    with pytest.raises(Internal, match="is not what was kept: this change cannot be undone"):
        undo(vfs, log)
    assert not box.exists("kit/a.txt") and not box.exists("kit/b.txt")
    assert log.changes == type(log.changes)()  # it never can be undone: gone from the journal


def test_a_folder_a_killed_server_left_is_removed_by_the_next_one_that_spools(
    local_sandbox: Sandbox, tmp_path: Path
) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    dead = tmp_path / f"{spool.PREFIX}{int(ended.stdout)}-abc"
    alive = tmp_path / f"{spool.PREFIX}{os.getppid()}-abc"
    for folder in (dead, alive):
        folder.mkdir()
        (folder / "0.img").write_bytes(b"old")
    box = local_sandbox
    box.put("f.txt", "before")
    vfs = box.vfs()
    log = spooled_journal(tmp_path)
    make(log, lambda: write.write_file(vfs, "f.txt", "after"))
    spool.settled()
    assert not dead.exists() and alive.exists() and len(spooled_files(log)) == 1


def test_the_folders_of_a_server_that_stops_are_removed(tmp_path: Path) -> None:
    kept = spool.Spool(parent=str(tmp_path))
    kept.keep([changes.Restore(None, changes.FileImage(b"x"))])  # type: ignore[arg-type]
    assert kept.folder is not None and os.path.isdir(kept.folder)
    folder = kept.folder
    spool.close_all()  # as the server does before it ends without its finalizers
    assert not os.path.exists(folder)
