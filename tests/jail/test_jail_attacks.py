"""Escape attempts against every path-taking tool (docs/security.md; the codes of docs/protocol.md, "Errors").

Each table row is one attack path. A table test (one per table and backend: building an
S3 sandbox costs about a second, so rows are looped, not parametrised) sends every row to
every path-taking tool slot — read_file, read_multiple_files, write_file (plain and
append), create_directory, list_directory, get_file_info, move_file source and
destination, copy_file source and destination, delete_path, change_directory — and
collects, per row and slot, every way the jail fell short:

- the refusal: the right code in ``structured_content["error"]["code"]`` and a text that
  starts with ``CODE: ``; read_multiple_files reports it per file without failing the call;
- no leak: neither the canary bytes (as text or base64) nor the host path of anything
  outside the mount (outside folder, sibling prefix, home) appears in the result, unless
  the caller typed it;
- no effect: a snapshot of everything the test can see (host tmp dir, the memory stores,
  the test buckets) is identical after each slot that can change it (a refused call
  changes nothing, inside or outside); change_directory leaves the working directory alone.

The canaries (``outside/secret.txt``, the sibling prefixes, another bucket, another memory
store, ``~/secret.txt`` with HOME pointed into the tmp dir) are checked byte for byte at the
end of every table. Paths that would hit the real host if the jail broke (``/etc/passwd``,
``/``) go only to slots that cannot write.
"""

from __future__ import annotations

import base64
import os
import shutil
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import pytest
from conftest import EMULATED, OBJECT_STORES, every_store, store_params

from vfs_mcp.jail.resolve import Jail
from vfs_mcp.profiles.results import data_of, error_of

pytestmark = [pytest.mark.anyio, every_store]

PWNED = "pwned through the jail\n"
INSIDE_FILES = {"inside.txt": b"inside\n", "victim.txt": b"victim\n", "sub/file.txt": b"sub\n"}
LINK_FILES = {"tree/keep.txt": b"keep\n"}
# Local symlinks made inside the mount (targets are formatted with the arena's placeholders).
LINKS = {
    "file_out": "{outside}/secret.txt",
    "dir_out": "{outside}",
    "dangling_out": "{outside}/new.txt",
    "dangling_dir_out": "{outside}/newdir",
    "up": "..",
    "evil_rel": "../app_evil",
    "hop": "dir_out",
    "file_in": "sub/file.txt",
    "dir_in": "sub",
    "loop": "loop",
    "loop_a": "loop_b",
    "loop_b": "loop_a",
    "tree/link_out": "{outside}",
    "tree/file_link_out": "{outside}/secret.txt",
}
GLOBAL_MEMORY_CANARY = "/other/secret.txt"  # in fsspec's global memory store: memory://other is never mounted
PASSWD_MARK = "root:x:0:0"


# -- the arena: a sandbox plus everything outside it that an escape could touch ---------------


@dataclass
class Arena:
    sb: Any  # conftest.Sandbox
    tmp: Path
    home: Path
    canary: bytes
    subs: dict[str, str]
    forbidden: list[str]
    links: bool = False
    bucket: str = ""
    mname: str = ""
    extra_canaries: dict[str, Callable[[], bytes]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.sb.kind)

    @property
    def outside(self) -> Path:
        return Path(self.sb.outside)

    def fmt(self, template: str) -> str:
        return template.format(**self.subs)

    def host(self, rel: str) -> str:
        """Host path of a mount-relative path (local only)."""
        return os.path.join(self.sb.mount.backend.root, rel)

    # -- layout ------------------------------------------------------------------------

    def layout(self) -> None:
        """(Re)create the files and links every attack starts from."""
        files = {**INSIDE_FILES, **(LINK_FILES if self.links else {})}
        for rel, data in files.items():
            self.sb.put(rel, data)
        if self.links:
            for rel, target in LINKS.items():
                path = self.host(rel)
                if os.path.lexists(path):
                    if os.path.islink(path) and os.readlink(path) == self.fmt(target):
                        continue
                    _remove_host(path)
                os.symlink(self.fmt(target), path)

    def reset_inside(self) -> None:
        """Wipe the mount and lay it out again (after an attack that changed something)."""
        fs, root = self.sb.mount.fs, self.sb.mount.backend.root
        if self.kind == "local":
            for name in os.listdir(root):
                _remove_host(os.path.join(root, name))
        elif self.kind == "memory":
            fs.rm(root, recursive=True)
            fs.makedirs(root, exist_ok=True)
        else:
            fs.invalidate_cache()
            for key in fs.find(root + "/"):
                fs.rm_file(key)
            fs.pipe_file(root + "/", b"")
            fs.invalidate_cache()
        self.layout()

    # -- what the test can see ---------------------------------------------------------

    def state(self, full: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
        """(inside, outside): every file, dir, link and object, split by whether it is in the mount.

        ``full`` adds the other bucket (one more S3 listing; checked per table, not per call).
        """
        inside: dict[str, Any] = {}
        outside: dict[str, Any] = {}
        for dirpath, dirnames, filenames in os.walk(self.tmp):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, self.tmp)
                if os.path.islink(path):
                    value: Any = ("link", os.readlink(path))
                elif os.path.isdir(path):
                    value = ("dir",)
                else:
                    value = ("file", Path(path).read_bytes())
                in_mount = self.kind == "local" and (rel == "app" or rel.startswith("app/"))
                (inside if in_mount else outside)[f"host:{rel}"] = value
        shared = fsspec.filesystem("memory")
        for key, handle in list(shared.store.items()):
            outside[f"memory-global:{key}"] = ("file", bytes(handle.getvalue()))
        for key in list(shared.pseudo_dirs):
            outside[f"memory-global:{key}/"] = ("dir",)
        if self.kind == "memory":
            fs, root = self.sb.mount.fs, self.sb.mount.backend.root
            items = [(k, ("file", bytes(v.getvalue()))) for k, v in list(fs.store.items())]
            items += [(f"{d}/", ("dir",)) for d in list(fs.pseudo_dirs)]
            for key, value in items:
                in_mount = key == root or key.startswith(root + "/")
                (inside if in_mount else outside)[f"memory:{key}"] = value
        if self.kind in OBJECT_STORES:
            fs, root, backend = self.sb.mount.fs, self.sb.mount.backend.root, self.sb.mount.backend
            fs.invalidate_cache()
            for bucket in (self.bucket, f"{self.bucket}-other") if full else (self.bucket,):
                for key, info in fs.find(bucket, detail=True).items():
                    value = ("object", info.get("size"), backend.version_token(info))
                    (inside if key.startswith(root + "/") else outside)[f"s3:{key}"] = value
        return inside, outside

    def buckets(self) -> list[str]:
        if self.kind not in OBJECT_STORES:
            return []
        self.sb.mount.fs.invalidate_cache()
        return sorted(self.sb.mount.fs.ls(""))

    def canary_failures(self) -> list[str]:
        """Every outside canary must still hold exactly the canary bytes."""
        failures = []
        readers: dict[str, Callable[[], bytes]] = {
            str(self.outside / "secret.txt"): (self.outside / "secret.txt").read_bytes,
            str(self.home / "secret.txt"): (self.home / "secret.txt").read_bytes,
            "memory://other/secret.txt": lambda: fsspec.filesystem("memory").cat_file(GLOBAL_MEMORY_CANARY),
            **self.extra_canaries,
        }
        for name, read in readers.items():
            try:
                data = read()
            except Exception as exc:
                failures.append(f"canary {name} is gone ({type(exc).__name__})")
                continue
            if data != self.canary:
                failures.append(f"canary {name} changed: {data[:60]!r}")
        return failures


