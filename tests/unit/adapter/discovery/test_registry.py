"""Registry built from discovered series: prometheus-adapter's series_registry_test.go cases
(ported as facts: the exact queries and the full metric list), plus the discovery semantics
the spec documents (namespaced flag, overwrite order, externals, bounded digests)."""

from __future__ import annotations

import json

import pytest

from adapter.config.load import parse_config
from adapter.discovery.registry import (
    CustomMetricInfo,
    ExternalMetricInfo,
    Registry,
    SeriesDigest,
    build_registry,
)
from adapter.rules import query
from tests import paths
from tests.unit.adapter.rules.helpers import DEFAULT_CONFIG_KUBE_PREFIX
from adapter.rules.compile import CompiledConfig, compile_config
from adapter.rules.resources import GroupResource, ResourceTable
from kubecommon.selectors import parse_selector

VECTORS = paths.VECTORS / "prometheus-adapter-public.json"

CONTAINER_QUERY = '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
NORMAL_QUERY = '{kube_namespace!="",__name__!~"^container_.*"}'

# series_registry_test.go seriesRegistryTestSeries, grouped by the seriesQuery they answer.
CONTAINER = {"pod": "somepod", "namespace": "somens", "container": "somecont"}
UPSTREAM_SERIES = {
    CONTAINER_QUERY: [
        {"__name__": "container_some_time_seconds_total", **CONTAINER},
        {"__name__": "container_some_count_total", **CONTAINER},
        {"__name__": "container_some_usage", **CONTAINER},
    ],
    NORMAL_QUERY: [
        {"__name__": "node_gigawatts", "kube_node": "somenode"},
        {"__name__": "service_proxy_packets", "kube_service": "somesvc",
         "kube_namespace": "somens"},
        {"__name__": "ingress_hits_total", "kube_ingress": "someingress",
         "kube_service": "somesvc", "kube_pod": "backend1", "kube_namespace": "somens"},
        {"__name__": "ingress_hits_total", "kube_ingress": "someingress",
         "kube_service": "somesvc", "kube_pod": "backend2", "kube_namespace": "somens"},
        {"__name__": "volume_claims_total", "kube_persistentvolume": "somepv"},
        {"__name__": "work_queue_wait_seconds_total", "kube_deployment": "somedep",
         "kube_namespace": "somens"},
        {"__name__": "node_fan_seconds_total", "kube_node": "somenode"},
    ],
}


def upstream_table() -> ResourceTable:
    """The test RESTMapper of series_registry_test.go (Ingress/Deployment in `extensions`)."""
    fixture = json.loads(VECTORS.read_text())["fixtures"]["rest_mapper_registry_tests"]
    return ResourceTable.from_kinds(fixture["kinds"])


@pytest.fixture(scope="module")
def compiled() -> CompiledConfig:
    cfg = parse_config(DEFAULT_CONFIG_KUBE_PREFIX, source="default-config.yaml")
    return compile_config(cfg, table=upstream_table())


@pytest.fixture(scope="module")
def registry(compiled: CompiledConfig) -> Registry:
    return build_registry(compiled, UPSTREAM_SERIES, created_at=1700000000.0)


def gr(text: str) -> GroupResource:
    return GroupResource.parse(text)


REGISTRY_QUERY_CASES = [
    pytest.param("pods", "some_usage", "somens", ["somepod1", "somepod2"], "",
                 'sum(container_some_usage{namespace="somens",pod=~"somepod1|somepod2",'
                 'container!="POD"}) by (pod)',
                 id="container metrics gauge / multiple resource names"),
    pytest.param("pods", "some_count", "somens", ["somepod1", "somepod2"], "",
                 'sum(rate(container_some_count_total{namespace="somens",pod=~"somepod1|somepod2",'
                 'container!="POD"}[1m])) by (pod)', id="container metrics counter"),
    pytest.param("pods", "some_time", "somens", ["somepod1", "somepod2"], "",
                 'sum(rate(container_some_time_seconds_total{namespace="somens",'
                 'pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
                 id="container metrics seconds counter"),
    pytest.param("services", "ingress_hits", "somens", ["somesvc"], "",
                 'sum(rate(ingress_hits_total{kube_namespace="somens",kube_service="somesvc"}[1m]))'
                 ' by (kube_service)', id="namespaced metrics counter / multidimensional (service)"),
    pytest.param("services", "ingress_hits", "somens", ["somesvc"], "param1=value1",
                 'sum(rate(ingress_hits_total{param1="value1",kube_namespace="somens",'
                 'kube_service="somesvc"}[1m])) by (kube_service)',
                 id="namespaced metrics counter / selection using labels"),
    pytest.param("ingresses.extensions", "ingress_hits", "somens", ["someingress"], "",
                 'sum(rate(ingress_hits_total{kube_namespace="somens",kube_ingress="someingress"}'
                 '[1m])) by (kube_ingress)', id="namespaced metrics counter / multidimensional (ingress)"),
    pytest.param("pods", "ingress_hits", "somens", ["somepod"], "",
                 'sum(rate(ingress_hits_total{kube_namespace="somens",kube_pod="somepod"}[1m]))'
                 ' by (kube_pod)', id="namespaced metrics counter / multidimensional (pod)"),
    pytest.param("services", "service_proxy_packets", "somens", ["somesvc"], "",
                 'sum(service_proxy_packets{kube_namespace="somens",kube_service="somesvc"})'
                 ' by (kube_service)', id="namespaced metrics gauge"),
    pytest.param("deployments.extensions", "work_queue_wait", "somens", ["somedep"], "",
                 'sum(rate(work_queue_wait_seconds_total{kube_namespace="somens",'
                 'kube_deployment="somedep"}[1m])) by (kube_deployment)',
                 id="namespaced metrics seconds counter"),
    pytest.param("nodes", "node_gigawatts", None, ["somenode"], "",
                 'sum(node_gigawatts{kube_node="somenode"}) by (kube_node)',
                 id="root scoped metrics gauge"),
    pytest.param("persistentvolumes", "volume_claims", None, ["somepv"], "",
                 'sum(rate(volume_claims_total{kube_persistentvolume="somepv"}[1m]))'
                 ' by (kube_persistentvolume)', id="root scoped metrics counter"),
    pytest.param("nodes", "node_fan", None, ["somenode"], "",
                 'sum(rate(node_fan_seconds_total{kube_node="somenode"}[1m])) by (kube_node)',
                 id="root scoped metrics seconds counter"),
]


