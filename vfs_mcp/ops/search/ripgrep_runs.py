"""ripgrep processes for one search, their output read in path order, two running at once.

``rg --sort path`` (pages must be in path order) searches on one thread. A folder search is
cut into runs over consecutive top-level entries of the folder, in the order ripgrep sorts
them; two run at once (the second one's output waits in memory, at most ``AHEAD_BYTES``) and
their outputs are read one after the other, so the lines come in the order one sorted run
would give, from two cores. A run is told its entries by an ignore file of its own
(``--ignore-file``: everything at the top but them), so every other rule (ignore files,
globs, ``--max-depth``, hidden files) means what it means to one run over the folder.

A folder is searched in one run where that would not hold: an ignore file at its top (its
rules and ours would meet in one precedence order), include globs given to ripgrep (they
override ignore files), an entry name the ignore syntax cannot spell, fewer than two entries
or more than ``MAX_NAMES``. Stopping (a full page, the time budget) kills every run started.
(A top-level entry made between the listing and the runs is not searched: one run that had
listed the folder a moment earlier would miss it the same way.)
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from typing import IO

from vfs_mcp.ops.walks.ignore import IGNORE_FILES

RUNS = 4
"""Runs a folder is cut into at most (each costs a ripgrep start, a few ms)."""
AT_ONCE = 2
MAX_NAMES = 4096
"""Top-level entries past which a folder is searched in one run."""
AHEAD_BYTES = 4 << 20
"""Output a run that is not read yet may hold in memory before it waits."""
STDERR_KEEP = 64 * 1024
_SPECIAL = frozenset("\\*?[]!# ")


def chunks(folder: str, include_globs: bool) -> list[list[str]] | None:
    """The top-level names of ``folder`` cut into runs, in ripgrep's order (None: one run).
    ``include_globs``: ripgrep is given include globs."""
    if include_globs:
        return None
    try:
        with os.scandir(folder) as entries:
            listed = [entry.name for entry in itertools.islice(entries, MAX_NAMES + 1)]
    except OSError:
        return None  # ripgrep reports it
    if len(listed) > MAX_NAMES:
        return None  # a flat folder: its listing and the runs' ignore files would cost more than they save
    names = sorted(listed, key=os.fsencode)
    count = min(RUNS, len(names))
    if count < 2 or any(name in IGNORE_FILES or not _spellable(name) for name in names):
        return None
    size, extra = divmod(len(names), count)
    cut, at = [], 0
    for k in range(count):
        step = size + (k < extra)
        cut.append(names[at : at + step])
        at += step
    return cut


def _spellable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a name that is not UTF-8 (kept as surrogates)
        return False
    return "\n" not in name and "\r" not in name


def ignore_rules(names: list[str]) -> str:
    """An ignore file that leaves only ``names`` at the top of the search."""
    return "/*\n" + "".join("!/" + "".join("\\" + c if c in _SPECIAL else c for c in name) + "\n" for name in names)


class Runs:
    """``cmd`` (which ends with the path searched, ``.``) over ``chunks`` of the folder ``cwd``
    (None: one run of ``cmd`` as it is, reading ``stdin``). ``lines()`` gives their output in
    order; ``stop()`` kills them all; ``finish()`` waits and gives the worst exit status and
    what they wrote to stderr."""

    def __init__(self, cmd: list[str], cwd: str, chunks: list[list[str]] | None, stdin: IO[bytes] | int) -> None:
        self._folder: str | None = None
        self._cmds = [cmd]
        if chunks:
            try:
                self._folder = tempfile.mkdtemp(prefix="vfs-mcp-rg-")
                rules = [os.path.join(self._folder, f"run{k}.ignore") for k in range(len(chunks))]
                for path, names in zip(rules, chunks, strict=True):
                    with open(path, "w", encoding="utf-8") as out:
                        out.write(ignore_rules(names))
                self._cmds = [[*cmd[:-2], "--ignore-file", path, *cmd[-2:]] for path in rules]
            except OSError:  # no temp folder to write in: one run
                pass
        self._cwd, self._stdin = cwd, stdin
        self._procs: list[subprocess.Popen[bytes]] = []
        self._outputs: list[_Output] = []
        self._stderr: list[bytes] = []
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._start_upto(AT_ONCE)

    def _start_upto(self, count: int) -> None:
        with self._lock:
            while len(self._procs) < min(count, len(self._cmds)) and not self._stopped.is_set():
                proc = subprocess.Popen(
                    self._cmds[len(self._procs)],
                    cwd=self._cwd,
                    stdin=self._stdin,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                output = _Output()
                self._procs.append(proc)
                self._outputs.append(output)
                for target, args in ((output.fill, (proc.stdout,)), (_drain, (proc.stderr, self._stderr))):
                    thread = threading.Thread(target=target, args=args, daemon=True)
                    thread.start()
                    self._threads.append(thread)

    def lines(self) -> Iterator[bytes]:
        """Every run's output lines, run after run; the next run starts as one is read out."""
        for k in range(len(self._cmds)):
            self._start_upto(k + AT_ONCE)
            if k >= len(self._outputs):
                return  # stopped
            yield from self._outputs[k].lines()

    def stop(self) -> None:
        """Kill every run (a full page, the budget spent); safe from another thread."""
        with self._lock:
            self._stopped.set()
            for proc, output in zip(self._procs, self._outputs, strict=True):
                output.close()
                if proc.poll() is None:
                    proc.kill()

    def finish(self) -> tuple[int, str]:
        """Stop what still runs, wait for it all; (the worst exit status of the runs that
        ended by themselves, stderr as text)."""
        self.stop()
        codes = [proc.wait() for proc in self._procs]
        for thread in self._threads:
            thread.join()
        if self._folder:
            shutil.rmtree(self._folder, ignore_errors=True)
        ended = [code for code in codes if code >= 0]
        return max(ended, default=0), b"".join(self._stderr).decode("utf-8", "replace")


class _Output:
    """A run's output lines, read from its pipe on a thread of their own as it writes them;
    at most ``AHEAD_BYTES`` wait unread (then the run waits on its pipe)."""

    def __init__(self) -> None:
        self._lines: deque[bytes | None] = deque()
        self._bytes = 0
        self._closed = False
        self._ready = threading.Condition()

    def fill(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        with stream:
            for line in stream:
                with self._ready:
                    while self._bytes > AHEAD_BYTES and not self._closed:
                        self._ready.wait()
                    if self._closed:
                        continue  # read to the end, keeping nothing: the run is being killed
                    self._lines.append(line)
                    self._bytes += len(line)
                    self._ready.notify_all()
        with self._ready:
            self._lines.append(None)
            self._ready.notify_all()

    def close(self) -> None:
        """Nothing more will be read: let the filling thread drop what comes."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def lines(self) -> Iterator[bytes]:
        while True:
            with self._ready:
                while not self._lines:
                    self._ready.wait()
                batch = list(self._lines)
                self._lines.clear()
                self._bytes = 0
                self._ready.notify_all()
            for line in batch:
                if line is None:
                    return
                yield line


def _drain(stream: IO[bytes] | None, into: list[bytes]) -> None:
    """Read a run's stderr as it comes (a full pipe would stall it), keeping its first 64 KiB."""
    if stream is None:
        return
    kept = 0
    with stream:
        for line in stream:
            if kept < STDERR_KEEP:
                into.append(line)
                kept += len(line)
