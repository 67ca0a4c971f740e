"""The worker pool: takes due keys from the `DueQueue` and runs at most N syncs at a time.

`start_due()` hands every due key to a new task while a worker slot is free; `run()` repeats
that whenever the earliest due time arrives or `wake()` is called (a new or changed object, a
finished sync, leadership gained). Syncs start only while `active()` holds (the leader, or no
leader election). A sync that returns False (or raises) counts as failed and is retried by the
queue's limiter.
Each start reports the key's lateness (start − due) to `on_start`; `running_seconds()` says how
long each sync in progress has run (client-go's stuck-worker gauges are read from it).

Non-goals: what a sync does (`controller.reconcile`), scheduling rules (`controller.run.queue`).
The clock is passed in; tests call `start_due()` and advance their own clock instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from controller.run.queue import Due, DueQueue

K = TypeVar("K", bound=Hashable)
_log = logging.getLogger(__name__)
_IDLE_WAIT = 3600.0


class WorkerPool(Generic[K]):
    def __init__(
        self, queue: DueQueue[K], sync: Callable[[K], Awaitable[bool]], *, concurrency: int,
        clock: Callable[[], float], active: Callable[[], bool] = lambda: True,
        on_start: Callable[[Due[K]], None] = lambda due: None,
        on_done: Callable[[K, bool], None] = lambda key, failed: None,
    ) -> None:  # fmt: skip
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._queue = queue
        self._sync = sync
        self._concurrency = concurrency
        self._clock = clock
        self._active = active
        self._on_start = on_start
        self._on_done = on_done
        self._tasks: dict[asyncio.Task[None], float] = {}  # running syncs and when each started
        self._wake = asyncio.Event()

    @property
    def busy(self) -> int:
        return len(self._tasks)

    def running_seconds(self) -> list[float]:
        """How long each sync in progress has run so far (what client-go's
        `workqueue_unfinished_work_seconds` sums and `_longest_running_processor_seconds` maxes)."""
        now = self._clock()
        return [now - started for started in self._tasks.values()]

    def wake(self) -> None:
        self._wake.set()

    def start_due(self) -> int:
        """Start a sync for each due key while a slot is free; return how many started."""
        if not self._active():
            return 0
        free = self._concurrency - len(self._tasks)
        if free <= 0:
            return 0
        now = self._clock()
        started = self._queue.pop_due(now, free)
        for due in started:
            self._on_start(due)
            task = asyncio.create_task(self._one(due.key), name=f"sync {due.key}")
            self._tasks[task] = now
            task.add_done_callback(self._finished)
        return len(started)

    async def _one(self, key: K) -> None:
        failed = True
        try:
            failed = not await self._sync(key)
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.exception("sync of %s failed", key)
        finally:
            self._queue.done(key, now=self._clock(), failed=failed)
            self._on_done(key, failed)

    def _finished(self, task: asyncio.Task[None]) -> None:
        # Wake the dispatcher only once the slot is free: woken from inside the sync (before the
        # task is done and discarded), it could see every slot still taken, wait for the idle
        # timeout, and leave due keys waiting while nothing runs.
        self._tasks.pop(task, None)
        self._wake.set()

    def seconds_until_next(self) -> float:
        nxt = self._queue.next_due()
        if nxt is None or not self._active() or len(self._tasks) >= self._concurrency:
            return _IDLE_WAIT  # woken by a finished sync, a change or leadership
        return max(0.0, nxt - self._clock())

    async def run(self) -> None:
        """Dispatch until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            self.start_due()
            timer = loop.call_later(self.seconds_until_next(), self._wake.set)  # cheaper than wait_for per wake
            try:
                await self._wake.wait()
            finally:
                timer.cancel()

    async def drain(self, timeout: float) -> None:
        """Let running syncs finish (up to `timeout`), then cancel the rest."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
