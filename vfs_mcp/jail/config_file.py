"""The ``--config`` TOML file, checked against its schema before anything starts.

A key that is not in the schema, or a value of the wrong type, refuses to start with one
line naming the file, the key and, for a near-miss, the key meant (``readonly`` ->
``read_only``): a typo must never leave a mount writable or a secret readable.

    read_only = false            # every mount read-only
    deny = [".env", "*.pem"]     # gitignore patterns hidden from every tool
    max_read_bytes = 10485760    # bytes, or a size: "10 MiB", "512k"
    max_write_bytes = "16 MiB"   # the largest file a write, an edit or a patch leaves
    state = "s3://bucket/.vfs-mcp-state"   # where changes are recorded (default: a private local folder)
    index = true                 # grep keeps a content index of object-store mounts in the state store

    [[mount]]
    root = "s3://bucket/prefix"
    read_only = true
    deny_hardlinked = false      # local mounts: refuse files with other hard links
    review = false               # keep its changes pending for a person to accept (vfs-mcp review)
    options = { endpoint_url = "http://127.0.0.1:9000" }   # object stores only

    [[mount]]
    root = "memory://scratch"
    options = { max_bytes = "256 MiB" }   # what its files may hold in all (default 1 GiB)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from vfs_mcp.config import parse_size, size

Size = Annotated[int, BeforeValidator(parse_size), Field(ge=1)]


class MountEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    root: str
    read_only: bool = False
    deny_hardlinked: bool = False
    review: bool = False
    options: dict[str, Any] = Field(default_factory=dict)


class ConfigFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    mount: list[MountEntry] = Field(default_factory=list)
    read_only: bool = False
    deny: list[str] = Field(default_factory=list)
    max_read_bytes: Size | None = None
    max_write_bytes: Size | None = None
    state: str | None = None
    confirm: Literal["auto", "never", "destructive", "writes"] | None = None
    task_after: Annotated[float, Field(ge=0)] | Literal["never"] | None = None
    index: bool = True


_KEYS: dict[str, list[str]] = {"": list(ConfigFile.model_fields), "mount": list(MountEntry.model_fields)}


def read_config(path: str | os.PathLike[str]) -> ConfigFile:
    """The file's content, checked; ValueError with one line naming what is wrong."""
    import tomllib  # here: most servers start without a file

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read config {path}: {exc}") from exc
    except RecursionError:  # tomllib parses arrays and tables recursively
        raise ValueError(f"cannot read config {path}: it is nested too deeply to be a config") from None
    try:
        config = ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"config {path}: {_first_problem(exc)}") from None
    for number, entry in enumerate(config.mount, 1):
        if entry.root.startswith("memory://") and "max_bytes" in entry.options:
            try:
                entry.options["max_bytes"] = size(entry.options["max_bytes"])
            except ValueError:
                shown = repr(entry.options["max_bytes"])
                raise ValueError(
                    f'config {path}: max_bytes = {shown} in [[mount]] {number}: give bytes or a size such as "256 MiB"'
                ) from None
        if entry.options and ("://" not in entry.root or entry.root.startswith("file://")):
            keys = ", ".join(sorted(entry.options))
            raise ValueError(
                f"config {path}: [[mount]] {number} ({entry.root}) is a local folder and takes no options "
                f"({keys}); options are for object stores"
            )
    return config


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    loc = [part for part in error["loc"] if not isinstance(part, str) or not part.startswith("function-")]
    where = _where(loc)
    if error["type"] == "extra_forbidden":
        key = str(loc[-1])
        section = "mount" if "mount" in loc[:-1] else ""
        known = _KEYS[section]
        import difflib  # here: only a name that is not known needs it

        close = difflib.get_close_matches(key.replace("-", "_").lower(), known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(known)}"
        return f"unknown key {key!r}{where}{hint}"
    if error["type"] == "missing":
        return f"{_where(loc[:-1]).removeprefix(' in ') or 'the file'} needs {loc[-1]!r}"
    shown = repr(error.get("input"))
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    key = ".".join(str(p) for p in loc if isinstance(p, str))
    hint = f" (write {key} = [{shown}])" if error["type"] == "list_type" and isinstance(error.get("input"), str) else ""
    said = str(error["msg"]).removeprefix("Value error, ")
    return f"{key} = {shown}: {said}{where}{hint}"


def _where(loc: list[Any]) -> str:
    if len(loc) >= 2 and loc[0] == "mount" and isinstance(loc[1], int):
        return f" in [[mount]] {loc[1] + 1}"
    return ""
