"""Wire format of the metrics APIs: the JSON documents the HPA, kubectl and client-go decode."""

from __future__ import annotations

import json

import pytest

from adapter.server import render_metrics
from adapter.services.results import (
    ContainerMetrics,
    ExternalMetricValue,
    ExternalMetricValueList,
    MetricValue,
    MetricValueList,
    NodeMetrics,
    NodeMetricsList,
    PodMetrics,
    PodMetricsList,
)
from kubecommon.quantity import Quantity, milli_from_float
from kubecommon.selectors import Selector, parse_selector

# 2026-08-20T10:15:30Z
T = 1787220930.0


def _pod_value(selector: Selector = Selector.empty(), window: int | None = None) -> MetricValueList:
    return MetricValueList(kind="Pod", api_version="/v1", namespace="shop", metric="http_requests",
                           selector=selector, window_seconds=window,
                           items=(MetricValue(name="web-0", timestamp=T + 0.9, milli=milli_from_float(1.5)),))


def test_custom_v1beta1_item_has_metric_name_top_level_selector_null() -> None:
    assert render_metrics.render_custom(_pod_value(), "v1beta1") == {
        "kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta1", "metadata": {},
        "items": [{"describedObject": {"kind": "Pod", "namespace": "shop", "name": "web-0",
                                       "apiVersion": "/v1"},
                   "metricName": "http_requests", "timestamp": "2026-08-20T10:15:30Z",
                   "value": "1500m", "selector": None}]}


def test_custom_v1beta2_item_nests_metric_name_and_selector() -> None:
    doc = render_metrics.render_custom(_pod_value(parse_selector("verb=GET")), "v1beta2")
    assert doc["apiVersion"] == "custom.metrics.k8s.io/v1beta2"
    assert doc["items"][0] == {
        "describedObject": {"kind": "Pod", "namespace": "shop", "name": "web-0", "apiVersion": "/v1"},
        "metric": {"name": "http_requests", "selector": {"matchLabels": {"verb": "GET"}}},
        "timestamp": "2026-08-20T10:15:30Z", "value": "1500m"}


@pytest.mark.parametrize(("version", "key"), [
    pytest.param("v1beta1", "window", id="v1beta1 says window"),
    pytest.param("v1beta2", "windowSeconds", id="v1beta2 says windowSeconds"),
])
def test_custom_window_key_depends_on_version(version: str, key: str) -> None:
    item = render_metrics.render_custom(_pod_value(window=60), version)["items"][0]
    assert item[key] == 60


def test_namespace_object_reference_has_no_namespace() -> None:
    value = MetricValueList(kind="Namespace", api_version="/v1", namespace=None, metric="queue_depth",
                            items=(MetricValue(name="prod", timestamp=T, milli=milli_from_float(42)),))
    doc = render_metrics.render_custom(value, "v1beta1")
    assert doc["items"][0]["describedObject"] == {"kind": "Namespace", "name": "prod", "apiVersion": "/v1"}


def _many(names: list[str], **fields: object) -> MetricValueList:
    base: dict[str, object] = {"kind": "Pod", "api_version": "/v1", "namespace": "shop", "metric": "rps"}
    base.update(fields)
    return MetricValueList(items=tuple(MetricValue(name=n, timestamp=T + i * 0.6, milli=milli_from_float(i / 3))
                                       for i, n in enumerate(names)), **base)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
@pytest.mark.parametrize("result", [
    pytest.param(_many(["web-0", "web-1", "web-2"]), id="pods"),
    pytest.param(_many([]), id="empty"),
    pytest.param(_many(["n1"], namespace=None, kind="Node"), id="cluster-scoped"),
    pytest.param(_many(["a", "b"], selector=parse_selector("verb in (GET,PUT),!x")), id="metric selector"),
    pytest.param(_many(["a"], window_seconds=30), id="window"),
    pytest.param(_many(['we"ird\\', "ünï\u2028", "x\x00name-mark\x00"]), id="names needing escapes"),
    pytest.param(_many(["a"], namespace="\x00name-mark\x00"), id="namespace that looks like the marker"),
    pytest.param(_many(["a"], metric="1970-01-01T00:00:00Z"), id="metric that looks like the time marker"),
])
def test_fast_encoding_is_byte_identical_to_the_rendered_document(result: MetricValueList, version: str) -> None:
    expected = json.dumps(render_metrics.render_custom(result, version), separators=(",", ":")).encode()
    assert render_metrics.encode_custom(result, version) == expected


def _compact(result: MetricValueList, version: str) -> bytes:
    return json.dumps(render_metrics.render_custom(result, version), separators=(",", ":")).encode()


_BASE = {"kind": "Pod", "api_version": "/v1", "namespace": "shop", "metric": "rps",
         "selector": Selector.empty(), "window_seconds": None}
# Each answer differs from the base in ONE field every item shares (what encode_custom caches per
# answer shape): a cache that ignored that field would serve the base's fragments for it.
_ONE_FIELD_CHANGED = [
    pytest.param({}, id="base"),
    pytest.param({"namespace": None}, id="no namespace"),
    pytest.param({"namespace": "other"}, id="other namespace"),
    pytest.param({"namespace": 'ns"\\ü'}, id="namespace needing escapes"),
    pytest.param({"metric": "http_requests"}, id="other metric"),
    pytest.param({"metric": 'm"\\\u00e9\u2028'}, id="metric needing escapes"),
    pytest.param({"kind": "Deployment"}, id="other kind"),
    pytest.param({"api_version": "apps/v1"}, id="other apiVersion"),
    pytest.param({"selector": parse_selector("verb=GET")}, id="metric selector"),
    pytest.param({"selector": parse_selector("verb=PUT")}, id="other metric selector"),
    pytest.param({"selector": parse_selector("verb in (GET,PUT),!x")}, id="set-based metric selector"),
    pytest.param({"window_seconds": 30}, id="window 30"),
    pytest.param({"window_seconds": 60}, id="window 60"),
]


def test_fast_encoding_never_serves_one_answer_shape_for_another() -> None:
    """Answers encoded in sequence (as one process serves them) each stay byte-identical to the
    rendered document: the per-shape cache is keyed on every shared field and on the version."""
    names = ["web-0", "web-1"]
    encoder = render_metrics.CustomMetricsEncoder()
    for version in ("v1beta1", "v1beta2", "v1beta1"):
        for case in _ONE_FIELD_CHANGED:
            changes = case.values[0]
            for result in (_many(names, **{**_BASE, **changes}), _many(names, **_BASE)):
                got = encoder.encode(result, version)
                assert got == _compact(result, version), (version, case.id)
                json.loads(got)  # and a valid document


@pytest.mark.parametrize("changes", _ONE_FIELD_CHANGED)
def test_fast_encoding_after_the_other_version_of_the_same_shape(changes: dict[str, object]) -> None:
    result = _many(["web-0"], **{**_BASE, **changes})
    encoder = render_metrics.CustomMetricsEncoder()
    v1, v2 = (encoder.encode(result, v) for v in ("v1beta1", "v1beta2"))
    assert (v1, v2) == (_compact(result, "v1beta1"), _compact(result, "v1beta2"))
    assert json.loads(v1)["apiVersion"] == "custom.metrics.k8s.io/v1beta1"
    assert json.loads(v2)["apiVersion"] == "custom.metrics.k8s.io/v1beta2"


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_fast_encoding_formats_each_items_own_timestamp(version: str) -> None:
    stamps = [T, T + 0.5, T + 1.0, T - 1.0, T + 3600.25, T, T + 1.999]
    names = ['q"uote', "back\\slash", "ünïcødé", "emoji-\U0001f600", "tab\tnl\n", "plain", "x\u2028y"]
    result = MetricValueList(kind="Pod", api_version="/v1", namespace="shop", metric="rps",
                             items=tuple(MetricValue(name=n, timestamp=t, milli=i * 250)
                                         for i, (n, t) in enumerate(zip(names, stamps, strict=True))))
    encoded = render_metrics.encode_custom(result, version)
    assert encoded == _compact(result, version)
    items = json.loads(encoded)["items"]
    assert [i["describedObject"]["name"] for i in items] == names
    assert [i["timestamp"] for i in items] == [
        "2026-08-20T10:15:30Z", "2026-08-20T10:15:30Z", "2026-08-20T10:15:31Z", "2026-08-20T10:15:29Z",
        "2026-08-20T11:15:30Z", "2026-08-20T10:15:30Z", "2026-08-20T10:15:31Z"]
    assert [i["value"] for i in items] == ["0", "250m", "500m", "750m", "1", "1250m", "1500m"]


