"""One relist of the adapter's real discovery against a fake Prometheus, for the conformance cases.

Shared by the case families that compare what is listed before and after a relist (discovery
cases and the flag cases), so neither imports the other. Non-goals: judging (the callers do).
"""

from __future__ import annotations

import asyncio
from typing import Any

from adapter.prometheus.fake import FakePrometheus

__all__ = ["metric_infos", "relisted"]


def relisted(compiled: Any, series: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The custom metrics listed before and after one relist whose every series query answers
    `series` (each rule keeps what its own filters accept, as the adapter's discovery does)."""
    from adapter.discovery.relist import Discovery

    answer = [dict(s) for s in series]
    prom = FakePrometheus(series_by_matcher={r.series_query: answer for r in (*compiled.custom, *compiled.external)})
    discovery = Discovery(prom, compiled, interval=60.0, clock=lambda: 1000.0)
    before = metric_infos(discovery.snapshot)
    asyncio.run(discovery.relist())
    return before, metric_infos(discovery.snapshot)


def metric_infos(registry: Any) -> list[dict[str, Any]]:
    return [{"group_resource": str(i.resource), "namespaced": i.namespaced, "metric": i.metric}
            for i in registry.custom_metrics()]
