"""external.metrics.k8s.io: the samples of one external metric, one value per series.

prometheus-adapter semantics: the metric is looked up by name only; the request's namespace
becomes a label matcher unless the rule says `namespaced: false` (then the metric is the same in
every namespace); the request's `labelSelector` selects series, not objects; every sample is one
item whose `metricLabels` are the sample's labels and whose timestamp is the sample's. An empty
vector is `items: []` (200). A sample whose value is NaN, ±Inf or outside what a quantity can hold
is left out and counted (`dropped`), never served as a clamped number. Kubernetes is never consulted.

Non-goals: HTTP parsing, JSON rendering, PromQL text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from adapter.discovery.registry import ExternalMetricEntry, Registry
from adapter.prometheus.api import PrometheusAPI
from adapter.rules import query
from adapter.services import errors
from adapter.services.results import ExternalMetricValue, ExternalMetricValueList
from adapter.services.values import DropSink, ignore_drops, unusable
from kubecommon.quantity import milli_of_finite
from kubecommon.selectors import Selector

__all__ = ["ExternalMetricRequest", "ExternalMetricsService"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalMetricRequest:
    namespace: str
    metric: str
    metric_selector: Selector = Selector.empty()


class ExternalMetricsService:
    def __init__(self, *, registry: Callable[[], Registry], prometheus: PrometheusAPI,
                 dropped: DropSink = ignore_drops,
                 missing: Callable[[str], Awaitable[ExternalMetricEntry | None]] | None = None) -> None:
        self._registry = registry
        self._missing = missing
        self._dropped = dropped
        self._prometheus = prometheus

    async def get(self, request: ExternalMetricRequest) -> ExternalMetricValueList:
        entry = self._registry().lookup_external(request.metric)
        if entry is None and self._missing is not None:
            # dropped by the last relist: re-checked; unknown: 503 if Prometheus is unreachable
            entry = await errors.guarded(self._missing(request.metric), what=f"external metric {request.metric}")
        if entry is None:
            # upstream says "for namespaces" in `default` and "for " elsewhere; we always name it
            raise errors.MetricNotFound.for_resource("namespaces", request.metric)
        namespace = request.namespace if entry.rule.namespaced else None
        with errors.query_errors("namespaces", request.metric, unmapped_is_not_found=False):
            promql = query.render_external(entry.rule, series_name=entry.series_name,
                                           namespace=namespace, metric_selector=request.metric_selector)
        samples = await errors.guarded(self._prometheus.query(promql),
                                       what=f"external metric {request.metric}")
        items = []
        for sample in samples:
            reason = unusable(sample.value)
            if reason is not None:
                self._dropped("external", reason)
                continue
            items.append(ExternalMetricValue(metric=request.metric, labels=dict(sample.labels),
                                             timestamp=sample.timestamp, milli=milli_of_finite(sample.value)))
        return ExternalMetricValueList(items=tuple(items))