@pytest.mark.parametrize(("resource", "metric", "namespace", "names", "selector", "expected"),
                         REGISTRY_QUERY_CASES)
def test_upstream_registry_queries(registry: Registry, resource: str, metric: str,
                                   namespace: str | None, names: list[str], selector: str,
                                   expected: str) -> None:
    entry = registry.lookup_custom(gr(resource), metric, namespaced=namespace is not None)
    assert entry is not None, f"{resource}/{metric} should be available"
    promql = query.render_custom(entry.rule, series_name=entry.series_name, resource=gr(resource),
                                 namespace=namespace, names=names,
                                 metric_selector=parse_selector(selector))
    assert promql == expected


def test_upstream_list_all_metrics(registry: Registry) -> None:
    def info(resource: str, namespaced: bool, metric: str) -> CustomMetricInfo:
        return CustomMetricInfo(resource=gr(resource), metric=metric, namespaced=namespaced)

    expected = {
        info("pods", True, "some_count"), info("namespaces", False, "some_count"),
        info("pods", True, "some_time"), info("namespaces", False, "some_time"),
        info("pods", True, "some_usage"), info("namespaces", False, "some_usage"),
        info("services", True, "ingress_hits"), info("ingresses.extensions", True, "ingress_hits"),
        info("pods", True, "ingress_hits"), info("namespaces", False, "ingress_hits"),
        info("services", True, "service_proxy_packets"),
        info("namespaces", False, "service_proxy_packets"),
        info("deployments.extensions", True, "work_queue_wait"),
        info("namespaces", False, "work_queue_wait"),
        info("nodes", False, "node_gigawatts"), info("persistentvolumes", False, "volume_claims"),
        info("nodes", False, "node_fan"),
    }
    assert set(registry.custom_metrics()) == expected
    assert len(registry.custom_metrics()) == 17
    assert list(registry.custom_metrics()) == sorted(expected)  # sorted and stable
    assert registry.series_count == 10
    assert registry.created_at == 1700000000.0


@pytest.mark.parametrize(("resource", "metric", "namespaced"), [
    pytest.param("pods", "does_not_exist", True, id="unknown metric"),
    pytest.param("pods", "some_usage", False, id="namespaced metric through the root path"),
    pytest.param("nodes", "node_gigawatts", True, id="root metric through a namespaced path"),
    pytest.param("pods", "container_some_usage", True, id="series name is not the metric name"),
])
def test_lookup_misses(registry: Registry, resource: str, metric: str, namespaced: bool) -> None:
    assert registry.lookup_custom(gr(resource), metric, namespaced=namespaced) is None


TEMPLATE_RULE = """
rules:
- seriesQuery: '{__name__=~"^x_.*"}'
  resources: {template: '<<.Resource>>'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def test_namespaced_flag_follows_upstream_quirk() -> None:
    # spec vector discovery.namespaced_flag: only namespaces/nodes/PVs are root-scoped entries;
    # `device` matches the template but is no resource, so it is skipped.
    compiled = compile_config(parse_config(TEMPLATE_RULE, source="t.yaml"))
    registry = build_registry(compiled, {'{__name__=~"^x_.*"}': [
        {"__name__": "x_node_only", "node": "n1"},
        {"__name__": "x_node_and_other", "node": "n1", "device": "sda"},
        {"__name__": "x_service", "service": "s", "namespace": "ns"},
    ]})
    assert {(str(i.resource), i.namespaced, i.metric) for i in registry.custom_metrics()} == {
        ("nodes", False, "x_node_only"), ("nodes", False, "x_node_and_other"),
        ("services", True, "x_service"), ("namespaces", False, "x_service"),
    }


WALKTHROUGH = r"""
rules:
- seriesQuery: 'http_requests_total{kubernetes_namespace!="",kubernetes_pod_name!=""}'
  resources:
    overrides:
      kubernetes_namespace: {resource: namespace}
      kubernetes_pod_name: {resource: pod}
  name: {matches: '^(.*)_total', as: '${1}_per_second'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
"""


def test_config_walkthrough_discovery() -> None:
    # docs/config-walkthrough.md (spec vector docs.config_walkthrough.discovery).
    compiled = compile_config(parse_config(WALKTHROUGH, source="walkthrough.yaml"))
    series = [{"__name__": "http_requests_total", "method": "GET",
               "kubernetes_namespace": "production", "kubernetes_pod_name": f"frontend-{i}"}
              for i in range(2)]
    registry = build_registry(compiled, {compiled.custom[0].series_query: series})
    assert [(str(i.resource), i.metric, i.namespaced) for i in registry.custom_metrics()] == [
        ("namespaces", "http_requests_per_second", False),
        ("pods", "http_requests_per_second", True),
    ]


OVERWRITE = r"""
rules:
- seriesQuery: '{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_total$', as: '${1}'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: '{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_count$', as: '${1}'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{namespace!="",pod!=""}'
  resources: {namespaced: false}
  name: {matches: '^(.*)_count$', as: 'ext_${1}'}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


def test_later_rule_overwrites_same_key_and_externals_by_name() -> None:
    compiled = compile_config(parse_config(OVERWRITE, source="o.yaml"))
    labels = {"namespace": "a", "pod": "p"}
    registry = build_registry(compiled, {'{namespace!="",pod!=""}': [
        {"__name__": "jobs_total", **labels}, {"__name__": "jobs_count", **labels}]})
    entry = registry.lookup_custom(gr("pods"), "jobs", namespaced=True)
    assert entry is not None
    assert (entry.rule.ref.location, entry.series_name) == ("rules[1]", "jobs_count")
    assert registry.external_metrics() == (ExternalMetricInfo(metric="ext_jobs"),)
    ext = registry.lookup_external("ext_jobs")
    assert ext is not None and ext.series_name == "jobs_count"
    assert registry.lookup_external("jobs") is None


def test_empty_registry() -> None:
    registry = Registry.empty()
    assert registry.custom_metrics() == () and registry.external_metrics() == ()
    assert registry.lookup_custom(gr("pods"), "x", namespaced=True) is None
    assert len(registry) == 0 and registry.series_count == 0


def test_digest_keeps_shapes_not_label_sets() -> None:
    digest = SeriesDigest.of(
        {"__name__": f"m{i % 3}", "namespace": f"ns{i % 7}", "pod": f"pod-{i}"}
        for i in range(10_000))
    digest.add({"pod": "nameless"})
    assert digest.count == 10_001
    assert digest.shapes() == tuple((f"m{i}", frozenset({"namespace", "pod"})) for i in range(3))
    # the same label-name set is one object, shared by every name
    assert len({id(labels) for _, labels in digest.shapes()}) == 1


def test_registry_from_shapes_equals_registry_from_every_series(compiled: CompiledConfig) -> None:
    many = {q: [dict(s, replica=str(r)) for r in range(50) for s in series]
            for q, series in UPSTREAM_SERIES.items()}
    a = build_registry(compiled, many)
    b = build_registry(compiled, {q: [dict(s, replica="0") for s in series]
                                  for q, series in UPSTREAM_SERIES.items()})
    assert a.custom_metrics() == b.custom_metrics()
    assert a.series_count == 500 and b.series_count == 10


UTF8_NAMES = r"""
rules:
- seriesQuery: '{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: '{namespace!="",service!=""}'
  resources: {overrides: {namespace: {resource: namespace}, service: {resource: service}}}
  metricsQuery: 'sum(up{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


def test_a_series_name_that_cannot_be_pasted_is_never_listed() -> None:
    """Prometheus 3 accepts any UTF-8 metric name; one a rule would paste as `<<.Series>>` and that
    is no classic name could only answer errors (and must never reach PromQL), so discovery
    leaves it out and says which; a rule that never pastes the name still lists it."""
    compiled = compile_config(parse_config(UTF8_NAMES, source="utf8.yaml"))
    hostile = 'jobs{namespace="other"} or jobs'
    registry = build_registry(compiled, {
        '{namespace!="",pod!=""}': [{"__name__": name, "namespace": "a", "pod": "p"}
                                    for name in ("jobs", hostile, "http.requests")],
        '{namespace!="",service!=""}': [{"__name__": "otel.up", "namespace": "a", "service": "s"}],
        '{queue!=""}': [{"__name__": name, "queue": "q"} for name in ("depth", "queue.depth")]})
    assert sorted(i.metric for i in registry.custom_metrics() if str(i.resource) == "pods") == ["jobs"]
    assert registry.lookup_custom(gr("services"), "otel.up", namespaced=True) is not None
    assert registry.external_metrics() == (ExternalMetricInfo(metric="depth"),)
    assert registry.unpastable_series == ("http.requests", hostile, "queue.depth")
