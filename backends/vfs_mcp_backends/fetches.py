"""Many whole-file fetches on a store's own event loop (s3fs, gcsfs, adlfs), stopped as one."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any


class LoopFetches:
    """Fetches of whole files by ``fs``'s event loop: a caller fetching many files at once
    needs no thread a file waiting on them. ``stop`` ends the batch: a fetch not begun by then
    never begins, one under way is cancelled, and it returns once none runs, so a caller that
    stops early (a search whose page is full, a cancelled call) sends no request afterwards.

    A fetch looks at ``stopped`` and enters ``running`` in one step of the loop, and ``stop``
    cancels ``running`` in a later step, so no fetch slips between the two.
    """

    def __init__(self, fs: Any) -> None:
        self._fs = fs
        self._running: set[asyncio.Task[Any]] = set()
        self._stopped = False
        self._submitted = False

    def submit(self, path: str) -> Future[bytes]:
        """The bytes of ``path``, fetched by the loop."""
        self._submitted = True
        return asyncio.run_coroutine_threadsafe(self._fetch(path), self._fs.loop)

    async def _fetch(self, path: str) -> bytes:
        task = asyncio.current_task()
        if self._stopped or task is None:
            raise asyncio.CancelledError
        self._running.add(task)
        try:
            data: bytes = await self._fs._cat_file(path)
            return data
        finally:
            self._running.discard(task)

    def stop(self) -> None:
        """Begin no more fetches, cancel those under way, and return once none runs."""
        self._stopped = True  # seen by every fetch whose first step comes after this line
        if self._submitted:
            asyncio.run_coroutine_threadsafe(self._cancel_running(), self._fs.loop).result()

    async def _cancel_running(self) -> None:
        running = list(self._running)
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running)
