"""The mount a path resolves into decides what it may do, however the path is spelt: through
the outer mount's name for it, its URL, a link to a folder or a file inside it, a link to the
outer root. Every writing tool of every profile and every writing verb of the ``vfs``
protocol, with every spelling, is refused and changes nothing. The same root configured twice
refuses to start instead of picking one of its two policies."""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jail.test_config import refusal
from mcp import Client

from vfs_mcp.errors import ReadOnly
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount, MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail
from vfs_mcp.profiles.results import error_of
from vfs_mcp.server.build import build_server
from vfs_mcp.settings import Settings
from vfs_mcp.transports.fsspec_protocol import JailFileSystem

pytestmark = pytest.mark.anyio

KEPT = "keep\n"
OTHER = "keep\nother\n"
DENY = ("secret/",)
READ_ONLY = frozenset({"READ_ONLY"})
HIDDEN = frozenset({"NOT_FOUND", "ACCESS_DENIED"})


@dataclass(frozen=True)
class Spelling:
    """A way to a read-only or denied place: a file there, a new name there, a folder there."""

    label: str
    existing: str
    new: str | None = None
    folder: str | None = None
    refused: frozenset[str] = READ_ONLY

    def reaches(self, wants: set[str] | frozenset[str], follows: bool) -> bool:
        """Whether a call taking the paths ``wants`` goes where this spelling leads: a
        spelling that is itself a link only for calls that follow it (removing or moving a
        link acts on the link, which is allowed)."""
        return self.new is not None or (follows and wants == {"existing"})


LOCAL = (
    Spelling("the inner mount's name in the outer one", "ro/s1.txt", "ro/new.txt", "ro/sub"),
    Spelling("a detour through '..'", "./ro/../ro/s1.txt", "./ro/../ro/new.txt", "./ro/../ro/sub"),
    Spelling("the host path", "{outer}/ro/s1.txt", "{outer}/ro/new.txt", "{outer}/ro/sub"),
    Spelling("a folder link into the read-only mount", "rolink/s1.txt", "rolink/new.txt", "rolink/sub"),
    Spelling("a link to the outer root", "self/ro/s1.txt", "self/ro/new.txt", "self/ro"),
    Spelling("a file link into the read-only mount", "rofile"),
    Spelling("a folder link into a denied folder", "denylink/key.txt", "denylink/new.txt", "denylink/inner", HIDDEN),
    Spelling("a file link to a denied file", "denyfile", refused=HIDDEN),
)
MEMORY = (
    Spelling("the inner mount's name in the outer one", "ro/s1.txt", "ro/new.txt", "ro/sub"),
    Spelling(
        "the outer mount's URL", "memory://{outer}/ro/s1.txt", "memory://{outer}/ro/new.txt", "memory://{outer}/ro/sub"
    ),
)

OUTER_FILES = ("w.txt", "dir/f.txt")
INNER_FILES = ("s1.txt", "sub/deep.txt")
LINKS = {"rolink": "ro", "rofile": "ro/s1.txt", "self": ".", "denylink": "secret", "denyfile": "secret/key.txt"}
_names = itertools.count()


