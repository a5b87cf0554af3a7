"""One hunk of a line diff or of a patch: where it stands in the old and the new text, and its
lines, each with its sign (``' '`` context, ``'-'`` removed, ``'+'`` added).

A hunk is held in the form it comes in; its other forms are made when first asked for, so no
form makes an object for each line before a caller needs one:

- ``rows``: runs of lines of one sign, each run a block cut from the text with its newlines
  (the text's last line may have none): a diff cut from two texts (``unified``);
- ``body``: its lines as a patch writes them (each its sign and text, between newlines), with
  two flags for "\\ No newline at end of file": a patch read where it lies (``patch_formats``);
- ``signs`` and ``texts``: one sign a line and each line's text without its newline: the
  hunks of a patch being placed in a file (``hunk_placing``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

from vfs_mcp.ops.text.encoding import split_lines

_SIGNS = re.compile(r"^.", re.M)
_TEXTS = re.compile(r"^.([^\n]*)", re.M)
_OLD = re.compile(r"^[ -]([^\n]*)", re.M)
_NEW = re.compile(r"^[ +]([^\n]*)", re.M)
_ADDED = re.compile(r"^\+([^\n]*)", re.M)
"""The texts of a body's lines of some signs, in one pass over it (every line of a body
starts with its sign)."""
_NOT_ADDED = re.compile(r"^[^+]", re.M)
_RUNS = re.compile(r"( +|-+|\++)")
_OTHER_SIDE = ("+", "-")
"""The sign of the lines the old side (0) and the new side (1) do not hold."""


def line_range(start: int, count: int) -> str:
    # Unified-diff convention: an empty range names the line before it.
    if count == 0:
        return f"{start - 1},0"
    return f"{start}" if count == 1 else f"{start},{count}"


class Hunk:
    """A hunk: its numbers, ``anchor``, and its lines in the forms named in the module's note."""

    __slots__ = (
        "_body",
        "_ends",
        "_rows",
        "_signs",
        "_size",
        "_texts",
        "anchor",
        "new_lines",
        "new_start",
        "old_lines",
        "old_start",
    )
    _ends: tuple[bool, bool] | None

    def __init__(
        self,
        old_start: int = 0,
        old_lines: int = 0,
        new_start: int = 0,
        new_lines: int = 0,
        *,
        rows: list[tuple[str, str]] | None = None,
        body: str | None = None,
        signs: str | None = None,
        texts: list[str] | None = None,
        anchor: str = "",
        old_ends_without_newline: bool = False,
        new_ends_without_newline: bool = False,
        size: int | None = None,
    ) -> None:
        self.old_start = old_start
        """Its first old line (1-based; an empty range names the line after it), 0 when the
        hunk does not say (OpenAI's format); a patch's numbers are the model's, a hint used only
        to place a hunk with no context."""
        self.old_lines, self.new_start, self.new_lines = old_lines, new_start, new_lines
        self.anchor = anchor
        """Text after ``@@`` in OpenAI's format: a line the hunk comes after (may be empty)."""
        given = (rows is not None) + (body is not None) + (signs is not None and texts is not None)
        if given > 1:
            raise ValueError("a hunk is made from one form of its lines")
        self._rows = rows if given else []  # none given: a diff's, its runs added as it is made
        self._body, self._signs, self._texts = body, signs, texts
        self._ends = None if self._rows is not None else (old_ends_without_newline, new_ends_without_newline)
        """The two flags, made from the runs when it has them."""
        self._size = size
        """Its number of lines, given where its numbers were counted from its lines (a patch's
        hunk read where it lies): ``count`` is then had from them, with no pass over its lines."""

    @property
    def rows(self) -> list[tuple[str, str]]:
        """Its runs: a sign, and the run's lines, each with its newline but where the old or
        the new text ends without one."""
        if self._rows is None:
            signs, lines = self.signs, [text + "\n" for text in self.texts]
            for bare, skipped in zip(self._ends or (False, False), _OTHER_SIDE, strict=True):
                last = max(signs.rfind(sign) for sign in " -+" if sign != skipped)
                if bare and last >= 0:
                    lines[last] = lines[last].removesuffix("\n")
            self._rows = [
                (signs[run.start()], "".join(lines[run.start() : run.end()])) for run in _RUNS.finditer(signs)
            ]
        return self._rows

    @property
    def body(self) -> str:
        if self._body is None:
            self._body = "\n".join(map(str.__add__, self.signs, self.texts))
        return self._body

    @property
    def signs(self) -> str:
        """One character a line: ``' '`` context, ``'-'`` removed, ``'+'`` added."""
        if self._signs is None:
            if self._rows is not None:
                self._signs = "".join(
                    sign * (block.count("\n") + (block[-1:] not in ("", "\n"))) for sign, block in self._rows
                )
            else:
                self._signs = "".join(_SIGNS.findall(self.body))
        return self._signs

    @property
    def texts(self) -> list[str]:
        """Each line's text, without its sign and newline."""
        if self._texts is None:
            if self._rows is not None:
                self._texts = [line.removesuffix("\n") for _, line in self.lines()]
            else:
                self._texts = _TEXTS.findall(self.body)
        return self._texts

    @property
    def old_ends_without_newline(self) -> bool:
        """Its last old line is the old text's last, with no newline ("\\ No newline at end of file"),"""
        return self._bare(0)

    @property
    def new_ends_without_newline(self) -> bool:
        """and likewise its last new line."""
        return self._bare(1)

    def _bare(self, side: int) -> bool:
        if self._ends is None:  # made from rows: does the last old (new) run end without a newline?
            old, new = (
                not next((block for sign, block in reversed(self.rows) if sign != skipped), "\n").endswith("\n")
                for skipped in _OTHER_SIDE
            )
            self._ends = old, new
        return self._ends[side]

    def lines(self) -> Iterator[tuple[str, str]]:
        """Each line: its sign, and the line with its newline if it has one."""
        for sign, block in self.rows:
            for line in split_lines(block):
                yield sign, line

    def count(self, sign: str) -> int:
        """How many lines have ``sign`` (no line is made for it)."""
        if self._size is not None:  # its numbers are its counts: context and removed, context and added
            if sign == "+":
                return self._size - self.old_lines
            if sign == "-":
                return self._size - self.new_lines
            return self.old_lines + self.new_lines - self._size
        if self._signs is not None or self._body is None:
            return self.signs.count(sign)
        return self._body.startswith(sign) + self._body.count("\n" + sign)

    @property
    def old(self) -> list[str]:
        """Context and removed lines: what the file holds where the hunk applies."""
        return self._of(_OLD, "+".__ne__)

    @property
    def new(self) -> list[str]:
        return self._of(_NEW, "-".__ne__)

    def new_added(self) -> list[str]:
        """The added lines alone."""
        return self._of(_ADDED, "+".__eq__)

    def _of(self, texts: re.Pattern[str], signed: Callable[[str], bool]) -> list[str]:
        """The texts of the lines whose sign ``signed`` takes: read from the body where the
        hunk has only that form (no list of all its lines made), else picked from ``texts``."""
        if self._texts is None and self._rows is None and self._body is not None:
            return texts.findall(self._body)
        return list(itertools.compress(self.texts, map(signed, self.signs)))

    def new_text(self) -> str:
        """The context and added lines, joined by newlines: cut from the body when every line
        is added (a file the patch adds), no line made."""
        if not self.body:
            return ""
        if _NOT_ADDED.search(self.body) is None:
            return self.body.replace("\n+", "\n")[1:]
        return "\n".join(self.new)

    def fields(self, shown: Callable[[str], str]) -> dict[str, int | list[str]]:
        """The hunk as a result's fields: its numbers, and its lines as their signs and texts
        (``shown``: the text as a result may carry it), without their newlines."""
        return {
            "old_start": self.old_start,
            "old_lines": self.old_lines,
            "new_start": self.new_start,
            "new_lines": self.new_lines,
            "lines": [sign + shown(line.rstrip("\r\n")) for sign, line in self.lines()],
        }

    def header(self) -> str:
        return f"@@ -{line_range(self.old_start, self.old_lines)} +{line_range(self.new_start, self.new_lines)} @@\n"
