"""ExternalMetricsService: namespace matcher unless `namespaced: false`, one item per series."""

from __future__ import annotations

import pytest

from adapter.prometheus.fake import FakePrometheus
from adapter.services import errors
from adapter.services.external_metrics import ExternalMetricRequest, ExternalMetricsService
from kubecommon.quantity import format_milli
from kubecommon.selectors import Selector, parse_selector

from .conftest import T, registry, sample


def _service(prom: FakePrometheus) -> ExternalMetricsService:
    snapshot = registry()
    return ExternalMetricsService(registry=lambda: snapshot, prometheus=prom)


def _request(metric: str, selector: str = "", namespace: str = "shop") -> ExternalMetricRequest:
    return ExternalMetricRequest(namespace=namespace, metric=metric,
                                 metric_selector=parse_selector(selector) if selector else Selector.empty())


@pytest.mark.parametrize(("request_", "promql"), [
    pytest.param(_request("queue_messages_ready"),
                 'sum(queue_messages_ready{namespace="shop"}) by (queue)', id="namespaced rule"),
    pytest.param(_request("queue_messages_ready", "queue=orders"),
                 'sum(queue_messages_ready{queue="orders",namespace="shop"}) by (queue)',
                 id="selector matchers before the namespace"),
    pytest.param(_request("global_backlog", "queue in (a,b)", namespace="anywhere"),
                 'sum(global_backlog{queue=~"a|b"}) by (queue)', id="namespaced false ignores the namespace"),
])
async def test_query_sent_for_request(request_: ExternalMetricRequest, promql: str) -> None:
    prom = FakePrometheus()
    await _service(prom).get(request_)
    assert [q for q, _ in prom.query_calls] == [promql]


async def test_one_item_per_sample_with_its_labels_and_timestamp() -> None:
    prom = FakePrometheus()
    prom.set_query('sum(queue_messages_ready{namespace="shop"}) by (queue)',
                   [sample(42, T + 1, queue="orders"), sample(7.5, T + 2, queue="emails")])
    result = await _service(prom).get(_request("queue_messages_ready"))
    assert [(i.metric, dict(i.labels), i.timestamp, format_milli(i.milli)) for i in result.items] == [
        ("queue_messages_ready", {"queue": "orders"}, T + 1, "42"),
        ("queue_messages_ready", {"queue": "emails"}, T + 2, "7500m"),
    ]


async def test_no_series_is_an_empty_list_not_an_error() -> None:
    assert (await _service(FakePrometheus()).get(_request("queue_messages_ready"))).items == ()


async def test_unusable_values_are_left_out_and_counted_instead_of_go_int64_garbage() -> None:
    prom = FakePrometheus()
    prom.set_query('sum(queue_messages_ready{namespace="shop"}) by (queue)', [
        sample(float("nan"), queue="a"), sample(float("inf"), queue="b"), sample(2e16, queue="c"),
        sample(5, queue="d")])
    drops: list[tuple[str, str]] = []
    service = ExternalMetricsService(registry=registry, prometheus=prom, dropped=lambda *d: drops.append(d))
    items = (await service.get(_request("queue_messages_ready"))).items
    # beyond int64 milli-units: served exactly in exponent form, never clamped or wrapped
    assert [(item.labels, format_milli(item.milli)) for item in items] == [({"queue": "c"}, "20e15"),
                                                                          ({"queue": "d"}, "5")]
    assert drops == [("external", "nan"), ("external", "inf")]


async def test_unknown_metric_is_404_naming_namespaces() -> None:
    with pytest.raises(errors.MetricNotFound) as caught:
        await _service(FakePrometheus()).get(_request("nope", namespace="default"))
    assert caught.value.message == "the server could not find the metric nope for namespaces"
