"""A change's record as bytes: the steps that take the change back, with the before-images they
restore, in one object of the state store.

    b"VFSMCP1\\n" | header length (4 bytes, big-endian) | header (JSON) | the images' bytes

The header names the change (id, owner, tool, time: its place in the log is ``Summary.order``),
says whether it was made in one atomic step, and lists its steps; a file image in it points at
its bytes after the header (offset, size, sha256), or, for a file the change replaced on a local
mount, at the state store's name that keeps it by a hard link (``at``: name, size, sha256;
``linked.py``). Read back, such an image is a ``Stored`` image: its bytes are fetched from the
store, and checked, only when an undo restores it. Paths are kept as (mount URL, path inside):
a record is taken back only through a server that serves that mount.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vfs_mcp.changes.frozen import frozen
from vfs_mcp.changes.state.linked import IMAGES, NAME
from vfs_mcp.changes.steps import (
    Absent,
    DirImage,
    Expect,
    FileImage,
    Image,
    LinkImage,
    Remove,
    Rename,
    Restore,
    Step,
    Stored,
)
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Target

MAGIC = b"VFSMCP1\n"
_LENGTH = struct.Struct(">I")
HEAD = len(MAGIC) + _LENGTH.size
FIRST_READ = 64 * 1024
"""Bytes read to find a header (most fit; a longer one costs a second read)."""


IMAGE_NAME = re.compile(f"{IMAGES}/{NAME.pattern}")
"""How the name of an image kept by hard link is spelt (``linked.Links``)."""


class Corrupt(ValueError):
    """Bytes that are not a whole record."""


@dataclass
class Record:
    """One change: how to take it back (``steps``, in the order to run them)."""

    id: str
    owner: str
    tool: str
    created: float
    steps: list[Step]
    atomic: bool = True
    """Made in one step, which a crash cannot cut in two: nothing to finish after one."""
    finish: list[Step] = field(default_factory=list)
    """Steps of the change it could not keep images for (its last): after a crash that cut it
    short once every earlier step was made, they are finished rather than taken back."""
    size: int = 0
    """Bytes of the images it keeps."""
    drops: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Nodes of pending layers (by layer URL, then path: as ``Node.dump`` spells them) the change
    makes the store hold (``review --apply``): dropped from their layers once its steps are
    made, as part of it, and again by recovery where a crash cut it short after them."""
    undoes: list[str] = field(default_factory=list)
    """The changes it took back (an undo: its steps make them again), newest first."""
    checkpoint: str | None = None
    """A checkpoint's name (a change with no steps: a point of the timeline)."""
    mounts: list[str] = field(default_factory=list)
    """The mounts a checkpoint covers (a change with steps names its mounts in them)."""


def encode(record: Record) -> bytes:
    blobs = _Blobs()
    header = {
        "id": record.id,
        "owner": record.owner,
        "tool": record.tool,
        "created": record.created,
        "atomic": record.atomic,
        "steps": [_step(op, blobs) for op in record.steps],
        "finish": [_step(op, blobs) for op in record.finish],
        "size": blobs.size,
    }
    if record.drops:
        header["drops"] = record.drops
    if record.undoes:
        header["undoes"] = record.undoes
    if record.checkpoint is not None:
        header["checkpoint"] = record.checkpoint
    if record.mounts:
        header["mounts"] = record.mounts
    text = json.dumps(header, separators=(",", ":")).encode()
    return b"".join([MAGIC, _LENGTH.pack(len(text)), text, *blobs.parts])


