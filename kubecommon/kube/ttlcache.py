"""A bounded LRU cache whose entries expire: the store behind TokenReview and SAR caching.

Job: remember review answers for a short TTL (10 s by default upstream), evicting the least
recently used entry beyond `max_entries` (kubecommon.lru) so a flood of distinct tokens or request
attributes cannot grow memory without bound. The clock is a parameter (`now`), so tests need no
sleeps.

Non-goals: thread safety (used from one event loop), negative/positive TTL policy (callers
pass the expiry per entry). Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from kubecommon.lru import LRUCache

__all__ = ["TTLCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    def __init__(self, max_entries: int) -> None:
        self._entries: LRUCache[K, tuple[float, V]] = LRUCache(max_entries)

    def get(self, key: K, *, now: float) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, value = entry
        if now >= expires_at:
            self._entries.discard(key)
            return None
        return value

    def put(self, key: K, value: V, *, expires_at: float) -> None:
        self._entries.put(key, (expires_at, value))
