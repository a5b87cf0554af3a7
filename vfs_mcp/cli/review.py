"""``vfs-mcp review``: what the mounts under review hold pending, and the person's decision."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from vfs_mcp.cli.exits import exit_code
from vfs_mcp.ops.text.names import plural
from vfs_mcp.review import Review, open_review

DESCRIPTION = (
    "Show what an agent changed on mounts served under review (--review, or review = true in a [[mount]]): one "
    "unified diff a file, with the ids of the changes that made it. --apply writes it to the mounts, all or nothing "
    "(refused whole, naming the file, where a file changed since the agent read it); --discard drops it. Both take "
    "paths or change ids to pick part of it. A path the store no longer lets be read (its folder became a link out "
    "of the mount) is listed as blocked: --apply applies the rest and names it, --discard drops it. Give the mounts "
    "(or --config, --state) as the server was given them. Exit 0, 1 when the apply or discard is refused (or some "
    "paths could not be applied), 2 on a usage error."
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vfs-mcp review", description=DESCRIPTION, allow_abbrev=False)
    p.add_argument("mounts", nargs="*", metavar="MOUNT", help="the mounts under review (default: the current folder)")
    p.add_argument("--config", metavar="FILE", help="the server's config file (its review mounts, its state store)")
    p.add_argument(
        "--state", metavar="URL", help="the server's state store (default: where a server of MOUNTs keeps it)"
    )
    p.add_argument("--deny", action="append", default=[], metavar="GLOB", help="as the server's --deny (repeatable)")
    decide = p.add_mutually_exclusive_group()
    decide.add_argument(
        "--apply", nargs="*", metavar="PATH|CHANGE_ID", help="write what is pending (only these paths or changes)"
    )
    decide.add_argument(
        "--discard", nargs="*", metavar="PATH|CHANGE_ID", help="drop what is pending (only these paths or changes)"
    )
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    opened = open_review(args.mounts, config=args.config, state=args.state, deny=args.deny)
    return exit_code("review", opened, lambda review: _decided(review, args))


def _decided(review: Review, args: argparse.Namespace) -> int:
    mounts = ", ".join(sides.layer.url for sides in review.sides)
    if args.apply is not None:
        applied = review.apply(*args.apply)
        how = (
            f" (change {applied.change_id}: undo by this id, on a server not under review, takes it back)"
            if applied.change_id
            else ""
        )
        print(f"applied {plural(len(applied.paths), 'path')} to {mounts}{how}")
        for path in applied.paths:
            print(f"  {path}")
        if applied.refused:
            print(
                f"vfs-mcp review: {plural(len(applied.refused), 'path')} could not be applied and stay "
                "pending (`vfs-mcp review --discard PATH` drops one):",
                file=sys.stderr,
            )
            for path in applied.refused:
                print(f"  {path}", file=sys.stderr)
            return 1
    elif args.discard is not None:
        dropped = review.discard(*args.discard)
        print(f"discarded {plural(len(dropped), 'path')} pending on {mounts}")
        for path in dropped:
            print(f"  {path}")
    else:
        pending = review.pending()
        print(review.diff(), end="")
        if pending:
            print(
                f"\n{plural(len(pending), 'path')} pending on {mounts}: `vfs-mcp review --apply` applies, "
                "`vfs-mcp review --discard` drops (both take paths or change ids to pick some)"
            )
    return 0
