"""Every glob a caller, a config file or an ignore file gives, matched in linear time.

A glob translated to Python's ``re`` (as pathspec's default backend and ``fnmatch`` do)
backtracks: ``*a*a*a*a*a*a*a*a*a*a*a*a*c`` against one 60-character name holds the
interpreter lock for minutes and freezes every client. Here every dialect compiles to
RE2 (through ``google-re2``), whose matching time is linear in the name's length.

The dialects, one function each:

- **gitignore** (``gitignore``, ``caller_globs``, ``ignore_file``): ``*.py`` at any depth,
  ``src/*.py`` and ``/x`` anchored, ``dir/`` directories only, ``**`` any depth, ``!``
  negation. pathspec parses (the rules are its own), RE2 matches (pathspec's ``re2``
  backend, asked for by name so it never falls back to a backtracking one). Used by
  include/exclude patterns, deny patterns and ``.gitignore``/``.ignore``/``.rgignore``.
- **name** (``name_glob``): ``fnmatch`` on one name (``*``, ``?``, ``[abc]``, ``[!abc]``).
- **minimatch** (``minimatch``): the reference server's globs on '/'-separated relative
  paths (``dot: true``): ``*`` within a component, ``**`` any number of components (one or
  more at the end: ``data/**`` does not match ``data``), ``{a,b}`` alternatives.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.jail.tally import count_matched

if TYPE_CHECKING:
    import re2
    from pathspec import GitIgnoreSpec

MAX_GLOB_CHARS = 1000
MAX_GLOBS = 1000
MAX_BRACE_EXPANSIONS = 1024
RE2_MAX_MEM = 32 << 20
"""Bytes one compiled pattern may use (RE2's default is 8 MiB; Unicode classes need more)."""


def re2_options(*, case_sensitive: bool = True, dot_nl: bool = False) -> re2.Options:
    import re2  # here, not at the top: a start compiles no pattern

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    options.max_mem = RE2_MAX_MEM
    options.case_sensitive = case_sensitive
    options.dot_nl = dot_nl
    return options


def re2_compile(pattern: str, options: re2.Options, what: str) -> re2._Regexp:
    """An RE2 program, or INVALID_ARGUMENT naming ``what`` and RE2's reason."""
    import re2

    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidArgument(f"invalid {what}: {reason}") from None


# -- gitignore ----------------------------------------------------------------------------


def nfc(text: str) -> str:
    """``text`` in Unicode's composed form (NFC): deny and ignore patterns and the names they
    test are compared so, since one name has two spellings (``é`` typed on Linux or Windows,
    ``e`` plus a combining accent as macOS clients upload it)."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def gitignore(lines: Iterable[str]) -> GitIgnoreSpec:
    """Gitignore rules matched by RE2; ValueError for a line pathspec cannot parse."""
    import re2

    try:
        with warnings.catch_warnings():
            # pathspec also compiles each pattern with Python's re, which warns about '[[' ("possible
            # nested set"); that compiled form is never used for matching here.
            warnings.simplefilter("ignore", FutureWarning)
            return _counted_spec().from_lines(list(lines), backend="re2")
    except re2.error as exc:
        raise ValueError(f"cannot be compiled: {exc}") from None


@functools.cache
def _counted_spec() -> type[GitIgnoreSpec]:
    """pathspec's GitIgnoreSpec, each path it tests counted as matching work (``count_matched``)."""
    from pathspec import GitIgnoreSpec  # here, not at the top: a server with no rules to match never needs it

    class CountedSpec(GitIgnoreSpec):
        def match_file(self, file: Any, separators: Any = None) -> bool:
            count_matched(len(str(file)))
            return super().match_file(file, separators)

        def check_file(self, file: Any, separators: Any = None) -> Any:
            count_matched(len(str(file)))
            return super().check_file(file, separators)

    return CountedSpec


def ignore_file(text: str) -> GitIgnoreSpec:
    """The rules of one ignore file; a line git would not understand is skipped, as git skips it."""
    lines = text.splitlines()
    try:
        return gitignore(lines)
    except ValueError:
        return gitignore(line for line in lines if _parses(line))


def _parses(line: str) -> bool:
    try:
        gitignore([line])
    except ValueError:
        return False
    return True


def caller_globs(patterns: Sequence[str] | None, what: str) -> GitIgnoreSpec | None:
    """A caller's include/exclude globs (gitignore dialect), checked: none may widen the walk."""
    if not patterns:
        return None
    if len(patterns) > MAX_GLOBS:
        raise InvalidArgument(f"{len(patterns)} {what} patterns; give at most {MAX_GLOBS}")
    for pattern in patterns:
        if not pattern or "\x00" in pattern or pattern.startswith("!"):
            raise InvalidArgument(f"{what} pattern {pattern!r} is empty, has a NUL byte or starts with '!'")
        if len(pattern) > MAX_GLOB_CHARS:
            raise InvalidArgument(f"{what} pattern is longer than {MAX_GLOB_CHARS} characters")
        if any(part == ".." for part in pattern.split("/")):
            raise InvalidArgument(f"{what} pattern {pattern!r} contains '..'; patterns cannot widen the walk")
    try:
        return gitignore(patterns)
    except ValueError as exc:
        raise InvalidArgument(f"{what} pattern is not a valid glob: {exc}") from None


# -- fnmatch on one name ------------------------------------------------------------------


class NameTest(Protocol):
    """A test of one name. A walk calls it with the path below its start too, which it
    ignores, so it serves as the walk's ``keep`` as it is: a wrapper would cost a call on each
    of 20,000 names."""

    def __call__(self, name: str, rel: str = "", /) -> bool: ...


def name_glob(pattern: str, *, case_sensitive: bool = False) -> NameTest:
    """A test of one name against an fnmatch glob (``*``, ``?``, ``[abc]``, ``[!abc]``)."""
    _check(pattern, "pattern")
    regex = re2_compile(
        _translate(pattern, any_char="."), re2_options(case_sensitive=case_sensitive, dot_nl=True), f"glob {pattern!r}"
    )

    def matches(name: str, rel: str = "", /) -> bool:
        count_matched(len(name))
        return regex.fullmatch(name) is not None

    if "[" in pattern or not (case_sensitive or pattern.isascii()):
        return matches
    # A quick answer first from the literal text (a walk tests every name, and nearly all
    # fail): exact for ASCII names, whose case folds the same way in Python and RE2; other
    # names go straight to the expression.
    folded_pattern = pattern if case_sensitive else pattern.lower()
    pieces = re.split(r"[*?]", folded_pattern)
    if len(pieces) == 1:  # no wildcard: the name itself

        def same(name: str, rel: str = "", /) -> bool:
            folded = name if case_sensitive else name.lower() if name.isascii() else None
            return folded == folded_pattern if folded is not None else matches(name)

        return same
    head, tail, inside = pieces[0], pieces[-1], [piece for piece in pieces[1:-1] if piece]

    def test(name: str, rel: str = "", /) -> bool:
        folded = name if case_sensitive else name.lower() if name.isascii() else None
        if folded is not None and not (
            len(folded) >= len(head) + len(tail)
            and folded.startswith(head)
            and folded.endswith(tail)
            and all(piece in folded for piece in inside)
        ):
            return False
        return matches(name)

    return test


# -- minimatch ----------------------------------------------------------------------------


def minimatch(pattern: str) -> Callable[[str], bool]:
    """A test of '/'-separated relative paths against a minimatch glob (``dot: true``)."""
    _check(pattern, "pattern")
    shown = pattern
    negated = False
    while pattern.startswith("!"):
        negated, pattern = not negated, pattern[1:]
    alternatives = "|".join(_path_regex(p) for p in _expand_braces(pattern))
    regex = re2_compile(f"(?:{alternatives})", re2_options(dot_nl=True), f"glob {shown!r}")

    def test(rel: str) -> bool:
        count_matched(len(rel))
        return (regex.fullmatch(rel) is not None) != negated

    return test


def _path_regex(pattern: str) -> str:
    segments: list[str] = []
    for part in pattern.split("/"):
        if not (part == "**" and segments and segments[-1] == "**"):  # a/**/**/b is a/**/b
            segments.append(part)
    out = []
    after_globstar = False
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**" and last:
            out.append("(?:/[^/]+)+" if i else "[^/]+(?:/[^/]+)*")  # one or more components
        elif segment == "**":
            out.append("/(?:[^/]+/)*" if i and not after_globstar else "(?:[^/]+/)*")  # zero or more
        else:
            out.append(("/" if i and not after_globstar else "") + _translate(segment, any_char="[^/]"))
        after_globstar = segment == "**"
    return "".join(out)


def _expand_braces(pattern: str) -> list[str]:
    """``a{b,c}d`` -> ``abd``, ``acd`` (nested too); a group without a comma stays literal."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "{":
            close, parts = _brace_group(pattern, i)
            if close is not None and len(parts) > 1:
                head, tail = pattern[:i], pattern[close + 1 :]
                out = []
                for part in parts:
                    out += _expand_braces(head + part + tail)
                    if len(out) > MAX_BRACE_EXPANSIONS:
                        raise InvalidArgument(f"pattern expands to over {MAX_BRACE_EXPANSIONS} alternatives")
                return out
        i += 1
    return [pattern]


def _brace_group(pattern: str, start: int) -> tuple[int | None, list[str]]:
    """The index of the brace closing the one at ``start``, and its top-level comma-separated parts."""
    depth, parts, last, i = 0, [], start + 1, start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(pattern[last:i])
                return i, parts
        elif c == "," and depth == 1:
            parts.append(pattern[last:i])
            last = i + 1
        i += 1
    return None, []


# -- shared -------------------------------------------------------------------------------


def _check(pattern: str, what: str) -> None:
    if not pattern:
        raise InvalidArgument(f"{what} is empty")
    if "\x00" in pattern:
        raise InvalidArgument(f"{what} contains a NUL byte")
    if len(pattern) > MAX_GLOB_CHARS:
        raise InvalidArgument(f"{what} is longer than {MAX_GLOB_CHARS} characters")


def _translate(glob: str, any_char: str) -> str:
    """One glob (no '/' handling) as an RE2 expression: ``*``, ``?``, ``[...]``, ``\\`` escapes."""
    out, i, n = [], 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            while i + 1 < n and glob[i + 1] == "*":
                i += 1  # a run of stars is one star (and one RE2 loop, not many)
            out.append(f"{any_char}*")
        elif c == "?":
            out.append(any_char)
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                out.append(_char_class(glob[i + 1 : j]))
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _char_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    chars = []
    for k, ch in enumerate(body):
        is_range = ch == "-" and 0 < k < len(body) - 1 and body[k - 1] != "-"
        chars.append("-" if is_range else re.escape(ch))
    # A negated class never matches '/', as in every glob dialect here.
    return "[" + ("^/" if negate else "") + "".join(chars) + "]"
