"""Prometheus faults while requests run, against the real adapter process and a real Prometheus:

* `/api/v1/series` failing for one rule's query: no previously served metric ever answers 404;
* Prometheus killed and restarted on its data directory: 503 while it is down, correct answers
  right after, never a 404;
* a 50 MB answer: refused within the byte limit, and the adapter's peak memory stays inside the
  chart's default 512Mi limit.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hack.stack.local_prometheus import LocalPrometheus
from tests.fixtures.adapter import RunningAdapter, start_adapter
from tests.integration.adapter.fault_proxy import FaultProxy

pytestmark = [pytest.mark.integration]

RULES = r"""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: 'app_sessions_active{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""
POD = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/web-7d9f8-abcde"
RATE, SESSIONS = f"{POD}/http_requests_per_second", f"{POD}/app_sessions_active"
CHART_MEMORY_LIMIT = 512 * 2**20


def codes_while(adapter: RunningAdapter, paths: list[str], seconds: float) -> list[tuple[str, int, str]]:
    """Request every path over and over for `seconds`: (path, status, Status reason) of each."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for path in paths:
            reply = adapter.request(path, timeout=15)
            reason = reply.json().get("message", "") if reply.status != 200 else ""
            seen.append((path, reply.status, reason))
        time.sleep(0.05)
    return seen


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.1)


@pytest.mark.timeout(90)
def test_series_failing_for_one_rule_never_turns_a_served_metric_into_404(
        proxy: FaultProxy, kube_standin, tmp_path: Path) -> None:
    with start_adapter(tmp_path, prometheus_url=proxy.url, kubeconfig=kube_standin.kubeconfig, rules=RULES,
                       args=["--insecure-disable-auth"]) as adapter:
        wait_for(lambda: all(adapter.request(p).status == 200 for p in (RATE, SESSIONS)), 30, "both metrics")
        relists = sum(path == "/api/v1/series" for path, _ in proxy.requests)

        def fail_sessions(path: str, form: dict[str, list[str]]) -> tuple[int, bytes] | None:
            if path == "/api/v1/series" and any("app_sessions" in m for m in form.get("match[]", [])):
                return 503, b'{"status":"error","errorType":"unavailable","error":"overloaded"}'
            return None

        proxy.fault = fail_sessions
        seen = codes_while(adapter, [RATE, SESSIONS], 10.0)
        proxy.fault = lambda path, form: None
        assert sum(path == "/api/v1/series" for path, _ in proxy.requests) > relists + 4, "relists ran meanwhile"
        assert {(path, code) for path, code, _ in seen} == {(RATE, 200), (SESSIONS, 200)}
        metrics = adapter.request("/metrics").text
        assert "prom_autoscaler_adapter_relist_failures_total" in metrics
        wait_for(lambda: "prom_autoscaler_adapter_registry_stale 0.0" in adapter.request("/metrics").text, 15,
                 "a fresh registry once the series answer again")


@pytest.mark.timeout(120)
def test_prometheus_killed_and_restarted_on_its_data_is_503_then_correct_never_404(
        prometheus_factory: Callable[..., LocalPrometheus], kube_standin, tmp_path: Path) -> None:
    server = prometheus_factory()
    server.wait_for("rate(http_requests_total[1m]) > 0")
    with start_adapter(tmp_path, prometheus_url=server.url, kubeconfig=kube_standin.kubeconfig, rules=RULES,
                       args=["--insecure-disable-auth", "--prometheus-timeout=2s", "--metrics-max-age=60s"]) as adapter:
        wait_for(lambda: all(adapter.request(p).status == 200 for p in (RATE, SESSIONS)), 30, "both metrics")
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        server.stop()
        down = codes_while(adapter, [RATE, SESSIONS], 3.0)
        server.start()  # the same data directory: its WAL is replayed
        after = codes_while(adapter, [RATE, SESSIONS], 4.0)
    assert {code for _, code, _ in down} == {503}
    assert [(path, code, message) for path, code, message in after if code == 404] == []
    assert after[-2:] == [(RATE, 200, ""), (SESSIONS, 200, "")]


def _huge_answer(samples: int) -> bytes:
    item = '{"metric":{"__name__":"http_requests_total","namespace":"shop","pod":"web-7d9f8-%06d","code":"200",' \
           '"method":"GET","service":"web"},"value":[1700000000.123,"12345.678"]}'
    body = ",".join(item % i for i in range(samples))
    return ('{"status":"success","data":{"resultType":"vector","result":[' + body + "]}}").encode()


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.timeout(90)
def test_a_50_mb_answer_is_refused_and_memory_stays_inside_the_chart_limit(kube_standin, tmp_path: Path) -> None:
    huge = _huge_answer(330_000)
    assert len(huge) > 50 * 10**6
    series = json.dumps({"status": "success", "data": [
        {"__name__": "http_requests_total", "namespace": "shop", "pod": "web-7d9f8-abcde"}]}).encode()
    proxy = FaultProxy(None).start()
    proxy.fault = lambda path, form: (200, series) if path == "/api/v1/series" else (200, huge)
    try:
        with start_adapter(tmp_path, prometheus_url=proxy.url, kubeconfig=kube_standin.kubeconfig, rules=RULES,
                           args=["--insecure-disable-auth"]) as adapter:
            assert adapter.proc is not None
            with ThreadPoolExecutor(4) as pool:
                replies = list(pool.map(lambda _: adapter.request(RATE, timeout=60), range(4)))
            peak = _peak_rss(adapter.proc.pid)
    finally:
        proxy.stop()
    for reply in replies:
        status = reply.json()
        assert (reply.status, status["reason"]) == (500, "InternalError")
        assert "more than 16 MiB for one query (--prometheus-max-answer-bytes)" in status["message"]
    assert peak < CHART_MEMORY_LIMIT, f"peak RSS {peak / 2**20:.0f} MiB"