def test_empty_lists_have_metadata_and_empty_items() -> None:
    assert render_metrics.render_custom(_many([]), "v1beta2")["items"] == []
    assert render_metrics.render_external(ExternalMetricValueList()) == {
        "kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1",
        "metadata": {}, "items": []}
    assert render_metrics.render_pod_metrics_list(PodMetricsList())["items"] == []


def test_external_item_has_metric_labels_even_when_empty() -> None:
    values = ExternalMetricValueList(items=(
        ExternalMetricValue(metric="queue_messages_ready", labels={"queue": "worker_tasks"},
                            timestamp=T, milli=milli_from_float(42.0)),
        ExternalMetricValue(metric="queue_messages_ready", labels={}, timestamp=T,
                            milli=milli_from_float(0.25)),
    ))
    assert render_metrics.render_external(values)["items"] == [
        {"metricName": "queue_messages_ready", "metricLabels": {"queue": "worker_tasks"},
         "timestamp": "2026-08-20T10:15:30Z", "value": "42"},
        {"metricName": "queue_messages_ready", "metricLabels": {},
         "timestamp": "2026-08-20T10:15:30Z", "value": "250m"},
    ]


def test_pod_metrics_shape_with_duration_window_and_quantities() -> None:
    pod = PodMetrics(name="web-0", namespace="shop", labels={"app": "web"}, created=T + 1,
                     timestamp=T - 10, window_seconds=15.012,
                     containers=(ContainerMetrics(name="app", usage={
                         "cpu": Quantity.parse("4123456n"), "memory": Quantity.parse("14160Ki")}),))
    assert render_metrics.render_pod_metrics(pod) == {
        "kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {"name": "web-0", "namespace": "shop", "creationTimestamp": "2026-08-20T10:15:31Z",
                     "labels": {"app": "web"}},
        "timestamp": "2026-08-20T10:15:20Z", "window": "15.012s",
        "containers": [{"name": "app", "usage": {"cpu": "4123456n", "memory": "14160Ki"}}]}
    listed = render_metrics.render_pod_metrics_list(PodMetricsList(items=(pod,)))
    assert listed["kind"] == "PodMetricsList" and listed["metadata"] == {}
    assert "kind" not in listed["items"][0], "list items carry no kind/apiVersion"


def test_node_metrics_shape() -> None:
    node = NodeMetrics(name="kind-worker", labels={}, created=T, timestamp=T, window_seconds=300,
                       usage={"cpu": Quantity.parse("183207474n"), "memory": Quantity.parse("1123456Ki")})
    assert render_metrics.render_node_metrics(node) == {
        "kind": "NodeMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {"name": "kind-worker", "creationTimestamp": "2026-08-20T10:15:30Z"},
        "timestamp": "2026-08-20T10:15:30Z", "window": "5m0s",
        "usage": {"cpu": "183207474n", "memory": "1123456Ki"}}
    assert render_metrics.render_node_metrics_list(NodeMetricsList(items=(node,)))["kind"] == "NodeMetricsList"


def test_encoder_keeps_a_bounded_number_of_shapes_and_stays_exact_past_the_bound() -> None:
    encoder = render_metrics.CustomMetricsEncoder(max_shapes=3)
    results = [_many(["web-0", "web-1"], **{**_BASE, "metric": f"m{i}"}) for i in range(7)]
    for _ in range(2):
        for result in results:
            assert encoder.encode(result, "v1beta2") == _compact(result, "v1beta2")
    assert len(encoder._fragments) == 3


def test_encoder_keeps_the_shapes_in_use_when_new_ones_push_past_the_bound() -> None:
    encoder = render_metrics.CustomMetricsEncoder(max_shapes=2)
    hot = _many(["web-0"], **{**_BASE, "metric": "hot"})
    encoder.encode(hot, "v1beta1")
    for i in range(5):  # the hot shape is asked between every new one, as an HPA asks every sync
        encoder.encode(_many(["web-0"], **{**_BASE, "metric": f"cold{i}"}), "v1beta1")
        encoder.encode(hot, "v1beta1")
    assert encoder.knows(hot, "v1beta1")
