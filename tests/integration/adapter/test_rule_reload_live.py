"""The rule file changed while the adapter serves: a valid version is taken within a reload
interval and a relist (no restart), an invalid one is refused and the previous rules keep serving;
/metrics shows the file in force and the last reload's result."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hack.stack.local_prometheus import LocalPrometheus
from tests.fixtures.adapter import RunningAdapter, start_adapter

pytestmark = [pytest.mark.integration]

V1 = r"""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
"""
V2 = V1.replace("${1}_per_second", "${1}_rate")
BROKEN = V2.replace("metricsQuery:", "metricQuery:")
POD = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/web-7d9f8-abcde"


def listed(adapter: RunningAdapter) -> set[str]:
    return {r["name"] for r in adapter.request("/apis/custom.metrics.k8s.io/v1beta1").json()["resources"]}


def wait_for(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.timeout(90)
def test_rule_file_changed_to_a_valid_then_an_invalid_version_while_serving(
        prometheus: LocalPrometheus, kube_standin, tmp_path: Path) -> None:
    with start_adapter(tmp_path, prometheus_url=prometheus.url, kubeconfig=kube_standin.kubeconfig, rules=V1,
                       relist_interval="30s", args=["--insecure-disable-auth", "--config-reload-interval=0.2s"]
                       ) as adapter:
        rules = tmp_path / "rules.yaml"
        assert "pods/http_requests_per_second" in listed(adapter)
        sha_v1 = hashlib.sha256(V1.encode()).hexdigest()
        assert f'prom_autoscaler_adapter_rule_file_info{{sha256="{sha_v1}"}} 1.0' in adapter.request("/metrics").text

        rules.write_text(V2)
        wait_for(lambda: "pods/http_requests_rate" in listed(adapter), "the new rules' metric")
        assert "pods/http_requests_per_second" not in listed(adapter)
        assert adapter.request(f"{POD}/http_requests_rate").status == 200
        metrics = adapter.request("/metrics").text
        assert "prom_autoscaler_adapter_rule_file_last_reload_success 1.0" in metrics

        rules.write_text(BROKEN)
        wait_for(lambda: "prom_autoscaler_adapter_rule_file_last_reload_success 0.0"
                 in adapter.request("/metrics").text, "the broken file to be refused")
        assert "pods/http_requests_rate" in listed(adapter)
        assert adapter.request(f"{POD}/http_requests_rate").status == 200
        sha_v2 = hashlib.sha256(V2.encode()).hexdigest()
        assert f'rule_file_info{{sha256="{sha_v2}"}} 1.0' in adapter.request("/metrics").text
        log = (tmp_path / "adapter.log").read_text()
        assert "rule file reload refused, the previous rules stay in force" in log
        assert "metricQuery" in log
