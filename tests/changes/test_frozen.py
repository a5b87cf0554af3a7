"""A ``@frozen`` record behaves as the frozen dataclass it replaces: made by position or by
keyword with its defaults, equal and hashed by its compared fields, shown by those it shows, and
never changed once made; what it does not take is refused when the class is made."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from vfs_mcp.changes.frozen import frozen
from vfs_mcp.changes.steps import ABSENT, Expect, FileImage, Put, Stored
from vfs_mcp.jail.mounts import MountSpec, open_mount
from vfs_mcp.jail.resolve import Target


@frozen
class Sample:
    name: str
    size: int = 0
    hashed: Callable[[], str] | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Twin:
    name: str
    size: int = 0
    hashed: Callable[[], str] | None = dataclasses.field(default=None, compare=False, repr=False)


def test_a_record_is_made_by_position_or_by_keyword_with_its_defaults() -> None:
    assert Sample("a").size == 0
    assert Sample("a", 3) == Sample(name="a", size=3) == Sample("a", size=3)
    assert Sample("a", 3).hashed is None


def test_it_equals_hashes_and_shows_as_the_frozen_dataclass_it_replaces() -> None:
    one, other = Sample("a", 1, lambda: "x"), Sample("a", 1, lambda: "y")
    assert one == other and hash(one) == hash(other)  # ``hashed`` is not compared
    assert Sample("a", 1) != Sample("a", 2)
    assert Sample("a") != Twin("a")  # another class is never equal
    assert repr(one) == repr(Twin("a", 1, lambda: "x")).replace("Twin", "Sample") == "Sample(name='a', size=1)"
    assert len({Sample("a", 1), Sample("a", 1), Sample("b")}) == 2


def test_it_cannot_be_changed_once_made() -> None:
    record = Sample("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.size = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del record.size  # type: ignore[misc]
    assert record.size == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: Sample(),  # type: ignore[call-arg]
        lambda: Sample("a", 1, None, 2),  # type: ignore[call-arg]
        lambda: Sample("a", name="b"),  # type: ignore[misc]
        lambda: Sample("a", colour="red"),  # type: ignore[call-arg]
    ],
    ids=["missing", "too many", "twice", "unknown"],
)
def test_wrong_arguments_are_refused_as_a_dataclass_refuses_them(make: Callable[[], object]) -> None:
    with pytest.raises(TypeError):
        make()


def test_what_a_frozen_record_does_not_take_is_refused_when_its_class_is_made() -> None:
    with pytest.raises(TypeError, match="takes a default"):

        @frozen
        class Listed:
            names: list[str] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="follows one with a default"):

        @frozen
        class Ordered:
            size: int = 0
            name: str  # type: ignore[misc]

    with pytest.raises(TypeError, match="no base class"):

        @frozen
        class Derived(Sample):
            more: int = 0


def test_the_steps_keep_their_constructor_equality_and_frozenness(tmp_path: Path) -> None:
    target = Target(open_mount(MountSpec(str(tmp_path))), "a.txt")
    put = Put(target=target, data=b"new", expect=ABSENT, digest=lambda: "d")
    assert put == Put(target, b"new", None, Expect("absent")) and put.parents is False
    assert put.expect.state == "absent" and Put(target).expect == Expect("file-or-absent")
    assert FileImage(b"x", 0o644, kept="images/1") == FileImage(b"x", 0o644)  # ``kept`` is not compared
    assert "fetch" not in repr(Stored(lambda start, end: b"", 0, 0, "e3b0"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        put.data = b"other"  # type: ignore[misc]
