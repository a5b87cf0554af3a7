"""The state store's local folder made private all the way up: 0700 whatever the umask, in
folders no other user can write (as ssh wants ``~/.ssh``), refused naming the folder and the fix
otherwise. Making folders is writing: it lives in the write path."""

from __future__ import annotations

import errno
import os
import stat

from vfs_mcp.jail.state_place import StateUnavailable


def private_folder(path: str) -> str:
    """``path`` made or checked, and its real path: a real folder of this user that no one
    else may enter (0700, whatever the umask; each folder made on the way too), in folders no
    other user can write up to the first that is root's or this user's and shut to others
    (as ssh wants ``~/.ssh``). ``StateUnavailable`` naming the folder and the fix otherwise:
    another user who can rename a folder on the way can take the store's history away, or
    put a folder of theirs in its place."""
    path = os.path.abspath(path)
    missing: list[str] = []
    existing = path
    while not os.path.lexists(existing):
        existing, name = os.path.split(existing)
        missing.append(name)
    if missing:
        _check_up(os.path.realpath(existing))  # before making anything in it
    for name in reversed(missing):
        existing = os.path.join(existing, name)
        try:
            os.mkdir(existing, 0o700)
        except FileExistsError:
            continue  # made meanwhile: checked below as any folder found
        os.chmod(existing, 0o700)  # a umask can take bits away from mkdir's, never the other way
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise StateUnavailable(errno.ENOTDIR, f"the state folder {path} is not a folder (a link or a file)")
    if info.st_uid != os.geteuid():
        raise StateUnavailable(
            errno.EPERM, f"the state folder {path} belongs to another user; remove it, or pass --state elsewhere"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)  # ours: made private, whatever umask made it
    real = os.path.realpath(path)
    _check_up(os.path.dirname(real))
    return real


def _check_up(folder: str) -> None:
    """``folder`` and the folders above it, up to the first that is root's or this user's and
    that other users cannot write: none of them another user's, none writable by another user
    (a sticky folder, like ``/tmp``, lets no one rename what is not theirs)."""
    me = os.geteuid()
    while True:
        info = os.stat(folder)
        if info.st_uid not in (0, me):
            raise StateUnavailable(
                errno.EPERM,
                f"the folder {folder}, above the state store, belongs to another user (uid {info.st_uid}), who "
                "could move the store away or put theirs in its place; pass --state with a folder of your own",
            )
        open_to_others = info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX
        if open_to_others:
            raise StateUnavailable(
                errno.EPERM,
                f"the folder {folder}, above the state store, is writable by other users, who could move the "
                f"store away or put theirs in its place; run `chmod go-w {folder}`, or pass --state elsewhere",
            )
        if info.st_uid == 0 or not info.st_mode & 0o022:
            return
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent
