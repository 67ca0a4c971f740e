"""Shared literal data for the rules tests: prometheus-adapter's config-gen default rules and the
static RESTMapper its registry tests use (facts from cmd/config-gen/utils and
pkg/custom-provider/series_registry_test.go)."""

from __future__ import annotations

from adapter.config import parse_config
from adapter.rules import compile_config
from adapter.rules.compile import CompiledConfig
from adapter.rules.resources import GroupResource, ResourceTable

# cmd/config-gen utils.DefaultConfig(1m, "kube_") rules.
DEFAULT_CONFIG_KUBE_PREFIX = r"""
rules:
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^container_(.*)_seconds_total$'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[1m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: [{isNot: '^container_.*_seconds_total$'}]
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^container_(.*)_total$'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[1m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: [{isNot: '^container_.*_total$'}]
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^container_(.*)$'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>,container!="POD"}) by (<<.GroupBy>>)'
- seriesQuery: '{kube_namespace!="",__name__!~"^container_.*"}'
  seriesFilters: [{isNot: '.*_total$'}]
  resources: {template: 'kube_<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: '{kube_namespace!="",__name__!~"^container_.*"}'
  seriesFilters: [{isNot: '.*_seconds_total'}]
  name: {matches: '^(.*)_total$'}
  resources: {template: 'kube_<<.Resource>>'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: '{kube_namespace!="",__name__!~"^container_.*"}'
  name: {matches: '^(.*)_seconds_total$'}
  resources: {template: 'kube_<<.Resource>>'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
resourceRules:
  cpu:
    containerQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
    nodeQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>, id='/'}[1m])) by (<<.GroupBy>>)
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, instance: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)
    nodeQuery: sum(container_memory_working_set_bytes{<<.LabelMatchers>>,id='/'}) by (<<.GroupBy>>)
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, instance: {resource: node}}}
    containerLabel: container
  window: 1m
"""

# series_registry_test.go restMapper(): core Pod/Service/Node/PV/Namespace, extensions Ingress/Deployment.
REGISTRY_TEST_TABLE = ResourceTable.from_kinds([
    {"group": "", "kind": "Pod", "resource": "pods", "namespaced": True},
    {"group": "", "kind": "Service", "resource": "services", "namespaced": True},
    {"group": "extensions", "kind": "Ingress", "resource": "ingresses", "namespaced": True},
    {"group": "extensions", "kind": "Deployment", "resource": "deployments", "namespaced": True},
    {"group": "", "kind": "Node", "resource": "nodes", "namespaced": False},
    {"group": "", "kind": "PersistentVolume", "resource": "persistentvolumes", "namespaced": False},
    {"group": "", "kind": "Namespace", "resource": "namespaces", "namespaced": False},
])


def compile_text(text: str, table: ResourceTable | None = None) -> CompiledConfig:
    cfg = parse_config(text, source="test.yaml")
    return compile_config(cfg, table=table) if table is not None else compile_config(cfg)


def gr(text: str) -> GroupResource:
    return GroupResource.parse(text)
