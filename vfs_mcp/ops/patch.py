"""apply_patch: a multi-file change that lands whole or not at all.

Every file is checked and its new text prepared first (jail, deny, read-only, each hunk
located by its text: exactly, else with each line's whitespace trimmed; a hunk whose text
is in two places is CONFLICT naming both). Then the files are written, each a
compare-and-swap against the version read; if one write fails, the files already written
are put back as they were, and the error says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from vfs_mcp.errors import AlreadyExists, Conflict, InvalidArgument, NotFound, Stale, VfsError
from vfs_mcp.filesystem import JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.ops.patchparse import FilePatch, Hunk, parse_patch
from vfs_mcp.ops.text import encode
from vfs_mcp.ops.textfile import DEFAULT_MAX_EDIT_BYTES, TextFile, unified_diff


class PatchedFile(BaseModel):
    path: str
    action: str = Field(description="updated, added, deleted or moved")
    moved_to: str | None = None
    added: int = Field(description="Lines added")
    removed: int = Field(description="Lines removed")


class PatchResult(BaseModel):
    dry_run: bool
    files: list[PatchedFile]
    diff: str


@dataclass
class _Plan:
    """One file's change, ready to write."""

    patch: FilePatch
    target: Target
    dest: Target | None
    before: TextFile | None
    new_text: str | None
    data: bytes | None


def apply_patch(
    vfs: JailedFS, patch: str, base: str | None = None, dry_run: bool = False, max_bytes: int = DEFAULT_MAX_EDIT_BYTES
) -> PatchResult:
    """Apply every file of ``patch`` (paths relative to ``base``, else the working directory), or none."""
    files = parse_patch(patch)
    prefix = base.rstrip("/") + "/" if base else ""
    plans = [_plan(vfs, f, prefix, dry_run, max_bytes) for f in files]
    seen: set[tuple[str, str]] = set()
    for target in (t for plan in plans for t in (plan.target, plan.dest) if t is not None):
        key = (target.mount.url, target.rel)
        if key in seen:
            raise InvalidArgument(f"{target.display} is changed twice in one patch; merge its hunks")
        seen.add(key)
    if not dry_run:
        _write_all(vfs, plans)
    return PatchResult(dry_run=dry_run, files=[_summary(p) for p in plans], diff=_diff(plans))


def _plan(vfs: JailedFS, patch: FilePatch, prefix: str, dry_run: bool, max_bytes: int) -> _Plan:
    target = vfs.resolve(prefix + patch.path, write=not dry_run)
    dest = vfs.resolve(prefix + patch.move_to, write=not dry_run) if patch.move_to else None
    if patch.kind == "add":
        if vfs.exists(target):
            raise AlreadyExists(f"{target.display} already exists; the patch adds it as a new file")
        text = "\n".join(patch.hunks[0].new if patch.hunks else [])
        text += "" if patch.hunks and patch.hunks[0].new_ends_without_newline else "\n" if text else ""
        return _Plan(patch, target, None, None, text, encode(text, "utf-8"))
    try:
        before = TextFile.load(vfs, target, "utf-8", max_bytes)
    except NotFound:
        raise NotFound(f"{target.display} does not exist; the patch changes it") from None
    if patch.kind == "delete":
        return _Plan(patch, target, None, before, None, None)
    if dest is not None and vfs.exists(dest):
        raise AlreadyExists(f"{dest.display} already exists; the patch moves {target.display} there")
    text = _apply_hunks(before.text, patch.hunks, target.display)
    return _Plan(patch, target, dest, before, text, before.encode(text))


def _apply_hunks(text: str, hunks: list[Hunk], shown: str) -> str:
    final_newline = text.endswith("\n")
    lines = text.split("\n")
    if final_newline:
        lines.pop()
    cursor = 0
    for number, hunk in enumerate(hunks, 1):
        old, new = hunk.old, hunk.new
        at = _locate(lines, old, cursor, hunk, f"{shown}: hunk {number}")
        lines[at : at + len(old)] = new
        cursor = at + len(new)
        if at + len(new) == len(lines) and (hunk.new_ends_without_newline or hunk.old_ends_without_newline):
            final_newline = not hunk.new_ends_without_newline
    return "\n".join(lines) + ("\n" if final_newline and lines else "")


