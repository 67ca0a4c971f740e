"""One relist of the adapter's real discovery against a fake Prometheus, for the conformance cases.

Shared by the case families that compare what is listed before and after a relist (discovery
cases and the flag cases), so neither imports the other. Non-goals: judging (the callers do).
"""

from __future__ import annotations

import asyncio
from typing import Any

from adapter.prometheus.fake import FakePrometheus

__all__ = ["metric_infos", "relisted", "relisted_twice", "series_failure"]


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


def relisted_twice(compiled: Any, first: Any, second: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The custom metrics served after a relist answering `first` then one answering `second`,
    and those of them served only because they went missing for the first time (kept one relist)."""
    from adapter.discovery.relist import Discovery

    answers = iter(([dict(s) for s in first], [dict(s) for s in second]))
    prom = FakePrometheus()
    discovery = Discovery(prom, compiled, interval=60.0, clock=lambda: 1000.0)
    for answer in answers:
        prom.series_by_matcher = {r.series_query: answer for r in (*compiled.custom, *compiled.external)}
        asyncio.run(discovery.relist())
    registry = discovery.snapshot
    missing = {_info_key(m) for m in _infos(registry.missing_custom)}
    return metric_infos(registry), [i for i in metric_infos(registry) if _info_key(i) in missing]


def _infos(infos: Any) -> list[dict[str, Any]]:
    return [{"group_resource": str(i.resource), "namespaced": i.namespaced, "metric": i.metric} for i in infos]


def _info_key(info: dict[str, Any]) -> tuple[Any, ...]:
    return info["group_resource"], info["namespaced"], info["metric"]


def metric_infos(registry: Any) -> list[dict[str, Any]]:
    return _infos(registry.custom_metrics())


def series_failure(data: Any) -> Exception | None:
    """The error the real Prometheus client raises for a `/api/v1/series` answer with the case's
    `prometheus_http_status` (and `prometheus_body`), or None when the case gives no failure."""
    if not isinstance(data, dict) or "prometheus_http_status" not in data:
        return None
    from adapter.prometheus.client import PrometheusClient
    from adapter.prometheus.errors import PrometheusError

    try:
        PrometheusClient.raise_for_document("/api/v1/series", int(data["prometheus_http_status"]),
                                             data.get("prometheus_body", ""))
    except PrometheusError as err:
        return err
    return None
