"""What the metrics services return: plain values, rendered to JSON by `adapter.server.render_metrics`.

Timestamps are Unix seconds (floats) and values are `Quantity` objects, so rendering decides the
wire spelling (RFC 3339, canonical quantity strings) in one place.

Non-goals: JSON field names, API versions (v1beta1 vs v1beta2 is a rendering concern).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubecommon.quantity import Quantity
from kubecommon.selectors import Selector

__all__ = [
    "ContainerMetrics",
    "DescribedObject",
    "ExternalMetricValue",
    "ExternalMetricValueList",
    "MetricValue",
    "MetricValueList",
    "NodeMetrics",
    "NodeMetricsList",
    "PodMetrics",
    "PodMetricsList",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedObject:
    """The `describedObject` ObjectReference of a custom metric value."""

    kind: str
    api_version: str
    name: str
    namespace: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricValue:
    described_object: DescribedObject
    metric: str
    #: the request's metricLabelSelector; rendered as `selector: null` when empty
    selector: Selector
    timestamp: float
    value: Quantity
    window_seconds: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricValueList:
    items: tuple[MetricValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalMetricValue:
    metric: str
    labels: Mapping[str, str] = field(default_factory=dict)
    timestamp: float
    value: Quantity
    window_seconds: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalMetricValueList:
    items: tuple[ExternalMetricValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerMetrics:
    name: str
    #: a ResourceList: `cpu` and `memory`
    usage: Mapping[str, Quantity]


@dataclass(frozen=True, slots=True, kw_only=True)
class PodMetrics:
    name: str
    namespace: str
    labels: Mapping[str, str]
    #: metrics-server reports the moment the answer was built as creationTimestamp
    created: float
    #: the end of the measurement window (earliest sample timestamp)
    timestamp: float
    window_seconds: float
    containers: tuple[ContainerMetrics, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeMetrics:
    name: str
    labels: Mapping[str, str]
    created: float
    timestamp: float
    window_seconds: float
    usage: Mapping[str, Quantity]


@dataclass(frozen=True, slots=True, kw_only=True)
class PodMetricsList:
    items: tuple[PodMetrics, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeMetricsList:
    items: tuple[NodeMetrics, ...] = ()
