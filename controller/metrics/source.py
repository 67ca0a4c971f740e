"""The metrics port: what one `spec.metrics[]` entry observed, as the algorithm's `Observation`.

Upstream's `MetricsClient` has one call per source (resource, raw pods, object, external); here
one call takes a `MetricQuery` and returns the observation the algorithm reads. A failed fetch is
a `FetchFailure` carrying the error text upstream would report (the algorithm then applies the
no-scale-down-on-error rule and emits the matching event); the port never raises for API errors.

Non-goals: deciding, caching answers across syncs (each sync reads fresh values), parsing specs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from controller.algorithm.spec import ObjectRef, Observation, SourceType


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricQuery:
    """What to ask the metrics APIs for one `spec.metrics[]` entry (built by controller.kube).

    `metric_selector` is the metric's label selector in query-string form (`a=b,c in (d)`), sent
    as `metricLabelSelector` (custom) or `labelSelector` (external); "" for none.
    """

    type: SourceType
    name: str  # resource name (cpu, memory) or metric name
    container: str = ""  # ContainerResource only
    metric_selector: str = ""
    described_object: ObjectRef | None = None  # Object only


class MetricsSource(Protocol):
    """Reads one metric for the pods `pod_selector` selects (query-string form) in `namespace`."""

    async def observe(self, namespace: str, query: MetricQuery, *, pod_selector: str) -> Observation: ...