@dataclass
class Nest:
    """A writable mount holding a read-only one (``ro``) and a folder the deny list hides
    (``secret``); on local disk, links into both."""

    mounts: list[Mount]
    outer: str

    @property
    def local(self) -> bool:
        return self.mounts[0].is_local

    def path(self, spelling: str | None) -> str:
        assert spelling is not None
        return spelling.format(outer=self.outer)

    def whole(self, spelling: str | None) -> str:
        """The path spelt from the outer mount's root (a host path or a URL)."""
        path = self.path(spelling)
        return path if path.startswith("/") or "://" in path else self.mounts[0].display(path)

    def fill(self) -> None:
        """Make the stores hold what they held at first, and only that (the mounts' roots stay)."""
        if not self.local:
            for mount, files in zip(self.mounts, (OUTER_FILES, INNER_FILES), strict=True):
                mount.fs.store.clear()
                del mount.fs.pseudo_dirs[len(mount.backend.root.split("/")) :]  # keep the folders to the root
                for rel in files:
                    mount.fs.pipe_file(mount.fs_path(rel), (OTHER if rel == "w.txt" else KEPT).encode())
            return
        outer = Path(self.outer)
        (outer / "ro").mkdir(exist_ok=True)
        for entry in [*outer.iterdir(), *(outer / "ro").iterdir()]:
            if entry != outer / "ro":
                entry.unlink() if entry.is_symlink() or entry.is_file() else shutil.rmtree(entry)
        files = [*OUTER_FILES, *(f"ro/{rel}" for rel in INNER_FILES), "secret/key.txt", "secret/inner/k.txt"]
        for rel in files:
            (outer / rel).parent.mkdir(parents=True, exist_ok=True)
            (outer / rel).write_text(OTHER if rel == "w.txt" else KEPT)
        for name, to in LINKS.items():
            os.symlink(to, outer / name)

    def tree(self) -> dict[str, str]:
        """Everything in the stores, links as links: a file's sha256, a link's target."""
        if not self.local:
            files = {f"{m.url} {k}": sha(v.getvalue()) for m in self.mounts for k, v in m.fs.store.items()}
            return files | {f"{m.url} {d}": "folder" for m in self.mounts for d in m.fs.pseudo_dirs}
        found: dict[str, str] = {}
        for folder, dirs, files in os.walk(self.outer):
            for name in dirs + files:
                path = Path(folder, name)
                if path.is_symlink():
                    found[str(path)] = "-> " + os.readlink(path)
                else:
                    found[str(path)] = "folder" if path.is_dir() else sha(path.read_bytes())
        return found


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_nest(kind: str, tmp_path: Path) -> Nest:
    if kind == "local":
        outer = tmp_path / "x"
        (outer / "ro").mkdir(parents=True)
        specs = [MountSpec(str(outer)), MountSpec(str(outer / "ro"), read_only=True)]
        name = str(outer)
    else:
        name = f"nest{next(_names)}"
        specs = [MountSpec(f"memory://{name}"), MountSpec(f"memory://{name}/ro", read_only=True)]
    nest = Nest([open_mount(spec) for spec in specs], name)
    nest.fill()
    return nest


@pytest.fixture(params=["local", "memory"])
def nest(request: pytest.FixtureRequest, tmp_path: Path) -> Nest:
    return make_nest(request.param, tmp_path)


def spellings(nest: Nest) -> tuple[Spelling, ...]:
    return LOCAL if nest.local else MEMORY


