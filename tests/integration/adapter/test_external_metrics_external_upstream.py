"""external.metrics.k8s.io end to end, held to prometheus-adapter (`pkg/external-provider`,
docs/config.md `externalRules`) and to how upstream's HPA reads it: `kubectl get --raw` through the
stand-in's aggregation layer to the adapter, which queries a real Prometheus; then the controller's
metrics client on the same path.

What a user relies on:
* the HPA's metric selector becomes PromQL matchers for every operator (`=`, `!=`, `in`, `notin`,
  exists, `!`), values quoted and, inside `in`/`notin`, regex-escaped, so `queue in (orders.eu)`
  is that queue only (upstream pastes the value as a raw regex and also matches `ordersXeu`);
* `metricLabels` are the labels of each returned series; the request namespace is a matcher
  unless the rule says `resources.namespaced: false`, then any namespace answers the same;
* a selector matching nothing, or an empty vector, is `items: []` with 200, as upstream; an unknown
  metric is 404 NotFound; a selector PromQL cannot express is refused (400);
* the controller sums every returned value and treats an empty list as upstream's
  "no metrics returned from external metrics API", a failure it never scales on.

Its own stack (Prometheus, the sample exporter, the stand-in, the adapter with the stack's rules).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from controller.algorithm.spec import ExternalSamples, FetchFailure, SourceType
from controller.metrics.rest import AggregatedMetricsSource
from controller.metrics.source import MetricQuery
from hack.stack import metrics_stack
from hack.stack.controller_stack import wait_until
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.sample_exporter import SampleExporter
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config
from kubecommon.kube.resources import ResourceResolver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]  # incl. stack start

#: queue_messages_ready per (namespace, queue): `ordersXeu` would match an unescaped `orders.eu`
QUEUES = {("shop", "orders.eu"): 5.0, ("shop", "ordersXeu"): 7.0, ("shop", "emails"): 3.0,
          ("pay", "payments"): 11.0}
GROUP = "/apis/external.metrics.k8s.io/v1beta1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    standin: metrics_stack.StandIn

    def raw(self, namespace: str, metric: str, selector: str = "") -> tuple[int, Any, str]:
        path = f"{GROUP}/namespaces/{namespace}/{metric}"
        if selector:
            path += "?labelSelector=" + quote(selector, safe="")
        result = self.standin.kubectl("get", "--raw", path, check=False)
        body = json.loads(result.stdout) if result.returncode == 0 else None
        return result.returncode, body, result.stderr.strip()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work: Path = tmp_path_factory.mktemp("external-upstream")
    exporter = SampleExporter().start()
    for (namespace, queue), value in QUEUES.items():
        exporter.set_gauge("queue_messages_ready", {"namespace": namespace, "queue": queue}, value)
    prometheus = LocalPrometheus([exporter.address])
    try:
        prometheus.start()
        prometheus.wait_for('queue_messages_ready{queue="payments"}')
        with metrics_stack.aggregated_adapter(work, prometheus_url=prometheus.url) as (standin, _):
            built = Cluster(standin=standin)
            wait_until(lambda: len((built.raw("shop", "queue_messages_ready")[1] or {}).get("items") or []) == 3,
                       timeout=30, what="external metric queue_messages_ready served")
            yield built
    finally:
        prometheus.close()
        exporter.stop()


def _queues(body: Any) -> dict[str, str]:
    assert body["kind"] == "ExternalMetricValueList" and body["apiVersion"] == "external.metrics.k8s.io/v1beta1"
    return {item["metricLabels"]["queue"]: item["value"] for item in body["items"]}


@pytest.mark.parametrize(("selector", "queues"), [
    pytest.param("", {"orders.eu": "5", "ordersXeu": "7", "emails": "3"}, id="no selector: the namespace only"),
    pytest.param("queue=orders.eu", {"orders.eu": "5"}, id="equals"),
    pytest.param("queue==orders.eu", {"orders.eu": "5"}, id="double equals"),
    pytest.param("queue!=emails", {"orders.eu": "5", "ordersXeu": "7"}, id="not equals"),
    pytest.param("queue in (orders.eu)", {"orders.eu": "5"}, id="in, one value, dot escaped"),
    pytest.param("queue in (emails,orders.eu)", {"orders.eu": "5", "emails": "3"}, id="in, two values"),
    pytest.param("queue notin (orders.eu)", {"ordersXeu": "7", "emails": "3"}, id="notin, dot escaped"),
    pytest.param("queue", {"orders.eu": "5", "ordersXeu": "7", "emails": "3"}, id="exists"),
    pytest.param("!queue", {}, id="does not exist: empty list, not an error"),
    pytest.param("queue=nothing", {}, id="matches nothing: empty list, not 404"),
    pytest.param("queue in (payments)", {}, id="another namespace's series stay out"),
])  # fmt: skip
def test_metric_selector_operators_select_series(cluster: Cluster, selector: str, queues: dict[str, str]) -> None:
    code, body, err = cluster.raw("shop", "queue_messages_ready", selector)
    assert code == 0, err
    assert _queues(body) == queues
    assert all(item["metricName"] == "queue_messages_ready" for item in body["items"])


@pytest.mark.parametrize("namespace", ["shop", "pay", "nowhere"])
def test_a_rule_with_namespaced_false_answers_the_same_in_any_namespace(cluster: Cluster, namespace: str) -> None:
    code, body, err = cluster.raw(namespace, "cluster_queue_messages_ready", "queue!=ordersXeu")
    assert code == 0, err
    labels = sorted((i["metricLabels"]["namespace"], i["metricLabels"]["queue"], i["value"]) for i in body["items"])
    assert labels == [("pay", "payments", "11"), ("shop", "emails", "3"), ("shop", "orders.eu", "5")]


def test_a_namespaced_rule_in_a_namespace_without_series_is_an_empty_list(cluster: Cluster) -> None:
    code, body, err = cluster.raw("nowhere", "queue_messages_ready")
    assert (code, body["items"] if body else None) == (0, []), err


@pytest.mark.parametrize(("namespace", "metric", "selector", "stderr"), [
    pytest.param("default", "nope", "", "Error from server (NotFound): the server could not find the metric nope "
                 "for namespaces", id="unknown metric"),
    pytest.param("shop", "nope", "queue=orders.eu", "Error from server (NotFound): the server could not find the "
                 "metric nope for namespaces", id="unknown metric, other namespace (upstream: 'for ')"),
    pytest.param("shop", "queue_messages_ready", "queue>1", "Error from server (BadRequest): ", id="gt operator"),
    pytest.param("shop", "queue_messages_ready", "app.kubernetes.io/name=web", "Error from server (BadRequest): ",
                 id="key that is no Prometheus label"),
    pytest.param("shop", "queue_messages_ready", "queue=(", "Error from server (BadRequest): ",
                 id="selector that does not parse"),
])  # fmt: skip
def test_requests_that_cannot_be_answered_are_errors(cluster: Cluster, namespace: str, metric: str, selector: str,
                                                     stderr: str) -> None:
    code, _, err = cluster.raw(namespace, metric, selector)
    assert code == 1 and err.startswith(stderr), err


@pytest.fixture
async def source(cluster: Cluster) -> AsyncIterator[AggregatedMetricsSource]:
    client = KubeClient(load_kube_config(cluster.standin.kubeconfig), timeout=15.0)
    await client.start()
    yield AggregatedMetricsSource(client, ResourceResolver(client), timeout=15.0)
    await client.close()


@pytest.mark.parametrize(("metric", "selector", "values"), [
    pytest.param("queue_messages_ready", "", (3_000, 5_000, 7_000), id="every series of the namespace"),
    pytest.param("queue_messages_ready", "queue in (emails,orders.eu)", (3_000, 5_000), id="selector sent"),
    pytest.param("cluster_queue_messages_ready", "queue notin (ordersXeu)", (3_000, 5_000, 11_000),
                 id="namespaced false"),
])  # fmt: skip
async def test_the_controller_reads_every_value_the_adapter_returns(
        source: AggregatedMetricsSource, metric: str, selector: str, values: tuple[int, ...]) -> None:
    got = await source.observe("shop", MetricQuery(type=SourceType.EXTERNAL, name=metric, metric_selector=selector),
                               pod_selector="app=web")
    assert isinstance(got, ExternalSamples), got
    assert sorted(got.values) == list(values)


@pytest.mark.parametrize(("metric", "selector", "message"), [
    pytest.param("queue_messages_ready", "queue=nothing", "no metrics returned from external metrics API",
                 id="empty list"),
    pytest.param("nope", "", "unable to fetch metrics from external metrics API: the server could not find the "
                 "metric nope for namespaces", id="unknown metric"),
])  # fmt: skip
async def test_the_controller_takes_an_empty_or_failed_read_as_a_failure(
        source: AggregatedMetricsSource, metric: str, selector: str, message: str) -> None:
    got = await source.observe("shop", MetricQuery(type=SourceType.EXTERNAL, name=metric, metric_selector=selector),
                               pod_selector="app=web")
    assert got == FetchFailure(message=message)
