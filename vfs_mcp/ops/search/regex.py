"""A caller's regular expression, compiled for RE2 with the meaning ripgrep gives it.

ripgrep's engine (Rust's ``regex``) and RE2 share a syntax and a guarantee: matching time
is linear in the text, whatever the pattern. Python's ``re`` backtracks (``(a+)+$`` against
36 ``a`` and a ``!`` runs for minutes holding the interpreter lock), so the Python grep
engine uses RE2 and nothing else. What neither linear engine has, look-around and
backreferences, is INVALID_ARGUMENT with its position: never a silent fall back to ``re``.

Where the two differ, the pattern is rewritten so RE2 means what ripgrep means:

- ``\\w``, ``\\d``, ``\\s`` (and ``\\W``, ``\\D``, ``\\S``) are Unicode-aware in ripgrep and
  ASCII in RE2: they become Unicode classes (``\\W`` and ``\\S`` inside a bracketed class with
  other members stay ASCII: RE2 cannot write that complement).
- ``whole_word`` is ripgrep's ``-w``: no word character right before or after the match.

``\\b`` and ``\\B`` stay RE2's, which reads only ASCII letters, digits and ``_`` as word
characters: next to a non-ASCII letter the Python engine may see a boundary where ripgrep
does not (documented in docs/security.md).
"""

from __future__ import annotations

import re

import re2

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.jail.globs import re2_options

MAX_PATTERN_CHARS = 4096

WORD = r"\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\x{200C}\x{200D}"
SPACE = r"\t\n\x0B\f\r \x{85}\p{Z}"
CLASSES = {
    "w": (f"[{WORD}]", WORD),
    "W": (f"[^{WORD}]", None),
    "d": (r"\p{Nd}", r"\p{Nd}"),
    "D": (r"\P{Nd}", r"\P{Nd}"),
    "s": (f"[{SPACE}]", SPACE),
    "S": (f"[^{SPACE}]", None),
}
"""Escape -> (its RE2 form alone, its form inside a bracketed class or None to keep RE2's)."""

_UNSUPPORTED = (
    ("(?<=", "look-behind (?<=...)"),
    ("(?<!", "look-behind (?<!...)"),
    ("(?=", "look-ahead (?=...)"),
    ("(?!", "look-ahead (?!...)"),
    ("(?>", "atomic groups (?>...)"),
    ("(?P=", "backreferences (?P=name)"),
)
_HINT = "ripgrep's and RE2's linear-time engines have no look-around or backreferences; match the text itself instead"


def compile_regex(pattern: str, *, is_regex: bool, case_sensitive: bool, whole_word: bool) -> re2._Regexp:
    """An RE2 program for grep: ``(?m)`` line anchors; with ``whole_word``, group 1 is the word.

    Raises INVALID_ARGUMENT with a position for syntax neither engine has or RE2 refuses.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidArgument(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    body = translate(pattern) if is_regex else re.escape(pattern)
    options = re2_options(case_sensitive=case_sensitive)
    try:
        # Alone first: only a whole, well-formed regex may be wrapped (``a)|(b`` must not reshape the wrapper).
        regex = re2.compile(f"(?m){body}", options)
        if whole_word:
            # ripgrep's -w: no word character on either side (RE2 has no look-around: consume one).
            regex = re2.compile(f"(?m)(?:^|[^{WORD}\\n])({body})(?:[^{WORD}\\n]|$)", options)
    except re2.error as exc:
        raise InvalidArgument(_describe(pattern, exc)) from None
    return regex


def translate(pattern: str) -> str:
    """``pattern`` rewritten for RE2 (see the module docstring); refuses look-around and backreferences."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt in CLASSES:
                alone, inside = CLASSES[nxt]
                out.append(alone if not in_class else (inside if inside is not None else "\\" + nxt))
                i += 2
                continue
            if nxt.isdigit() and nxt != "0" and not in_class:
                raise InvalidArgument(
                    f"invalid regex at position {i}: backreferences (\\{nxt}) are not supported; {_HINT}"
                )
            if nxt == "k" and pattern[i + 2 : i + 3] in ("<", "{", "'"):
                raise InvalidArgument(
                    f"invalid regex at position {i}: backreferences (\\k<name>) are not supported; {_HINT}"
                )
            end = i + 2
            if nxt in "pPx" and pattern[end : end + 1] == "{":
                close = pattern.find("}", end)
                end = n if close < 0 else close + 1
            out.append(pattern[i:end])
            i = end
            continue
        if in_class:
            if c == "[" and pattern[i + 1 : i + 2] == ":":  # [:alpha:]
                close = pattern.find(":]", i + 2)
                if close >= 0:
                    out.append(pattern[i : close + 2])
                    i = close + 2
                    continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            for lead in ("^", "]"):  # a leading ']' (after an optional '^') is a literal
                if pattern[i : i + 1] == lead:
                    out.append(lead)
                    i += 1
            continue
        if c == "(":
            for opener, what in _UNSUPPORTED:
                if pattern.startswith(opener, i):
                    raise InvalidArgument(f"invalid regex at position {i}: {what} is not supported; {_HINT}")
        out.append(c)
        i += 1
    return "".join(out)


def _describe(pattern: str, exc: re2.error) -> str:
    raw = exc.args[0] if exc.args else ""
    message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    reason, _, fragment = message.partition(": ")
    if reason.startswith("missing )") or (reason.startswith("missing ]") and fragment not in pattern):
        position = len(pattern)
    else:
        position = pattern.find(fragment) if fragment and fragment in pattern else -1
    if "pattern too large" in message:
        return "the regex compiles to a program too large to run; use fewer or smaller repetitions"
    where = f" at position {position}" if position >= 0 else ""
    return f"invalid regex{where}: {reason or message}" + (f" ({fragment})" if fragment else "")
