"""Relist behaviour against a real Prometheus (the second test also against a real
VictoriaMetrics, `backend`): a series that stops disappears after max-age,
a Prometheus that is down at start is picked up when it comes back (and a restart keeps the
last good registry), and a rule file with each kind of error stops the adapter at start."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from adapter.config.load import parse_config
from adapter.discovery.relist import Discovery
from adapter.prometheus.client import PrometheusClient
from adapter.prometheus.settings import PrometheusSettings
from adapter.rules.compile import compile_config
from adapter.rules.resources import GroupResource
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.sample_exporter import SampleExporter
from tests.fixtures.adapter import run_adapter
from tests.fixtures.prometheus import BACKENDS

pytestmark = [pytest.mark.integration]

PODS = GroupResource(group="", resource="pods")
RULES = r"""
rules:
- seriesQuery: '{__name__=~"^relist_test_.*",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^http_requests_total$",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_total$', as: '${1}_per_second'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
"""


async def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.1)


def metrics(discovery: Discovery) -> set[str]:
    return {i.metric for i in discovery.snapshot.custom_metrics() if i.resource == PODS}


@pytest.mark.timeout(60)
async def test_relist_drops_a_series_that_stopped(
    prometheus: LocalPrometheus, sample_exporter: SampleExporter
) -> None:
    # Prometheus only: VictoriaMetrics' /api/v1/series answers from a per-day index, so a series
    # that stopped is still listed until the day ends whatever `start` says (measured: still there
    # after 15 s with max-age 2 s), so the adapter keeps listing it.
    labels = {"namespace": "shop", "pod": "web-7d9f8-abcde"}
    sample_exporter.set_gauge("relist_test_stays", labels, 1)
    sample_exporter.set_gauge("relist_test_stops", labels, 1)
    compiled = compile_config(parse_config(RULES, source="relist.yaml"))
    try:
        async with PrometheusClient(PrometheusSettings(url=prometheus.url)) as client:
            # A short max-age so the stopped series ages out quickly (real default: 10m).
            discovery = Discovery(client, compiled, interval=1, max_age=2)
            await discovery.start()
            try:
                await wait_until(lambda: {"relist_test_stays", "relist_test_stops"}
                                 <= metrics(discovery), 15, "both series discovered")
                sample_exporter.remove("relist_test_stops")
                await wait_until(lambda: "relist_test_stops" not in metrics(discovery), 15,
                                 "the stopped series to leave discovery")
                assert "relist_test_stays" in metrics(discovery)
                assert "http_requests_per_second" in metrics(discovery)
                assert discovery.stats.failures_total == 0
            finally:
                await discovery.stop()
    finally:
        sample_exporter.remove("relist_test_stays")
        sample_exporter.remove("relist_test_stops")


@pytest.mark.timeout(90)
@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_prometheus_down_at_start_comes_back_and_restarts(
    prometheus_factory: Callable[..., LocalPrometheus], backend: str
) -> None:
    # A Prometheus that has data, then is down while the adapter starts (e.g. both restarting).
    server = prometheus_factory(backend=backend)
    server.wait_for("http_requests_total")
    server.stop()
    compiled = compile_config(parse_config(RULES, source="relist.yaml"))
    async with PrometheusClient(PrometheusSettings(url=server.url, timeout=2)) as client:
        discovery = Discovery(client, compiled, interval=600, retry_initial=0.2)
        await discovery.start()  # Prometheus is down: not fatal
        try:
            assert not discovery.ready
            assert discovery.stats.failures_total == 1
            assert "Connect" in (discovery.stats.last_error or "")
            await asyncio.sleep(0.5)
            assert discovery.stats.failures_total >= 2  # retrying, not waiting 10 minutes
            server.start()
            # Retries come every 0.2 s, 0.4 s, ... capped: not after the 10-minute interval.
            await wait_until(lambda: "http_requests_per_second" in metrics(discovery), 15,
                             "discovery after Prometheus came up")
            assert discovery.ready
            good = discovery.snapshot
            failures = discovery.stats.failures_total
            server.stop()
            assert not await discovery.relist()
            assert discovery.snapshot is good  # the last good registry is kept
            assert discovery.stats.failures_total == failures + 1
            server.start()
            assert await discovery.relist()
            assert "http_requests_per_second" in metrics(discovery)
        finally:
            await discovery.stop()


UNKNOWN_KEY = r"""
rules:
- seriesQuery: 'http_requests_total'
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>)'
- seriesQuery: 'http_requests_total'
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>)'
  metricQuery: 'a typo of metricsQuery'
"""
# Every rule is wrong in a different way; all problems are reported at once.
BAD_RULES = r"""
rules:
- seriesQuery: 'a_total'
  name: {matches: '^(.*_total$'}
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>)'
- seriesQuery: 'b_total'
  seriesFilters: [{is: 'x', isNot: 'y'}]
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>)'
- seriesQuery: 'c_total'
  resources: {template: 'kube_<<.Group>>'}
  metricsQuery: 'sum(<<.Series>>)'
- seriesQuery: 'd_total'
  name: {matches: '^(.*)_(.*)$'}
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>)'
- seriesQuery: 'e_total'
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})  <<.Nope>>'
externalRules:
- seriesQuery: 'f_total'
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<if .Series>>)'
"""
NOT_YAML = 'rules:\n- seriesQuery: "a"b"\n'


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(UNKNOWN_KEY, [("rules[1]", "metricQuery", "unknown field")],
                 id="unknown key (a typo)"),
    pytest.param(BAD_RULES, [
        ("rules[0]", "name.matches", ""),
        ("rules[1]", "seriesFilters[0]", ""),
        ("rules[2]", "resources.template", "Resource"),
        ("rules[3]", "name.as", ""),
        ("rules[4]", "metricsQuery", "Nope"),
        ("externalRules[0]", "metricsQuery", ""),
    ], id="bad regex, is+isNot, template without Resource, 2 groups without as, bad templates"),
    pytest.param(NOT_YAML, [("", "line 2", "")], id="not YAML"),
])
def test_rule_file_errors_stop_the_adapter_at_start(
    prometheus: LocalPrometheus, tmp_path: Path, text: str,
    expected: list[tuple[str, str, str]],
) -> None:
    bad = tmp_path / "bad-rules.yaml"
    bad.write_text(text)
    result = run_adapter(f"--config={bad}", f"--prometheus-url={prometheus.url}")
    assert result.returncode != 0
    output = result.stderr
    assert str(bad) in output
    for location, field, reason in expected:
        lines = [ln for ln in output.splitlines()
                 if location in ln and field in ln and reason in ln]
        assert lines, f"{location} {field} {reason} not reported:\n{output}"
    assert "series discovery" not in output  # it stopped before discovering anything
