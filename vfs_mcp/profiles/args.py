"""Argument types shared by the tool adapters, written for a model and paid for on every turn.

An argument whose name says what it is has no description (the server's instructions and
``list_allowed_directories`` say how paths are written once). ``Hidden`` keeps an argument
accepted but out of the published schema: an original's spelling merged into another argument, or
an option a model rarely needs (an error that needs it names it).
"""

from __future__ import annotations

from typing import Annotated

from pydantic.json_schema import SkipJsonSchema

from vfs_mcp.profiles.results import Format

Hidden = SkipJsonSchema()  # type: ignore[type-arg]
"""Accepted, not listed: put it in an argument's ``Annotated[...]``."""

PathArg = str
DirArg = str
EncodingArg = str
TextCoding = Annotated[str, Hidden]
"""The encoding of a tool that reads or edits lines: accepted, not listed (a file that is not
UTF-8 is refused with an error that names the argument)."""
Globs = list[str] | None
"""gitignore globs (docs/tools.md says so once)."""
FormatArg = Annotated[Format, Hidden]
"""``format='json'``: the result's fields as JSON text; accepted, not listed (programs have them in ``_meta``)."""
Recursive = Annotated[bool, Hidden]
