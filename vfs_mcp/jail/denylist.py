"""The deny list: gitignore patterns on the path inside a mount that hide what they match from
every tool, checked when the server starts (each must be able to hide something; at most
``MAX_DENY_PATTERNS``) and matched at once by one RE2 set, on composed (NFC) names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vfs_mcp.jail.globs import gitignore, nfc
from vfs_mcp.jail.mounts import Mount

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec  # made by jail.globs.gitignore, which imports it

MAX_DENY_PATTERNS = 1000
"""Deny patterns a server takes; all are matched at once, by one RE2 set of bounded size."""


def deny_spec(patterns: Sequence[str], mounts: Sequence[Mount]) -> GitIgnoreSpec:
    """The deny patterns as one matcher on NFC names (``nfc``); ValueError, saying what to
    write instead, for too many, or for one that can never hide anything."""
    if len(patterns) > MAX_DENY_PATTERNS:
        raise ValueError(
            f"{len(patterns)} deny patterns; give at most {MAX_DENY_PATTERNS}: hide a folder ('secrets/') "
            "rather than each file in it, a kind of name ('*.pem') rather than each name"
        )
    for number, pattern in enumerate(patterns):
        check_pattern(pattern, number, mounts)
    try:
        return gitignore([nfc(pattern) for pattern in patterns])
    except ValueError:
        raise ValueError(
            f"{len(patterns)} deny patterns are too many or too complex to match together; give fewer, broader "
            "ones: a folder ('secrets/') rather than each file in it, a kind of name ('*.pem') rather than each name"
        ) from None


def check_pattern(pattern: str, number: int, mounts: Sequence[Mount]) -> None:
    """ValueError for a deny pattern that can never hide anything, saying what to write instead."""
    shown = f"deny pattern {pattern!r}"
    body = pattern.removeprefix("!")
    if not body.strip() or pattern.startswith("#"):
        raise ValueError(f"{shown} is empty or a comment (gitignore syntax); remove it or escape '#' as '\\#'")
    if "\x00" in pattern:
        raise ValueError(f"{shown} contains a NUL byte")
    if pattern.startswith("!") and number == 0:
        raise ValueError(f"{shown} un-hides, but no pattern before it hides anything; put it after the one it narrows")
    if "://" in body or body.startswith("~"):
        raise ValueError(
            f"{shown} names a URL or a home folder; deny patterns match paths inside a mount, e.g. 'private/*'"
        )
    if any(part in (".", "..") for part in body.strip("/").split("/")):
        raise ValueError(f"{shown} has a '.' or '..' component, which no canonical path has")
    for mount in (m for m in mounts if m.is_local):
        for prefix in {mount.url.rstrip("/"), mount.real_root.rstrip("/")}:
            if prefix and (body == prefix or body.startswith(prefix + "/")):
                inside = body[len(prefix) :] or "/"
                raise ValueError(
                    f"{shown} is a host path; deny patterns are gitignore patterns on the path inside a mount: "
                    f"write {pattern[: len(pattern) - len(body)] + inside!r}"
                )
    try:
        gitignore([pattern])
    except ValueError as exc:
        raise ValueError(f"{shown} is not a valid gitignore pattern ({exc})") from None
