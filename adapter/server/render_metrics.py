"""Wire format of the metrics APIs: service results → the exact JSON documents clients decode.

One place decides every spelling the HPA, kubectl and client-go depend on (k8s.io/metrics types):
top-level `kind`/`apiVersion`, `metadata: {}` on lists, `items: []` never null, v1beta1
`metricName`/`window`/`selector` vs v1beta2 `metric{name,selector}`/`windowSeconds`, external
`metricLabels` (`{}` when none), PodMetrics/NodeMetrics `window` as a Go duration string,
RFC 3339 UTC timestamps at second precision and canonical quantity strings (the duration and time
spellings themselves are kubecommon.gotime's and kubecommon.kubetime's).

Pure: builds dicts, no I/O, no aiohttp.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from json.encoder import encode_basestring_ascii
from operator import attrgetter
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
from kubecommon.gotime import format_duration
from kubecommon.kubetime import format_time
from kubecommon.lru import LRUCache
from kubecommon.quantity import Quantity, format_milli
from kubecommon.selectors import Selector, label_selector_from_selector

__all__ = [
    "CUSTOM_GROUP",
    "CustomMetricsEncoder",
    "encode_custom",
    "EXTERNAL_GROUP",
    "RESOURCE_GROUP",
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
_timestamp_of = attrgetter("timestamp")


def _selector(selector: Selector) -> JSON | None:
    """`metav1.LabelSelector` of the metric selector; `null` when none was given."""
    return None if selector.is_empty() else label_selector_from_selector(selector)


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


def _described(result: MetricValueList, name: str) -> JSON:
    ref: JSON = {"kind": result.kind}
    if result.namespace:
        ref["namespace"] = result.namespace
    ref["name"] = name
    ref["apiVersion"] = result.api_version
    return ref


def render_custom(result: MetricValueList, version: str) -> JSON:
    """A `MetricValueList` of custom.metrics.k8s.io `version` (`v1beta1` or `v1beta2`)."""
    times, selector, items = _Times(), _selector(result.selector), []
    window_key = "window" if version == "v1beta1" else "windowSeconds"
    for value in result.items:
        item: JSON = {"describedObject": _described(result, value.name)}
        if version == "v1beta1":
            item["metricName"] = result.metric
        else:
            item["metric"] = {"name": result.metric, "selector": selector}
        item["timestamp"] = times(value.timestamp)
        if result.window_seconds:
            item[window_key] = result.window_seconds
        item["value"] = format_milli(value.milli)
        if version == "v1beta1":
            item["selector"] = selector
        items.append(item)
    return {"kind": "MetricValueList", "apiVersion": f"{CUSTOM_GROUP}/{version}", "metadata": {},
            "items": items}


_NAME_MARK = "\x00name-mark\x00"
_TIME_KEY, _VALUE_KEY = '"timestamp":"', '","value":"'


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _item_fragments(version: str, shape: MetricValueList) -> tuple[str, str, str, str] | None:
    """The JSON of one item of `shape` cut around its three per-item parts (name, timestamp,
    value); None when the shape cannot be cut safely (a namespace or metric that contains the
    marker), in which case the caller renders the slow way."""
    name_mark, time_mark = _dumps(_NAME_MARK), format_time(0.0)
    probe = MetricValue(name=_NAME_MARK, timestamp=0.0, milli=0)
    sample_item = _dumps(render_custom(replace(shape, items=(probe,)), version)["items"][0])
    if sample_item.count(name_mark) != 1 or sample_item.count(_TIME_KEY + time_mark + _VALUE_KEY + "0") != 1:
        return None
    before_name, after_name = sample_item.split(name_mark, 1)
    middle, after_time = after_name.split(_TIME_KEY + time_mark, 1)
    return before_name, middle + _TIME_KEY, _VALUE_KEY, after_time[len(_VALUE_KEY) + 1:]


class CustomMetricsEncoder:
    """`encode_custom` that keeps the cut item fragments per answer shape (bounded, LRU).

    A shape is everything items share (version, kind, namespace, metric, selector, window): the
    HPA asks the same few shapes every sync period, and cutting a probe item costs as much as
    encoding dozens of items. One per server (owned by the composition root), not per module.
    """

    def __init__(self, max_shapes: int = 256) -> None:
        self._fragments: LRUCache[tuple[object, ...], tuple[str, str, str, str] | None] = LRUCache(max_shapes)
        # RFC 3339 text of recent whole seconds: answers evaluated in the same second share it
        self._time_texts: LRUCache[int, str] = LRUCache(16)

    def encode(self, result: MetricValueList, version: str) -> bytes:
        if not result.items:
            return _dumps(render_custom(result, version)).encode()
        fragments = self._fragments.get_or_compute(
            _shape(result, version), lambda: _item_fragments(version, replace(result, items=())))
        if fragments is None:
            return _dumps(render_custom(result, version)).encode()
        return _join(result, version, fragments, self._time_text)

    def _time_text(self, timestamp: float) -> str:
        second = int(timestamp // 1)
        return self._time_texts.get_or_compute(second, lambda: format_time(second))

    def knows(self, result: MetricValueList, version: str) -> bool:
        """Whether the item fragments of `result`'s shape are kept."""
        return self._fragments.get(_shape(result, version)) is not None


def _shape(result: MetricValueList, version: str) -> tuple[object, ...]:
    """What every item of `result` shares: every field but `items` (a plain tuple, built in a
    fraction of what `dataclasses.replace` costs)."""
    return (version, result.kind, result.api_version, result.namespace, result.metric, result.selector,
            result.window_seconds)


def encode_custom(result: MetricValueList, version: str) -> bytes:
    """`json.dumps(render_custom(result, version))` (compact), byte for byte, built from the
    fragments every item shares: answers of thousands of objects cost one string join.
    (Object names and namespaces are JSON-escaped like everything else.)"""
    return CustomMetricsEncoder(max_shapes=1).encode(result, version)


def _join(result: MetricValueList, version: str, fragments: tuple[str, str, str, str],
          time_text: Callable[[float], str]) -> bytes:
    before_name, before_time, before_value, tail = fragments
    # An instant query stamps every sample with its evaluation time: usually one text to format.
    times = {timestamp: time_text(timestamp) for timestamp in set(map(_timestamp_of, result.items))}
    quote = encode_basestring_ascii
    # `format_milli` inline for its common case: a fraction of a unit prints as milli-units
    body = ",".join([
        f"{before_name}{quote(name)}{before_time}{times[timestamp]}{before_value}"
        f"{f'{milli}m' if milli % 1000 else format_milli(milli)}{tail}"
        for name, timestamp, milli in result.items])
    return (f'{{"kind":"MetricValueList","apiVersion":"{CUSTOM_GROUP}/{version}","metadata":{{}},'
            f'"items":[{body}]}}').encode()


def render_external(result: ExternalMetricValueList) -> JSON:
    items, times = [], _Times()
    for value in result.items:
        item: JSON = {"metricName": value.metric, "metricLabels": dict(value.labels),
                      "timestamp": times(value.timestamp)}
        if value.window_seconds:
            item["window"] = value.window_seconds
        item["value"] = format_milli(value.milli)
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
