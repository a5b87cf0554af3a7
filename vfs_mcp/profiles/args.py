"""Argument types shared by the tool adapters: one description each, written for a model."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from vfs_mcp.tooling import Format

PathArg = Annotated[
    str, Field(description="File path: absolute inside a mount, a mount URL, or relative to the working directory")
]
DirArg = Annotated[str, Field(description="Directory path (absolute, URL, or relative to the working directory)")]
EncodingArg = Annotated[str, Field(description="Any Python codec name, or 'base64' for binary data")]
Globs = Annotated[list[str] | None, Field(description="Gitignore-style globs: '*.py' any depth, 'src/*.py' anchored")]
FormatArg = Annotated[Format, Field(description="How the text reply reads; structured content is always JSON")]
