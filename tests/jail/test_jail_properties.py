"""Property tests for ``Jail.resolve`` (docs/security.md): whatever string a model sends as a path,
resolution either refuses it with one of our errors or names a place inside a mount.

Paths are built from an alphabet heavy in what breaks resolvers: ``..``, ``.``, ``/``, ``//``,
``~``, ``::``, percent escapes, backslashes, NUL, lone surrogates, lookalike Unicode, and URL
prefixes of the mounted root, of siblings and of roots that are not mounted. On local mounts
the sandbox also holds symlinks pointing out, up, in, nowhere and at themselves.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vfs_mcp.errors import VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp_backends.hostpaths import real_path

PROPERTY_SETTINGS = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,  # the same examples on every run: a failure here is reproducible
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

NAMES = ["a", "b", "sub", "secret.txt", "{sib}", "app", "pre", "x.y", " ", "*", "?", "#", ";", "&"]
DOTS = ["..", ".", "...", "/", "//", "/./", "/../", "../", "./"]
TRICKS = [
    "~",
    "~/",
    "~root",
    "::",
    "zip::",
    ":",
    "file:",
    "s3:",
    "memory:",
    "%2e",
    "%2e%2e",
    "%2E%2E",
    "%2f",
    "%2F",
    "%00",
    "%",
    "\\",
    "..\\",
    "\\..\\",
    "\x00",
    "\n",
    "é",
    "e\u0301",
    "\u202e",
    "\uff0e",
    "\uff0e\uff0e",
    "\u2025",
    "\u2024\u2024",
    "\u2215",
    "\ufe52",
    "\ud800",
    "\udc80",
]
LINKS = ["link_out", "link_up", "link_in", "dangling_out", "loop", "hop", "evil_rel"]
PREFIXES = [
    "",
    "",
    "",
    "/",
    "./",
    "../",
    "~",
    "~/",
    "{root}",
    "{root}/",
    "{root}/..",
    "{root}/../",
    "{root}/../{leaf}/",
    "file://{host}",
    "file://{host}/",
    "file://localhost{host}/",
    "file:///",
    "file://otherhost{host}/",
    "FILE://{host}/",
    "memory://",
    "memory://other/",
    "memory://{mname}-evil/",
    "memory://{mname}evil/",
    "s3://{bucket}/",
    "s3://{bucket}/pre-evil/",
    "s3://{bucket}-other/",
    "S3://{bucket}/pre/",
    "s3a://{bucket}/pre/",
    "simplecache::",
    "zip://x::file://{host}/",
    "{outside}/",
    "{tmp}/app_evil/",
    "http://127.0.0.1/",
]

tokens = st.sampled_from(NAMES + DOTS + TRICKS + LINKS)
templates = st.one_of(
    st.builds(lambda prefix, parts: prefix + "".join(parts), st.sampled_from(PREFIXES), st.lists(tokens, max_size=10)),
    st.text(max_size=24),
)


# -- the sandbox, with local links ---------------------------------------------------------------


class World:
    """A sandbox's jail plus the placeholders its path templates are written with."""

    def __init__(self, sb: Any) -> None:
        self.sb = sb
        self.vfs: JailedFS = sb.vfs()
        outside = str(sb.outside)
        tmp = os.path.dirname(outside)
        root = sb.root
        self.subs = {
            "{root}": root,
            "{outside}": outside,
            "{tmp}": tmp,
            "{host}": root if sb.kind == "local" else f"{tmp}/app",
            "{bucket}": root.split("/")[2] if sb.kind == "s3" else "no-such-bucket",
            "{mname}": root.split("://")[1] if sb.kind == "memory" else "no-such-store",
            "{leaf}": {"local": "app", "s3": "pre"}.get(sb.kind) or root.split("://")[-1],
            "{sib}": {"local": "app_evil", "s3": "pre-evil"}.get(sb.kind, "evil"),
        }
        if sb.kind == "local":
            sb.mkdir("sub")
            host = sb.mount.backend.root
            for name, target in {
                "link_out": outside,
                "link_up": "..",
                "link_in": "sub",
                "dangling_out": f"{outside}/nowhere",
                "loop": "loop",
                "hop": "link_out",
                "evil_rel": "../app_evil",
            }.items():
                os.symlink(target, os.path.join(host, name))

    def path(self, template: str) -> str:
        for key, value in self.subs.items():
            template = template.replace(key, value)
        return template

    def resolve(self, path: str, **kwargs: Any) -> Target | None:
        """The Target, or None when refused with one of our errors (anything else propagates)."""
        try:
            return self.vfs.resolve(path, **kwargs)
        except VfsError:
            return None


@pytest.fixture
def world(sandbox: Any) -> World:
    return World(sandbox)


