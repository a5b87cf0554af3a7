"""The ``vfs-mcp`` command (and ``python -m vfs_mcp``) loads the command line with Python's cycle
collector paused, and freezes what it loaded: the collector would otherwise scan the SDK's
models again and again while they are made, some 60 ms of every start."""

from __future__ import annotations

import json
import subprocess
import sys


def test_loading_the_command_line_runs_no_collection_and_leaves_what_it_loaded_frozen() -> None:
    # A fresh interpreter: each collection notes how many objects were frozen when it ran
    # (none before the load ends); `tools` is a subcommand that serves nothing.
    script = (
        "import gc, json\n"
        "from vfs_mcp.__main__ import main\n"
        "frozen_at = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and frozen_at.append(gc.get_freeze_count()))\n"
        "status = main(['tools'])\n"
        "print(json.dumps([status, min(frozen_at, default=None), gc.get_freeze_count(), gc.isenabled()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    status, fewest_frozen, frozen, enabled = json.loads(out.splitlines()[-1])

    assert status == 0 and enabled
    assert frozen > 50_000  # the SDK's models, our modules
    assert fewest_frozen is None or fewest_frozen > 0  # no collection ran before the freeze
