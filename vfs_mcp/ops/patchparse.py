"""Reading a multi-file patch in the two formats models write: a unified diff (as ``git diff``
writes it) and OpenAI's ``*** Begin Patch`` format. Both become the same ``FilePatch`` list.

A hunk is its lines (``' '`` context, ``'-'`` removed, ``'+'`` added) without their
newlines; line numbers in a unified diff are kept only as a hint for a hunk with no context
(``-U0`` insertions): hunks are located by their text (``vfs_mcp.ops.patch``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from vfs_mcp.errors import InvalidArgument

Kind = Literal["update", "add", "delete"]
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MAX_PATCH_FILES = 200


@dataclass
class Hunk:
    signs: str = ""
    """One character a line: ``' '`` context, ``'-'`` removed, ``'+'`` added."""
    texts: list[str] = field(default_factory=list)
    """Each line's text, without its sign and newline."""
    anchor: str = ""
    """Text after ``@@`` in OpenAI's format: a line the hunk comes after (may be empty)."""
    old_start: int | None = None
    """The unified diff's old start line (1-based), a hint used only when the hunk has no context."""
    old_ends_without_newline: bool = False
    new_ends_without_newline: bool = False

    @classmethod
    def of(cls, lines: list[tuple[str, str]], **fields: Any) -> Hunk:
        """A hunk of ``(sign, text)`` lines."""
        return cls("".join(sign for sign, _ in lines), [text for _, text in lines], **fields)

    @property
    def old(self) -> list[str]:
        """Context and removed lines: what the file holds where the hunk applies."""
        return list(itertools.compress(self.texts, map("+".__ne__, self.signs)))

    @property
    def old_count(self) -> int:
        return len(self.signs) - self.signs.count("+")

    @property
    def new(self) -> list[str]:
        return list(itertools.compress(self.texts, map("-".__ne__, self.signs)))

    def new_added(self) -> list[str]:
        """The added lines alone."""
        return list(itertools.compress(self.texts, map("+".__eq__, self.signs)))


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
    # Each line's first character ("\n" for a blank line, which no line starts with): a hunk's
    # body is found by matching on this string, and taken a slice at a time.
    signs = "".join([line[:1] or "\n" for line in lines])
    rest = [line[1:] for line in lines]  # each line without its first character
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
            i, hunk = _hunk(lines, signs, rest, i + 1, int(match.group(1)))
            patch.hunks.append(hunk)
        if patch.kind == "update" and not patch.hunks and patch.move_to is None:
            raise InvalidArgument(f"{patch.path}: a file in the patch has no @@ hunks")
        files.append(patch)
    return files


_RUN = re.compile(r"[ +-]*")
"""Lines that are surely a hunk's: context, added, removed (or a file header: checked apart)."""
_BLANKS = re.compile(r"\n*")


def _hunk(lines: list[str], signs: str, rest: list[str], i: int, old_start: int) -> tuple[int, Hunk]:
    """The hunk whose body starts at line ``i``, and the line after it."""
    end = _run_end(lines, signs, i)
    if end == len(lines) or signs[end] not in ("\\", "\n"):  # the usual hunk: one run of lines
        return end, Hunk(signs[i:end], rest[i:end], old_start=old_start)
    kinds: list[str] = []
    texts: list[str] = []
    old_ends_without_newline = new_ends_without_newline = False
    while i < len(lines):
        end = _run_end(lines, signs, i)
        if end > i:
            kinds.append(signs[i:end])
            texts += rest[i:end]
            i = end
        if i == len(lines):
            break
        if signs[i] == "\\":  # "\ No newline at end of file": about the line before
            last = kinds[-1][-1] if kinds else ""
            old_ends_without_newline |= last in (" ", "-")
            new_ends_without_newline |= last in (" ", "+")
            i += 1
        elif signs[i] == "\n":
            # Blank lines are blank context unless what follows them is not more of the hunk
            # (a new file or hunk, text, or nothing).
            stop = _BLANKS.match(signs, i).end()  # type: ignore[union-attr]
            following = lines[stop] if stop < len(lines) else ""
            if following[:1] not in (" ", "-", "+", "\\") or following.startswith(("--- ", "+++ ")):
                break
            kinds.append(" " * (stop - i))
            texts += [""] * (stop - i)
            i = stop
        else:
            break
    hunk = Hunk("".join(kinds), texts, old_start=old_start)
    hunk.old_ends_without_newline, hunk.new_ends_without_newline = old_ends_without_newline, new_ends_without_newline
    return i, hunk


def _run_end(lines: list[str], signs: str, i: int) -> int:
    """Where the run of context, added and removed lines from ``i`` ends: at a line of another
    kind, or at a file header ("--- " then "+++ ", the next file's)."""
    end = _RUN.match(signs, i).end()  # type: ignore[union-attr]  # it matches the empty string
    header = signs.find("-+", i, end)
    while header >= 0:
        if lines[header].startswith("--- ") and lines[header + 1].startswith("+++ "):
            return header
        header = signs.find("-+", header + 1, end)
    return end


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
            added: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].startswith("***"):
                if not lines[i].startswith("+"):
                    raise InvalidArgument(f"line {i + 1}: every line of an added file starts with '+'")
                added.append(lines[i][1:])
                i += 1
            hunk = Hunk("+" * len(added), added)
            files.append(FilePatch(line[len("*** Add File: ") :].strip(), "add", hunks=[hunk]))
        elif line.startswith("*** Delete File: "):
            files.append(FilePatch(line[len("*** Delete File: ") :].strip(), "delete"))
            i += 1
        elif line.startswith("*** Update File: "):
            patch = FilePatch(line[len("*** Update File: ") :].strip(), "update")
            i += 1
            if i < len(lines) and lines[i].startswith("*** Move to: "):
                patch.move_to = lines[i][len("*** Move to: ") :].strip()
                i += 1
            bodies: list[tuple[str, list[tuple[str, str]]]] = []  # (anchor, lines) of each hunk
            while i < len(lines) and not (lines[i].startswith("***") and lines[i].strip() != "*** End of File"):
                current = lines[i]
                if current.strip() == "*** End of File":
                    pass
                elif current.startswith("@@"):
                    bodies.append((current[2:].strip(), []))
                elif current[:1] in (" ", "-", "+") or current == "":
                    if not bodies:
                        bodies.append(("", []))
                    bodies[-1][1].append((current[:1] or " ", current[1:]))
                else:
                    raise InvalidArgument(f"line {i + 1}: a hunk line starts with ' ', '-' or '+': {current[:60]!r}")
                i += 1
            for anchor, body in bodies:
                while body and body[-1] == (" ", ""):  # a blank line that closes a hunk is layout, not context
                    body.pop()
                patch.hunks.append(Hunk.of(body, anchor=anchor))
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
