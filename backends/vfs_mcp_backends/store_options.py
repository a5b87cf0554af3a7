"""Typed options per store: one pydantic model each, checked before a filesystem is built.

A mount's options come from the operator's config file. An option a store does not know must
not be dropped in silence (a typo in ``endpoint_url`` would send requests to AWS): it is a
``ValueError`` naming the option and the closest known one. A store whose fsspec class takes
more keyword arguments than its model declares passes that class to ``parse``: those
arguments are accepted by name (its ``__init__``'s parameters and fsspec's own) and passed on.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from vfs_mcp_backends.base import Options

FSSPEC_OPTIONS = frozenset(
    {"skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths", "asynchronous", "loop"}
)
"""Keyword arguments every fsspec filesystem takes (``AbstractFileSystem`` and its instance cache)."""


class StoreOptions(BaseModel):
    """The options of one kind of store (subclass per backend)."""

    model_config = ConfigDict(extra="allow")

    store: ClassVar[str] = "this"
    """The store's name in messages ("s3 mounts")."""

    @classmethod
    def known(cls, passes_to: type | None = None) -> list[str]:
        """Every option name this store takes (``passes_to``: see ``parse``)."""
        names = set(cls.model_fields)
        if passes_to is not None:
            names |= FSSPEC_OPTIONS | _parameters(passes_to)
        return sorted(names)

    @classmethod
    def parse(cls, options: Options, passes_to: type | None = None) -> Self:
        """The options, checked; ValueError naming an unknown option (and the one meant) or a bad
        value. ``passes_to``: the fsspec class that takes the options beyond the declared fields."""
        known = cls.known(passes_to)
        for name in options:
            if name not in known:
                import difflib  # here: only a name that is not known needs it

                close = difflib.get_close_matches(str(name).replace("-", "_").lower(), known, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}?" if close else f"known options: {', '.join(known)}"
                raise ValueError(f"unknown option {name!r} for {cls.store} mounts ({hint})")
        try:
            return cls.model_validate(dict(options))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            said = str(error["msg"]).removeprefix("Value error, ")
            raise ValueError(f"option {where} = {error.get('input')!r} for {cls.store} mounts: {said}") from None

    def given(self) -> dict[str, Any]:
        """The options as given (declared fields that were set, and the ones passed on)."""
        return {**self.model_dump(exclude_unset=True), **(self.model_extra or {})}


def _parameters(cls: type) -> set[str]:
    """The keyword parameters of ``cls.__init__`` (its ``**kwargs`` aside)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    # __init__ itself: fsspec's instance-caching metaclass hides it from signature(cls)
    init = inspect.signature(cls.__init__)  # type: ignore[misc]
    return {p.name for p in init.parameters.values() if p.kind in kinds} - {"self"}