def _remove_host(path: str) -> None:
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
    else:
        shutil.rmtree(path)


def _build_arena(sb: Any, monkeypatch: pytest.MonkeyPatch, links: bool) -> Iterator[Arena]:
    outside = Path(sb.outside)
    tmp = outside.parent
    canary = (outside / "secret.txt").read_bytes()
    home = tmp / "home"
    home.mkdir()
    (home / "secret.txt").write_bytes(canary)
    monkeypatch.setenv("HOME", str(home))
    with zipfile.ZipFile(outside / "evil.zip", "w") as archive:
        archive.writestr("secret.txt", canary)
    shared = fsspec.filesystem("memory")
    shared.pipe_file(GLOBAL_MEMORY_CANARY, canary)

    root = sb.root
    forbidden = [str(outside), os.path.realpath(outside), str(home), os.path.realpath(home)]
    extra: dict[str, Callable[[], bytes]] = {}
    bucket, mname = "vfs-jail-test-bucket", "m-unmounted"
    if sb.kind == "local":
        leaf, sib = "app", "app_evil"
        sib_abs = str(tmp / "app_evil")
        deep_sib = "../" * 40 + str(tmp).lstrip("/") + "/app_evil"
        forbidden += [sib_abs, os.path.realpath(sib_abs)]
        extra[sib_abs + "/secret.txt"] = (tmp / "app_evil" / "secret.txt").read_bytes
    elif sb.kind == "memory":
        mname = root.split("://", 1)[1]
        leaf, sib = mname, f"{mname}-evil"
        sib_abs = f"memory://{sib}"
        deep_sib = "../" * 40 + sib
        fs = sb.mount.fs
        for name in (f"{mname}-evil", f"{mname}evil"):
            fs.pipe_file(f"/{name}/secret.txt", canary)
            extra[f"memory store /{name}/secret.txt"] = lambda name=name: fs.cat_file(f"/{name}/secret.txt")
        forbidden += [f"memory://{mname}-evil", f"memory://{mname}evil"]
    else:
        bucket = root.split("/")[2]
        leaf, sib = "pre", "pre-evil"
        sib_abs = f"{sb.mount.scheme}://{bucket}/pre-evil"
        deep_sib = "../" * 40 + f"{bucket}/pre-evil"
        fs = sb.mount.fs
        for key in (f"{bucket}/pre-evil/secret.txt", f"{bucket}-other/secret.txt"):
            extra[f"{sb.mount.scheme}://{key}"] = lambda key=key: (fs.invalidate_cache(), fs.cat_file(key))[1]
        forbidden += [f"{bucket}/pre-evil", f"{bucket}-other"]
    endpoint = "127.0.0.1:9"
    if sb.kind in OBJECT_STORES:
        endpoint = store_endpoint(sb.mount.fs).split("://")[-1]
    scheme = sb.mount.scheme if sb.kind in OBJECT_STORES else "s3"
    subs = {
        "root": root,
        "leaf": leaf,
        "sib": sib,
        "sib_abs": sib_abs,
        "deep_sib": deep_sib,
        "outside": str(outside),
        "tmp": str(tmp),
        "home": str(home),
        "bucket": bucket,
        "mname": mname,
        "endpoint": endpoint,
        "scheme": scheme,
        "SCHEME": scheme.upper(),
        "alias": ALIASES[scheme],
    }
    arena = Arena(
        sb=sb,
        tmp=tmp,
        home=home,
        canary=canary,
        subs=subs,
        forbidden=forbidden,
        links=links,
        bucket=bucket,
        mname=mname,
        extra_canaries=extra,
    )
    arena.layout()
    try:
        yield arena
    finally:
        if shared.exists(GLOBAL_MEMORY_CANARY):
            shared.rm(GLOBAL_MEMORY_CANARY)


ALIASES = {"s3": "s3a", "gs": "gcs", "az": "abfs"}
"""Another scheme of the same backend: a mount of one must not answer for the other."""


def store_endpoint(fs: Any) -> str:
    """The URL of the server behind an object-store filesystem (s3fs, gcsfs, adlfs)."""
    for found in (
        getattr(fs, "endpoint_url", None),
        getattr(fs, "client_kwargs", {}).get("endpoint_url"),
        getattr(fs, "_location", None),
        getattr(getattr(fs, "service_client", None), "primary_endpoint", None),
    ):
        if found:
            return str(found).rstrip("/")
    raise AssertionError(f"no endpoint known for {type(fs).__name__}")


@pytest.fixture
def arena(sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Arena]:
    yield from _build_arena(sandbox, monkeypatch, links=False)


@pytest.fixture
def local_arena(local_sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Arena]:
    yield from _build_arena(local_sandbox, monkeypatch, links=True)


# -- tool slots: where a path goes in each path-taking tool ------------------------------------


@dataclass(frozen=True)
class Slot:
    label: str
    tool: str
    args: Callable[[str, Arena], dict[str, Any]]
    writes: bool = False
    multi: bool = False
    acts_on_link: bool = False
    mutates: bool = False  # can change the store (the harness snapshots after it)  # resolves with follow=False: a final symlink is the object itself


SLOTS: tuple[Slot, ...] = (
    Slot("read_file", "read_file", lambda p, a: {"path": p}),
    Slot(
        "read_multiple_files", "read_multiple_files", lambda p, a: {"paths": [a.sb.path("inside.txt"), p]}, multi=True
    ),
    Slot("list_directory", "list_directory", lambda p, a: {"path": p, "include_hidden": True}),
    Slot("get_file_info", "get_file_info", lambda p, a: {"path": p}),
    Slot("change_directory", "change_directory", lambda p, a: {"path": p}),
    Slot(
        "copy_file(source)",
        "copy_file",
        lambda p, a: {"source": p, "destination": a.sb.path("copied_in")},
        mutates=True,
    ),
    Slot(
        "write_file",
        "write_file",
        lambda p, a: {"path": p, "content": PWNED, "create_dirs": True},
        writes=True,
        mutates=True,
    ),
    Slot(
        "write_file(append)",
        "write_file",
        lambda p, a: {"path": p, "content": PWNED, "append": True},
        writes=True,
        mutates=True,
    ),
    Slot("create_directory", "create_directory", lambda p, a: {"path": p}, writes=True, mutates=True),
    Slot(
        "move_file(source)",
        "move_file",
        lambda p, a: {"source": p, "destination": a.sb.path("moved_in")},
        writes=True,
        mutates=True,
        acts_on_link=True,
    ),
    Slot(
        "move_file(destination)",
        "move_file",
        lambda p, a: {"source": a.sb.path("victim.txt"), "destination": p, "overwrite": True},
        writes=True,
        mutates=True,
    ),
    Slot(
        "copy_file(destination)",
        "copy_file",
        lambda p, a: {"source": a.sb.path("victim.txt"), "destination": p, "overwrite": True},
        writes=True,
        mutates=True,
    ),
    Slot(
        "delete_path",
        "delete_path",
        lambda p, a: {"path": p, "recursive": True},
        writes=True,
        acts_on_link=True,
        mutates=True,
    ),
)
FOLLOWING_SLOTS = tuple(s for s in SLOTS if not s.acts_on_link)


