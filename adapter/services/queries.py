"""What the custom and resource metrics services share to query Prometheus for a set of objects.

* `DEFAULT_LARGE_SELECTION` and `names_to_query`: up to that many objects the query names them
  (`pod=~"a|b|…"`); above it the query selects the whole namespace (`None`) and the caller filters
  the answer against its cached object set, which yields the identical answer without a giant
  regex matcher.
* `RenderedQueries`: rendered PromQL kept by a key the caller chooses (`KEPT_QUERIES` of them),
  and the one guarded call that runs it. The HPA asks the same question every sync period, and
  rendering a 100-name regex matcher (Go quoting, RE2 escaping, template execution) costs more
  than everything else done for the request; rendering is a pure function of the key. Prometheus
  answers are never kept: values must be fresh on every request.

Non-goals: PromQL text (only `adapter.rules.query` builds it), what a missing sample means (each
service decides), error wording (`services.errors`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from adapter.prometheus.api import PrometheusAPI, Sample
from adapter.rules.query import PromQL
from adapter.services import errors
from kubecommon.lru import LRUCache

__all__ = ["DEFAULT_LARGE_SELECTION", "KEPT_QUERIES", "RenderedQueries", "names_to_query"]

#: above this many selected objects, query by namespace and filter instead of a name regex
DEFAULT_LARGE_SELECTION = 100
#: rendered PromQL kept per service
KEPT_QUERIES = 1024


def names_to_query(names: Sequence[str], large_selection: int) -> Sequence[str] | None:
    """`names` when the query may name them all, None (select the namespace) above the limit."""
    return names if len(names) <= large_selection else None


class RenderedQueries:
    """Rendered PromQL by key, and the Prometheus call that runs it with its failures translated."""

    def __init__(self, prometheus: PrometheusAPI, *, kept: int = KEPT_QUERIES) -> None:
        self._prometheus = prometheus
        self._kept = kept
        self._rendered: LRUCache[Hashable, PromQL] = LRUCache(kept)

    def __len__(self) -> int:
        """How many rendered queries are kept."""
        return len(self._rendered)

    async def run(self, key: Hashable, render: Callable[[], PromQL], *, what: str) -> list[Sample]:
        """Render once per `key` (a failing render keeps nothing), then query Prometheus; `what`
        names the request in the log when Prometheus fails."""
        promql = self._rendered.get_or_compute(key, render)
        return await errors.guarded(self._prometheus.query(promql), what=what)

    def forget(self) -> None:
        """Drop every rendered query (the rules they came from changed)."""
        self._rendered = LRUCache(self._kept)
