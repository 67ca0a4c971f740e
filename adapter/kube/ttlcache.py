"""A bounded LRU cache whose entries expire: the store behind TokenReview and SAR caching.

Job: remember review answers for a short TTL (10 s by default upstream), evicting the least
recently used entry beyond `max_entries` so a flood of distinct tokens or request attributes
cannot grow memory without bound. The clock is a parameter (`now`), so tests need no sleeps.

Non-goals: thread safety (used from one event loop), negative/positive TTL policy (callers
pass the expiry per entry). Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["TTLCache"]

K = TypeVar("K")
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, *, now: float) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, value = entry
        if now >= expires_at:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, *, expires_at: float) -> None:
        self._entries[key] = (expires_at, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