class _Blobs:
    """The images' bytes a record holds after its header, in the order the header names them.

    Plain functions fill it, not closures of ``encode``: a nested function that calls itself
    (a folder's image holds its entries') is a reference cycle, which kept the images' bytes
    until the cycle collector ran (rarely, in the server: ``GC_FIRST_GENERATION``)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, data: bytes, digest: Callable[[], str] | None = None) -> list[Any]:
        """Where ``data`` lies among the blobs: [offset, length, sha256]."""
        self.parts.append(data)
        self.size += len(data)
        return [self.size - len(data), len(data), digest() if digest is not None else hashlib.sha256(data).hexdigest()]


def _image(value: Image, blobs: _Blobs) -> dict[str, Any]:
    if isinstance(value, FileImage) and value.kept is not None:
        digest = value.digest() if value.digest is not None else hashlib.sha256(value.data).hexdigest()
        return {"k": "file", "at": [value.kept, len(value.data), digest], "mode": value.mode}
    if isinstance(value, FileImage):
        return {"k": "file", "blob": blobs.add(value.data, value.digest), "mode": value.mode}
    if isinstance(value, Stored):
        return {"k": "file", "blob": blobs.add(value.read()), "mode": value.mode}
    if isinstance(value, LinkImage):
        return {"k": "link", "to": value.points_to}
    if isinstance(value, DirImage):
        return {"k": "dir", "mode": value.mode, "inside": [[rel, _image(inner, blobs)] for rel, inner in value.inside]}
    return {"k": "absent"}


def _step(op: Step, blobs: _Blobs) -> dict[str, Any]:
    if isinstance(op, Restore):
        return {
            "t": "restore",
            "at": _target(op.target),
            "image": _image(op.image, blobs),
            "expect": _expect(op.expect),
        }
    if isinstance(op, Remove):
        return {"t": "remove", "at": _target(op.target), "expect": _expect(op.expect), "recursive": op.recursive}
    if isinstance(op, Rename):
        return {
            "t": "rename",
            "from": _target(op.source),
            "to": _target(op.dest),
            "expect": _expect(op.expect),
            "dest_expect": _expect(op.dest_expect),
        }
    raise TypeError(f"a record keeps steps that take a change back, not {type(op).__name__}")


def header_size(first: bytes) -> int:
    """Bytes of a record's start that hold its whole header (from its first bytes)."""
    if len(first) < HEAD or not first.startswith(MAGIC):
        raise Corrupt("not a change record")
    return HEAD + int(_LENGTH.unpack_from(first, len(MAGIC))[0])


def decode(
    head: bytes,
    mount_of: Callable[[str], Mount],
    fetch: Callable[[int, int], bytes],
    base: int | None = None,
    kept: Callable[[str, int, int], bytes] | None = None,
) -> Record:
    """The record whose first bytes (its whole header at least) are ``head``; ``mount_of``
    gives the mount of a URL (NOT_FOUND when it is not served), ``fetch(start, end)`` reads the
    record's bytes for the images (``base``: where they start, the header's end), ``kept(name,
    start, end)`` those of an image the state store keeps under a name of its own (``images/``)."""
    header = _header(head)
    start = header_size(head) if base is None else base

    def target(spelt: list[str]) -> Target:
        return Target(mount_of(spelt[0]), spelt[1])

    def image(value: dict[str, Any]) -> Image:
        kind = value["k"]
        if kind == "file" and "at" in value:
            name, size, digest = value["at"]
            if kept is None or not isinstance(name, str) or not IMAGE_NAME.fullmatch(name):
                raise ValueError(f"an image kept at {str(name)[:40]!r}, not a name of the state store's images")
            return Stored(functools.partial(kept, name), 0, size, digest, value.get("mode"))
        if kind == "file":
            offset, size, digest = value["blob"]
            return Stored(fetch, start + offset, size, digest, value.get("mode"))
        if kind == "link":
            return LinkImage(value["to"])
        if kind == "dir":
            return DirImage(value.get("mode"), tuple((rel, image(inner)) for rel, inner in value["inside"]))
        return Absent()

    def step(value: dict[str, Any]) -> Step:
        kind = value["t"]
        if kind == "restore":
            return Restore(target(value["at"]), image(value["image"]), _expected(value["expect"]))
        if kind == "remove":
            return Remove(target(value["at"]), _expected(value["expect"]), recursive=value["recursive"])
        return Rename(
            target(value["from"]), target(value["to"]), _expected(value["expect"]), _expected(value["dest_expect"])
        )

    try:
        return Record(
            id=header["id"],
            owner=header["owner"],
            tool=header["tool"],
            created=header["created"],
            steps=[step(item) for item in header["steps"]],
            atomic=header["atomic"],
            finish=[step(item) for item in header.get("finish", [])],
            size=header["size"],
            drops=_drops(header.get("drops", {})),
            undoes=[str(item) for item in header.get("undoes", [])],
            checkpoint=header.get("checkpoint"),
            mounts=[str(item) for item in header.get("mounts", [])],
        )
    except (KeyError, TypeError, ValueError) as err:
        raise Corrupt(f"a change record with a header this version cannot read ({err!r})") from None


