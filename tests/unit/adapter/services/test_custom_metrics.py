"""CustomMetricsService: registry lookup, object selection from caches, values and upstream errors."""

from __future__ import annotations

import pytest

from kubecommon.kube import errors as kube_errors
from adapter.prometheus import errors as prom_errors
from adapter.prometheus.fake import FakePrometheus
from adapter.rules.resources import GroupResource
from adapter.services import errors
from adapter.services.custom_metrics import CustomMetricRequest, CustomMetricsService
from kubecommon import status
from kubecommon.quantity import format_milli
from kubecommon.selectors import Selector, parse_selector

from .conftest import T, caches, node, pod, registry, sample

PODS = GroupResource(group="", resource="pods")
NODES = GroupResource(group="", resource="nodes")
DEPLOYMENTS = GroupResource(group="apps", resource="deployments")
METRIC = "http_requests_per_second"
Q_ONE = 'sum(rate(http_requests_total{namespace="shop",pod="web-0"}[1m])) by (pod)'
Q_TWO = 'sum(rate(http_requests_total{namespace="shop",pod=~"web-0|web-1"}[1m])) by (pod)'
Q_THREE = 'sum(rate(http_requests_total{namespace="shop",pod=~"web-0|web-1|web-2"}[1m])) by (pod)'
Q_NAMESPACE = 'sum(rate(http_requests_total{namespace="shop"}[1m])) by (pod)'


def _service(prom: FakePrometheus, objects=None, *, large: int = 100) -> CustomMetricsService:
    snapshot = registry()
    return CustomMetricsService(registry=lambda: snapshot, prometheus=prom,
                                objects=objects or caches(), large_selection=large)


def _request(name: str | None, *, resource: GroupResource = PODS, namespace: str | None = "shop",
             metric: str = METRIC, labels: str = "", metric_labels: str = "") -> CustomMetricRequest:
    return CustomMetricRequest(resource=resource, metric=metric, namespace=namespace, name=name,
                               label_selector=parse_selector(labels) if labels else Selector.empty(),
                               metric_selector=parse_selector(metric_labels) if metric_labels
                               else Selector.empty())


async def test_single_object_value_with_described_object_and_sample_time() -> None:
    prom = FakePrometheus()
    prom.set_query(Q_ONE, [sample(1.5, T + 0.7, pod="web-0")])
    objects = caches()
    result = await _service(prom, objects).get(_request("web-0"))
    [item] = result.items
    assert (result.kind, result.api_version, result.namespace, item.name) == ("Pod", "/v1", "shop", "web-0")
    assert (result.metric, format_milli(item.milli), item.timestamp) == (METRIC, "1500m", T + 0.7)
    assert objects.requested == [], "a single-object request needs no object cache"


@pytest.mark.parametrize(("metric_labels", "message"), [
    pytest.param("", "the server could not find the metric http_requests_per_second for pods web-0",
                  id="no sample"),
    pytest.param("method=GET", "the server could not find the metric http_requests_per_second for pods "
                 "web-0 with selector method=GET", id="no sample with metric selector"),
])
async def test_single_object_without_sample_is_404(metric_labels: str, message: str) -> None:
    with pytest.raises(errors.MetricNotFound) as caught:
        await _service(FakePrometheus()).get(_request("web-0", metric_labels=metric_labels))
    assert caught.value.code == 404 and caught.value.reason == "NotFound"
    assert caught.value.message == message
    assert "details" not in caught.value.to_dict()


@pytest.mark.parametrize("request_", [
    pytest.param(_request("web-0", metric="nope"), id="unknown metric"),
    pytest.param(_request("web-0", namespace=None), id="namespaced metric asked at cluster scope"),
    pytest.param(_request(None, metric="nope"), id="unknown metric for *"),
])
async def test_unknown_metric_is_404_for_the_resource(request_: CustomMetricRequest) -> None:
    with pytest.raises(errors.MetricNotFound, match=r"^the server could not find the metric \w+ for pods$"):
        await _service(FakePrometheus()).get(request_)


