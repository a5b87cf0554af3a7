"""The ``fs`` tools' result JSON, as their clients read it (docs/profile-fs.md)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

RangeType = Literal["bytes", "lines"]
SearchMode = Literal["literal", "regex"]


class _Sparse(BaseModel):
    """A result whose ``SPARSE`` fields are left out of the JSON when None, as the original omits them."""

    SPARSE: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        for name in self.SPARSE:
            if data.get(name) is None:
                data.pop(name, None)
        return data


class FileEntry(_Sparse):
    SPARSE = ("size", "modified")
    path: str
    is_dir: bool
    size: int | None = Field(None, description="Bytes (only with include_metadata)")
    modified: int | None = Field(None, description="UNIX seconds (only with include_metadata, when known)")


class ListFilesResult(BaseModel):
    entries: list[FileEntry]
    has_more: bool = Field(description="More entries match: call again with skip += max_results")


class ReadRange(BaseModel):
    range_type: RangeType
    offset_bytes: int | None
    max_bytes: int | None
    start_line: int | None
    max_lines: int | None


class ReadFileResult(BaseModel):
    path: str
    content: str
    is_truncated: bool = Field(description="The file goes on after this content")
    range: ReadRange


class SearchHit(BaseModel):
    path: str
    line: int = Field(description="1-based line number")
    column: int = Field(description="1-based column of the first match on the line")
    line_text: str
    context_before: list[str]
    context_after: list[str]


class SearchTextResult(BaseModel):
    hits: list[SearchHit]
    has_more: bool = Field(description="More hits match: call again with skip += max_results")


class StatResult(_Sparse):
    SPARSE = ("size", "modified")
    path: str
    exists: bool
    is_file: bool
    is_dir: bool
    size: int | None = None
    modified: int | None = Field(None, description="UNIX seconds")


class PathInfoResult(BaseModel):
    input_path: str
    resolved_path: str
    exists: bool
    is_file: bool
    is_dir: bool
    is_absolute: bool
    canonical_path: str | None = Field(description="With symbolic links resolved (None when it does not exist)")
    repo_root: str | None = Field(description="The git repository holding the path, if any")


class PathResult(BaseModel):
    path: str


class CreateFileResult(BaseModel):
    path: str
    created: bool
    overwritten: bool


class FsDeleteResult(BaseModel):
    model_config = ConfigDict(title="DeleteResult")  # the original's name, in the output schema
    path: str
    existed: bool
    is_dir: bool
    removed: bool
    recursive: bool


class _FromTo(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: str = Field(alias="from")
    to: str


class FsCopyResult(_FromTo):
    model_config = ConfigDict(title="CopyResult")
    bytes_copied: int
    overwritten: bool


class FsMoveResult(_FromTo):
    model_config = ConfigDict(title="MoveResult")
    existed: bool = Field(description="The destination existed before the move")
    overwritten: bool
    recursive: bool
