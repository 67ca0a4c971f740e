"""Each metric resolves to exactly the PromQL the adapter would run for it."""

from __future__ import annotations

import re

import pytest

from adapter.config import parse_config
from adapter.rules import compile_config
from controller.history.resolve import MetricQuery, QueryKind, Unresolvable, default_pod_regex, resolve_all, series_queries
from controller.backtest.spec_file import BacktestSpec, spec_from_manifest

RULES = compile_config(parse_config("""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, service: {resource: service}}}
  name: {matches: '^(.*)_total$', as: '${1}_per_second'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_depth{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum(rate(cpu_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_cpu{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum(mem_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_mem{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
""", source="rules.yaml"))
SHAPES = {
    'http_requests_total{namespace!="",pod!=""}': (("http_requests_total", frozenset({"namespace", "pod", "service"})),),
    'queue_depth{queue!=""}': (("queue_depth", frozenset({"queue"})),),
}


def _spec(metric: dict[str, object]) -> BacktestSpec:
    return spec_from_manifest({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, "metrics": [metric]}})


def _resolve(spec: BacktestSpec) -> tuple[MetricQuery, ...]:
    return resolve_all(RULES, SHAPES, namespace=spec.namespace, metrics=spec.autoscaler.metrics,
                       metric_selectors=spec.metric_selectors, rules_path="rules.yaml")


@pytest.mark.parametrize(("metric", "kind", "promql"), [
    pytest.param({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                 QueryKind.PER_POD, 'sum(rate(cpu_seconds_total{namespace="shop"}[1m])) by (pod,container)', id="resource cpu"),
    pytest.param({"type": "Pods", "pods": {"metric": {"name": "http_requests_per_second",
                                                      "selector": {"matchLabels": {"verb": "GET"}}},
                                           "target": {"type": "AverageValue", "averageValue": "10"}}},
                 QueryKind.PER_POD, 'sum(rate(http_requests_total{verb="GET",namespace="shop"}[2m])) by (pod)',
                 id="pods, with a metric selector"),
    pytest.param({"type": "Object", "object": {"metric": {"name": "http_requests_per_second"},
                                               "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
                                               "target": {"type": "Value", "value": "100"}}},
                 QueryKind.OBJECT, 'sum(rate(http_requests_total{namespace="shop",service="web"}[2m])) by (service)',
                 id="object: a service"),
    pytest.param({"type": "External", "external": {"metric": {"name": "queue_depth"},
                                                   "target": {"type": "AverageValue", "averageValue": "30"}}},
                 QueryKind.EXTERNAL, "max(queue_depth{}) by (queue)", id="external, not namespaced"),
])
def test_each_metric_type_resolves_to_the_adapters_query(metric: dict[str, object], kind: QueryKind, promql: str) -> None:
    spec = _spec(metric)
    (query,) = _resolve(spec)
    assert (query.kind, query.promql) == (kind, promql)
    assert query.rule.startswith("rules.yaml: ")


def test_only_the_series_queries_a_spec_needs_are_asked() -> None:
    cpu_only = _spec({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}})
    assert series_queries(RULES, cpu_only.autoscaler.metrics) == ()


@pytest.mark.parametrize(("metric", "says"), [
    pytest.param({"type": "Pods", "pods": {"metric": {"name": "no_such_metric"}, "target": {"type": "AverageValue", "averageValue": "1"}}},
                 "no rule exposes it for pods", id="unknown pods metric"),
    pytest.param({"type": "External", "external": {"metric": {"name": "nope"}, "target": {"type": "Value", "value": "1"}}},
                 "no externalRules entry exposes it", id="unknown external metric"),
    pytest.param({"type": "Resource", "resource": {"name": "gpu", "target": {"type": "AverageValue", "averageValue": "1"}}},
                 "cpu and memory only", id="a resource the rules cannot serve"),
])
def test_an_unresolvable_metric_is_named_with_the_check_config_hint(metric: dict[str, object], says: str) -> None:
    with pytest.raises(Unresolvable) as caught:
        _resolve(_spec(metric))
    text = str(caught.value)
    assert says in text and "python -m adapter check-config rules.yaml" in text


@pytest.mark.parametrize(("kind", "name", "pod", "matches"), [
    pytest.param("Deployment", "web", "web-7d9f8c6b5-x2x9q", True, id="a Deployment's pod"),
    pytest.param("Deployment", "web", "web-worker-7d9f8c6b5-x2x9q", False, id="a sibling Deployment's pod is not the target's"),
    pytest.param("StatefulSet", "db", "db-0", True, id="a StatefulSet's ordinal"),
    pytest.param("StatefulSet", "db", "db-x", False, id="a StatefulSet's pods have ordinals only"),
])
def test_the_default_pod_pattern_takes_the_targets_pods_only(kind: str, name: str, pod: str, matches: bool) -> None:
    assert bool(re.fullmatch(default_pod_regex(kind, name), pod)) is matches
