"""Giving new lines the file's indentation where the text they replace was found indented
otherwise: the one re-indenter of find-and-replace (``replace``), the reference's trimmed
edits (``dialects.official``) and patch hunks found with whitespace ignored (``hunk_placing``).

Each indentation the caller's old text uses stands for the one the file has on the line it
matched; a new line deeper than its anchor keeps its extra depth, in tabs where the file
indents with tabs (``retabbed``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable


def indent_of(line: str) -> str:
    """The spaces and tabs ``line`` starts with."""
    return line[: len(line) - len(line.lstrip(" \t"))]


def indent_unit(indents: Iterable[str]) -> int:
    """The smallest step between the widths of ``indents`` (4 when there is none)."""
    widths = sorted({len(indent) for indent in indents})
    steps = [b - a for a, b in itertools.pairwise(widths)]
    return min(steps) if steps else 4


def retabbed(extra: str, file_indent: str, unit: int) -> str:
    """Extra depth written in spaces, in tabs of ``unit`` spaces where the file indents with tabs."""
    if "\t" in file_indent and extra and not extra.strip(" "):
        return "\t" * (len(extra) // unit) + " " * (len(extra) % unit)
    return extra


def reindent(
    new_lines: list[str], old_lines: list[str], file_lines: list[str], *, as_reference: bool = False
) -> list[str]:
    """``new_lines`` in the file's indentation, where ``old_lines`` matched ``file_lines``.

    Each new line takes the file's indentation for the longest of old text's indentations it
    starts with, plus its extra depth (``retabbed``). A line indented under none of them takes
    the matched first line's indentation; ``as_reference``: the reference server's rule
    instead, such a line is kept as given and extra depth is kept as written.
    """
    mapping: dict[str, str] = {}
    for old, actual in zip(old_lines, file_lines, strict=False):
        if old.strip():
            mapping.setdefault(indent_of(old), indent_of(actual))
    if not mapping:
        return new_lines
    unit = indent_unit(indent_of(line) for line in old_lines if line.strip())
    base = indent_of(file_lines[0])
    out = []
    for line in new_lines:
        indent, body = indent_of(line), line.lstrip(" \t")
        anchor = max((k for k in mapping if indent.startswith(k)), key=len, default=None)
        if not body or (anchor is None and as_reference):
            out.append(line)
        elif anchor is None:
            out.append(base + body)
        else:
            extra = indent[len(anchor) :]
            out.append(mapping[anchor] + (extra if as_reference else retabbed(extra, mapping[anchor], unit)) + body)
    return out
