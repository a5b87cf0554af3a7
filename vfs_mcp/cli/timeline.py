"""``vfs-mcp history``, ``vfs-mcp checkpoint`` and ``vfs-mcp undo``: the timeline of the mounts a
server serves, for a person at a shell — no server, no agent needed, and safe while a server
serves the same state store (its locks and leases: two undos of one change never both run).

The mounts are given as a server was given them (MOUNTs, default the current folder;
``--config``, ``--state``, ``--review``), so the same state store is found. Exit 0; 1 when the
store refuses (an undo whose files changed since: CONFLICT; an id that is not there); 2 on a
usage error or a store that cannot be opened.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator, Sequence

from vfs_mcp.cli.exits import exit_code
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.text.names import plural

MOUNTS_HELP = "the mounts, as the server was given them (default: the current folder)"


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"vfs-mcp {prog}", description=description, allow_abbrev=False)
    p.add_argument("--config", metavar="FILE", help="the server's config file (its mounts, its state store)")
    p.add_argument(
        "--state", metavar="URL", help="the server's state store (default: where a server of MOUNTs keeps it)"
    )
    p.add_argument("--review", action="store_true", help="as the server's --review (every mount under review)")
    return p


@contextlib.contextmanager
def opened(args: argparse.Namespace) -> Iterator[JailedFS]:
    """The mounts ``args`` name, jailed as a server of them serves them, over its state store
    (what a dead server left under way there finished first)."""
    from vfs_mcp import changes
    from vfs_mcp.changes.log import default_log
    from vfs_mcp.jail.mounts import Config, MountSpec, merge_specs, open_mounts
    from vfs_mcp.jail.resolve import Jail

    loaded = Config.load(args.config) if args.config else None
    mounts = open_mounts(merge_specs(args.mounts, loaded) or [MountSpec(".")])
    state = args.state or (loaded.state if loaded else None)
    deny = loaded.deny if loaded else []
    if args.review or any(mount.review for mount in mounts):
        from vfs_mcp.review import jailed_under_review

        vfs = jailed_under_review(mounts, state=state, deny=deny, every=args.review)
    else:
        vfs = JailedFS(Jail(mounts, deny=deny))
        changes.attach(vfs, default_log(mounts, state))
    try:
        yield vfs
    finally:
        changes.log_of(vfs).close()


def _run(prog: str, args: argparse.Namespace, work: Callable[[JailedFS], str]) -> int:
    def printed(vfs: JailedFS) -> int:
        print(work(vfs))
        return 0

    return exit_code(prog, opened(args), printed)


def history_parser() -> argparse.ArgumentParser:
    p = _parser(
        "history",
        "The changes made on the mounts, newest first: id, time (UTC), tool, paths, bytes kept, and how each "
        "relates to the others (undone by, undoes, checkpoint, pending under review). Undo one with "
        "`vfs-mcp undo ID`; come back to a point with `vfs-mcp undo ID|NAME --and-after`.",
    )
    p.add_argument("mounts", nargs="*", metavar="MOUNT", help=MOUNTS_HELP)
    p.add_argument("--path", help="only the changes of this file or folder")
    p.add_argument("--limit", type=int, default=50, help="changes a page shows (default 50)")
    p.add_argument("--cursor", help="the cursor a page ended with: the page after it")
    return p


def history_main(argv: Sequence[str]) -> int:
    args = history_parser().parse_args(argv)

    def work(vfs: JailedFS) -> str:
        from vfs_mcp.changes import log_of
        from vfs_mcp.ops.files.history import history
        from vfs_mcp.profiles.default.writes import history_text, pending_ids

        page = history(vfs, log_of(vfs), args.path, args.limit, args.cursor, pending_ids(vfs))
        return history_text(page).replace("(older: cursor=", "(older: --cursor ")

    return _run("history", args, work)


def checkpoint_parser() -> argparse.ArgumentParser:
    p = _parser(
        "checkpoint",
        "Name this point of the mounts' timeline (a name given again moves to now); "
        "`vfs-mcp undo NAME --and-after` brings the mounts back to it.",
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("mounts", nargs="*", metavar="MOUNT", help=MOUNTS_HELP)
    return p


def checkpoint_main(argv: Sequence[str]) -> int:
    args = checkpoint_parser().parse_args(argv)

    def work(vfs: JailedFS) -> str:
        from vfs_mcp.changes import log_of
        from vfs_mcp.ops.files.history import checkpoint

        made = checkpoint(vfs, log_of(vfs), args.name)
        return f"checkpoint {made.name} is change {made.change_id} of {', '.join(made.mounts)}"

    return _run("checkpoint", args, work)


def undo_parser() -> argparse.ArgumentParser:
    p = _parser(
        "undo",
        "Take back a change (by the id history or its reply showed, or a checkpoint's name with --and-after): its "
        "files put back as they were, all or nothing (refused, naming the file, where one changed since). The undo "
        "is a change of its own: `vfs-mcp undo` of the id it prints makes it all again.",
    )
    p.add_argument("change", metavar="ID|NAME")
    p.add_argument("mounts", nargs="*", metavar="MOUNT", help=MOUNTS_HELP)
    p.add_argument("--and-after", action="store_true", help="and every later change of its mounts (a restore)")
    p.add_argument("--dry-run", action="store_true", help="show what would be put back; change nothing")
    return p


def undo_main(argv: Sequence[str]) -> int:
    args = undo_parser().parse_args(argv)

    def work(vfs: JailedFS) -> str:
        from vfs_mcp.changes import log_of
        from vfs_mcp.ops.files.undo import undo

        result = undo(vfs, log_of(vfs), None, change_id=args.change, dry_run=args.dry_run, and_after=args.and_after)
        lines = [f"{'would undo' if args.dry_run else 'undid'} {result.tool} (change {result.undid})"]
        later = [change_id for change_id in result.undone if change_id != result.undid]
        if later:
            lines[0] += f" and {plural(len(later), 'later change')}"
        if not result.undone:
            lines = [f"nothing changed since {result.tool}: nothing to undo"]
        lines += [f"  restored {path}" for path in result.restored] + [f"  removed {path}" for path in result.removed]
        if result.change_id is not None:
            lines.append(f"this undo is change {result.change_id}: `vfs-mcp undo {result.change_id}` makes it again")
        return "\n".join(lines)

    return _run("undo", args, work)
