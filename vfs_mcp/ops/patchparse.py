"""Reading a multi-file patch in the two formats models write: a unified diff (as ``git diff``
writes it) and OpenAI's ``*** Begin Patch`` format. Both become the same ``FilePatch`` list.

A hunk is its lines (``' '`` context, ``'-'`` removed, ``'+'`` added) without their
newlines; line numbers in a unified diff are kept only as a hint for a hunk with no context
(``-U0`` insertions): hunks are located by their text (``vfs_mcp.ops.patch``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from vfs_mcp.errors import InvalidArgument

Kind = Literal["update", "add", "delete"]
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MAX_PATCH_FILES = 200


@dataclass
class Hunk:
    lines: list[tuple[str, str]] = field(default_factory=list)
    """(' ' | '-' | '+', text without its newline)."""
    anchor: str = ""
    """Text after ``@@`` in OpenAI's format: a line the hunk comes after (may be empty)."""
    old_start: int | None = None
    """The unified diff's old start line (1-based), a hint used only when the hunk has no context."""
    old_ends_without_newline: bool = False
    new_ends_without_newline: bool = False

    @property
    def old(self) -> list[str]:
        return [text for sign, text in self.lines if sign != "+"]

    @property
    def new(self) -> list[str]:
        return [text for sign, text in self.lines if sign != "-"]

    def new_added(self) -> list[str]:
        """The added lines alone."""
        return [text for sign, text in self.lines if sign == "+"]


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
    if len(files) > MAX_PATCH_FILES:
        raise InvalidArgument(f"{len(files)} files in one patch; give at most {MAX_PATCH_FILES}")
    return files


def _strip_name(raw: str) -> str | None:
    name = raw.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    return name[2:] if name[:2] in ("a/", "b/") else name


def _unified(text: str) -> list[FilePatch]:
    lines = text.split("\n")
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not (lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        old, new = _strip_name(lines[i][4:]), _strip_name(lines[i + 1][4:])
        if old is None and new is None:
            raise InvalidArgument(f"line {i + 1}: both sides of the file are /dev/null")
        patch = FilePatch(
            path=old or new or "",
            kind="add" if old is None else "delete" if new is None else "update",
            move_to=new if old is not None and new is not None and new != old else None,
        )
        i += 2
        while i < len(lines) and (match := _HUNK.match(lines[i])):
            hunk = Hunk(old_start=int(match.group(1)))
            i += 1
            body = hunk.lines
            while i < len(lines):
                line = lines[i]
                sign = line[:1]
                if sign in (" ", "+"):  # a header starts with "--- ": these never do
                    body.append((sign, line[1:]))  # the usual line: one test, no call
                    i += 1
                    continue
                if sign not in ("-", "\\", "") or _file_header(lines, i):
                    break
                if line.startswith("\\"):  # "\ No newline at end of file": about the line before
                    if hunk.lines and hunk.lines[-1][0] != "+":
                        hunk.old_ends_without_newline = True
                    if hunk.lines and hunk.lines[-1][0] != "-":
                        hunk.new_ends_without_newline = True
                elif line == "":
                    if i == len(lines) - 1 or _blank_ends_hunk(lines, i):
                        break
                    hunk.lines.append((" ", ""))
                else:
                    hunk.lines.append((line[0], line[1:]))
                i += 1
            patch.hunks.append(hunk)
        if patch.kind == "update" and not patch.hunks and patch.move_to is None:
            raise InvalidArgument(f"{patch.path}: a file in the patch has no @@ hunks")
        files.append(patch)
    return files


def _file_header(lines: list[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _blank_ends_hunk(lines: list[str], i: int) -> bool:
    """A blank line ends a hunk when what follows is not more of it (a new file or hunk, or text)."""
    following = next((line for line in lines[i + 1 :] if line != ""), "")
    return following[:1] not in (" ", "-", "+", "\\") or following.startswith(("--- ", "+++ "))


def _openai(text: str) -> list[FilePatch]:
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip() == "*** Begin Patch")
    files: list[FilePatch] = []
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.strip() == "*** End Patch":
            return files
        if line.startswith("*** Add File: "):
            patch = FilePatch(line[len("*** Add File: ") :].strip(), "add", hunks=[Hunk()])
            i += 1
            while i < len(lines) and not lines[i].startswith("***"):
                if not lines[i].startswith("+"):
                    raise InvalidArgument(f"line {i + 1}: every line of an added file starts with '+'")
                patch.hunks[0].lines.append(("+", lines[i][1:]))
                i += 1
            files.append(patch)
        elif line.startswith("*** Delete File: "):
            files.append(FilePatch(line[len("*** Delete File: ") :].strip(), "delete"))
            i += 1
        elif line.startswith("*** Update File: "):
            patch = FilePatch(line[len("*** Update File: ") :].strip(), "update")
            i += 1
            if i < len(lines) and lines[i].startswith("*** Move to: "):
                patch.move_to = lines[i][len("*** Move to: ") :].strip()
                i += 1
            hunk: Hunk | None = None
            while i < len(lines) and not (lines[i].startswith("***") and lines[i].strip() != "*** End of File"):
                current = lines[i]
                if current.strip() == "*** End of File":
                    pass
                elif current.startswith("@@"):
                    hunk = Hunk(anchor=current[2:].strip())
                    patch.hunks.append(hunk)
                elif current[:1] in (" ", "-", "+") or current == "":
                    if hunk is None:
                        hunk = Hunk()
                        patch.hunks.append(hunk)
                    hunk.lines.append((current[:1] or " ", current[1:]))
                else:
                    raise InvalidArgument(f"line {i + 1}: a hunk line starts with ' ', '-' or '+': {current[:60]!r}")
                i += 1
            for each in patch.hunks:  # a blank line that closes a hunk is layout, not context
                while each.lines and each.lines[-1] == (" ", ""):
                    each.lines.pop()
            if not patch.hunks and patch.move_to is None:
                raise InvalidArgument(f"{patch.path}: an *** Update File has no hunks")
            files.append(patch)
        elif line.strip() == "":
            i += 1
        else:
            raise InvalidArgument(
                f"line {i + 1}: expected *** Add/Update/Delete File or *** End Patch, got {line[:60]!r}"
            )
    raise InvalidArgument("the patch has no *** End Patch line")