# -- every writing tool -----------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A writing tool call with ``{existing}``, ``{new}`` or ``{folder}`` in its arguments;
    ``follows``: it acts on what a final link points to (else on the link itself)."""

    profile: str
    tool: str
    arguments: dict[str, Any]
    follows: bool = True

    def wants(self) -> set[str]:
        text = repr(self.arguments)
        return {slot for slot in ("existing", "new", "folder") if "{" + slot + "}" in text}

    def filled(self, nest: Nest, spelling: Spelling) -> dict[str, Any]:
        slots = {slot: nest.path(getattr(spelling, slot)) for slot in self.wants()}

        def fill(value: Any) -> Any:
            if isinstance(value, str):
                return value.format(**slots)
            if isinstance(value, list):
                return [fill(one) for one in value]
            if isinstance(value, dict):
                return {key: fill(one) for key, one in value.items()}
            return value

        return {key: fill(value) for key, value in self.arguments.items()}


def patch(*lines: str) -> dict[str, str]:
    return {"patch": "*** Begin Patch\n" + "\n".join(lines) + "\n*** End Patch\n"}


EDIT = [{"oldText": "keep", "newText": "lost"}]
CALLS = (
    Call("default", "write_file", {"path": "{new}", "content": "lost\n"}),
    Call("default", "write_file", {"path": "{existing}", "content": "lost\n"}),
    Call("default", "write_file", {"path": "{existing}", "content": "lost\n", "append": True}),
    Call("default", "edit_file", {"path": "{existing}", "edits": EDIT}),
    Call(
        "default",
        "edit_file_at_line",
        {"path": "{existing}", "line_edits": [{"line_number": 1, "action": "replace", "content": "lost"}]},
    ),
    Call("default", "apply_patch", patch("*** Update File: {existing}", "-keep", "+lost")),
    Call("default", "apply_patch", patch("*** Add File: {new}", "+lost")),
    Call("default", "apply_patch", patch("*** Delete File: {existing}"), follows=False),
    Call("default", "apply_patch", patch("*** Update File: w.txt", "*** Move to: {new}", "-keep", "+lost")),
    Call("default", "create_directory", {"path": "{new}"}),
    Call("default", "delete_path", {"path": "{existing}"}, follows=False),
    Call("default", "delete_path", {"path": "{folder}", "recursive": True}, follows=False),
    Call("default", "move_file", {"source": "{existing}", "destination": "moved.txt"}, follows=False),
    Call("default", "move_file", {"source": "{folder}", "destination": "moved"}, follows=False),
    Call("default", "move_file", {"source": "w.txt", "destination": "{new}"}),
    Call("default", "move_file", {"source": "w.txt", "destination": "{existing}", "overwrite": True}),
    Call("default", "move_file", {"source": "dir", "destination": "{new}"}),
    Call("default", "copy_file", {"source": "w.txt", "destination": "{new}"}),
    Call("default", "copy_file", {"source": "w.txt", "destination": "{existing}", "overwrite": True}),
    Call("default", "copy_file", {"source": "dir", "destination": "{new}", "recursive": True}),
    Call("fs", "fs_create_file", {"path": "{new}", "content": "lost\n"}),
    Call("fs", "fs_create_file", {"path": "{existing}", "content": "lost\n", "overwrite": True}),
    Call("fs", "fs_overwrite_file", {"path": "{existing}", "content": "lost\n"}),
    Call("fs", "fs_delete_path", {"path": "{existing}"}, follows=False),
    Call("fs", "fs_delete_path", {"path": "{folder}", "recursive": True}, follows=False),
    Call("fs", "fs_copy_path", {"from": "w.txt", "to": "{new}"}),
    Call("fs", "fs_copy_path", {"from": "w.txt", "to": "{existing}", "overwrite": True}),
    Call("fs", "fs_move_path", {"from": "w.txt", "to": "{new}"}),
    Call("fs", "fs_move_path", {"from": "{existing}", "to": "moved.txt"}, follows=False),
    Call("ide", "file_save", {"uri": "{existing}", "content": "lost\n"}),
    Call("ide", "file_save", {"uri": "{new}", "content": "lost\n", "create_if_not_exists": True}),
    Call("official", "write_file", {"path": "{new}", "content": "lost\n"}),
    Call("official", "write_file", {"path": "{existing}", "content": "lost\n"}),
    Call("official", "edit_file", {"path": "{existing}", "edits": EDIT}),
    Call("official", "create_directory", {"path": "{new}"}),
    Call("official", "move_file", {"source": "{existing}", "destination": "moved.txt"}, follows=False),
    Call("official", "move_file", {"source": "w.txt", "destination": "{new}"}),
)
SERVED = (("default", "fs", "ide"), ("official",))


async def test_no_writing_tool_changes_a_read_only_or_denied_place_however_its_path_is_spelt(nest: Nest) -> None:
    failures: list[str] = []
    ran = 0
    for served in SERVED:
        server = build_server(nest.mounts, Settings(profiles=served, deny=DENY))
        async with Client(server) as client:  # type: ignore[arg-type]
            for call in (c for c in CALLS if c.profile in served):
                for spelling in (s for s in spellings(nest) if s.reaches(call.wants(), call.follows)):
                    arguments = call.filled(nest, spelling)
                    before = nest.tree()
                    result = await client.call_tool(call.tool, arguments)
                    ran += 1
                    where = f"{call.profile} {call.tool}({arguments}) through {spelling.label}"
                    error = error_of(result) or {}
                    if error.get("code") not in spelling.refused:
                        text = result.content[0].text if result.content else ""
                        failures.append(f"{where}: {error.get('code') or 'succeeded'} {text:.160}")
                    if nest.tree() != before:
                        failures.append(f"{where} changed the stores")
                        nest.fill()  # so that one way through does not hide the next
    assert ran >= len(CALLS)
    assert not failures, f"{len(failures)} of {ran} calls got through:\n" + "\n".join(failures)


# -- every writing verb of the vfs protocol ------------------------------------------------------


@dataclass(frozen=True)
class Verb:
    label: str
    call: Callable[[JailFileSystem, dict[str, str]], Any]
    wants: frozenset[str]
    follows: bool = True


def opened(fs: JailFileSystem, path: str, mode: str) -> None:
    with fs.open(path, mode) as handle:
        handle.write(b"lost\n")


def verb(label: str, call: Callable[[JailFileSystem, dict[str, str]], Any], *wants: str, follows: bool = True) -> Verb:
    return Verb(label, call, frozenset(wants), follows)


VERBS = (
    verb("pipe_file(new)", lambda fs, p: fs.pipe_file(p["new"], b"lost\n"), "new"),
    verb("pipe_file(existing)", lambda fs, p: fs.pipe_file(p["existing"], b"lost\n"), "existing"),
    verb("open(new, wb)", lambda fs, p: opened(fs, p["new"], "wb"), "new"),
    verb("open(existing, wb)", lambda fs, p: opened(fs, p["existing"], "wb"), "existing"),
    verb("open(existing, ab)", lambda fs, p: opened(fs, p["existing"], "ab"), "existing"),
    verb("touch(new)", lambda fs, p: fs.touch(p["new"]), "new"),
    verb("makedirs(new)", lambda fs, p: fs.makedirs(p["new"]), "new"),
    verb("mkdir(new)", lambda fs, p: fs.mkdir(p["new"]), "new"),
    verb("rm_file(existing)", lambda fs, p: fs.rm_file(p["existing"]), "existing", follows=False),
    verb("rm(existing)", lambda fs, p: fs.rm(p["existing"]), "existing", follows=False),
    verb("rm([existing])", lambda fs, p: fs.rm([p["existing"]]), "existing", follows=False),
    verb("rm(folder, recursive)", lambda fs, p: fs.rm(p["folder"], recursive=True), "folder", follows=False),
    verb("rmdir(folder)", lambda fs, p: fs.rmdir(p["folder"]), "folder", follows=False),
    verb("cp_file(w.txt, new)", lambda fs, p: fs.cp_file(p["w"], p["new"]), "new"),
    verb("cp_file(w.txt, existing)", lambda fs, p: fs.cp_file(p["w"], p["existing"]), "existing"),
    verb("copy([w.txt], [new])", lambda fs, p: fs.copy([p["w"]], [p["new"]]), "new"),
    verb(
        "copy(dir, new, recursive)", lambda fs, p: fs.copy(p["dir"], p["new"], recursive=True, on_error="raise"), "new"
    ),
    verb("copy(existing, new)", lambda fs, p: fs.copy(p["existing"], p["new"]), "existing", "new"),
    verb("mv(w.txt, new)", lambda fs, p: fs.mv(p["w"], p["new"]), "new"),
    verb("mv(w.txt, existing)", lambda fs, p: fs.mv(p["w"], p["existing"]), "existing"),
    verb("mv([w.txt], new)", lambda fs, p: fs.mv([p["w"]], p["new"]), "new"),
    verb("mv(existing, moved)", lambda fs, p: fs.mv(p["existing"], p["moved"]), "existing", follows=False),
    verb("mv([existing], moved)", lambda fs, p: fs.mv([p["existing"]], p["moved"]), "existing", follows=False),
    verb(
        "mv(folder, moved, recursive)",
        lambda fs, p: fs.mv(p["folder"], p["moved"], recursive=True),
        "folder",
        follows=False,
    ),
    verb("mv(existing, new)", lambda fs, p: fs.mv(p["existing"], p["new"]), "existing", "new", follows=False),
    verb("put_file(new)", lambda fs, p: fs.put_file(p["local"], p["new"]), "new"),
    verb("put([local], [existing])", lambda fs, p: fs.put([p["local"]], [p["existing"]]), "existing"),
)


def test_no_writing_verb_of_the_vfs_protocol_changes_a_read_only_or_denied_place(nest: Nest, tmp_path: Path) -> None:
    upload = tmp_path / "upload.txt"
    upload.write_text("lost\n")
    fs = JailFileSystem(jailed=JailedFS(Jail(nest.mounts, deny=DENY)), skip_instance_cache=True)
    failures: list[str] = []
    ran = 0
    for spelling in spellings(nest):
        for one in (v for v in VERBS if spelling.reaches(v.wants, v.follows)):
            # fsspec takes a relative path's parent as "/" (put_file makes it): whole paths here.
            paths = {slot: nest.whole(getattr(spelling, slot)) for slot in one.wants}
            paths |= {name: nest.whole(rel) for name, rel in (("w", "w.txt"), ("dir", "dir"), ("moved", "moved"))}
            paths["local"] = str(upload)
            before = nest.tree()
            ran += 1
            where = f"{one.label} through {spelling.label} ({paths})"
            try:
                one.call(fs, paths)
            except (PermissionError, FileNotFoundError) as exc:
                if spelling.refused is READ_ONLY and exc.errno != errno.EROFS:
                    failures.append(f"{where}: {type(exc).__name__} {exc}, not a read-only refusal (EROFS)")
            except Exception as exc:
                failures.append(f"{where}: {type(exc).__name__} {exc}")
            else:
                failures.append(f"{where}: succeeded")
            if nest.tree() != before:
                failures.append(f"{where} changed the stores")
                nest.fill()
    assert ran >= len(VERBS)
    assert not failures, f"{len(failures)} of {ran} calls got through:\n" + "\n".join(failures)


@pytest.mark.parametrize("second", ["{root}", "{root}/", "file://{root}"])
def test_the_same_root_twice_in_a_config_refuses_to_start_naming_both(tmp_path: Path, second: str) -> None:
    text = f'[[mount]]\nroot = "{tmp_path}"\nread_only = true\n\n[[mount]]\nroot = "{second.format(root=tmp_path)}"\n'
    said = refusal(tmp_path, text)
    assert "[[mount]] 1" in said and "[[mount]] 2" in said and "same" in said


def test_a_mount_added_inside_another_decides_for_its_paths_from_then_on(tmp_path: Path) -> None:
    # The jail keeps its mounts deepest first, and each mount's inner ones, between calls: a
    # change of mounts (the client's roots) must be seen by the next path resolved.
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "a.txt").write_text(KEPT)
    outer = open_mount(MountSpec(str(tmp_path)))
    jail = Jail([outer])
    assert jail.resolve("ro/a.txt", write=True).mount is outer

    inner = open_mount(MountSpec(str(tmp_path / "ro"), read_only=True))
    jail.mounts = [outer, inner]

    assert jail.most_specific(jail.resolve("ro/a.txt")).mount is inner
    with pytest.raises(ReadOnly):
        jail.resolve("ro/a.txt", write=True)
    jail.mounts = [outer]
    assert jail.resolve("ro/a.txt", write=True).mount is outer
