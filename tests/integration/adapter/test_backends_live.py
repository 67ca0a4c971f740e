"""The real adapter process on each backend it is tested against (issue 26, item 4 — a start):
Prometheus and VictoriaMetrics (Debian's `victoria-metrics`, installed by `hack/setup.sh
victoria-metrics`), each scraping the same demo exporter. The same test, no backend-specific code
path in the adapter: discovery lists the rules' metrics, a custom metric (a gauge and a rate) and
an external metric answer, and the gauge equals what the backend itself answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.sample_exporter import SampleExporter, populate_demo
from kubecommon.quantity import Quantity
from tests.fixtures.adapter import start_adapter
from tests.fixtures.prometheus import BACKENDS
from tests.integration.adapter.test_faults_prometheus import POD, RATE, RULES, SESSIONS, wait_for

pytestmark = [pytest.mark.integration]

BACKEND_RULES = RULES + r"""
externalRules:
- seriesQuery: 'queue_messages_ready{namespace!="",queue!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
"""


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest,
            private_exporter_factory: Callable[[], SampleExporter]) -> Iterator[LocalPrometheus]:
    exporter = private_exporter_factory()
    populate_demo(exporter)
    server = BACKENDS[request.param]([exporter.address])
    try:
        server.start()
        server.wait_first_scrape()
        server.wait_for("rate(http_requests_total[1m]) > 0", timeout=30)  # two samples of each counter
        yield server
    finally:
        server.close()


@pytest.mark.timeout(120)
def test_discovery_custom_and_external_metrics_on_each_backend(
        backend: LocalPrometheus, kube_standin, tmp_path: Path) -> None:
    with start_adapter(tmp_path, prometheus_url=backend.url, kubeconfig=kube_standin.kubeconfig,
                       rules=BACKEND_RULES, args=["--insecure-disable-auth"]) as adapter:
        wait_for(lambda: all(adapter.request(p).status == 200 for p in (RATE, SESSIONS)), 30, "both metrics")
        listed = {r["name"] for r in adapter.request("/apis/custom.metrics.k8s.io/v1beta1").json()["resources"]}
        sessions = adapter.request(SESSIONS).json()["items"][0]["value"]
        rate = adapter.request(RATE).json()["items"][0]["value"]
        queue = adapter.request("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_messages_ready")
    assert {"pods/app_sessions_active", "pods/http_requests_per_second"} <= listed
    pod = POD.rsplit("/", 1)[1]
    [own] = backend.query(f'sum(app_sessions_active{{namespace="shop",pod="{pod}"}})')
    assert sessions == own["value"][1]
    assert Quantity.parse(rate).value > 0  # each backend's own rate() (VictoriaMetrics' does not extrapolate)
    assert queue.status == 200
    assert sorted((i["metricLabels"]["queue"], i["value"]) for i in queue.json()["items"]) == [
        ("emails", "7"), ("orders", "42")]
