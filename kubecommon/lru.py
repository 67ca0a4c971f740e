"""A bounded least-recently-used map: the one home of "remember the last N answers".

Job: keep at most `max_entries` values and drop the least recently used one when a new key would
exceed that, so a cache keyed by request-controlled text (tokens, review attributes, PromQL, answer
shapes) keeps memory flat however many distinct keys arrive. `get_or_compute` is the memo form:
compute on a miss and keep the result (None included); when the computation raises, nothing is kept.

How: a plain dict whose insertion order is the recency order (a hit is popped and re-inserted), the
cheapest LRU Python offers on a hot path.

Non-goals: expiry (callers keep a deadline with the value, as kubecommon.kube.ttlcache does), thread
safety (each cache lives on one event loop), sizing by bytes. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, cast

__all__ = ["LRUCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_MISSING: Any = object()


class LRUCache(Generic[K, V]):
    __slots__ = ("_entries", "_max")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._entries: dict[K, V] = {}  # oldest first: a hit moves its key to the end

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        """The value for `key` (now the most recently used), or None when absent."""
        entries = self._entries
        value = entries.pop(key, _MISSING)
        if value is _MISSING:
            return None
        entries[key] = value
        return cast(V, value)

    def put(self, key: K, value: V) -> None:
        entries = self._entries
        entries.pop(key, None)
        entries[key] = value
        if len(entries) > self._max:
            del entries[next(iter(entries))]

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The value for `key`, computing and keeping it on a miss (an exception keeps nothing)."""
        entries = self._entries
        value = entries.pop(key, _MISSING)
        if value is _MISSING:
            value = compute()
            if len(entries) >= self._max:
                del entries[next(iter(entries))]
        entries[key] = value
        return cast(V, value)

    def discard(self, key: K) -> None:
        self._entries.pop(key, None)
