"""Frozen records made without generated code: a class under ``@frozen`` is what
``@dataclass(frozen=True)`` makes of it (an ``__init__`` by position and by keyword, equality
and a hash over its compared fields, a repr, no assignment once made), its methods the ones
written once here. CPython 3.11's ``dataclass`` compiles six functions from source for each
frozen class, 1-2 ms a class: the write path's steps and images were most of the import a
fresh server's first change paid (benchmarks/README.md, "Issue 50 item 3").

A field's default is its value in the class body, or ``dataclasses.field(default=...,
compare=..., repr=...)``; nothing else a dataclass takes (factories, keyword-only fields,
bases with fields) is taken here, and using it is a ``TypeError`` when the class is made."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T", bound=type)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: T) -> T:
    """``cls`` with the methods of a frozen dataclass of its annotated fields, in their order."""
    names, defaults, compared, shown = _fields(cls)
    known, own = frozenset(names), cls.__name__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{own}() takes {len(names)} arguments, {len(args)} given")
        values = defaults | dict(zip(names, args, strict=False))
        if kwargs:
            if not known.issuperset(kwargs) or not kwargs.keys().isdisjoint(names[: len(args)]):
                raise TypeError(f"{own}() got an unexpected or repeated argument: {', '.join(kwargs)}")
            values.update(kwargs)
        if len(values) < len(names):
            raise TypeError(f"{own}() missing {', '.join(name for name in names if name not in values)}")
        self.__dict__.update(values)  # past __setattr__, which refuses

    def key(self: Any) -> tuple[Any, ...]:
        found = self.__dict__
        return tuple(found[name] for name in compared)

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(key(self) == key(other))

    def __hash__(self: Any) -> int:
        return hash(key(self))

    def __repr__(self: Any) -> str:
        found = self.__dict__
        return f"{own}({', '.join(f'{name}={found[name]!r}' for name in shown)})"

    methods = {"__init__": __init__, "__eq__": __eq__, "__hash__": __hash__, "__repr__": __repr__}
    for name, method in (methods | {"__setattr__": _assigned, "__delattr__": _deleted}).items():
        setattr(cls, name, method)
    return cls


def _fields(cls: type) -> tuple[tuple[str, ...], dict[str, Any], list[str], list[str]]:
    """``cls``'s fields: their names in order, the defaults of those that have one, and those
    compared and those shown; a ``dataclasses.field`` in the class body is replaced by its default."""
    if cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__}: a frozen record has no base class")
    names = tuple(inspect.get_annotations(cls))
    defaults: dict[str, Any] = {}
    compared: list[str] = []
    shown: list[str] = []
    for name in names:
        value = cls.__dict__.get(name, dataclasses.MISSING)
        compare = show = True
        if isinstance(value, dataclasses.Field):
            if value.default_factory is not dataclasses.MISSING or not value.init or value.kw_only is True:
                raise TypeError(f"{cls.__name__}.{name}: a frozen record's field takes a default, compare and repr")
            compare, show, value = value.compare, value.repr, value.default
            if value is dataclasses.MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, value)
        if value is not dataclasses.MISSING:
            defaults[name] = value
        elif defaults:
            raise TypeError(f"{cls.__name__}.{name}: a field without a default follows one with a default")
        compared += [name] * compare
        shown += [name] * show
    return names, defaults, compared, shown


def _assigned(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _deleted(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
