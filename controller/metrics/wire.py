"""The metrics APIs' JSON bodies turned into the algorithm's observations.

Reads `PodMetricsList` (metrics.k8s.io), `MetricValueList` (custom.metrics.k8s.io v1beta1 and
v1beta2: both carry `describedObject`, `value`, `timestamp`, `windowSeconds`; only the metric's
name field differs and it is not needed here) and `ExternalMetricValueList`. Quantities become
milli-units as client-go's `MilliValue()` rounds them, RFC 3339 timestamps float epoch seconds,
Go durations (`1m0s`) seconds. Per-pod resource usage follows
`controller.algorithm.pods.resource_usage_by_pod`, so container filtering and the "no metrics
returned" rule stay in one place.

A body that does not have the documented shape raises `MalformedBody` naming the field path and
the list kind, e.g. `malformed MetricValueList: items[1].value: ...`.

Non-goals: HTTP, version choice, error wording of API failures (`rest`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.algorithm.errors import MetricError
from controller.algorithm.pods import ContainerUsage, PodMetric, PodMetricsItem, resource_usage_by_pod
from controller.algorithm.spec import ExternalSamples, ObjectSample, PodSamples
from kubecommon import gotime, kubetime
from kubecommon.quantity import Quantity, QuantityError, QuantityOutOfRange

__all__ = [
    "DEFAULT_WINDOW_SECONDS",
    "MalformedBody",
    "NoMetrics",
    "external_samples",
    "object_sample",
    "parse_duration",
    "parse_time",
    "pod_samples",
    "resource_samples",
]

DEFAULT_WINDOW_SECONDS = 60.0  # upstream's metricServerDefaultMetricWindow for custom metrics
_MAX_INT64 = 2**63 - 1
_SHOWN_CHARS = 64  # how much of a bad value an error message quotes


class MalformedBody(ValueError):
    """A 2xx body that is not the documented list; the message names the list kind and field."""


class NoMetrics(ValueError):
    """A well-formed answer that holds no usable value (upstream's "no metrics returned ...")."""


def _shown(value: Any) -> str:
    """`repr(value)`, cut short: the message becomes a condition and an event on every sync."""
    text = repr(value)
    if len(text) <= _SHOWN_CHARS:
        return text
    return f"{text[:_SHOWN_CHARS]}... ({len(text)} characters)"


def parse_time(text: Any) -> float:
    """RFC 3339 (`2026-01-02T03:04:05Z`, fractions and offsets allowed) to epoch seconds.

    The rules are Go's, from `kubecommon.kubetime`; the error quotes the value for the field path."""
    if not isinstance(text, str):
        raise ValueError(f"not an RFC 3339 time: {_shown(text)}")
    try:
        return kubetime.parse_time(text)
    except kubetime.TimeError:
        zoned = text + "Z"
    try:
        kubetime.parse_time(zoned)
    except kubetime.TimeError:
        raise ValueError(f"not an RFC 3339 time: {_shown(text)}") from None
    raise ValueError(f"RFC 3339 time without a zone: {_shown(text)}")


def parse_duration(text: Any) -> float:
    """Go's `time.Duration` string (`1m0s`, `30s`, `1.5h`, `500ms`, `0`) to seconds (`kubecommon.gotime`)."""
    try:
        return gotime.parse_duration(text)
    except gotime.DurationError:
        raise ValueError(f"not a duration: {_shown(text)}") from None


def _milli(value: Any) -> int:
    """The quantity's `MilliValue()`; a value beyond int64 (where upstream's would wrap) is
    refused (`kubecommon.quantity`)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"not a quantity: {_shown(value)}")
    try:
        return Quantity.parse(str(value)).milli_value()
    except QuantityOutOfRange:
        raise ValueError(f"out of range: {_shown(value)}") from None
    except QuantityError as err:  # its text quotes the whole value
        raise ValueError(str(err).replace(repr(str(value)), _shown(str(value)))) from None


def _items(doc: Mapping[str, Any], list_kind: str) -> Sequence[Any]:
    kind = doc.get("kind")
    if kind not in (None, "", list_kind):  # another API's list (or a Status) is never read as this one
        raise MalformedBody(f"malformed {list_kind}: kind: expected {list_kind}, got {_shown(kind)}")
    items = doc.get("items")
    if items is None and doc.get("kind") == list_kind:
        return ()  # an empty list may be encoded with `items` omitted or null
    if not isinstance(items, list):
        raise MalformedBody(f"malformed {list_kind}: items: expected a list, got {type(items).__name__}")
    return items


def _field(obj: Any, at: str, keys: str, list_kind: str) -> Any:
    """`obj[a][b]` for keys "a.b"; MalformedBody naming `<at>.a.b` when absent."""
    value = obj
    for key in keys.split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise MalformedBody(f"malformed {list_kind}: {at}.{keys}: missing")
        value = value[key]
    return value


def _convert(convert: Any, obj: Any, at: str, keys: str, list_kind: str) -> Any:
    try:
        return convert(_field(obj, at, keys, list_kind))
    except ValueError as err:
        if isinstance(err, MalformedBody):
            raise
        raise MalformedBody(f"malformed {list_kind}: {at}.{keys}: {err}") from None


def _pod_metrics_item(item: Any, at: str, resource: str) -> PodMetricsItem:
    kind = "PodMetricsList"
    name = _convert(_nonempty_str, item, at, "metadata.name", kind)
    timestamp = _convert(parse_time, item, at, "timestamp", kind)
    window = _convert(parse_duration, item, at, "window", kind)
    containers = _field(item, at, "containers", kind)
    if containers is None:
        containers = []
    if not isinstance(containers, list):
        raise MalformedBody(f"malformed {kind}: {at}.containers: expected a list")
    usages = []
    for j, container in enumerate(containers):
        c_at = f"{at}.containers[{j}]"
        c_name = _convert(_nonempty_str, container, c_at, "name", kind)
        usage = _field(container, c_at, "usage", kind)
        if not isinstance(usage, Mapping):
            raise MalformedBody(f"malformed {kind}: {c_at}.usage: expected an object")
        # Only the asked-for resource is parsed: a bad memory value must not fail a cpu metric.
        wanted = {}
        if resource in usage:  # names like nvidia.com/gpu hold dots: no key path walk here
            try:
                wanted[resource] = _milli(usage[resource])
            except ValueError as err:
                raise MalformedBody(f"malformed {kind}: {c_at}.usage.{resource}: {err}") from None
        usages.append(ContainerUsage(name=c_name, usage=wanted))
    return PodMetricsItem(pod=name, timestamp=timestamp, window=window, containers=tuple(usages))


def _nonempty_str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {_shown(value)}")
    return value


def resource_samples(doc: Mapping[str, Any], *, resource: str, container: str = "") -> PodSamples:
    """A `PodMetricsList` as per-pod usage of `resource` (summed, or the named container's)."""
    items = [_pod_metrics_item(item, f"items[{i}]", resource)
             for i, item in enumerate(_items(doc, "PodMetricsList"))]
    try:
        return PodSamples(values=resource_usage_by_pod(items, resource=resource, container=container))
    except MetricError as err:
        raise NoMetrics(str(err)) from None


def _window(item: Any, at: str) -> float:
    if not isinstance(item, Mapping) or item.get("windowSeconds") is None:
        return DEFAULT_WINDOW_SECONDS
    seconds = item["windowSeconds"]
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise MalformedBody(f"malformed MetricValueList: {at}.windowSeconds: expected an integer, "
                            f"got {_shown(seconds)}")
    if not -_MAX_INT64 - 1 <= seconds <= _MAX_INT64:
        raise MalformedBody(f"malformed MetricValueList: {at}.windowSeconds: expected an int64, got a larger integer")
    return float(seconds)


def pod_samples(doc: Mapping[str, Any]) -> PodSamples:
    """A `MetricValueList` for pods (`pods/*/<metric>`) keyed by the described pod's name."""
    kind = "MetricValueList"
    items = _items(doc, kind)
    if not items:
        raise NoMetrics("no metrics returned from custom metrics API")
    values: dict[str, PodMetric] = {}
    for i, item in enumerate(items):
        at = f"items[{i}]"
        name = _convert(_nonempty_str, item, at, "describedObject.name", kind)
        values[name] = PodMetric(value=_convert(_milli, item, at, "value", kind),
                                 timestamp=_convert(parse_time, item, at, "timestamp", kind),
                                 window=_window(item, at))
    return PodSamples(values=values)


def object_sample(doc: Mapping[str, Any]) -> ObjectSample:
    """A `MetricValueList` for one object; anything but exactly one item is an error (upstream)."""
    kind = "MetricValueList"
    items = _items(doc, kind)
    if len(items) != 1:
        raise NoMetrics(f"the custom metrics API server returned {len(items)} results when we asked "
                        "for exactly one")
    return ObjectSample(value=_convert(_milli, items[0], "items[0]", "value", kind),
                        timestamp=_convert(parse_time, items[0], "items[0]", "timestamp", kind))


def external_samples(doc: Mapping[str, Any]) -> ExternalSamples:
    """An `ExternalMetricValueList`: every value, and the first item's timestamp (upstream)."""
    kind = "ExternalMetricValueList"
    items = _items(doc, kind)
    if not items:
        raise NoMetrics("no metrics returned from external metrics API")
    values = tuple(_convert(_milli, item, f"items[{i}]", "value", kind) for i, item in enumerate(items))
    return ExternalSamples(values=values, timestamp=_convert(parse_time, items[0], "items[0]", "timestamp", kind))