def inside(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def check_target(world: World, raw: str, target: Target, follow: bool) -> None:
    assert any(target.mount is m for m in world.vfs.mounts), (raw, target)
    parts = target.rel.split("/") if target.rel else []
    assert all(p not in ("", ".", "..") for p in parts), (raw, target.rel)
    assert "\x00" not in target.rel, (raw, target.rel)
    assert inside(target.fs_path, target.mount.backend.root), (raw, target.fs_path)
    assert target.display.startswith(target.mount.url), (raw, target.display)
    if target.mount.capabilities.symlinks:
        # The real path of the target (or, for link-level verbs, of its parent) is in the real root.
        checked = target.fs_path if follow or not target.rel else os.path.dirname(target.fs_path)
        real = os.path.realpath(checked)
        assert inside(real, target.mount.real_root), (raw, target.rel, real)


# -- properties ----------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(template=templates)
@example(template="file://{host}/a%00b")
@example(template="file://{host}/%2e%2e/{sib}/secret.txt")
@example(template="{root}/../{sib}/secret.txt")
@example(template="s3://{bucket}/pre/../pre-evil/secret.txt")
@example(template="link_up/app_evil/secret.txt")
@example(template="hop/secret.txt")
@example(template="loop/x")
@example(template="a\ud800b")
@example(template="~/../outside/secret.txt")
def test_resolve_refuses_with_a_vfs_error_or_lands_inside_a_mount(world: World, template: str) -> None:
    raw = world.path(template)
    for follow in (True, False):
        target = world.resolve(raw, follow=follow)
        if target is not None:
            check_target(world, raw, target, follow)
    writable = world.resolve(raw, write=True)
    if writable is not None:
        check_target(world, raw, writable, True)


@PROPERTY_SETTINGS
@given(template=templates)
def test_resolving_a_resolved_path_again_names_the_same_place(world: World, template: str) -> None:
    target = world.resolve(world.path(template))
    if target is None:
        return
    again = world.resolve(target.display)
    assert again is not None, (template, target.display)
    assert (again.mount, again.rel) == (target.mount, target.rel)


ABSOLUTE = re.compile(r"^(/|~\Z|~/|[a-zA-Z][a-zA-Z0-9+.-]*://|[a-zA-Z][a-zA-Z0-9+._-]*::)")


@PROPERTY_SETTINGS
@given(template=templates)
def test_an_absolute_path_resolves_the_same_from_any_working_directory(world: World, template: str) -> None:
    # Host paths, "~", URLs and chains never depend on the working directory (on memory/S3
    # "/x" is the working mount's root, not the working directory).
    raw = world.path(template)
    if not ABSOLUTE.match(raw):
        return
    before = world.resolve(raw)
    world.vfs.jail.chdir(Target(world.sb.mount, "sub/deeper"))
    try:
        after = world.resolve(raw)
    finally:
        world.vfs.jail.chdir(Target(world.sb.mount, ""))
    assert (before is None) == (after is None), (raw, before, after)
    if before is not None and after is not None:
        assert (before.mount, before.rel) == (after.mount, after.rel), raw


# -- memory and S3 keys are canonicalised the same way ---------------------------------------------

relative_inputs = st.builds(
    lambda lead, parts: lead + "".join(parts),
    st.sampled_from(["", "", "/", "./", "../", "//"]),
    st.lists(st.sampled_from(NAMES + DOTS + TRICKS), max_size=10),
)


@pytest.fixture
def twins(s3_endpoint: str) -> tuple[JailedFS, JailedFS]:
    """A memory mount and an S3 mount (resolution does no I/O: the bucket need not exist)."""
    memory = open_mount(MountSpec("memory://canon"))
    s3 = open_mount(MountSpec("s3://canon-bucket/pre", options={"endpoint_url": s3_endpoint}))
    return JailedFS(Jail([memory])), JailedFS(Jail([s3]))


def outcome(vfs: JailedFS, raw: str) -> tuple[str, str]:
    try:
        return ("ok", vfs.resolve(raw).rel)
    except VfsError as err:
        return ("refused", err.code)


@PROPERTY_SETTINGS
@given(raw=relative_inputs, cwd=st.sampled_from(["", "sub", "a/b", "%2e%2e", "~"]))
@example(raw="a//b/./../c/", cwd="")
@example(raw="../x", cwd="sub")
@example(raw="/a/../b", cwd="a/b")
def test_memory_and_s3_canonicalise_a_relative_path_to_the_same_key(
    twins: tuple[JailedFS, JailedFS], raw: str, cwd: str
) -> None:
    memory, s3 = twins
    for vfs in twins:
        vfs.jail.chdir(Target(vfs.mounts[0], cwd))
    assert outcome(memory, raw) == outcome(s3, raw), raw


@PROPERTY_SETTINGS
@given(raw=relative_inputs)
def test_a_relative_path_and_its_mount_url_form_name_the_same_key(twins: tuple[JailedFS, JailedFS], raw: str) -> None:
    for vfs in twins:
        vfs.jail.chdir(Target(vfs.mounts[0], ""))
        relative = outcome(vfs, raw)
        if relative[0] == "ok" and not raw.startswith(("~", "/")):
            assert outcome(vfs, f"{vfs.mounts[0].url}/{raw}") == relative, raw


@pytest.fixture
def local_world(local_sandbox: Any) -> World:
    return World(local_sandbox)


@PROPERTY_SETTINGS
@given(parts=st.lists(st.sampled_from(["sub", "a", "..", ".", *LINKS]), max_size=6))
@example(parts=["loop", "x"])
@example(parts=["hop", "secret.txt"])
@example(parts=["link_in", "..", "link_up"])
def test_the_kernel_real_path_is_the_one_os_path_realpath_computes(local_world: World, parts: list[str]) -> None:
    """``real_path`` asks the kernel (``O_PATH`` and ``/proc/self/fd``): through links out, up,
    in, dangling and looping, it names what ``os.path.realpath`` names."""
    path = os.path.join(local_world.sb.mount.backend.root, *parts)
    assert real_path(path) == os.path.realpath(path)
