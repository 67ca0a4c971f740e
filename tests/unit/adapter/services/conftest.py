"""Shared building blocks for the metrics-service unit tests: one rule file, a registry built from
literal series, the map-backed Prometheus and object caches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from adapter.config import parse_config
from adapter.discovery.registry import Registry, build_registry
from kubecommon.kube.fake import FakeObjectCaches
from kubecommon.kube.objects import KubeObject
from adapter.prometheus.api import Sample
from adapter.rules import compile_config
from adapter.rules.compile import CompiledConfig
from hack.stack.metrics_stack import demo_resource_rules

_CUSTOM_AND_EXTERNAL_RULES = r"""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
      deployment: {group: apps, resource: deployment}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: 'node_temperature_celsius{node!=""}'
  resources:
    overrides:
      node: {resource: node}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{namespace!="",queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'global_backlog{queue!=""}'
  resources:
    namespaced: false
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
"""
# The resource rules: the demo rule file's, the one source the stack and the demo serve too.
RULES = _CUSTOM_AND_EXTERNAL_RULES + demo_resource_rules()

SERIES: Mapping[str, Sequence[Mapping[str, str]]] = {
    'http_requests_total{namespace!="",pod!=""}': [
        {"__name__": "http_requests_total", "namespace": "shop", "pod": "web-0", "deployment": "web"},
    ],
    'node_temperature_celsius{node!=""}': [{"__name__": "node_temperature_celsius", "node": "n1"}],
    'queue_messages_ready{namespace!="",queue!=""}': [
        {"__name__": "queue_messages_ready", "namespace": "shop", "queue": "orders"},
    ],
    'global_backlog{queue!=""}': [{"__name__": "global_backlog", "queue": "orders"}],
}

T = 1787220930.0


def compiled() -> CompiledConfig:
    return compile_config(parse_config(RULES, source="rules.yaml"))


def registry() -> Registry:
    return build_registry(compiled(), SERIES)


def sample(value: float, ts: float = T, **labels: str) -> Sample:
    return Sample(labels=labels, value=value, timestamp=ts)


def pod(name: str, namespace: str = "shop", phase: str = "Running", **labels: str) -> KubeObject:
    return KubeObject(name=name, namespace=namespace, labels=labels, phase=phase)


def node(name: str, **labels: str) -> KubeObject:
    return KubeObject(name=name, labels=labels)


def caches(*objects: KubeObject, nodes: Sequence[KubeObject] = (),
           deployments: Sequence[KubeObject] = ()) -> FakeObjectCaches:
    return FakeObjectCaches({("", "pods"): objects, ("", "nodes"): nodes,
                             ("apps", "deployments"): deployments})
