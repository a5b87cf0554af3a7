"""What changed between two trees of files: added, removed and changed paths, with a unified
diff of each changed text file.

    before = client.fs.snapshot()
    ...                                      # the agent works
    print(client.fs.diff(before))            # + notes.md (12 bytes) / ~ src/app.py, its diff

A ``Snapshot`` compares equal to a plain dict of the same files; the pytest plugin shows this
diff when ``assert client.fs.snapshot() == {...}`` fails.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

Content = str | bytes


class Snapshot(dict[str, Content]):
    """The files under a folder at one moment: relative path -> content (``str`` when UTF-8)."""

    def diff(self, before: Mapping[str, Content]) -> TreeDiff:
        """What changed from ``before`` to this snapshot."""
        return tree_diff(before, self)


@dataclass(frozen=True)
class TreeDiff:
    """Paths added, removed and changed from one tree (``before``) to another (``after``)."""

    added: dict[str, Content] = field(default_factory=dict)
    removed: dict[str, Content] = field(default_factory=dict)
    changed: dict[str, tuple[Content, Content]] = field(default_factory=dict)
    """path -> (before, after)."""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def lines(self, context: int = 3) -> list[str]:
        """One line per path in path order (``+`` added, ``-`` removed, ``~`` changed), each
        changed text file followed by its unified diff, indented."""
        out: list[str] = []
        for path in sorted({*self.added, *self.removed, *self.changed}):
            if path in self.added:
                out.append(f"+ {path} ({_size(self.added[path])})")
            elif path in self.removed:
                out.append(f"- {path} ({_size(self.removed[path])})")
            else:
                old, new = self.changed[path]
                out.append(f"~ {path} ({_size(old)} -> {_size(new)})")
                out.extend("    " + line for line in _text_diff(path, old, new, context))
        return out or ["no file added, removed or changed"]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def tree_diff(before: Mapping[str, Content], after: Mapping[str, Content]) -> TreeDiff:
    """What changed from ``before`` to ``after`` (path -> content mappings, as snapshots are)."""
    return TreeDiff(
        added={p: after[p] for p in sorted(after.keys() - before.keys())},
        removed={p: before[p] for p in sorted(before.keys() - after.keys())},
        changed={p: (before[p], after[p]) for p in sorted(before.keys() & after.keys()) if before[p] != after[p]},
    )


def _size(content: Content) -> str:
    n = len(content.encode() if isinstance(content, str) else content)
    return f"{n} byte{'' if n == 1 else 's'}"


def _text_diff(path: str, old: Content, new: Content, context: int) -> list[str]:
    if isinstance(old, bytes) or isinstance(new, bytes):
        return ["binary content differs"]
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", n=context, lineterm="")
    return list(lines)