def _drops(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or not all(
        isinstance(url, str) and isinstance(nodes, dict) and all(isinstance(rel, str) for rel in nodes)
        for url, nodes in value.items()
    ):
        raise ValueError("its layer drops are not layers of nodes by path")
    return value


def _header(head: bytes) -> dict[str, Any]:
    end = header_size(head)
    if len(head) < end:
        raise Corrupt("a change record cut short")
    try:
        header: dict[str, Any] = json.loads(head[HEAD:end])
    except (ValueError, RecursionError) as err:
        raise Corrupt(f"a change record whose header is not JSON ({err})") from None
    return header


@frozen
class Summary:
    """What a record's header says of its change, without its steps' images."""

    id: str
    owner: str
    created: float
    mounts: tuple[str, ...]
    """The mount URLs its steps name (to tell whether a server can take it back)."""

    @property
    def order(self) -> tuple[float, str, str]:
        """The change's place in the log: when it began to commit (after it planned on what it
        read, before its first step), on its instance's clock, which never gives one instance
        the same time twice; then the instance, then the id. A change that read what another
        left began after that one ended: on clocks that agree, a later change of a file is later
        here. Clocks that disagree by more than the time between two changes of one file can
        put them the other way round; an undo of both then finds a file not as the change it
        takes back left it, and refuses (CONFLICT)."""
        return (self.created, self.owner, self.id)


def summary(head: bytes) -> Summary:
    """The summary of the record whose first bytes (its whole header at least) are ``head``."""
    header = _header(head)
    found: dict[str, None] = {}
    try:
        for url in header.get("mounts", []):
            found[str(url)] = None
        for item in [*header["steps"], *header.get("finish", [])]:
            for key in ("at", "from", "to"):
                if key in item:
                    found[item[key][0]] = None
        return Summary(str(header["id"]), str(header["owner"]), float(header["created"]), tuple(found))
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise Corrupt(f"a change record with a header this version cannot read ({err!r})") from None


def _target(target: Target) -> list[str]:
    return [target.mount.url, target.rel]


def _expect(expect: Expect) -> dict[str, Any]:
    spelt: dict[str, Any] = {"state": expect.state}
    if expect.token is not None:
        spelt["token"] = expect.token
    digest = expect.digest
    if digest is None and expect.content is not None:
        digest = hashlib.sha256(expect.content).hexdigest()
    if digest is not None:
        spelt["digest"] = digest
    if expect.fingerprint is not None:
        spelt["fingerprint"] = [list(item) for item in expect.fingerprint]
    if expect.points_to is not None:
        spelt["points_to"] = expect.points_to
    return spelt


def _expected(value: dict[str, Any]) -> Expect:
    fingerprint = value.get("fingerprint")
    return Expect(
        value["state"],
        token=value.get("token"),
        digest=value.get("digest"),
        fingerprint=tuple(tuple(item) for item in fingerprint) if fingerprint is not None else None,  # type: ignore[misc]
        points_to=value.get("points_to"),
    )
