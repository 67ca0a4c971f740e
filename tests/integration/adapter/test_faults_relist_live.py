"""Relist faults against the real adapter process and a real Prometheus (issue 26, item 3):

* a series answer with a label value that is not a string is refused whole: the last good
  registry is kept, the refusal is logged and counted on /metrics;
* after a relist that honestly found nothing, an outage answers 503, not 404, whatever the relist
  interval (no relist runs meanwhile);
* a metric missing from one relist keeps answering; one missing from two relists in a row is
  re-checked on request (one series query for 30 concurrent requests) and answers again at once;
  unknown names cost no series query at all.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

from adapter.prometheus.client import SCRAPE_STARTUP_GRACE
from hack.stack.local_prometheus import LocalPrometheus
from tests.integration.adapter.fault_proxy import FaultProxy
from tests.integration.adapter.test_faults_prometheus import POD, RATE, RULES, SESSIONS, wait_for
from tests.fixtures.adapter import start_adapter

pytestmark = [pytest.mark.integration]

EMPTY = b'{"status":"success","data":[]}'


def _is_sessions_relist(path: str, form: dict[str, list[str]]) -> bool:
    return path == "/api/v1/series" and any("app_sessions" in m for m in form.get("match[]", []))


@pytest.mark.timeout(90)
def test_a_series_answer_with_a_label_value_that_is_not_a_string_is_refused_whole(
        proxy: FaultProxy, kube_standin, tmp_path: Path) -> None:
    with start_adapter(tmp_path, prometheus_url=proxy.url, kubeconfig=kube_standin.kubeconfig, rules=RULES,
                       args=["--insecure-disable-auth"]) as adapter:
        wait_for(lambda: all(adapter.request(p).status == 200 for p in (RATE, SESSIONS)), 30, "both metrics")
        size = [line for line in adapter.request("/metrics").text.splitlines()
                if line.startswith("prom_autoscaler_adapter_registry_size{")]
        bad = json.dumps({"status": "success", "data": [
            {"__name__": "app_sessions_active", "namespace": "shop", "pod": "web-7d9f8-abcde"},
            {"__name__": "app_sessions_active", "namespace": "shop", "pod": 12345}]}).encode()
        proxy.fault = lambda path, form: (200, bad) if _is_sessions_relist(path, form) else None
        wait_for(lambda: "prom_autoscaler_adapter_relist_invalid_answers_total 3.0"
                 in adapter.request("/metrics").text, 20, "three relists refused as invalid")
        metrics = adapter.request("/metrics").text
        assert "prom_autoscaler_adapter_registry_stale 1.0" in metrics
        assert [line for line in metrics.splitlines()
                if line.startswith("prom_autoscaler_adapter_registry_size{")] == size
        assert [adapter.request(p).status for p in (RATE, SESSIONS)] == [200, 200]
        proxy.fault = lambda path, form: None
        wait_for(lambda: "prom_autoscaler_adapter_registry_stale 0.0" in adapter.request("/metrics").text, 15,
                 "a fresh registry once the answers are valid again")
    assert "label value that is not a string (int)" in adapter.log_file.read_text()


@pytest.mark.timeout(120)
def test_an_outage_after_an_honest_empty_relist_answers_503_not_404(
        prometheus_factory: Callable[..., LocalPrometheus], kube_standin, tmp_path: Path) -> None:
    server = prometheus_factory()
    server.wait_first_scrape()
    nothing = RULES.replace("http_requests_total{", "no_such_series_total{").replace(
        "app_sessions_active{", "no_such_gauge{")
    # A 10 minute relist interval: no relist notices the outage while the test runs.
    with start_adapter(tmp_path, prometheus_url=server.url, kubeconfig=kube_standin.kubeconfig, rules=nothing,
                       relist_interval="10m", args=["--insecure-disable-auth", "--prometheus-timeout=2s"]) as adapter:
        assert adapter.request(RATE).status == 404
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        server.stop()
        wait_for(lambda: adapter.request(RATE).status == 503, 10, "503 once Prometheus is gone")
        replies = [adapter.request(path) for path in (RATE, SESSIONS) * 5]
        assert {reply.status for reply in replies} == {503}
        assert replies[0].json()["reason"] == "ServiceUnavailable"
        server.start()
        wait_for(lambda: adapter.request(RATE).status == 404, 20, "404 again once Prometheus is back")


def _wait_until_older_than_the_startup_grace(prometheus: LocalPrometheus) -> None:
    """An empty answer from a Prometheus younger than its startup grace (plus the look-back window)
    is suspect and refused as a whole (tests/unit/adapter/discovery/test_relist_stale.py); here the
    series is missing from an answer of a Prometheus that has been up for a while."""
    started = datetime.fromisoformat(prometheus.api("/api/v1/status/runtimeinfo")["startTime"]).timestamp()
    time.sleep(max(0.0, started + SCRAPE_STARTUP_GRACE + 6 - time.time()))


@pytest.mark.timeout(180)
def test_a_series_missing_from_relists_keeps_answering_and_a_dropped_one_is_rechecked_on_request(
        proxy: FaultProxy, prometheus: LocalPrometheus, kube_standin, tmp_path: Path) -> None:
    _wait_until_older_than_the_startup_grace(prometheus)
    drops = {"left": 0}
    answered: list[float] = []
    lock = threading.Lock()

    def drop_sessions(path: str, form: dict[str, list[str]]) -> tuple[int, bytes] | None:
        if _is_sessions_relist(path, form):
            with lock:
                if drops["left"] > 0:
                    drops["left"] -= 1
                    answered.append(time.monotonic())
                    return 200, EMPTY
        return None

    def sessions_calls() -> int:
        return sum(_is_sessions_relist(path, form) for path, form in list(proxy.requests))

    proxy.fault = drop_sessions
    unknown = SESSIONS.replace("app_sessions_active", "no_such_metric")
    with start_adapter(tmp_path, prometheus_url=proxy.url, kubeconfig=kube_standin.kubeconfig, rules=RULES,
                       relist_interval="4s", args=["--insecure-disable-auth"]) as adapter:
        wait_for(lambda: all(adapter.request(p).status == 200 for p in (RATE, SESSIONS)), 30, "both metrics")
        with lock:
            drops["left"] = 1
        wait_for(lambda: len(answered) == 1, 10, "one relist without the series")
        time.sleep(0.5)
        assert adapter.request(SESSIONS).status == 200, "missing from one relist: still served"
        with lock:
            drops["left"] = 1
        wait_for(lambda: len(answered) == 2, 10, "a second relist without the series")
        time.sleep(0.5)  # the relist is swapped in; the next one is ~3 s away
        before = sessions_calls()
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda _: adapter.request(SESSIONS).status, range(30)))
            unknown_codes = list(pool.map(lambda _: adapter.request(unknown).status, range(30)))
        assert time.monotonic() - answered[-1] < 3.5, "the next relist did not run meanwhile"
        assert codes == [200] * 30
        assert unknown_codes == [404] * 30
        assert sessions_calls() == before + 1, "one shared re-check"
        assert "prom_autoscaler_adapter_registry_rechecks_total 1.0" in adapter.request("/metrics").text


HUGE_RULES = r"""
rules:
- seriesQuery: 'relist_test_huge{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'relist_test_huge{namespace!="",pod!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


@pytest.mark.timeout(90)
def test_a_value_of_2_63_milli_units_or_more_is_served_in_exponent_form_not_clamped(
        prometheus: LocalPrometheus, sample_exporter, kube_standin, tmp_path: Path) -> None:
    labels = {"namespace": "shop", "pod": "web-7d9f8-abcde"}
    sample_exporter.set_gauge("relist_test_huge", labels, 2e16)  # 2e19 milli-units > 2^63
    try:
        prometheus.wait_for("relist_test_huge > 1e16")
        with start_adapter(tmp_path, prometheus_url=prometheus.url, kubeconfig=kube_standin.kubeconfig,
                           rules=HUGE_RULES, args=["--insecure-disable-auth"]) as adapter:
            custom = f"{POD}/relist_test_huge"
            external = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/relist_test_huge"
            wait_for(lambda: adapter.request(custom).status == 200, 30, "the metric")
            values = [adapter.request(path).json()["items"][0]["value"] for path in (custom, external)]
    finally:
        sample_exporter.remove("relist_test_huge")
    assert values == ["20e15", "20e15"]