async def test_selection_uses_cached_objects_in_name_order_and_skips_objects_without_data() -> None:
    prom = FakePrometheus()
    prom.set_query(Q_THREE, [sample(2, pod="web-1"), sample(1, pod="web-0")])
    # web-2 has no sample → left out; db-0 not selected; web-9 in another namespace
    objects = caches(pod("web-1", app="web"), pod("web-0", app="web"), pod("web-2", app="web"),
                     pod("db-0", app="db"), pod("web-9", namespace="other", app="web"))
    result = await _service(prom, objects).get(_request(None, labels="app=web"))
    assert [(i.name, format_milli(i.milli)) for i in result.items] == [("web-0", "1"), ("web-1", "2")]
    assert [q for q, _ in prom.query_calls] == [Q_THREE]


async def test_selection_of_no_objects_is_404_like_prometheus_adapter() -> None:
    with pytest.raises(errors.MetricNotFound, match="for pods$"):
        await _service(FakePrometheus(), caches(pod("web-0", app="web"))).get(_request(None, labels="app=nothing"))


async def test_large_selection_queries_the_namespace_and_filters_to_an_identical_answer() -> None:
    prom = FakePrometheus()
    selected = [sample(1, pod="web-0"), sample(2, pod="web-1")]
    prom.set_query(Q_TWO, selected)
    # The namespace-wide answer also has pods the selector did not pick (and one unknown pod).
    prom.set_query(Q_NAMESPACE, [*selected, sample(7, pod="db-0"), sample(9, pod="gone-0")])
    objects = caches(pod("web-0", app="web"), pod("web-1", app="web"), pod("db-0", app="db"))
    small = await _service(prom, objects, large=100).get(_request(None, labels="app=web"))
    large = await _service(prom, objects, large=1).get(_request(None, labels="app=web"))
    assert large == small
    assert [q for q, _ in prom.query_calls] == [Q_TWO, Q_NAMESPACE]


async def test_group_qualified_resource_describes_its_kind() -> None:
    prom = FakePrometheus()
    prom.set_query('sum(rate(http_requests_total{namespace="shop",deployment="web"}[1m])) by (deployment)',
                   [sample(3, deployment="web")])
    result = await _service(prom).get(_request("web", resource=DEPLOYMENTS))
    assert (result.kind, result.api_version, result.namespace, [i.name for i in result.items]) == (
        "Deployment", "apps/v1", "shop", ["web"])


async def test_namespace_object_metric() -> None:
    prom = FakePrometheus()
    prom.set_query('sum(rate(http_requests_total{namespace="shop"}[1m])) by (namespace)',
                   [sample(4, namespace="shop")])
    request = CustomMetricRequest.for_namespace("shop", METRIC, Selector.empty())
    result = await _service(prom).get(request)
    [item] = result.items
    assert (result.kind, result.api_version, result.namespace, item.name) == ("Namespace", "/v1", None, "shop")
    assert format_milli(item.milli) == "4"


async def test_cluster_scoped_selection_over_nodes() -> None:
    prom = FakePrometheus()
    prom.set_query('max(node_temperature_celsius{node=~"n1|n2"}) by (node)',
                   [sample(60.5, node="n1"), sample(70, node="n2")])
    objects = caches(nodes=[node("n1"), node("n2"), node("n3", role="gpu")])
    result = await _service(prom, objects).get(
        _request(None, resource=NODES, namespace=None, metric="node_temperature_celsius",
                 labels="!role"))
    assert (result.kind, result.namespace) == ("Node", None)
    assert [(i.name, format_milli(i.milli)) for i in result.items] == [("n1", "60500m"), ("n2", "70")]


@pytest.mark.parametrize(("value", "why"), [
    pytest.param(float("nan"), "NaN", id="NaN"),
    pytest.param(float("inf"), "infinite", id="+Inf"),
    pytest.param(-float("inf"), "infinite", id="-Inf"),
])
async def test_an_unusable_value_for_one_object_is_a_404_saying_why(value: float, why: str) -> None:
    prom = FakePrometheus()
    prom.set_query(Q_ONE, [sample(value, pod="web-0")])
    with pytest.raises(errors.MetricNotFound) as caught:
        await _service(prom).get(_request("web-0"))
    assert caught.value.message == ("the server could not find the metric http_requests_per_second for pods "
                                    f"web-0: its value in Prometheus is {why}")


