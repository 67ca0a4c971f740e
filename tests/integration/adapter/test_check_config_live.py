"""`check-config --prometheus-url` against a real Prometheus and a real VictoriaMetrics
(`demo_backend`) scraping the sample exporter: per rule, how many series matched, which were
dropped and why, and what the adapter would expose."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapter import check_config
from hack.stack.local_prometheus import LocalPrometheus

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_total$', as: '${1}_per_second'}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
- seriesQuery: '{__name__=~"http_requests_.*",namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}, service: {resource: service}}}
  name: {matches: '^(.*)_in_flight$'}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
- seriesQuery: 'app_sessions_active'
  resources: {overrides: {node: {resource: node}}}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
- seriesQuery: 'no_such_metric_total'
  resources: {template: <<.Resource>>}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)
"""


def _blocks(out: str) -> dict[str, str]:
    live = out.split("Querying ", 1)[1]
    return {block.split(":", 1)[0]: block for block in live.split("\n\n") if block.strip()}


def test_live_report_explains_every_rule(demo_backend: LocalPrometheus, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "adapter.yaml"
    path.write_text(RULES)
    code = check_config.main([str(path), "--prometheus-url", demo_backend.url, "--metrics-max-age", "5m"])
    out = capsys.readouterr().out
    assert code == 0, out
    blocks = _blocks(out)
    # 6 demo pods x (GET 200, POST 500) counters
    assert "rules[0]: seriesQuery matched 12 series" in blocks["rules[0]"]
    assert "exposes pods/http_requests_per_second (namespaced, 12 series)" in blocks["rules[0]"]
    assert "exposes namespaces/http_requests_per_second (cluster-scoped, 12 series)" in blocks["rules[0]"]
    # the regex series query also returns the counters, which name.matches filters out
    assert "12 dropped: name does not match name.matches /^(.*)_in_flight$/ (e.g. http_requests_total)" in blocks["rules[1]"]
    assert "exposes services/http_requests (namespaced, 6 series)" in blocks["rules[1]"]
    assert "6 carry no label this rule maps to a resource (node -> nodes)" in blocks["rules[2]"]
    assert "rules[3]: seriesQuery matched 0 series" in blocks["rules[3]"]
    assert "nothing matched" in blocks["rules[3]"]
    assert "exposes external metric queue_messages_ready (3 series)" in blocks["externalRules[0]"]
    # discovery's own registry view: what the API would list
    assert "custom.metrics.k8s.io pods/http_requests_per_second (namespaced)" in out
    assert "custom.metrics.k8s.io services/http_requests (namespaced)" in out
    assert "external.metrics.k8s.io queue_messages_ready" in out


def test_a_bad_series_query_is_reported_for_its_rules_only(demo_backend: LocalPrometheus, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "adapter.yaml"
    path.write_text(RULES.replace("'no_such_metric_total'", "'no_such{'"))
    code = check_config.main([str(path), "--prometheus-url", demo_backend.url])
    out = capsys.readouterr().out
    assert code == 2
    blocks = _blocks(out)
    # the backend's refusal: Prometheus answers 400 bad_data, VictoriaMetrics 422
    assert "rules[3]: seriesQuery failed:" in blocks["rules[3]"]
    assert "HTTP Status Code 400" in blocks["rules[3]"] or "HTTP Status Code 422" in blocks["rules[3]"]
    assert "seriesQuery matched 12 series" in blocks["rules[0]"]
