"""apply_patch: a multi-file change that lands whole or not at all.

Every file is read and its new text prepared first (jail, deny, read-only, each hunk placed by
its text: ``hunk_placing``); then the one write path commits every file under the locks of all
of them, each against the version read, and a failure puts back every file already changed.
Costs are bounded by the patch and the limits of the other writing tools: the patch's size,
each file written (``write_file``'s limit), each file read (the edit limit), and the diff in
the reply (cut past the read cap, with line counts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import BaseModel, Field

from vfs_mcp import changes
from vfs_mcp.changes import ABSENT, Expect, Plan, Put, Remove, Step
from vfs_mcp.errors import AlreadyExists, InvalidArgument, NotFound, TooLarge
from vfs_mcp.jail.entries import Pieces, sha256_aside
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.diff.unified import DEFAULT_MAX_DIFF_CHARS
from vfs_mcp.ops.edits import collector, hunk_placing
from vfs_mcp.ops.edits.patch_formats import FilePatch, parse_patch
from vfs_mcp.ops.files.write import writable
from vfs_mcp.ops.text.document import DEFAULT_MAX_EDIT_BYTES, TextFile
from vfs_mcp.ops.text.encoding import encode, printable

WHOLE_CHUNK = 1 << 16
"""Characters of a whole file's diff made at a time (the diff is cut between them)."""


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
class _File:
    """One file of the patch, planned: where, what was there, what it becomes."""

    patch: FilePatch
    target: Target
    """The file read and written (a link inside the mount followed)."""
    dest: Target | None
    before: TextFile | None
    old: hunk_placing.Lines | None
    """The old file's lines, for a file the patch updates."""
    new: hunk_placing.Lines | None
    """The new file's lines, where they were not cut from the old text (``hunk_placing.spliced``)."""
    placed: list[hunk_placing.Placed]
    data: bytes | Pieces | None
    link: Target | None = None
    """The path as given, when it is a link: a delete or a move takes the link away, never its file."""
    whole: str = ""
    """The text of a file added or deleted, as it is (its diff shows all of it)."""


def apply_patch(
    vfs: JailedFS,
    patch: str,
    base: str | None = None,
    dry_run: bool = False,
    max_bytes: int = DEFAULT_MAX_EDIT_BYTES,
    max_write: int | None = None,
    max_diff: int = DEFAULT_MAX_DIFF_CHARS,
) -> PatchResult:
    """Apply every file of ``patch`` (paths relative to ``base``, else the working directory),
    or none. ``max_bytes``: largest file read; ``max_write``: largest patch and file written."""
    if max_write is not None and len(patch) > max_write:
        raise TooLarge(
            f"the patch is {len(patch):,} characters, over the {max_write:,}-byte limit for one write; split it"
        )
    files = parse_patch(patch)
    prefix = base.rstrip("/") + "/" if base else ""
    paths = [(f, _where(vfs, prefix + f.path, dry_run, f.kind != "add"), f.move_to) for f in files]
    located = [
        (f, t, _where(vfs, prefix + m, dry_run, False) if m else None, _link(vfs, f, t, prefix, dry_run))
        for f, t, m in paths
    ]
    seen: set[tuple[str, str]] = set()
    for target in (t for _, first, dest, _ in located for t in (first, dest) if t is not None):
        key = (target.mount.url, target.rel)
        if key in seen:
            raise InvalidArgument(f"{target.display} is changed twice in one patch; merge its hunks")
        seen.add(key)

    def plan() -> Plan[PatchResult]:
        budget = hunk_placing.Comparisons()
        with collector.paused():  # a few objects a hunk and a line, all alive until the plan is made
            planned = [_plan(vfs, f, t, d, link, max_bytes, max_write, budget) for f, t, d, link in located]
            result = PatchResult(dry_run=dry_run, files=[_summary(p) for p in planned], diff=_diff(planned, max_diff))
        return Plan(result, [op for p in planned for op in _ops(p)])

    touched = [t for _, first, dest, link in located for t in (first, dest, link) if t is not None]
    return changes.make(vfs, plan, touches=touched, dry_run=dry_run)


def _where(vfs: JailedFS, path: str, dry_run: bool, existing: bool) -> Target:
    if dry_run:
        return vfs.resolve(path)
    return writable(vfs, path) if existing else vfs.resolve(path, write=True)


def _link(vfs: JailedFS, patch: FilePatch, target: Target, prefix: str, dry_run: bool) -> Target | None:
    """The path of a file the patch deletes or moves, when it is a link to ``target``."""
    if patch.kind == "add" or (patch.kind == "update" and patch.move_to is None):
        return None
    spelt = vfs.resolve(prefix + patch.path, follow=False, write=not dry_run)
    return spelt if spelt.rel != target.rel or spelt.mount is not target.mount else None


