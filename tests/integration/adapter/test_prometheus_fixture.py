"""The Prometheus fixture itself: a real server scraping the sample exporter, controllable."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration]


@pytest.mark.timeout(60)
def test_session_prometheus_scrapes_demo_pods(prometheus) -> None:
    result = prometheus.query('sum by (pod) (rate(http_requests_total{namespace="shop"}[1m]))')
    pods = {sample["metric"]["pod"] for sample in result}
    assert pods == {"web-7d9f8-abcde", "web-7d9f8-fghij", "web-7d9f8-klmno", "cart-5c6b7-pqrst"}
    assert all(float(sample["value"][1]) > 0 for sample in result)
    depth = prometheus.query('queue_messages_ready{queue="orders"}')
    assert [float(s["value"][1]) for s in depth] == [42.0]


@pytest.mark.timeout(60)
def test_exporter_changes_reach_prometheus(prometheus, sample_exporter) -> None:
    labels = {"namespace": "shop", "pod": "fixture-test-pod"}
    sample_exporter.set_gauge("fixture_test_gauge", labels, 7)
    try:
        result = prometheus.wait_for("fixture_test_gauge == 7")
        assert result[0]["metric"]["pod"] == "fixture-test-pod"
    finally:
        sample_exporter.remove("fixture_test_gauge")
    # A series that is no longer exported is marked stale on the next scrape.
    prometheus.wait_for("fixture_test_gauge", present=False)