def _locate(lines: list[str], old: list[str], cursor: int, hunk: Hunk, where: str) -> int:
    """Where ``old`` starts in ``lines`` at or after ``cursor``: exactly, else trimmed; one place only."""
    if not old:  # an insertion with no context: the diff's line number, or the end
        return min(len(lines), hunk.old_start if hunk.old_start is not None else len(lines))
    start = cursor
    if hunk.anchor:  # the first line after the cursor that the anchor names, if any
        anchor = hunk.anchor.strip()
        start = next((i + 1 for i in range(cursor, len(lines)) if lines[i].strip() == anchor), cursor)
    for same in (lambda a, b: a == b, lambda a, b: a.strip() == b.strip()):
        found = _matches(lines, old, start, same)
        if len(found) > 1:
            shown = " and ".join(str(i + 1) for i in found[:2])
            raise Conflict(f"{where} matches at lines {shown}; add context lines to make it unique")
        if found:
            return found[0]
    raise Conflict(f"{where} does not match the file (its context and removed lines are not there); read it again")


def _matches(lines: list[str], old: list[str], start: int, same: Callable[[str, str], bool]) -> list[int]:
    found: list[int] = []
    for i in range(start, len(lines) - len(old) + 1):
        if same(lines[i], old[0]) and all(same(lines[i + j], want) for j, want in enumerate(old)):
            found.append(i)
            if len(found) > 1:
                break
    return found


def _write_all(vfs: JailedFS, plans: list[_Plan]) -> None:
    undo: list[Callable[[], object]] = []
    try:
        for plan in plans:
            undo.extend(_write_one(vfs, plan))
    except Exception as err:
        failed = []
        for step in reversed(undo):
            try:
                step()
            except Exception:  # keep putting the others back
                failed.append(step)
        state = "every file is as it was" if not failed else "some files could not be put back; check them"
        if not isinstance(err, VfsError):
            raise
        raise type(err)(f"{err}; the patch was not applied ({state})") from err


def _write_one(vfs: JailedFS, plan: _Plan) -> list[Callable[[], object]]:
    """Write one planned change; the steps that take it back, in the order they were made."""
    target, before = plan.target, plan.before
    old_bytes = before.encode(before.text) if before is not None else None
    if plan.patch.kind == "add":
        assert plan.data is not None
        vfs.write(target, plan.data, create_dirs=True, create_only=True)
        return [lambda: _remove(vfs, target)]
    assert before is not None and old_bytes is not None
    if plan.patch.kind == "delete":
        _remove_as_read(vfs, target, before)
        return [lambda: vfs.write(target, old_bytes, create_dirs=True, create_only=True)]
    assert plan.data is not None
    if plan.dest is None:
        vfs.write(target, plan.data, expected_version=before.version)
        return [lambda: vfs.write(target, old_bytes)]
    dest = plan.dest
    vfs.write(dest, plan.data, create_dirs=True, create_only=True)
    steps: list[Callable[[], object]] = [lambda: _remove(vfs, dest)]
    _remove_as_read(vfs, target, before)
    steps.append(lambda: vfs.write(target, old_bytes, create_dirs=True, create_only=True))
    return steps


def _remove_as_read(vfs: JailedFS, target: Target, before: TextFile) -> None:
    """Delete ``target`` if it is still the version read (else CONFLICT, nothing deleted)."""
    with vfs.exclusive(target):
        if vfs.version(target) != before.version:
            raise Stale(f"{target.display} changed since it was read; read it again")
        vfs.rm(target)


def _remove(vfs: JailedFS, target: Target) -> None:
    with contextlib.suppress(NotFound):
        vfs.rm(target)


def _summary(plan: _Plan) -> PatchedFile:
    old = plan.before.text.splitlines() if plan.before is not None else []
    added = sum(1 for h in plan.patch.hunks for sign, _ in h.lines if sign == "+")
    removed = sum(1 for h in plan.patch.hunks for sign, _ in h.lines if sign == "-")
    if plan.patch.kind == "delete":
        removed = len(old)
    action = {"add": "added", "delete": "deleted"}.get(plan.patch.kind, "moved" if plan.dest else "updated")
    return PatchedFile(
        path=plan.target.display,
        action=action,
        moved_to=plan.dest.display if plan.dest else None,
        added=added,
        removed=removed,
    )


def _diff(plans: list[_Plan]) -> str:
    parts = []
    for plan in plans:
        old = plan.before.text if plan.before is not None else ""
        new = plan.new_text if plan.new_text is not None else ""
        name = plan.target.display
        parts.append(unified_diff(old, new, name, plan.dest.display if plan.dest else None))
    return "".join(parts)