def _plan(
    vfs: JailedFS,
    patch: FilePatch,
    target: Target,
    dest: Target | None,
    link: Target | None,
    max_bytes: int,
    max_write: int | None,
    budget: hunk_placing.Comparisons,
) -> _File:
    if patch.kind == "add":
        if vfs.lookup(target) is not None:
            raise AlreadyExists(f"{target.display} already exists; the patch adds it as a new file")
        body = patch.hunks[0] if patch.hunks else None
        text = body.new_text() if body is not None else ""
        text += "" if body is not None and body.new_ends_without_newline else "\n" if text else ""
        data = encode(text, "utf-8")
        _check_written(target, data, max_write)
        return _File(patch, target, None, None, None, None, [], data, whole=text)
    try:
        before = TextFile.load(vfs, target, "utf-8", max_bytes)
    except NotFound:
        raise NotFound(f"{target.display} does not exist; the patch changes it") from None
    ascii_file = before.decoded is None  # read as ASCII, so left undecoded (``TextFile.decoded``): no second scan
    raw = before.raw
    if patch.kind == "delete":
        return _File(patch, target, None, before, None, None, [], None, link, whole=raw)
    old = hunk_placing.Lines.of(raw)
    if dest is not None and vfs.lookup(dest) is not None:
        raise AlreadyExists(f"{dest.display} already exists; the patch moves {target.display} there")
    placed = hunk_placing.place(old, patch.hunks, target.display, budget)
    after = None  # the new file as lines, where it could not be cut from the old text
    # An ASCII file (its text its bytes): its new bytes cut from the bytes read, not encoded again.
    written: bytes | Pieces | None = hunk_placing.spliced_bytes(before.data, raw, old, placed) if ascii_file else None
    if written is None:
        cut = hunk_placing.spliced(raw, old, placed)
        if cut is None:
            after = hunk_placing.apply(old, placed, target.display)
            cut = after.join()
        written = before.encode_raw(cut)
    _check_written(dest or target, written, max_write)
    return _File(patch, target, dest, before, old, after, placed, written, link)


def _check_written(target: Target, data: bytes | Pieces, max_write: int | None) -> None:
    if max_write is not None and len(data) > max_write:
        raise TooLarge(
            f"{target.display} would be {len(data):,} bytes, over the {max_write:,}-byte limit for one write; "
            "split the patch"
        )


def _ops(planned: _File) -> list[Step]:
    """The steps that make one file's change."""
    target, before = planned.target, planned.before
    if before is None:
        assert planned.data is not None
        return [Put(target, planned.data, expect=ABSENT, parents=True)]
    as_read = Expect("file", token=before.token, content=before.data, identity=before.identity)
    # A link given to delete or move goes itself; the file it leads to stays.
    gone = Remove(planned.link, Expect("symlink")) if planned.link is not None else Remove(target, as_read)
    if planned.data is None:
        return [gone]
    if planned.dest is None:
        return [Put(target, planned.data, expect=as_read, digest=sha256_aside(planned.data))]
    # A rename keeps the file's mode (a script stays executable).
    return [Put(planned.dest, planned.data, expect=ABSENT, mode=before.mode, parents=True), gone]


def _summary(planned: _File) -> PatchedFile:
    kind = planned.patch.kind
    added = sum(hunk.count("+") for hunk in planned.patch.hunks)
    removed = sum(hunk.count("-") for hunk in planned.patch.hunks)
    if kind == "delete":
        removed = _lines_in(_without_bom(planned.whole))
    action = {"add": "added", "delete": "deleted"}.get(kind, "moved" if planned.dest else "updated")
    return PatchedFile(
        path=planned.target.display,
        action=action,
        moved_to=planned.dest.display if planned.dest else None,
        added=added,
        removed=removed,
    )


def _diff(planned: list[_File], limit: int) -> str:
    """The patch as applied, git style, at most ``limit`` characters (then what the rest holds:
    cut between hunks, or between lines of a whole file added or removed)."""
    out: list[str] = []
    size = 0
    for number, item in enumerate(planned):
        for piece in _file_diff(item):
            if size + len(piece) > limit:
                rest = planned[number:]
                added = sum(_summary(p).added for p in rest)
                removed = sum(_summary(p).removed for p in rest)
                out.append(
                    f"[diff cut at {limit:,} characters; the rest adds up to {added:,} and removes up to {removed:,} lines]\n"
                )
                return printable("".join(out))
            out.append(piece)
            size += len(piece)
    return printable("".join(out))


def _file_diff(item: _File) -> Iterator[str]:
    name = item.target.display
    if item.before is None:
        yield f"--- /dev/null\n+++ {name}\n"
        yield from _whole(item.whole, "+")
    elif item.patch.kind == "delete":
        yield f"--- {name}\n+++ /dev/null\n"
        yield from _whole(item.whole, "-")
    elif item.placed or item.dest is not None:
        assert item.old is not None
        yield f"--- {name}\n+++ {item.dest.display if item.dest else name}\n"
        yield from hunk_placing.diff_lines(item.old, item.placed, item.new)


def _whole(text: str, sign: str) -> Iterator[str]:
    """A whole file added or removed, as one hunk, some 64 KiB of its lines at a time, each line
    ended by a newline whatever its own ending (none made an object of its own)."""
    body = _without_bom(text)
    count = _lines_in(body)
    if not count:
        return
    yield f"@@ -0,0 +1,{count} @@\n" if sign == "+" else f"@@ -1,{count} +0,0 @@\n"
    at = 0
    while at < len(body):
        end = body.rfind("\n", at, at + WHOLE_CHUNK) + 1 or body.find("\n", at + WHOLE_CHUNK) + 1 or len(body)
        piece = body[at:end].replace("\r\n", "\n")
        signed = sign + piece.replace("\n", "\n" + sign)
        yield signed[:-1] if piece.endswith("\n") else signed + "\n\\ No newline at end of file\n"
        at = end


def _without_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


def _lines_in(text: str) -> int:
    return text.count("\n") + (bool(text) and not text.endswith("\n"))
