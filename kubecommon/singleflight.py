"""Identical calls in flight at the same moment share one execution (Go's `singleflight`).

The adapter has several reads that many requests ask for at once (the same PromQL from every HPA
of a Deployment, the same TokenReview for every request on one connection); each must reach the
backend once, not once per caller. The shared call runs in its own task, so one caller giving up
(a client disconnect cancels its handler) never cancels the answer the others wait for.

Non-goals: caching answers after the call ends (callers that want that keep their own cache and
fill it from `on_done`), retries, timeouts (the call itself carries those).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["SingleFlight"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    """One in-flight task per key; every caller of that key awaits the same task."""

    def __init__(self) -> None:
        self._calls: dict[K, asyncio.Task[V]] = {}

    def __len__(self) -> int:
        return len(self._calls)

    async def do(self, key: K, call: Callable[[], Awaitable[V]],
                 on_done: Callable[[asyncio.Task[V]], None] | None = None) -> V:
        """The result of `call()` for `key`, started now unless a call for `key` is in flight.

        `on_done(task)` runs once when a started call ends (result, error or cancellation), after
        the key is forgotten: the place to cache a result.
        """
        task = self._calls.get(key)
        if task is None:
            task = asyncio.ensure_future(call())
            self._calls[key] = task
            task.add_done_callback(lambda done: self._settle(key, done, on_done))
        try:
            # shield: a caller going away must not cancel the call the others are waiting for.
            return await asyncio.shield(task)
        finally:
            # A failed call's traceback holds this frame; without `task` in it, the error does not
            # form a cycle (error -> traceback -> frame -> task -> error) that keeps the failed
            # call's whole answer alive until the next full collection.
            del task

    def _settle(self, key: K, task: asyncio.Task[V], on_done: Callable[[asyncio.Task[V]], None] | None) -> None:
        self._calls.pop(key, None)
        if not task.cancelled():
            task.exception()  # retrieved: every waiter may have given up already
        if on_done is not None:
            on_done(task)
