"""Reading a multi-file patch in the two formats models write: a unified diff (as ``git diff``
writes it) and OpenAI's ``*** Begin Patch`` format. Both become the same ``FilePatch`` list.

A hunk is its lines (``' '`` context, ``'-'`` removed, ``'+'`` added); line numbers in a
unified diff are kept only as a hint for a hunk with no context (``-U0`` insertions): hunks are
located by their text (``vfs_mcp.ops.edits.patch``).

The patch is read where it lies, by regular expressions over its text, never split into a
line each: a hunk keeps its lines as one string, made into a list of lines only when it is
placed in a file, and a file the patch adds is its text at once (``Hunk.new_text``). A patch
costs a few times its size, not an object for each of its lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.ops.diff.hunk import Hunk

Kind = Literal["update", "add", "delete"]
MAX_PATCH_FILES = 200
MAX_HUNKS = 100_000
"""Hunks one patch may hold (each is an object of its own)."""

_FILE = re.compile(r"^--- ([^\n]*)\n\+\+\+ ([^\n]*)(?:\n|\Z)", re.M)
_RUN = re.compile(r"(?:(?!--- [^\n]*\n\+\+\+ )[ +\-][^\n]*(?:\n|\Z))*+")
"""Lines that are surely a hunk's: context, removed, added, up to a file header ("--- " then "+++ ")."""
_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@[^\n]*(?:\n|\Z)(" + _RUN.pattern + ")")
"""A hunk's header (its two starts) and the ``_RUN`` after it, in one match: the usual hunk's whole body."""
_NOTE = re.compile(r"\\[^\n]*(?:\n|\Z)")
"""'\\ No newline at end of file', about the line before it."""
_BLANKS = re.compile(r"\n+")
_NOT_ADDED = re.compile(r"^[^+]", re.M)
_BEGIN = re.compile(r"^[^\S\n]*\*\*\* Begin Patch[^\S\n]*$", re.M)
_DIRECTIVE = re.compile(r"^\*\*\*", re.M)
_UPDATE_END = re.compile(r"^\*\*\*(?! End of File[^\S\n]*$)", re.M)
"""Where an update's hunks end: a line starting with ``***`` that is not ``*** End of File``."""
_NO_END = "the patch has no *** End Patch line"


@dataclass
class FilePatch:
    path: str
    kind: Kind
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


def parse_patch(text: str) -> list[FilePatch]:
    """The files of ``text``, in order; INVALID_ARGUMENT naming the line that cannot be read."""
    text = text.replace("\r\n", "\n")
    files = _openai(text) if "*** Begin Patch" in text else _unified(text)
    if not files:
        raise InvalidArgument(
            "no file changes found: give a unified diff (--- a/x, +++ b/x, @@ hunks) or a *** Begin Patch block"
        )
    return files


class _Files(list[FilePatch]):
    """The files read so far, bounded in number and in hunks."""

    hunks = 0

    def add(self, patch: FilePatch) -> None:
        if len(self) == MAX_PATCH_FILES:
            raise InvalidArgument(f"more than {MAX_PATCH_FILES} files in one patch; give at most {MAX_PATCH_FILES}")
        self.append(patch)

    def hunk(self, patch: FilePatch, hunk: Hunk) -> None:
        self.hunks += 1
        if self.hunks > MAX_HUNKS:
            raise InvalidArgument(f"more than {MAX_HUNKS:,} hunks in one patch; split it")
        patch.hunks.append(hunk)


