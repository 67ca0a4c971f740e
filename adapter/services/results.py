"""What the metrics services return: plain values, rendered to JSON by `adapter.server.render_metrics`.

Timestamps are Unix seconds (floats); custom and external values are integer milli-units (what
upstream's `NewMilliQuantity` holds), resource usage is `Quantity` objects; rendering decides the
wire spelling (RFC 3339, canonical quantity strings) in one place. What every item of an answer
shares is kept once, on the list: answers of thousands of objects stay cheap to build and encode.

Non-goals: JSON field names, API versions (v1beta1 vs v1beta2 is a rendering concern).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kubecommon.quantity import Quantity
from kubecommon.selectors import Selector

__all__ = [
    "ContainerMetrics",
    "ExternalMetricValue",
    "ExternalMetricValueList",
    "MetricValue",
    "MetricValueList",
    "NodeMetrics",
    "NodeMetricsList",
    "PodMetrics",
    "PodMetricsList",
]


class MetricValue(NamedTuple):
    """One described object's value (what all objects of an answer share is on the list).

    A NamedTuple like `Sample`: one is built per object of an answer, thousands per request.
    """

    name: str
    timestamp: float
    #: the value in milli-units, exactly what upstream's `NewMilliQuantity` carries
    milli: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricValueList:
    """The answer to one custom-metrics request: one resource, namespace, metric and selector."""

    #: `describedObject.kind` and `.apiVersion` of every item
    kind: str
    api_version: str
    #: `describedObject.namespace`; None for cluster-scoped objects and Namespace objects
    namespace: str | None
    metric: str
    #: the request's metricLabelSelector; rendered as `selector: null` when empty
    selector: Selector = Selector.empty()
    items: tuple[MetricValue, ...] = ()
    window_seconds: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalMetricValue:
    metric: str
    labels: Mapping[str, str] = field(default_factory=dict)
    timestamp: float
    #: the value in milli-units, exactly what upstream's `NewMilliQuantity` carries
    milli: int
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
