"""What a grep pattern needs a file to hold: the trigrams every match contains, as an index query.

A content index (``index.py``) answers a search with the files that may match; this module
says which trigrams a match cannot do without. A literal search needs every trigram of its
text; a regex needs those of the literal runs it cannot match without (``foo\\d+bar``: ``foo``
and ``bar``), an alternation one branch's (``foo|bar``: either). Whatever the parser here does
not understand for certain gives no query at all, and the search reads every file, as it does
without an index: a wrong query would hide a match, a missing one only costs reads.

Case: both sides are folded with ``str.casefold`` before their trigrams are taken (the text as
it is indexed, the literal as it is asked for), so one index serves case-sensitive and
case-insensitive searches, and ``(?i)`` inside a pattern changes nothing. This holds because
casefolding maps character by character and gives every character RE2 matches under ``(?i)``
the same folded form as the pattern's character (the long s U+017F, ``s`` and ``S`` all fold to ``s``):
``tests/ops/test_grep_index.py`` checks that against RE2 for every cased code point.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_TRIGRAMS = 24
"""Trigrams one literal run asks for at most (spread over it): more narrow no further in practice."""
_META = set("\\.+*?()|[]{}^$")


@dataclass(frozen=True)
class AllOf:
    """Files holding every trigram of ``runs`` (each a folded literal of three or more characters)
    and matching every one of ``parts``."""

    runs: tuple[str, ...] = ()
    parts: tuple[AnyOf, ...] = ()


@dataclass(frozen=True)
class AnyOf:
    """Files matching at least one of ``options``."""

    options: tuple[AllOf, ...]


class _Unsure(Exception):
    """The pattern holds syntax this parser does not read for certain: no query."""


def fold(text: str) -> str:
    """Text as the index holds it and queries ask for it: casefolded, NUL as a space (SQLite's
    FTS5 stops reading a text at a NUL)."""
    return text.casefold().replace("\x00", " ")


def needed(pattern: str, *, is_regex: bool) -> AllOf | None:
    """What every match of ``pattern`` needs, or None when nothing narrows it (a regex without
    a literal run of three characters in every branch, or syntax read here with doubt)."""
    if not is_regex:
        found = AllOf((fold(pattern),)) if len(fold(pattern)) >= 3 and "\x00" not in pattern else AllOf()
    else:
        try:
            parser = _Parser(pattern)
            found = parser.alternation()
            if parser.i != len(pattern):
                raise _Unsure
        except _Unsure:
            return None
    return found if _narrows(found) else None


def _narrows(need: AllOf) -> bool:
    return bool(need.runs) or any(all(_narrows(o) for o in part.options) for part in need.parts)


def fts_query(need: AllOf) -> str:
    """``need`` as an FTS5 MATCH expression over a trigram index (detail=none: single trigrams
    joined by AND and OR, no phrases)."""
    terms: list[str] = []
    for run in need.runs:
        grams = sorted({run[i : i + 3] for i in range(len(run) - 2)})
        step = max(1, len(grams) // MAX_TRIGRAMS)
        terms += ['"' + gram.replace('"', '""') + '"' for gram in grams[::step][:MAX_TRIGRAMS]]
    for part in need.parts:
        options = [fts_query(option) for option in part.options if _narrows(option)]
        if len(options) == len(part.options):  # an option that narrows nothing lets every file through
            terms.append("(" + " OR ".join(f"({o})" for o in options) + ")")
    return " AND ".join(terms)


class _Parser:
    """A recursive reading of RE2's syntax, only as far as it decides which literals are needed."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def peek(self) -> str:
        return self.p[self.i] if self.i < len(self.p) else ""

    def alternation(self) -> AllOf:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        if len(branches) == 1:
            return branches[0]
        if not all(_narrows(b) for b in branches):
            return AllOf()
        return AllOf(parts=(AnyOf(tuple(branches)),))

    def sequence(self) -> AllOf:
        runs: list[str] = []
        parts: list[AnyOf] = []
        run = ""

        def flush(keep: str = "") -> str:
            if len(fold(run)) >= 3:
                runs.append(fold(run))
            return keep

        while self.i < len(self.p) and self.peek() not in "|)":
            atom, inner = self.atom()
            low, single = self.quantifier()
            if atom is not None:
                if low == 0:
                    run = flush()
                elif single:
                    run += atom
                else:  # repeated: needed once, and what follows comes after another copy of it
                    run += atom
                    run = flush(atom)
                continue
            run = flush()
            if inner is not None and low > 0:
                runs.extend(inner.runs)
                parts.extend(inner.parts)
        flush()
        return AllOf(tuple(runs), tuple(parts))

    def atom(self) -> tuple[str | None, AllOf | None]:
        """The next atom: (a literal character, None), (None, a group's need), or (None, None)
        for what matches no fixed text (a class, ``.``, an anchor)."""
        c = self.peek()
        if c == "(":
            return None, self.group()
        if c == "[":
            self.char_class()
            return None, None
        if c in ".^$":
            self.i += 1
            return None, None
        if c == "\\":
            return self.escape(), None
        if c in _META:  # a quantifier with nothing before it, a stray ] or }: RE2's reading is not ours to guess
            raise _Unsure
        self.i += 1
        return (None if c == "\x00" else c), None

    def group(self) -> AllOf | None:
        p, start = self.p, self.i + 1
        if p.startswith("(?", self.i):
            if p.startswith(("(?:", "(?P<", "(?<"), self.i):
                end = p.find(":", start) + 1 if p[start + 1] == ":" else p.find(">", start) + 1
                if end <= 0:
                    raise _Unsure
                start = end
            else:
                close = start + 1
                while close < len(p) and (p[close].isalpha() or p[close] == "-"):
                    close += 1
                if close >= len(p) or p[close] not in ":)":
                    raise _Unsure
                if p[close] == ")":  # flags for the rest: (?i) changes no folded literal
                    self.i = close + 1
                    return None
                start = close + 1
        self.i = start
        inner = self.alternation()
        if self.peek() != ")":
            raise _Unsure
        self.i += 1
        return inner

    def char_class(self) -> None:
        p = self.p
        self.i += 1
        if self.peek() == "^":
            self.i += 1
        if self.peek() == "]":
            self.i += 1
        while self.i < len(p) and p[self.i] != "]":
            if p[self.i] == "\\":
                self.i += 2
            elif p.startswith("[:", self.i) and ":]" in p[self.i + 2 :]:
                self.i = p.index(":]", self.i + 2) + 2
            else:
                self.i += 1
        if self.i >= len(p):
            raise _Unsure
        self.i += 1

    def escape(self) -> str | None:
        p = self.p
        if self.i + 1 >= len(p):
            raise _Unsure
        c = p[self.i + 1]
        self.i += 2
        if not c.isascii() or c.isdigit() or c in "Qxk":
            raise _Unsure  # \Q..\E, \x.., octal and backreferences: left to the scan
        if not c.isalnum():
            return None if c == "\x00" else c  # an escaped punctuation character is itself
        if c in "pP":
            if self.peek() == "{":
                close = p.find("}", self.i)
                if close < 0:
                    raise _Unsure
                self.i = close + 1
            else:
                self.i += 1
            return None
        if c in "dDwWsSbBAzntrfvaC":
            return None  # a class, an assertion or a control character: no fixed text here
        raise _Unsure

    def quantifier(self) -> tuple[int, bool]:
        """The quantifier after an atom: (least repeats, whether exactly one)."""
        c = self.peek()
        low, single = 1, True
        if not c:
            return low, single
        if c in "*?":
            low, single = 0, False
            self.i += 1
        elif c == "+":
            single = False
            self.i += 1
        elif c == "{":
            close = self.p.find("}", self.i)
            body = self.p[self.i + 1 : close] if close > 0 else ""
            first, comma, last = body.partition(",")
            if not first.isdigit() or (last and not last.isdigit()):
                raise _Unsure  # RE2 reads "{" that starts no repeat as a literal: not ours to guess
            low, single = int(first), not comma and int(first) == 1
            self.i = close + 1
        else:
            return low, single
        if self.peek() == "?":
            self.i += 1
        if self.peek() in ("*", "+", "?", "{"):
            raise _Unsure
        return low, single


def holds(need: AllOf, folded: str) -> bool:
    """Whether ``folded`` text (``fold``) holds every trigram ``need`` asks for: the index's
    answer for a text at hand (a match needs it, so a text without it cannot match)."""
    return all(all(run[i : i + 3] in folded for i in range(len(run) - 2)) for run in need.runs) and all(
        any(holds(option, folded) for option in part.options) for part in need.parts
    )
