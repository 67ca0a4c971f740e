"""Wire format of the metrics APIs: service results → the exact JSON documents clients decode.

One place decides every spelling the HPA, kubectl and client-go depend on (k8s.io/metrics types):
top-level `kind`/`apiVersion`, `metadata: {}` on lists, `items: []` never null, v1beta1
`metricName`/`window`/`selector` vs v1beta2 `metric{name,selector}`/`windowSeconds`, external
`metricLabels` (`{}` when none), PodMetrics/NodeMetrics `window` as a Go duration string,
RFC 3339 UTC timestamps at second precision and canonical quantity strings.

Pure: builds dicts, no I/O, no aiohttp.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from adapter.services.results import (
    ExternalMetricValueList,
    MetricValue,
    MetricValueList,
    NodeMetrics,
    NodeMetricsList,
    PodMetrics,
    PodMetricsList,
)
from kubecommon.quantity import Quantity
from kubecommon.selectors import Selector, label_selector_from_selector

__all__ = [
    "CUSTOM_GROUP",
    "EXTERNAL_GROUP",
    "RESOURCE_GROUP",
    "format_duration",
    "format_time",
    "render_custom",
    "render_external",
    "render_node_metrics",
    "render_node_metrics_list",
    "render_pod_metrics",
    "render_pod_metrics_list",
]

CUSTOM_GROUP = "custom.metrics.k8s.io"
EXTERNAL_GROUP = "external.metrics.k8s.io"
RESOURCE_GROUP = "metrics.k8s.io"
_RESOURCE_API_VERSION = f"{RESOURCE_GROUP}/v1beta1"

JSON = dict[str, Any]


def format_time(timestamp: float) -> str:
    """`metav1.Time`: RFC 3339 in UTC, fractional seconds truncated like Go's marshaller."""
    return datetime.fromtimestamp(int(timestamp // 1), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fraction(whole: int, part: int, digits: int) -> str:
    text = str(whole)
    if part:
        text += "." + str(part).rjust(digits, "0").rstrip("0")
    return text


def format_duration(seconds: float) -> str:
    """`metav1.Duration`: Go's `time.Duration.String()` (`15.012s`, `1m0s`, `1h0m0s`, `500ms`)."""
    nanos = round(seconds * 1_000_000_000)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_fraction(nanos // 1_000, nanos % 1_000, 3)}µs"
    if nanos < 1_000_000_000:
        return f"{sign}{_fraction(nanos // 1_000_000, nanos % 1_000_000, 6)}ms"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _fraction(rest // 1_000_000_000, rest % 1_000_000_000, 9) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _selector(selector: Selector) -> JSON | None:
    """`metav1.LabelSelector` of the metric selector; `null` when none was given."""
    return None if selector.is_empty() else label_selector_from_selector(selector)


def _described(value: MetricValue) -> JSON:
    obj = value.described_object
    ref: JSON = {"kind": obj.kind}
    if obj.namespace:
        ref["namespace"] = obj.namespace
    ref["name"] = obj.name
    ref["apiVersion"] = obj.api_version
    return ref


class _Times:
    """`format_time` memoised for one document: its items mostly share one timestamp."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[int, str] = {}

    def __call__(self, timestamp: float) -> str:
        second = int(timestamp // 1)
        text = self._seen.get(second)
        if text is None:
            text = self._seen[second] = format_time(second)
        return text


def _custom_item(value: MetricValue, version: str, times: _Times) -> JSON:
    item: JSON = {"describedObject": _described(value)}
    if version == "v1beta1":
        item["metricName"] = value.metric
    else:
        item["metric"] = {"name": value.metric, "selector": _selector(value.selector)}
    item["timestamp"] = times(value.timestamp)
    if value.window_seconds:
        item["window" if version == "v1beta1" else "windowSeconds"] = value.window_seconds
    item["value"] = str(value.value)
    if version == "v1beta1":
        item["selector"] = _selector(value.selector)
    return item


def render_custom(result: MetricValueList, version: str) -> JSON:
    """A `MetricValueList` of custom.metrics.k8s.io `version` (`v1beta1` or `v1beta2`)."""
    times = _Times()
    return {"kind": "MetricValueList", "apiVersion": f"{CUSTOM_GROUP}/{version}", "metadata": {},
            "items": [_custom_item(value, version, times) for value in result.items]}


def render_external(result: ExternalMetricValueList) -> JSON:
    items, times = [], _Times()
    for value in result.items:
        item: JSON = {"metricName": value.metric, "metricLabels": dict(value.labels),
                      "timestamp": times(value.timestamp)}
        if value.window_seconds:
            item["window"] = value.window_seconds
        item["value"] = str(value.value)
        items.append(item)
    return {"kind": "ExternalMetricValueList", "apiVersion": f"{EXTERNAL_GROUP}/v1beta1",
            "metadata": {}, "items": items}


def _usage(usage: dict[str, Quantity] | Any) -> JSON:
    return {name: str(quantity) for name, quantity in usage.items()}


def _metadata(name: str, namespace: str | None, created: float, labels: Any) -> JSON:
    meta: JSON = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["creationTimestamp"] = format_time(created)
    if labels:
        meta["labels"] = dict(labels)
    return meta


def _pod(pod: PodMetrics) -> JSON:
    return {"metadata": _metadata(pod.name, pod.namespace, pod.created, pod.labels),
            "timestamp": format_time(pod.timestamp), "window": format_duration(pod.window_seconds),
            "containers": [{"name": c.name, "usage": _usage(c.usage)} for c in pod.containers]}


def _node(node: NodeMetrics) -> JSON:
    return {"metadata": _metadata(node.name, None, node.created, node.labels),
            "timestamp": format_time(node.timestamp), "window": format_duration(node.window_seconds),
            "usage": _usage(node.usage)}


def render_pod_metrics(pod: PodMetrics) -> JSON:
    return {"kind": "PodMetrics", "apiVersion": _RESOURCE_API_VERSION, **_pod(pod)}


def render_pod_metrics_list(result: PodMetricsList) -> JSON:
    return {"kind": "PodMetricsList", "apiVersion": _RESOURCE_API_VERSION, "metadata": {},
            "items": [_pod(pod) for pod in result.items]}


def render_node_metrics(node: NodeMetrics) -> JSON:
    return {"kind": "NodeMetrics", "apiVersion": _RESOURCE_API_VERSION, **_node(node)}


def render_node_metrics_list(result: NodeMetricsList) -> JSON:
    return {"kind": "NodeMetricsList", "apiVersion": _RESOURCE_API_VERSION, "metadata": {},
            "items": [_node(node) for node in result.items]}