def _line_number(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _strip_name(raw: str) -> str | None:
    name = raw.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    return name[2:] if name[:2] in ("a/", "b/") else name


def _unified(text: str) -> list[FilePatch]:
    files = _Files()
    at = 0
    while header := _FILE.search(text, at):
        old, new = _strip_name(header.group(1)), _strip_name(header.group(2))
        if old is None and new is None:
            raise InvalidArgument(f"line {_line_number(text, header.start())}: both sides of the file are /dev/null")
        patch = FilePatch(
            path=old or new or "",
            kind="add" if old is None else "delete" if new is None else "update",
            move_to=new if old is not None and new is not None and new != old else None,
        )
        at = header.end()
        while found := _HUNK.match(text, at):
            at, hunk = _hunk(text, found)
            files.hunk(patch, hunk)
        if patch.kind == "update" and not patch.hunks and patch.move_to is None:
            raise InvalidArgument(f"{patch.path}: a file in the patch has no @@ hunks")
        files.add(patch)
    return files


def _numbered(body: str, old_start: int, new_start: int, old_bare: bool = False, new_bare: bool = False) -> Hunk:
    """The hunk of ``body`` (each of its lines starts with its sign): its counts from its lines,
    its starts from its header (the model's: an empty range there names the line before it)."""
    lines = body.count("\n") + 1 if body else 0
    old_lines = lines - body.startswith("+") - body.count("\n+")
    new_lines = lines - body.startswith("-") - body.count("\n-")
    return Hunk(
        old_start + (old_lines == 0),
        old_lines,
        new_start + (new_lines == 0),
        new_lines,
        body=body,
        old_ends_without_newline=old_bare,
        new_ends_without_newline=new_bare,
        size=lines,
    )


def _hunk(text: str, header: re.Match[str]) -> tuple[int, Hunk]:
    """The hunk of ``header`` (a match of ``_HUNK``), and where its next line starts."""
    at, end = header.span(3)
    old_start, new_start = int(header[1]), int(header[2])
    if end == len(text) or text[end] not in ("\\", "\n"):  # the usual hunk: one run of lines
        return end, _numbered(_lines(text, at, end), old_start, new_start)
    pieces: list[str] = []
    last = ""  # the sign of the line before
    old_bare = new_bare = False
    while at < len(text):
        end = _RUN.match(text, at).end()  # type: ignore[union-attr]
        if end > at:
            pieces.append(_lines(text, at, end))
            last, at = text[max(text.rfind("\n", at, end - 1) + 1, at)], end  # the last line's sign
        if at == len(text):
            break
        if note := _NOTE.match(text, at):  # "\ No newline at end of file": about the line before
            old_bare |= last in (" ", "-")
            new_bare |= last in (" ", "+")
            at = note.end()
        elif blanks := _BLANKS.match(text, at):
            # Blank lines are blank context unless what follows them is not more of the hunk
            # (a new file or hunk, text, or nothing).
            stop = blanks.end()
            following = text[stop : stop + 4]
            if following[:1] not in (" ", "-", "+", "\\") or following.startswith(("--- ", "+++ ")):
                break
            pieces.append("\n".join(" " * (stop - at)))
            last, at = " ", stop
        else:
            break
    return at, _numbered("\n".join(pieces), old_start, new_start, old_bare, new_bare)


def _lines(text: str, start: int, end: int) -> str:
    """The lines of ``text[start:end]`` (whole lines), without the last one's newline."""
    return text[start : end - 1 if end > start and text[end - 1] == "\n" else end]


def _openai(text: str) -> list[FilePatch]:
    begin = _BEGIN.search(text)
    if begin is None:
        raise InvalidArgument("the patch has no *** Begin Patch line")
    files = _Files()
    at = begin.end() + 1
    while at < len(text):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[at:end]
        if line.strip() == "*** End Patch":
            return files
        if line.startswith("*** Add File: "):
            at = _added(text, end + 1, files, FilePatch(line[len("*** Add File: ") :].strip(), "add"))
        elif line.startswith("*** Delete File: "):
            files.add(FilePatch(line[len("*** Delete File: ") :].strip(), "delete"))
            at = end + 1
        elif line.startswith("*** Update File: "):
            at = _updated(text, end + 1, files, FilePatch(line[len("*** Update File: ") :].strip(), "update"))
        elif line.strip() == "":
            at = end + 1
        else:
            raise InvalidArgument(
                f"line {_line_number(text, at)}: expected *** Add/Update/Delete File or *** End Patch, got {line[:60]!r}"
            )
    raise InvalidArgument(_NO_END)


def _added(text: str, at: int, files: _Files, patch: FilePatch) -> int:
    """An added file's lines from ``at``: every line up to the next ``***`` one starts with '+'.
    Returns where that next line starts."""
    found = _DIRECTIVE.search(text, min(at, len(text)))
    end = found.start() if found else len(text)
    stop = end - 1 if end > at and text[end - 1] == "\n" else end  # the last line's newline aside
    if end > at:
        bad = _NOT_ADDED.search(text, at, stop)  # a line not starting with '+', or empty
        where = bad.start() if bad else stop if stop == at or text[stop - 1] == "\n" else None
        if where is not None:
            raise InvalidArgument(f"line {_line_number(text, where)}: every line of an added file starts with '+'")
    files.hunk(patch, Hunk(body=text[at:stop] if end > at else ""))
    files.add(patch)
    return end


def _updated(text: str, at: int, files: _Files, patch: FilePatch) -> int:
    """An updated file's hunks from ``at`` (after an optional ``*** Move to:`` line), up to the
    next ``***`` line that is not ``*** End of File``. Returns where that line starts."""
    if text.startswith("*** Move to: ", at):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        patch.move_to = text[at + len("*** Move to: ") : end].strip()
        at = end + 1
    found = _UPDATE_END.search(text, min(at, len(text)))
    stop = found.start() if found else len(text)
    first = _line_number(text, at)
    bodies: list[tuple[str, list[str], list[str]]] = []  # (anchor, signs, texts) of each hunk
    for number, current in enumerate(_lines(text, at, stop).split("\n") if stop > at else [], first):
        if current.strip() == "*** End of File":
            continue
        if current.startswith("@@"):
            bodies.append((current[2:].strip(), [], []))
        elif current[:1] in (" ", "-", "+") or current == "":
            if not bodies:
                bodies.append(("", [], []))
            bodies[-1][1].append(current[:1] or " ")
            bodies[-1][2].append(current[1:])
        else:
            raise InvalidArgument(f"line {number}: a hunk line starts with ' ', '-' or '+': {current[:60]!r}")
    if found is None:
        raise InvalidArgument(_NO_END)
    for anchor, signs, texts in bodies:
        while texts and texts[-1] == "" and signs[-1] == " ":  # a blank line that closes a hunk is layout
            signs.pop()
            texts.pop()
        files.hunk(patch, Hunk(signs="".join(signs), texts=texts, anchor=anchor))
    if not patch.hunks and patch.move_to is None:
        raise InvalidArgument(f"{patch.path}: an *** Update File has no hunks")
    files.add(patch)
    return stop