@pytest.mark.parametrize(("value", "text"), [
    pytest.param(2e16, "20e15", id="2^63 milli-units and more"),
    pytest.param(1e300, "1e300", id="far beyond"),
    pytest.param(-1.5e19, "-15e18", id="negative"),
    pytest.param(9.2e15, "9200T", id="just inside int64 milli-units"),
])
async def test_a_value_beyond_int64_milli_units_is_served_exactly_in_exponent_form(value: float, text: str) -> None:
    prom = FakePrometheus()
    prom.set_query(Q_ONE, [sample(value, pod="web-0")])
    [item] = (await _service(prom).get(_request("web-0"))).items
    assert format_milli(item.milli) == text


@pytest.mark.parametrize(("failure", "expected", "code"), [
    pytest.param(prom_errors.PrometheusUnreachable("connection refused"), errors.MetricsUnavailable, 503,
                 id="unreachable is 503"),
    pytest.param(prom_errors.PrometheusTimeout("deadline"), errors.MetricsUnavailable, 503,
                 id="timeout is 503"),
    pytest.param(prom_errors.PrometheusHTTPError("overloaded", status=503), errors.MetricsUnavailable, 503,
                 id="prometheus 5xx is 503"),
    pytest.param(prom_errors.PrometheusBadQuery("parse error"), errors.UnableToFetchMetrics, 500,
                 id="rejected query is 500"),
])
async def test_backend_failures_become_status_errors_without_details(
        failure: Exception, expected: type[status.StatusError], code: int) -> None:
    prom = FakePrometheus()
    prom.set_query(Q_ONE, failure)
    with pytest.raises(expected) as caught:
        await _service(prom).get(_request("web-0"))
    assert caught.value.code == code
    assert "parse error" not in caught.value.message and "connection refused" not in caught.value.message


async def test_metric_selector_operator_prometheus_cannot_express_is_400() -> None:
    with pytest.raises(status.BadRequest):
        await _service(FakePrometheus()).get(_request("web-0", metric_labels="code>200"))


async def test_repeated_request_reuses_the_rendered_query_but_asks_prometheus_again() -> None:
    prom = FakePrometheus()
    prom.set_query(Q_ONE, [sample(1, pod="web-0")])
    service = _service(prom)
    first = await service.get(_request("web-0"))
    prom.set_query(Q_ONE, [sample(2, pod="web-0")])
    second = await service.get(_request("web-0"))
    assert [format_milli(r.items[0].milli) for r in (first, second)] == ["1", "2"], "values are never cached"
    assert [q for q, _ in prom.query_calls] == [Q_ONE, Q_ONE]
    assert len(service._queries) == 1, "the second request reused the first one's rendered query"


class _BrokenCaches:
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def reader(self, resource):  # type: ignore[no-untyped-def]
        raise self.error


@pytest.mark.parametrize(("error", "code", "message"), [
    pytest.param(kube_errors.CacheNotSynced("no list within 10s"), 503,
                 "unable to list matching resources: the Kubernetes API is unavailable", id="unreachable API"),
    pytest.param(kube_errors.KubeAPIError(status.Forbidden("pods is forbidden"), method="GET", path="/api/v1/pods"),
                 500, "Internal error occurred: unable to list matching resources", id="RBAC denies the list"),
    pytest.param(kube_errors.UnknownResource("", "pods"), 500, "Internal error occurred: unable to list matching "
                 "resources", id="a resource the cluster no longer serves: upstream's 500"),
])
async def test_object_cache_failures_for_selections(error: Exception, code: int, message: str) -> None:
    with pytest.raises(status.StatusError) as caught:
        await _service(FakePrometheus(), _BrokenCaches(error)).get(_request(None))
    assert (caught.value.code, caught.value.message) == (code, message)
    assert "forbidden" not in caught.value.message and "10s" not in caught.value.message
