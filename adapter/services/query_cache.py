"""A small bounded memo of rendered PromQL, per service instance.

The HPA asks the same question every sync period (same rule, resource, namespace, objects and
metric selector), and rendering a 100-name regex matcher (Go quoting, RE2 escaping, template
execution) costs more than everything else the adapter does for the request. Rendering is a pure
function of the key, so answers can be reused as long as the process lives; the size bound keeps
memory flat when selections churn (oldest entries go first).

Non-goals: caching Prometheus answers (values must be fresh on every request).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from adapter.rules.query import PromQL

__all__ = ["QueryCache"]


class QueryCache:
    def __init__(self, max_entries: int = 1024) -> None:
        self._max_entries = max_entries
        self._entries: dict[Hashable, PromQL] = {}

    def get(self, key: Hashable, render: Callable[[], PromQL]) -> PromQL:
        """The cached query for `key`, rendering (and keeping) it on a miss; errors are not kept."""
        found = self._entries.get(key)
        if found is None:
            found = render()
            if len(self._entries) >= self._max_entries:
                del self._entries[next(iter(self._entries))]
            self._entries[key] = found
        return found

    def __len__(self) -> int:
        return len(self._entries)
