"""The jail tests against the ``vfs`` fsspec protocol: every attack path of
``test_jail_attacks`` (traversal, host paths, home, sibling prefixes, protocol smuggling,
invalid paths, links out) sent to every path-taking fsspec verb of ``JailFileSystem``, and
the deny list and read-only mounts through it.

Per attack and verb: the refusal is the OSError fsspec users catch (PermissionError for
ACCESS_DENIED, OSError EINVAL for INVALID_ARGUMENT), its message names nothing outside the
mount that the caller did not type and holds no canary bytes, and nothing changed, inside
or outside the mount (the arena's snapshots and canaries).
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import test_jail_attacks
from test_jail_attacks import (  # the arena and the attack tables
    DOTDOT,
    FINAL_LINK,
    HOME,
    HOST_ABSOLUTE,
    NUL,
    OTHER_INVALID,
    PASSWD_MARK,
    PWNED,
    SIBLING,
    SMUGGLING,
    THROUGH_LINK,
    Arena,
    Attack,
    diff,
)

from vfs_mcp.transports.fsspec_protocol import JailFileSystem

arena = test_jail_attacks.arena  # the fixtures, found by pytest under these names
local_arena = test_jail_attacks.local_arena


def read(fs: JailFileSystem, path: str) -> bytes:
    with fs.open(path, "rb") as handle:
        return bytes(handle.read())


def append(fs: JailFileSystem, path: str) -> None:
    with fs.open(path, "ab") as handle:
        handle.write(PWNED.encode())


@dataclass(frozen=True)
class Verb:
    label: str
    call: Callable[[JailFileSystem, str, Arena], Any]
    writes: bool = False
    acts_on_link: bool = False  # resolves without following a final link: the link itself is its object


VERBS = (
    Verb("cat_file", lambda fs, p, a: fs.cat_file(p)),
    Verb("open(rb)", lambda fs, p, a: read(fs, p)),
    Verb("info", lambda fs, p, a: fs.info(p)),
    Verb("ls", lambda fs, p, a: fs.ls(p)),
    Verb("find", lambda fs, p, a: fs.find(p, withdirs=True)),
    Verb("cp_file(source)", lambda fs, p, a: fs.cp_file(p, a.sb.path("copied_in"))),
    Verb("pipe_file", lambda fs, p, a: fs.pipe_file(p, PWNED.encode()), writes=True),
    Verb("open(ab)", lambda fs, p, a: append(fs, p), writes=True),
    Verb("makedirs", lambda fs, p, a: fs.makedirs(p, exist_ok=True), writes=True),
    Verb("mv(source)", lambda fs, p, a: fs.mv(p, a.sb.path("moved_in")), writes=True, acts_on_link=True),
    Verb("mv(destination)", lambda fs, p, a: fs.mv(a.sb.path("victim.txt"), p), writes=True),
    Verb("cp_file(destination)", lambda fs, p, a: fs.cp_file(a.sb.path("victim.txt"), p), writes=True),
    Verb("rm", lambda fs, p, a: fs.rm(p, recursive=True), writes=True, acts_on_link=True),
)
FOLLOWING = tuple(v for v in VERBS if not v.acts_on_link)

REFUSED: dict[str, Callable[[BaseException], bool]] = {
    "ACCESS_DENIED": lambda exc: isinstance(exc, PermissionError),
    "INVALID_ARGUMENT": lambda exc: type(exc) is OSError and exc.errno == errno.EINVAL,
}


def attack(arena: Arena, fs: JailFileSystem, table: tuple[Attack, ...], expected: str, verbs: tuple[Verb, ...]) -> None:
    """Every attack of ``table`` that applies here against every verb; one report of every way
    the jail fell short."""
    failures: list[str] = []
    _, outside = arena.state(full=True)
    before_in, before_out = arena.state()
    ran = 0
    for row in (row for row in table if arena.kind in row.kinds):
        ran += 1
        path = arena.fmt(row.template)
        for verb in (v for v in verbs if not (row.read_only and v.writes)):
            where = f"[{row.id}] {verb.label}({path!r})"
            try:
                verb.call(fs, path, arena)
            except Exception as exc:
                if not REFUSED[expected](exc):
                    failures.append(f"{where}: {type(exc).__name__} {exc!s:.200}, not {expected}")
                said = str(exc)
                if arena.canary.decode().strip() in said or PASSWD_MARK in said:
                    failures.append(f"{where}: the error holds content from outside the mount")
                failures += [f"{where}: the error names {n!r}" for n in arena.forbidden if n not in path and n in said]
            else:
                failures.append(f"{where}: succeeded")
            if verb.writes:
                after_in, after_out = arena.state()
                if diff(before_out, after_out) or diff(before_in, after_in):
                    failures.append(f"{where} changed {diff(before_in, after_in) + diff(before_out, after_out)}")
                    arena.reset_inside()
                    after_in, after_out = arena.state()
                before_in, before_out = after_in, after_out
    assert ran, f"no attack of this table applies to {arena.kind}"
    failures += [f"outside changed: {change}" for change in diff(outside, arena.state(full=True)[1])]
    failures += arena.canary_failures()
    assert not failures, f"{len(failures)} ways the jail fell short:\n" + "\n".join(failures)


def jail_of(arena: Arena, **jail: Any) -> JailFileSystem:
    return JailFileSystem(jailed=arena.sb.vfs(**jail), skip_instance_cache=True)


def test_traversal_home_and_sibling_paths_are_a_permission_error_for_every_verb(arena: Arena) -> None:
    attack(arena, jail_of(arena), DOTDOT + HOME + SIBLING + SMUGGLING, "ACCESS_DENIED", VERBS)


@pytest.mark.parametrize("sandbox", ["local"], indirect=True)
def test_host_paths_outside_a_local_mount_are_a_permission_error_for_every_verb(arena: Arena) -> None:
    attack(arena, jail_of(arena), HOST_ABSOLUTE, "ACCESS_DENIED", VERBS)


def test_invalid_paths_are_an_invalid_argument_for_every_verb(arena: Arena) -> None:
    attack(arena, jail_of(arena), NUL + OTHER_INVALID, "INVALID_ARGUMENT", VERBS)


def test_paths_through_a_link_out_are_a_permission_error_for_every_verb(local_arena: Arena) -> None:
    attack(local_arena, jail_of(local_arena), THROUGH_LINK, "ACCESS_DENIED", VERBS)


def test_a_final_link_out_is_a_permission_error_for_every_verb_that_follows_it(local_arena: Arena) -> None:
    attack(local_arena, jail_of(local_arena), FINAL_LINK, "ACCESS_DENIED", FOLLOWING)


def test_removing_or_moving_a_link_out_acts_on_the_link_only(local_arena: Arena) -> None:
    fs = jail_of(local_arena)
    fs.mv("file_out", "moved_link")
    fs.rm(["moved_link", "dir_out"], recursive=True)
    assert not local_arena.sb.exists("moved_link") and not local_arena.sb.exists("dir_out")
    assert local_arena.canary_failures() == []


# -- the deny list and read-only mounts ----------------------------------------------------


DENY = ["*.pem", "private/"]


def test_a_denied_path_is_missing_for_every_verb_and_hidden_from_listings(arena: Arena) -> None:
    for rel in ("keys/id.pem", "private/notes.txt"):
        arena.sb.put(rel, b"secret")
    fs = jail_of(arena, deny=DENY)
    before = arena.state(full=True)
    failures = []
    for rel in ("keys/id.pem", "private/notes.txt", "private", "private/new.txt", "new.pem"):
        path = arena.sb.path(rel)
        for verb in VERBS:
            if verb.label == "find":
                continue  # a missing path finds nothing (below)
            try:
                verb.call(fs, path, arena)
            except FileNotFoundError as exc:
                assert "secret" not in str(exc)
            except Exception as exc:
                failures.append(f"{verb.label}({rel}): {type(exc).__name__} {exc}")
            else:
                failures.append(f"{verb.label}({rel}) succeeded")
        assert fs.find(path) == []
    assert not failures, "\n".join(failures)
    assert arena.state(full=True) == before
    everything = fs.find(arena.sb.path(), withdirs=True)
    assert arena.sb.path("keys") in everything
    assert not [name for name in everything if name.endswith(".pem") or "/private" in name]
    assert [one["name"] for one in fs.ls(arena.sb.path("keys"))] == []


def test_every_write_to_a_read_only_mount_is_a_permission_error_and_reads_still_work(arena: Arena) -> None:
    arena.sb.mount.read_only = True
    fs = jail_of(arena)
    before = arena.state(full=True)
    inside = arena.sb.path("inside.txt")
    failures = []
    for verb in VERBS:
        if not verb.writes:
            continue
        for path in (inside, arena.sb.path("brand/new.txt")):
            try:
                verb.call(fs, path, arena)
            except PermissionError as exc:
                assert "read-only" in str(exc)
            except Exception as exc:
                failures.append(f"{verb.label}({path}): {type(exc).__name__} {exc}")
            else:
                failures.append(f"{verb.label}({path}) succeeded")
    assert not failures, "\n".join(failures)
    assert arena.state(full=True) == before
    assert fs.cat_file(inside) == b"inside\n" and fs.find(arena.sb.path("sub")) == [arena.sb.path("sub/file.txt")]


# -- list forms ------------------------------------------------------------------------------

HIDDEN_KEY = "vault/secret.key"
"""A file the deny list hides in ``vault`` only (the pattern holds a slash: it is anchored)."""

SINGLE_AND_LIST = {
    "mv": (lambda fs, p: fs.mv(p("vault"), p("open")), lambda fs, p: fs.mv([p("vault")], p("open"))),
    "mv recursive": (
        lambda fs, p: fs.mv(p("vault"), p("open"), recursive=True),
        lambda fs, p: fs.mv([p("vault")], p("open"), recursive=True),
    ),
    "mv a glob": (lambda fs, p: fs.mv(p("vault"), p("open")), lambda fs, p: fs.mv(p("vau*"), p("open"))),
    "rm": (lambda fs, p: fs.rm(p(HIDDEN_KEY)), lambda fs, p: fs.rm([p(HIDDEN_KEY)])),
    "copy": (
        lambda fs, p: fs.copy(p(HIDDEN_KEY), p("open.key")),
        lambda fs, p: fs.copy([p(HIDDEN_KEY)], [p("open.key")]),
    ),
    "put": (lambda fs, p: fs.put(p("local"), p(HIDDEN_KEY)), lambda fs, p: fs.put([p("local")], [p(HIDDEN_KEY)])),
    "get": (lambda fs, p: fs.get(p(HIDDEN_KEY), p("got")), lambda fs, p: fs.get([p(HIDDEN_KEY)], [p("got")])),
}


@pytest.mark.parametrize("verb", SINGLE_AND_LIST)
def test_every_list_form_is_refused_where_its_single_form_is_and_changes_nothing(
    arena: Arena, verb: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    arena.sb.put(HIDDEN_KEY, b"hidden bytes")
    arena.sb.put("vault/notes.txt", b"notes")
    here = tmp_path_factory.mktemp("here")
    (here / "local").write_bytes(b"uploaded")
    fs = jail_of(arena, deny=[HIDDEN_KEY])

    def path(rel: str) -> str:
        return str(here / rel) if rel in ("local", "got") else arena.sb.path(rel)

    before = arena.state(full=True)
    refusals = []
    for label, form in zip(("single", "list"), SINGLE_AND_LIST[verb], strict=True):
        with pytest.raises(OSError) as refused:
            form(fs, path)
        refusals.append(type(refused.value))
        assert arena.state(full=True) == before, f"the {label} form changed the store"
    assert refusals[0] is refusals[1], refusals
    assert not (here / "got").exists() and "hidden bytes" not in str(refused.value)