def texts(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def file_text(result: Any) -> str:
    """What a read returned of the file: its first block (a line of metadata follows it)."""
    return str(getattr(result.content[0], "text", "")) if result.content else ""


def blob(result: Any) -> str:
    return texts(result) + "\n" + repr(data_of(result))


def error_code(result: Any) -> str | None:
    if not result.is_error:
        return None
    error = error_of(result) or {}
    return error.get("code") or f"<no code; text {texts(result)[:160]!a}>"


def refusal_failures(slot: Slot, path: str, result: Any, expected: str) -> list[str]:
    where = f"{slot.label}({path!r})"
    if slot.multi:
        if result.is_error:
            return [f"{where}: the whole call failed instead of one file: {texts(result)[:200]!a}"]
        files = (data_of(result) or {}).get("files") or []
        if len(files) != 2:
            return [f"{where}: expected 2 per-file results, got {ascii(files)[:200]}"]
        failures = []
        if not files[0].get("ok"):
            failures.append(f"{where}: the good path beside the attack failed: {ascii(files[0])[:200]}")
        code = (files[1].get("error") or {}).get("code")
        if code != expected:
            failures.append(f"{where}: expected per-file {expected}, got {code or 'success'}: {ascii(files[1])[:200]}")
        return failures
    code = error_code(result)
    if code != expected:
        return [f"{where}: expected {expected}, got {code or 'success'}: {texts(result)[:200]!a}"]
    if not texts(result).startswith(f"{code}: "):
        return [f"{where}: error text does not start with '{code}: ': {texts(result)[:200]!a}"]
    return []


def leak_failures(arena: Arena, label: str, path: str, result: Any) -> list[str]:
    seen = blob(result)
    failures = []
    text = arena.canary.decode().strip()
    if text in seen or base64.b64encode(arena.canary).decode() in seen:
        failures.append(f"{label}({path!r}): the outside canary content is in the result")
    if PASSWD_MARK in seen:
        failures.append(f"{label}({path!r}): host /etc/passwd content is in the result")
    for name in arena.forbidden:
        if name not in path and name in seen:
            failures.append(f"{label}({path!r}): the result names {name!r}, which lies outside the mount")
    return failures


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = [f"+{k}" for k in sorted(after.keys() - before.keys())]
    out += [f"-{k}" for k in sorted(before.keys() - after.keys())]
    out += [f"~{k}" for k in sorted(before.keys() & after.keys()) if before[k] != after[k]]
    return out


async def cwd_of(client: Any) -> str:
    result = await client.call_tool("get_working_directory", {})
    return str((data_of(result) or {}).get("current_dir"))


async def attack_every_slot(
    arena: Arena, client: Any, path: str, expected: str, slots: tuple[Slot, ...] = SLOTS
) -> list[str]:
    """Send ``path`` to each slot; returns every way the jail fell short (empty when it held).

    The store is snapshotted after each slot that can change it (a refused call must change
    nothing, inside or outside); a read-only slot's effect would show in the next snapshot.
    """
    failures: list[str] = []
    before_in, before_out = arena.state()
    since = "the start"
    for slot in slots:
        result = await client.call_tool(slot.tool, slot.args(path, arena))
        failures += refusal_failures(slot, path, result, expected)
        failures += leak_failures(arena, slot.label, path, result)
        if slot.tool == "change_directory":
            cwd = await cwd_of(client)
            if cwd != arena.sb.root:
                failures.append(f"{slot.label}({path!r}) moved the working directory to {cwd!a}")
                await client.call_tool("change_directory", {"path": arena.sb.root})
        if not slot.mutates and slot is not slots[-1]:
            continue
        after_in, after_out = arena.state()
        where = f"{slot.label}({path!r}) (or a read since {since})"
        if diff(before_out, after_out):
            failures.append(f"{where} changed things outside the mount: {diff(before_out, after_out)}")
        if diff(before_in, after_in):
            failures.append(f"{where} changed the mount although it was refused: {diff(before_in, after_in)}")
            arena.reset_inside()
            after_in, after_out = arena.state()
        before_in, before_out, since = after_in, after_out, slot.label
    return failures


async def run_tables(
    arena: Arena, table: tuple[Attack, ...], expected: str, slots: tuple[Slot, ...] | None = None
) -> None:
    """Every attack of ``table`` that applies to this backend, against every slot; one report."""
    failures: list[str] = []
    buckets = arena.buckets()
    _, before_out = arena.state(full=True)
    ran = 0
    async with arena.sb.client() as client:
        for attack in table:
            if arena.kind not in attack.kinds:
                continue
            ran += 1
            chosen = slots_for(attack, slots or SLOTS)
            found = await attack_every_slot(arena, client, arena.fmt(attack.template), expected, chosen)
            failures += [f"[{attack.id}] {line}" for line in found]
    assert ran, f"no attack of this table applies to {arena.kind}"
    _, after_out = arena.state(full=True)
    if diff(before_out, after_out):
        failures.append(f"outside changed during the table: {diff(before_out, after_out)}")
    failures += arena.canary_failures()
    if arena.buckets() != buckets:
        failures.append(f"the set of buckets changed: {sorted(set(arena.buckets()) ^ set(buckets))}")
    assert not failures, f"{len(failures)} ways the jail fell short:\n" + "\n".join(failures)


# -- attack tables ------------------------------------------------------------------------------

OBJECT = ("s3", "gcs", "azure")
ALL = ("memory", "local", *OBJECT)


@dataclass(frozen=True)
class Attack:
    id: str
    template: str
    kinds: tuple[str, ...] = ALL
    read_only: bool = False  # would touch the real host if the jail broke: never sent to writing slots


def slots_for(attack: Attack, slots: tuple[Slot, ...] = SLOTS) -> tuple[Slot, ...]:
    return tuple(s for s in slots if not (attack.read_only and s.writes))


DOTDOT = (
    Attack("leading-dotdot", "../{sib}/secret.txt"),
    Attack("bare-dotdot", ".."),
    Attack("dot-then-dotdot", "./.."),
    Attack("dotdot-with-trailing-slash", "../"),
    Attack("middle-dotdot", "a/../../{sib}/secret.txt"),
    Attack("middle-dotdot-after-a-real-dir", "sub/../../{sib}/secret.txt"),
    Attack("trailing-dotdot-beyond-root", "a/../.."),
    Attack("trailing-dotdot-beyond-root-with-slash", "sub/../../"),
    Attack("many-levels", "a/b/c/../../../../{sib}/secret.txt"),
    Attack("forty-levels", "{deep_sib}/secret.txt"),
    Attack("doubled-slashes-around-dotdot", ".//..//{sib}//secret.txt"),
    Attack("dots-and-dotdots-mixed", "././a/./../../{sib}/./secret.txt"),
    Attack("dotdot-inside-the-mount-url", "{root}/../{sib}/secret.txt"),
    Attack("middle-dotdot-inside-the-mount-url", "{root}/a/../../{sib}/secret.txt"),
    Attack("trailing-dotdot-inside-the-mount-url", "{root}/.."),
    Attack("trailing-dotdot-slash-inside-the-mount-url", "{root}/../"),
    Attack("forty-levels-inside-the-mount-url", "{root}/{deep_sib}/secret.txt"),
    Attack("dotdot-in-a-file-url", "file://{root}/../{sib}/secret.txt", kinds=("local",)),
    Attack("percent-encoded-dotdot-in-a-file-url", "file://{root}/%2e%2e/{sib}/secret.txt", kinds=("local",)),
    Attack("upper-percent-encoded-dotdot-in-a-file-url", "file://{root}/%2E%2E/outside/secret.txt", kinds=("local",)),
    Attack("dotdot-to-etc-passwd", "../../../../../../../../../../etc/passwd", read_only=True),
)

HOST_ABSOLUTE = (
    Attack("outside-folder", "{outside}", kinds=("local",)),
    Attack("file-in-the-outside-folder", "{outside}/secret.txt", kinds=("local",)),
    Attack("new-file-in-the-outside-folder", "{outside}/new/x.txt", kinds=("local",)),
    Attack("tmp-dir-above-the-mount", "{tmp}", kinds=("local",)),
    Attack("outside-folder-via-dotdot-from-the-mount", "{root}/../outside/secret.txt", kinds=("local",)),
    Attack("etc-passwd", "/etc/passwd", kinds=("local",), read_only=True),
    Attack("filesystem-root", "/", kinds=("local",), read_only=True),
)

HOME = (
    Attack("tilde", "~"),
    Attack("tilde-slash", "~/"),
    Attack("file-in-home", "~/secret.txt"),
    Attack("new-file-in-home", "~/new/x.txt"),
    Attack("home-then-dotdot-to-the-outside-folder", "~/../outside/secret.txt"),
)

SIBLING = (
    Attack("sibling-prefix-file", "{sib_abs}/secret.txt"),
    Attack("sibling-prefix-root", "{sib_abs}"),
    Attack("sibling-prefix-new-file", "{sib_abs}/new.txt"),
    Attack("sibling-prefix-by-file-url", "file://{tmp}/app_evil/secret.txt", kinds=("local",)),
    Attack("sibling-prefix-without-separator", "memory://{mname}evil/secret.txt", kinds=("memory",)),
    Attack("another-bucket", "{scheme}://{bucket}-other/secret.txt"),
    Attack("bucket-root-above-the-prefix", "{scheme}://{bucket}", kinds=OBJECT),
    Attack("bucket-root-with-slash", "{scheme}://{bucket}/", kinds=OBJECT),
    Attack("key-beside-the-prefix", "{scheme}://{bucket}/secret.txt", kinds=OBJECT),
    Attack("uppercase-scheme-sibling-prefix", "{SCHEME}://{bucket}/pre-evil/secret.txt", kinds=OBJECT),
    Attack("alias-scheme-to-the-mounted-prefix", "{alias}://{bucket}/pre/inside.txt", kinds=OBJECT),
)

SMUGGLING = (
    Attack("simplecache-chain", "simplecache::file://{outside}/secret.txt"),
    Attack("filecache-chain", "filecache::file://{outside}/secret.txt"),
    Attack("blockcache-chain-to-another-bucket", "blockcache::{scheme}://{bucket}-other/secret.txt"),
    Attack("zip-chain", "zip::file://{outside}/evil.zip"),
    Attack("zip-member-chain", "zip://secret.txt::file://{outside}/evil.zip"),
    Attack("file-url-outside", "file://{outside}/secret.txt"),
    Attack("file-url-localhost-outside", "file://localhost{outside}/secret.txt"),
    Attack("file-url-other-host", "file://otherhost{outside}/secret.txt"),
    Attack("file-url-other-host-naming-the-mount", "file://otherhost{tmp}/app/inside.txt"),
    Attack("uppercase-file-url-outside", "FILE://{outside}/secret.txt"),
    Attack("file-url-etc-passwd", "file:///etc/passwd", read_only=True),
    Attack("local-scheme-outside", "local://{outside}/secret.txt"),
    Attack("unmounted-memory-store", "memory://other/secret.txt"),
    Attack("unmounted-memory-store-triple-slash", "memory:///other/secret.txt"),
    Attack("alias-scheme-to-another-bucket", "{alias}://{bucket}-other/secret.txt"),
    Attack("http-url-to-the-store-endpoint", "http://{endpoint}/{bucket}-other/secret.txt"),
    Attack("https-url", "https://example.invalid/secret.txt"),
)

NUL = (
    Attack("nul-in-a-name", "a\x00b"),
    Attack("nul-alone", "\x00"),
    Attack("nul-after-a-real-file", "inside.txt\x00"),
    Attack("nul-after-the-mount-url", "{root}/inside.txt\x00.png"),
    Attack("nul-with-dotdot", "../\x00{sib}/secret.txt"),
    Attack("nul-in-an-outside-host-path", "{outside}/secret.txt\x00"),
    Attack("nul-in-a-file-url", "file://{outside}/secret.txt\x00"),
    Attack("nul-after-tilde", "~/\x00"),
    Attack("nul-in-another-bucket-url", "{scheme}://{bucket}-other/\x00"),
    Attack("percent-encoded-nul-in-a-file-url-inside-the-mount", "file://{root}/inside.txt%00", kinds=("local",)),
    Attack("percent-encoded-nul-mid-path-in-a-file-url", "file://{root}/%00/x", kinds=("local",)),
)

OTHER_INVALID = (
    Attack("lone-surrogate", "a\ud800b"),
    Attack("over-long-path", "a/" * 2100 + "x"),
)

# local only: paths that pass *through* a symlink pointing out (or looping); every slot must refuse
THROUGH_LINK = (
    Attack("symlinked-dir-pointing-out-existing-child", "dir_out/secret.txt", kinds=("local",)),
    Attack("symlinked-dir-pointing-out-new-child", "dir_out/new.txt", kinds=("local",)),
    Attack("symlinked-dir-pointing-out-new-nested-child", "dir_out/new/deeper/x.txt", kinds=("local",)),
    Attack("dangling-dir-link-pointing-out-missing-parents", "dangling_dir_out/x/y.txt", kinds=("local",)),
    Attack("relative-link-to-the-parent-then-sibling", "up/app_evil/secret.txt", kinds=("local",)),
    Attack("relative-link-to-the-parent-then-outside", "up/outside/secret.txt", kinds=("local",)),
    Attack("relative-link-to-the-sibling-prefix", "evil_rel/secret.txt", kinds=("local",)),
    Attack("link-to-a-link-pointing-out", "hop/secret.txt", kinds=("local",)),
    Attack("in-jail-link-then-dotdot-then-link-out", "dir_in/../dir_out/secret.txt", kinds=("local",)),
    Attack("link-pointing-out-by-absolute-path", "{root}/dir_out/secret.txt", kinds=("local",)),
    Attack("link-pointing-out-by-file-url", "file://{root}/dir_out/secret.txt", kinds=("local",)),
    Attack("link-inside-a-real-dir-pointing-out", "tree/link_out/secret.txt", kinds=("local",)),
    Attack("symlink-loop-as-a-parent", "loop/x", kinds=("local",)),
    Attack("two-link-loop-as-a-parent", "loop_a/x/y.txt", kinds=("local",)),
)

# local only: the final component is a symlink pointing out (or looping); every slot that follows it must refuse
FINAL_LINK = (
    Attack("symlinked-file-pointing-out", "file_out", kinds=("local",)),
    Attack("symlinked-dir-pointing-out", "dir_out", kinds=("local",)),
    Attack("dangling-symlink-pointing-out", "dangling_out", kinds=("local",)),
    Attack("dangling-dir-symlink-pointing-out", "dangling_dir_out", kinds=("local",)),
    Attack("relative-link-to-the-parent", "up", kinds=("local",)),
    Attack("relative-link-to-the-sibling-prefix", "evil_rel", kinds=("local",)),
    Attack("link-to-a-link-pointing-out", "hop", kinds=("local",)),
    Attack("file-link-pointing-out-inside-a-real-dir", "tree/file_link_out", kinds=("local",)),
    Attack("symlink-loop", "loop", kinds=("local",)),
    Attack("two-link-loop", "loop_a", kinds=("local",)),
)


# -- lexical escapes: one test per table and backend (an S3 sandbox costs ~1 s to build) -------------


async def test_dotdot_escapes_are_denied_by_every_path_tool(arena: Arena) -> None:
    await run_tables(arena, DOTDOT, "ACCESS_DENIED")


@pytest.mark.parametrize("sandbox", ["local"], indirect=True)
async def test_absolute_host_paths_outside_a_local_mount_are_denied_by_every_path_tool(arena: Arena) -> None:
    await run_tables(arena, HOST_ABSOLUTE, "ACCESS_DENIED")


async def test_home_directory_paths_are_denied_by_every_path_tool(arena: Arena) -> None:
    await run_tables(arena, HOME, "ACCESS_DENIED")


async def test_sibling_prefix_roots_and_other_buckets_are_denied_by_every_path_tool(arena: Arena) -> None:
    await run_tables(arena, SIBLING, "ACCESS_DENIED")


async def test_protocol_smuggling_is_denied_by_every_path_tool(arena: Arena) -> None:
    await run_tables(arena, SMUGGLING, "ACCESS_DENIED")


async def test_nul_bytes_and_other_invalid_paths_are_an_invalid_argument_for_every_path_tool(arena: Arena) -> None:
    await run_tables(arena, NUL + OTHER_INVALID, "INVALID_ARGUMENT")


OBJECT_ABSOLUTE = (
    Attack("file-in-the-outside-folder", "{outside}/secret.txt"),
    Attack("outside-folder", "{outside}"),
    Attack("tmp-dir", "{tmp}"),
    Attack("home-folder", "{home}/secret.txt"),
    Attack("etc-passwd", "/etc/passwd", read_only=True),
    Attack("filesystem-root", "/", read_only=True),
)
PATH_KEYS = ("path", "source", "destination", "current_dir", "previous_dir")


@pytest.mark.parametrize("sandbox", store_params("memory", "s3", *EMULATED), indirect=True)
async def test_absolute_host_paths_on_an_object_store_mount_never_reach_the_host(arena: Arena) -> None:
    # On a memory/S3 working mount "/x" names that mount's root (jail.py): such a path may be
    # refused or resolve inside the mount, but it must never touch or reveal the host.
    failures: list[str] = []
    _, before_out = arena.state()
    async with arena.sb.client() as client:
        for attack in OBJECT_ABSOLUTE:
            path = arena.fmt(attack.template)
            for slot in slots_for(attack):
                result = await client.call_tool(slot.tool, slot.args(path, arena))
                where = f"[{attack.id}] {slot.label}({path!r})"
                failures += [f"[{attack.id}] {f}" for f in leak_failures(arena, slot.label, path, result)]
                if result.is_error and not (error_of(result) or {}).get("code"):
                    failures.append(f"{where}: an error without a code: {texts(result)[:200]!a}")
                structured = data_of(result) or {}
                named = [structured[k] for k in PATH_KEYS if isinstance(structured.get(k), str)]
                named += [e.get("path") for e in structured.get("entries", []) if isinstance(e, dict)]
                failures += [
                    f"{where} named {n!r}, outside the mount" for n in named if not n.startswith(arena.sb.root)
                ]
                if not slot.mutates:
                    continue
                _, after_out = arena.state()
                if diff(before_out, after_out):
                    failures.append(f"{where} changed things outside: {diff(before_out, after_out)}")
                before_out = after_out
            await client.call_tool("change_directory", {"path": arena.sb.root})
    failures += arena.canary_failures()
    assert not failures, "\n".join(failures)


# (given, the mount-relative name it must land on)
LITERAL = (
    ("%2e%2e/{sib}/secret.txt", "%2e%2e/{sib}/secret.txt"),
    ("..\\{sib}\\secret.txt", "..\\{sib}\\secret.txt"),
    ("\uff0e\uff0e/{sib}/secret.txt", "\uff0e\uff0e/{sib}/secret.txt"),
    (".../{sib}/secret.txt", ".../{sib}/secret.txt"),
    ("a/simplecache::file://{outside}/secret.txt", "a/simplecache::file:{outside}/secret.txt"),
    ("::file://{outside}/secret.txt", "::file:{outside}/secret.txt"),
    ("file:{outside}/secret.txt", "file:{outside}/secret.txt"),
    ("~nobody/secret.txt", "~nobody/secret.txt"),
    ("{scheme}:/{bucket}-other/secret.txt", "{scheme}:/{bucket}-other/secret.txt"),
)


async def test_encoded_lookalike_and_mid_path_protocol_names_are_literal_names_inside_the_mount(
    arena: Arena,
) -> None:
    failures: list[str] = []
    _, before_out = arena.state(full=True)
    async with arena.sb.client() as client:
        for given, expected_rel in LITERAL:
            path, rel = arena.fmt(given), arena.fmt(expected_rel)
            missing = await client.call_tool("read_file", {"path": path})
            written = await client.call_tool("write_file", {"path": path, "content": PWNED, "create_dirs": True})
            read = await client.call_tool("read_file", {"path": path})
            if error_code(missing) != "NOT_FOUND":
                failures.append(f"{path!r}: read before writing gave {error_code(missing)}, not NOT_FOUND")
            if written.is_error:
                failures.append(f"{path!r}: write failed: {texts(written)[:200]!a}")
                continue
            if data_of(written)["path"] != arena.sb.path(rel):
                failures.append(f"{path!r}: written as {data_of(written)['path']!r}, not {rel!r}")
            if not arena.sb.exists(rel) or arena.sb.get(rel) != PWNED.encode():
                failures.append(f"{path!r}: the bytes are not at {rel!r} inside the mount")
            if file_text(read) != PWNED:
                failures.append(f"{path!r}: reading it back gave {texts(read)[:200]!a}")
    _, after_out = arena.state(full=True)
    if diff(before_out, after_out):
        failures.append(f"outside changed: {diff(before_out, after_out)}")
    failures += arena.canary_failures()
    assert not failures, "\n".join(failures)


STAYS_INSIDE = (
    "sub/../inside.txt",
    "./sub/./../inside.txt",
    "a/b/../../inside.txt",
    "sub//..//inside.txt",
    "{root}/sub/../inside.txt",
    "{root}/../{leaf}/inside.txt",
)


async def test_dotdot_that_stays_inside_the_mount_resolves_lexically(arena: Arena) -> None:
    failures: list[str] = []
    async with arena.sb.client() as client:
        for given in STAYS_INSIDE:
            path = arena.fmt(given)
            read = await client.call_tool("read_file", {"path": path})
            info = await client.call_tool("get_file_info", {"path": path})
            if read.is_error or file_text(read) != "inside\n":
                failures.append(f"read_file({path!r}) gave {texts(read)[:200]!a}")
            if (data_of(info) or {}).get("path") != arena.sb.path("inside.txt"):
                failures.append(f"get_file_info({path!r}) gave {ascii(data_of(info))[:200]}")
    assert not failures, "\n".join(failures)


async def test_read_multiple_files_reports_each_escape_on_its_own_and_still_reads_the_rest(arena: Arena) -> None:
    attacks = {
        "../{sib}/secret.txt": "ACCESS_DENIED",
        "{root}/../{sib}/secret.txt": "ACCESS_DENIED",
        "~/secret.txt": "ACCESS_DENIED",
        "simplecache::file://{outside}/secret.txt": "ACCESS_DENIED",
        "memory://other/secret.txt": "ACCESS_DENIED",
        "{scheme}://{bucket}-other/secret.txt": "ACCESS_DENIED",
        "{sib_abs}/secret.txt": "ACCESS_DENIED",
        "a\x00b": "INVALID_ARGUMENT",
        "inside.txt": None,
        "sub/file.txt": None,
    }
    paths = [arena.fmt(p) for p in attacks]
    async with arena.sb.client() as client:
        result = await client.call_tool("read_multiple_files", {"paths": paths})
    assert not result.is_error, texts(result)
    files = data_of(result)["files"]
    assert [f["path"] for f in files] == paths
    for (template, code), entry in zip(attacks.items(), files, strict=True):
        if code is None:
            assert entry["ok"], entry
        else:
            assert not entry["ok"] and entry["error"]["code"] == code, (template, entry)
    assert data_of(result)["succeeded"] == 2
    assert data_of(result)["failed"] == len(attacks) - 2
    assert leak_failures(arena, "read_multiple_files", "\n".join(paths), result) == []
    assert arena.canary_failures() == []


MOUNT_ROOT_FORMS = (".", "./", "{root}", "{root}/", "sub/..", "{root}/sub/..")


async def test_the_mount_root_is_never_deleted_or_moved(arena: Arena) -> None:
    failures: list[str] = []
    before_in, before_out = arena.state(full=True)
    async with arena.sb.client() as client:
        for given in MOUNT_ROOT_FORMS:
            path = arena.fmt(given)
            deleted = await client.call_tool("delete_path", {"path": path, "recursive": True})
            moved = await client.call_tool("move_file", {"source": path, "destination": arena.sb.path("sub/root")})
            for name, result in (("delete_path", deleted), ("move_file", moved)):
                if error_code(result) != "ACCESS_DENIED":
                    failures.append(f"{name}({path!r}) gave {error_code(result)}: {texts(result)[:200]!a}")
    after_in, after_out = arena.state(full=True)
    assert not failures, "\n".join(failures)
    assert diff(before_in, after_in) == []
    assert diff(before_out, after_out) == []


# -- symlinks (local) ------------------------------------------------------------------------------


async def test_paths_through_a_symlink_pointing_out_are_denied_by_every_path_tool(local_arena: Arena) -> None:
    await run_tables(local_arena, THROUGH_LINK, "ACCESS_DENIED")


async def test_a_final_symlink_pointing_out_or_looping_is_denied_by_every_tool_that_follows_it(
    local_arena: Arena,
) -> None:
    await run_tables(local_arena, FINAL_LINK, "ACCESS_DENIED", FOLLOWING_SLOTS)


def outside_names(arena: Arena) -> list[str]:
    return sorted(os.listdir(arena.outside))


async def refusals(arena: Arena, calls: list[tuple[str, dict[str, Any]]], expected: str = "ACCESS_DENIED") -> list[str]:
    """Make each call on one client; returns the ones not refused with ``expected`` or that leaked."""
    failures = []
    async with arena.sb.client() as client:
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            shown = " ".join(str(v) for v in args.values())
            if error_code(result) != expected:
                failures.append(f"{tool}({args!a}) gave {error_code(result)}: {texts(result)[:200]!a}")
            failures += leak_failures(arena, tool, shown, result)
    return failures


async def test_read_through_symlinked_file_pointing_out_is_denied(local_arena: Arena) -> None:
    calls = [(tool, {"path": "file_out"}) for tool in ("read_file", "get_file_info", "list_directory")]
    assert await refusals(local_arena, calls) == []


async def test_read_through_symlinked_dir_pointing_out_is_denied(local_arena: Arena) -> None:
    calls = [("read_file", {"path": p}) for p in ("dir_out/secret.txt", "hop/secret.txt", "up/outside/secret.txt")]
    assert await refusals(local_arena, calls) == []


async def test_listing_symlinked_dir_pointing_out_is_denied(local_arena: Arena) -> None:
    calls = [("list_directory", {"path": p, "format": "json"}) for p in ("dir_out", "hop", "up", "tree/link_out")]
    assert await refusals(local_arena, calls) == []


async def test_write_through_symlinked_dir_pointing_out_is_denied_and_creates_nothing(local_arena: Arena) -> None:
    calls = [
        ("write_file", {"path": "dir_out/new.txt", "content": PWNED}),
        ("write_file", {"path": "dir_out/secret.txt", "content": PWNED}),
        ("write_file", {"path": "dir_out/secret.txt", "content": PWNED, "append": True}),
        ("write_file", {"path": "file_out", "content": PWNED}),
        ("write_file", {"path": "hop/secret.txt", "content": PWNED}),
    ]
    assert await refusals(local_arena, calls) == []
    assert outside_names(local_arena) == ["evil.zip", "secret.txt"]
    assert local_arena.canary_failures() == []


async def test_write_to_dangling_symlink_pointing_out_is_denied_and_creates_nothing(local_arena: Arena) -> None:
    calls = [
        ("write_file", {"path": "dangling_out", "content": PWNED}),
        ("write_file", {"path": "dangling_out", "content": PWNED, "append": True}),
        ("write_file", {"path": "dangling_out", "content": PWNED, "create_dirs": True}),
    ]
    assert await refusals(local_arena, calls) == []
    assert not (local_arena.outside / "new.txt").exists()
    assert os.readlink(local_arena.host("dangling_out")) == str(local_arena.outside / "new.txt")


async def test_write_with_create_dirs_whose_missing_parents_pass_through_an_outside_link_is_denied(
    local_arena: Arena,
) -> None:
    paths = ["dangling_dir_out/a/b/c.txt", "dir_out/a/b/c.txt", "up/outside/a/b.txt", "hop/a/b.txt"]
    calls = [("write_file", {"path": p, "content": PWNED, "create_dirs": True}) for p in paths]
    assert await refusals(local_arena, calls) == []
    assert outside_names(local_arena) == ["evil.zip", "secret.txt"]


async def test_create_directory_whose_missing_parents_pass_through_an_outside_link_is_denied(
    local_arena: Arena,
) -> None:
    paths = ["dangling_dir_out/a/b", "dangling_dir_out", "dir_out/newdir", "hop/x/y", "up/outside/made"]
    calls = [("create_directory", {"path": p}) for p in paths]
    assert await refusals(local_arena, calls) == []
    assert outside_names(local_arena) == ["evil.zip", "secret.txt"]


async def test_move_onto_or_through_a_symlink_pointing_out_is_denied(local_arena: Arena) -> None:
    destinations = ["file_out", "dangling_out", "dir_out/moved.txt", "up/outside/moved.txt", "dir_out"]
    calls = [("move_file", {"source": "victim.txt", "destination": d, "overwrite": True}) for d in destinations]
    assert await refusals(local_arena, calls) == []
    assert local_arena.sb.get("victim.txt") == b"victim\n"
    assert outside_names(local_arena) == ["evil.zip", "secret.txt"]
    assert local_arena.canary_failures() == []


async def test_copy_onto_or_through_a_symlink_pointing_out_is_denied(local_arena: Arena) -> None:
    destinations = ["file_out", "dangling_out", "dir_out/copied.txt", "hop/copied.txt", "tree/file_link_out"]
    calls = [("copy_file", {"source": "victim.txt", "destination": d, "overwrite": True}) for d in destinations]
    assert await refusals(local_arena, calls) == []
    assert outside_names(local_arena) == ["evil.zip", "secret.txt"]
    assert local_arena.canary_failures() == []


async def test_copy_from_a_symlink_pointing_out_is_denied_and_copies_nothing(local_arena: Arena) -> None:
    sources = ["file_out", "dir_out/secret.txt", "dir_out", "hop", "tree/file_link_out"]
    calls = [("copy_file", {"source": s, "destination": "copied", "recursive": True}) for s in sources]
    assert await refusals(local_arena, calls) == []
    assert not os.path.lexists(local_arena.host("copied"))


async def test_move_from_through_a_symlink_pointing_out_is_denied(local_arena: Arena) -> None:
    sources = ["dir_out/secret.txt", "up/outside/secret.txt", "hop/secret.txt", "evil_rel/secret.txt"]
    calls = [("move_file", {"source": s, "destination": "moved.txt"}) for s in sources]
    assert await refusals(local_arena, calls) == []
    assert not os.path.lexists(local_arena.host("moved.txt"))
    assert local_arena.canary_failures() == []


async def test_move_of_a_symlink_pointing_out_moves_only_the_link(local_arena: Arena) -> None:
    _, before_out = local_arena.state()
    async with local_arena.sb.client() as client:
        for link in ("file_out", "dir_out", "dangling_out"):
            target = os.readlink(local_arena.host(link))
            moved = await client.call_tool("move_file", {"source": link, "destination": f"moved_{link}"})
            read = await client.call_tool("read_file", {"path": f"moved_{link}"})
            assert not moved.is_error, texts(moved)
            assert os.readlink(local_arena.host(f"moved_{link}")) == target
            assert not os.path.lexists(local_arena.host(link))
            assert error_code(read) == "ACCESS_DENIED", texts(read)
    _, after_out = local_arena.state()
    assert diff(before_out, after_out) == []


async def test_delete_of_a_symlink_pointing_out_removes_only_the_link(local_arena: Arena) -> None:
    links = ["file_out", "dir_out", "dangling_out", "dangling_dir_out", "up", "hop", "loop", "evil_rel"]
    failures = []
    async with local_arena.sb.client() as client:
        for recursive in (False, True):
            for link in links:
                local_arena.layout()
                before_in, before_out = local_arena.state()
                result = await client.call_tool("delete_path", {"path": link, "recursive": recursive})
                after_in, after_out = local_arena.state()
                where = f"delete_path({link!r}, recursive={recursive})"
                if result.is_error:
                    failures.append(f"{where} failed: {texts(result)[:200]!a}")
                if diff(before_in, after_in) != [f"-host:app/{link}"]:
                    failures.append(f"{where} changed the mount by {diff(before_in, after_in)}")
                if diff(before_out, after_out):
                    failures.append(f"{where} changed outside: {diff(before_out, after_out)}")
    failures += local_arena.canary_failures()
    assert not failures, "\n".join(failures)


async def test_recursive_delete_of_a_directory_holding_links_to_outside_leaves_outside_intact(
    local_arena: Arena,
) -> None:
    _, before_out = local_arena.state()
    async with local_arena.sb.client() as client:
        result = await client.call_tool("delete_path", {"path": "tree", "recursive": True})
    _, after_out = local_arena.state()
    assert not result.is_error, texts(result)
    assert not os.path.lexists(local_arena.host("tree"))
    assert diff(before_out, after_out) == []
    assert local_arena.canary_failures() == []


async def test_recursive_delete_through_a_symlinked_dir_pointing_out_is_denied(local_arena: Arena) -> None:
    local_arena.outside.joinpath("keep").mkdir()
    local_arena.outside.joinpath("keep", "x.txt").write_bytes(b"x")
    calls = [
        ("delete_path", {"path": p, "recursive": True})
        for p in ("dir_out/keep", "dir_out/secret.txt", "hop/keep", "up/outside", "up/app_evil")
    ]
    assert await refusals(local_arena, calls) == []
    assert local_arena.outside.joinpath("keep", "x.txt").read_bytes() == b"x"
    assert local_arena.canary_failures() == []


async def test_recursive_copy_skips_links_pointing_out(local_arena: Arena) -> None:
    async with local_arena.sb.client() as client:
        result = await client.call_tool("copy_file", {"source": "tree", "destination": "tree_copy", "recursive": True})
    assert not result.is_error, texts(result)
    copied = Path(local_arena.host("tree_copy"))
    assert (copied / "keep.txt").read_bytes() == b"keep\n"
    for dirpath, dirnames, filenames in os.walk(copied):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            assert not path.is_symlink(), f"{path} is a link in the copy"
            if path.is_file():
                assert path.read_bytes() != local_arena.canary, f"{path} holds the outside canary"
    assert not os.path.lexists(copied / "link_out")
    assert not os.path.lexists(copied / "file_link_out")


async def test_move_of_a_directory_holding_links_to_outside_keeps_outside_intact(local_arena: Arena) -> None:
    _, before_out = local_arena.state()
    async with local_arena.sb.client() as client:
        result = await client.call_tool("move_file", {"source": "tree", "destination": "tree_moved"})
        read = await client.call_tool("read_file", {"path": "tree_moved/link_out/secret.txt"})
    _, after_out = local_arena.state()
    assert not result.is_error, texts(result)
    assert error_code(read) == "ACCESS_DENIED"
    assert diff(before_out, after_out) == []


async def test_listing_a_directory_with_links_out_reveals_neither_target_nor_content(local_arena: Arena) -> None:
    async with local_arena.sb.client() as client:
        listed = await client.call_tool("list_directory", {"path": ".", "format": "json"})
        tree = await client.call_tool("list_directory", {"path": "tree", "format": "json"})
    for result in (listed, tree):
        assert not result.is_error, texts(result)
        assert leak_failures(local_arena, "list_directory", ".", result) == []
        assert "evil.zip" not in blob(result)
        for entry in data_of(result)["entries"]:
            if entry["name"] in ("file_out", "file_link_out", "hop", "dir_out", "link_out"):
                assert entry.get("size") != len(local_arena.canary), entry


async def test_symlink_loops_are_refused_promptly_and_can_be_deleted(local_arena: Arena) -> None:
    async with local_arena.sb.client() as client:
        listed = await client.call_tool("list_directory", {"path": "."})
        for path in ("loop", "loop_a", "loop/x", "loop_b/y"):
            read = await client.call_tool("read_file", {"path": path})
            assert error_code(read) == "ACCESS_DENIED", (path, texts(read))
        deleted = await client.call_tool("delete_path", {"path": "loop"})
    assert not listed.is_error, texts(listed)
    assert not deleted.is_error, texts(deleted)
    assert not os.path.lexists(local_arena.host("loop"))


async def test_in_jail_symlink_pointing_inside_is_followed(local_arena: Arena) -> None:
    sb = local_arena.sb
    async with sb.client() as client:
        read = await client.call_tool("read_file", {"path": "file_in"})
        through = await client.call_tool("read_file", {"path": "dir_in/file.txt"})
        absolute = await client.call_tool("read_file", {"path": sb.path("dir_in/file.txt")})
        info = await client.call_tool("get_file_info", {"path": "file_in"})
        listed = await client.call_tool("list_directory", {"path": "dir_in"})
        many = await client.call_tool("read_multiple_files", {"paths": ["file_in", "dir_in/file.txt"]})
        copied = await client.call_tool("copy_file", {"source": "file_in", "destination": "copy.txt"})
        cd = await client.call_tool("change_directory", {"path": "dir_in"})
        relative = await client.call_tool("read_file", {"path": "file.txt"})
    assert file_text(read) == "sub\n"
    assert file_text(through) == "sub\n"
    assert file_text(absolute) == "sub\n"
    assert data_of(info)["type"] == "file"
    assert [e["name"] for e in data_of(listed)["entries"]] == ["file.txt"]
    assert data_of(many)["succeeded"] == 2
    assert not copied.is_error
    assert sb.get("copy.txt") == b"sub\n"
    assert not cd.is_error, texts(cd)
    assert file_text(relative) == "sub\n"


async def test_write_through_in_jail_symlink_pointing_inside_updates_the_target(local_arena: Arena) -> None:
    sb = local_arena.sb
    async with sb.client() as client:
        over = await client.call_tool("write_file", {"path": "file_in", "content": "new\n"})
        new = await client.call_tool("write_file", {"path": "dir_in/new.txt", "content": "fresh\n"})
        made = await client.call_tool("create_directory", {"path": "dir_in/made"})
    assert not over.is_error, texts(over)
    assert not new.is_error, texts(new)
    assert not made.is_error, texts(made)
    assert sb.get("sub/file.txt") == b"new\n"
    assert os.path.islink(local_arena.host("file_in"))
    assert sb.get("sub/new.txt") == b"fresh\n"
    assert os.path.isdir(local_arena.host("sub/made"))


async def test_relative_paths_after_changing_into_an_in_jail_link_stay_lexical_and_in_the_jail(
    local_arena: Arena,
) -> None:
    async with local_arena.sb.client() as client:
        await client.call_tool("change_directory", {"path": "dir_in"})
        escape = await client.call_tool("read_file", {"path": "../../app_evil/secret.txt"})
        back = await client.call_tool("read_file", {"path": "../inside.txt"})
        out = await client.call_tool("change_directory", {"path": "../dir_out"})
        cwd = await cwd_of(client)
    assert error_code(escape) == "ACCESS_DENIED"
    assert file_text(back) == "inside\n"
    assert error_code(out) == "ACCESS_DENIED"
    assert cwd == local_arena.sb.path("dir_in")


async def test_symlink_refusals_never_name_the_outside_target(local_arena: Arena) -> None:
    hidden = [
        str(local_arena.outside),
        os.path.realpath(local_arena.outside),
        str(local_arena.tmp / "app_evil"),
        os.path.realpath(local_arena.tmp / "app_evil"),
    ]
    failures = []
    async with local_arena.sb.client() as client:
        for path in ("file_out", "dir_out/secret.txt", "up/outside/secret.txt", "evil_rel/secret.txt", "hop/x/y.txt"):
            for tool, args in (
                ("read_file", {"path": path}),
                ("write_file", {"path": path, "content": PWNED, "create_dirs": True}),
                ("get_file_info", {"path": path}),
                ("delete_path", {"path": f"{path}/x"}),
            ):
                result = await client.call_tool(tool, args)
                if error_code(result) != "ACCESS_DENIED":
                    failures.append(f"{tool}({path!r}) gave {error_code(result)}")
                failures += [f"{tool}({path!r}) names {name!r}" for name in hidden if name in blob(result)]
                if "Traceback" in blob(result):
                    failures.append(f"{tool}({path!r}) shows a traceback")
    assert not failures, "\n".join(failures)


# A concurrent process swaps a directory the jail has just checked for a link pointing out
# (docs/security.md: "swapping a directory for a symlink between check and use gains nothing").
RACES = {
    "read_file": {"path": "swap/secret.txt"},
    "write_file": {"path": "swap/secret.txt", "content": PWNED},
    "delete_path": {"path": "swap/secret.txt"},
    "list_directory": {"path": "swap/inner", "format": "json"},
}


@pytest.mark.parametrize("tool", list(RACES))
async def test_swapping_a_checked_directory_for_an_outside_link_before_use_gains_nothing(
    local_arena: Arena, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    arena = local_arena
    arena.sb.put("swap/secret.txt", b"inside secret\n")
    arena.sb.put("swap/inner/keep.txt", b"keep\n")
    (arena.outside / "inner").mkdir()
    (arena.outside / "inner" / "outside-only.txt").write_bytes(arena.canary)
    swap = arena.host("swap")
    checked = Jail.resolve

    def resolve_then_swap(self: Jail, path: str, **kwargs: Any) -> Any:
        target = checked(self, path, **kwargs)
        if path == RACES[tool]["path"] and not os.path.islink(swap):
            os.rename(swap, arena.host("swapped_away"))
            os.symlink(str(arena.outside), swap)
        return target

    monkeypatch.setattr(Jail, "resolve", resolve_then_swap)
    async with arena.sb.client() as client:
        result = await client.call_tool(tool, RACES[tool])
    assert leak_failures(arena, tool, RACES[tool]["path"], result) == []
    assert "outside-only.txt" not in blob(result)
    assert (arena.outside / "inner" / "outside-only.txt").read_bytes() == arena.canary
    assert arena.canary_failures() == []
