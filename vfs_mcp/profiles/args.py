"""Argument types shared by the tool adapters, written for a model and paid for on every turn.

An argument whose name says what it is has no description (the server's instructions and
``list_allowed_directories`` say how paths are written once). ``Hidden`` keeps an argument
accepted but out of the published schema: a seed's spelling merged into another argument.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from vfs_mcp.profiles.results import Format

Hidden = SkipJsonSchema()  # type: ignore[type-arg]
"""Accepted, not listed: put it in an argument's ``Annotated[...]``."""

PathArg = str
DirArg = str
EncodingArg = str
Globs = Annotated[list[str] | None, Field(description="gitignore globs")]
FormatArg = Format
Recursive = Annotated[bool, Hidden]
