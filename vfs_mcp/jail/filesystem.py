"""The jailed filesystem the operations see: fsspec's verbs over user paths.

Every method takes user paths (or Targets from ``resolve``), goes through the jail, runs
the store call under ``guard`` (the one place foreign errors are translated), and names
results the way the user addresses the mount. Operations never touch a store directly.

Every mount's store is an fsspec filesystem, local folders included
(``vfs_mcp_backends.localfs``). This class holds policy and reads only: what differs between
stores is a declared capability (``Mount.capabilities``), and ``host_path`` is the one way to
ask for a host path. Nothing here writes: every change goes through the one write path,
``vfs_mcp.changes`` (plan, lock, re-check, commit, roll back), whose store steps commit only
while the call is still wanted (``commit_scope``: a call that timed out never changes
anything afterwards).
"""

from __future__ import annotations

from vfs_mcp.errors import NotADirectory, NotFound
from vfs_mcp.jail.entries import Digest as Digest
from vfs_mcp.jail.entries import Entry as Entry
from vfs_mcp.jail.entries import Found as Found
from vfs_mcp.jail.entries import sha256 as sha256
from vfs_mcp.jail.entries import sha256_aside as sha256_aside
from vfs_mcp.jail.reads import JailedReads
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends import commit_scope as commit_scope  # re-exported: the tooling layer runs calls in it


class JailedFS(JailedReads):
    """One client's view: the jail (mounts, working directory) and the verbs that read through
    it (``reads.JailedReads``); changes are planned over it and committed by ``vfs_mcp.changes``."""

    def lookup(self, target: Target, *, follow: bool = False) -> Entry | None:
        """``info``, or None where nothing is (a missing folder on the way included)."""
        try:
            return self.info(target, follow=follow)
        except (NotFound, NotADirectory):
            return None

    def hidden_below(self, target: Target) -> int:
        """How many entries below a folder the deny list hides (what no listing shows)."""
        found = self._walked(target, lambda path: list(target.mount.backend.entries(path)), bool)
        prefix = f"{target.rel}/" if target.rel else ""
        return sum(1 for rel, _ in found if self.jail.is_hidden(prefix + rel))
