"""PromQL rendering: prometheus-adapter's metrics_query_test.go and series_registry_test.go cases
(same answers), the selector -> matcher table, and our safety rules (escaping, label-name
validation, size bound)."""

from __future__ import annotations

import pytest

from adapter.rules import gotemplate, query
from adapter.rules.query import build_query
from adapter.rules.template_args import QUERY_FIELDS
from adapter.rules.resources import GroupResource
from kubecommon.selectors import parse_selector
from tests.unit.adapter.rules.helpers import DEFAULT_CONFIG_KUBE_PREFIX, REGISTRY_TEST_TABLE, compile_text


class Identity:
    """metrics_query_test.go resourceConverterMock: a resource's label is its `.Resource`."""

    def label_for(self, resource: GroupResource) -> str:
        return resource.resource


RES = GroupResource("group", "resource")


def build(template: str, *, series: str = "", resource: GroupResource | None = RES, namespace: str = "",
          names: list[str] | None = None, extra: list[str] | None = None, selector: str = "",
          namespaced: bool = True, group_by: str = "", group_by_slice: list[str] | None = None) -> str:
    tmpl = gotemplate.parse(template, fields=QUERY_FIELDS)
    return build_query(
        tmpl, Identity(), series=series, metric_selector=parse_selector(selector),
        namespace=namespace or None, resource=resource, names=names if names is not None else [],
        extra_group_by=extra or [], add_namespace=namespaced, group_by=group_by,
        group_by_slice=group_by_slice or [],
    )


@pytest.mark.parametrize(("kwargs", "expected"), [
    pytest.param(dict(template="series <<.Series>>", series="foo"), "series foo", id="series"),
    pytest.param(dict(template="<<.LabelMatchers>>", names=["bar", "baz"]), 'resource=~"bar|baz"',
                 id="multiple LabelMatchers values"),
    pytest.param(dict(template="<<.LabelMatchers>>", names=["bar"]), 'resource="bar"',
                 id="single LabelMatchers value"),
    pytest.param(dict(template="<<.LabelMatchers>>", names=["bar"], selector="metric1=value1"),
                 'metric1="value1",resource="bar"', id="LabelMatchers with additional metrics filter"),
    pytest.param(dict(template='<<index .LabelValuesByName "resource">>', names=["bar"]), "bar",
                 id="single LabelValuesByName value"),
    pytest.param(dict(template='<<index .LabelValuesByName "resource">>', names=["bar", "baz"]), "bar|baz",
                 id="multiple LabelValuesByName values"),
    pytest.param(dict(template='<<index .LabelValuesByName "namespaces">> <<index .LabelValuesByName "resource">>',
                      namespace="default", names=["bar", "baz"]), "default bar|baz",
                 id="multiple LabelValuesByName values with namespace"),
    pytest.param(dict(template="<<.GroupBy>>"), "resource", id="single GroupBy value"),
    pytest.param(dict(template="<<.GroupBy>>", extra=["extra", "groups"]), "resource,extra,groups",
                 id="multiple GroupBy values"),
    pytest.param(dict(template="<<.GroupBySlice>>"), "[resource]", id="single GroupBySlice value"),
    pytest.param(dict(template="<<.GroupBySlice>>", extra=["extra", "groups"]), "[resource extra groups]",
                 id="multiple GroupBySlice values"),
])
def test_build_selector_upstream_cases(kwargs: dict, expected: str) -> None:
    assert build(**kwargs) == expected


@pytest.mark.parametrize(("kwargs", "expected"), [
    pytest.param(dict(template="series <<.Series>>", series="foo"), "series foo", id="series"),
    pytest.param(dict(template="<<.GroupBy>>", group_by="foo"), "foo", id="single GroupBy value"),
    pytest.param(dict(template="<<.GroupBySlice>>", group_by_slice=["foo", "bar"]), "[foo bar]",
                 id="multiple GroupBySlice values"),
    pytest.param(dict(template='<<index .LabelValuesByName "namespaces">> <<.GroupBySlice>>',
                      namespace="default", group_by_slice=["foo", "bar"]), "default [foo bar]",
                 id="multiple GroupBySlice values with namespace"),
    pytest.param(dict(template='<<index .LabelValuesByName "namespaces">> <<.GroupBySlice>>',
                      namespace="default", group_by_slice=["foo", "bar"], namespaced=False), " [foo bar]",
                 id="multiple GroupBySlice values with namespace disabled"),
    pytest.param(dict(template="<<.LabelMatchers>>", selector="foo=bar"), 'foo="bar"',
                 id="single LabelMatchers value"),
    pytest.param(dict(template="<<.LabelMatchers>>", selector="foo=bar", namespace="default"),
                 'foo="bar",namespaces="default"', id="single LabelMatchers value with namespace"),
    pytest.param(dict(template="<<.LabelMatchers>>", selector="foo=bar,qux in (bar,baz)"),
                 'foo="bar",qux=~"bar|baz"', id="multiple LabelMatchers value"),
    pytest.param(dict(template="<<.LabelValuesByName>>", selector="foo=bar"), "map[foo:bar]",
                 id="single LabelValuesByName value"),
    pytest.param(dict(template="<<.LabelValuesByName>>", selector="foo in (bar,baz)"), "map[foo:bar|baz]",
                 id="single LabelValuesByName with multiple selectors"),
])
def test_build_external_selector_upstream_cases(kwargs: dict, expected: str) -> None:
    assert build(resource=None, **kwargs) == expected


@pytest.mark.parametrize(("selector", "expected"), [
    pytest.param("foo=bar", 'foo="bar"', id="equals"),
    pytest.param("foo==bar", 'foo="bar"', id="double equals"),
    pytest.param("foo!=bar", 'foo!="bar"', id="not equals"),
    pytest.param("foo in (bar)", 'foo=~"bar"', id="in one value is a regex matcher"),
    pytest.param("foo in (c,a,b)", 'foo=~"a|b|c"', id="in values sorted"),
    pytest.param("foo notin (bar)", 'foo!~"bar"', id="notin one value"),
    pytest.param("foo notin (a,b)", 'foo!~"a|b"', id="notin values"),
    pytest.param("foo", 'foo!=""', id="exists"),
    pytest.param("!foo", 'foo=""', id="does not exist"),
    pytest.param("b=1,a=2", 'a="2",b="1"', id="sorted by key"),
])
def test_selector_operators_map_to_promql_matchers(selector: str, expected: str) -> None:
    assert build("<<.LabelMatchers>>", resource=None, selector=selector) == expected


@pytest.mark.parametrize("selector", [pytest.param("foo>1", id="gt"), pytest.param("foo<1", id="lt")])
def test_greater_and_less_than_are_rejected_as_client_errors(selector: str) -> None:
    with pytest.raises(query.UnsupportedSelector, match="operator not supported by prometheus") as err:
        build("<<.LabelMatchers>>", resource=None, selector=selector)
    assert err.value.client_error


def test_label_values_by_name_joins_values_whatever_the_operator() -> None:
    got = build("<<.LabelValuesByName>>", resource=GroupResource("", "pods"), namespace="ns1",
                names=["p1", "p2"], selector="env notin (dev,test)")
    assert got == "map[env:dev|test namespaces:ns1 pods:p1|p2]"


@pytest.mark.parametrize(("kwargs", "expected"), [
    pytest.param(dict(names=["ip-10-0-0-1.ec2.internal", "b"]), r'resource=~"ip-10-0-0-1\\.ec2\\.internal|b"',
                 id="names are regex-escaped inside =~"),
    pytest.param(dict(names=["a.b"]), 'resource="a.b"', id="a single name is an exact matcher"),
    pytest.param(dict(names=['we"ird\\']), r'resource="we\"ird\\"', id="values are Go-quoted"),
    pytest.param(dict(names=["x"], selector="app in (a.b,c)"), r'app=~"a\\.b|c",resource="x"',
                 id="selector values are regex-escaped"),
    pytest.param(dict(names=["x"], namespace='evil"}or{'), r'namespaces="evil\"}or{",resource="x"',
                 id="namespace is quoted, never pasted"),
])
def test_request_text_is_quoted_and_escaped(kwargs: dict, expected: str) -> None:
    assert build("<<.LabelMatchers>>", **kwargs) == expected


def test_selector_key_that_is_no_label_name_is_rejected() -> None:
    with pytest.raises(query.InvalidLabelName, match="app.kubernetes.io/name"):
        build("<<.LabelMatchers>>", resource=None, selector="app.kubernetes.io/name=web")


def test_label_values_by_name_refuses_values_that_could_break_out_of_the_template() -> None:
    with pytest.raises(query.InvalidLabelValue):
        build("x{pod='<<index .LabelValuesByName \"resource\">>'}", names=["a'}or vector(1)"])
    assert build("<<.LabelMatchers>>", names=["a'b"]) == "resource=\"a'b\""  # quoted: fine


@pytest.mark.parametrize("template", [
    pytest.param('<<with .>>x{pod="<<index .LabelValuesByName "resource">>"}<<end>>', id="with dot"),
    pytest.param('<<with $>>x{pod="<<.LabelValuesByName.resource>>"}<<end>>', id="with dollar"),
    pytest.param('<<$r := .>>x{pod="<<index $r.LabelValuesByName "resource">>"}', id="root in a variable"),
    pytest.param('<<with .Series>><<with $>>x{pod="<<.LabelValuesByName.resource>>"}<<end>><<end>>',
                 id="dollar inside with"),
    pytest.param('x{pod="<<.>>"}', id="the whole root printed"),
    pytest.param('x{pod="<<printf "%v" $>>"}', id="the whole root through printf"),
])
def test_label_values_by_name_is_guarded_however_the_template_reaches_it(template: str) -> None:
    """The root handed on whole (`with .`, `$r := .`, `<<.>>`) still reads .LabelValuesByName:
    a request's object name must not be pasted into the query raw through it."""
    with pytest.raises(query.InvalidLabelValue):
        build(template, names=['a"}or vector(1)#'])
    assert build('<<with .>>x{pod="<<index .LabelValuesByName "resource">>"}<<end>>',
                 names=["web-0"]) == 'x{pod="web-0"}'


def test_query_size_is_bounded() -> None:
    names = [f"pod-{i:05d}" for i in range(20000)]
    with pytest.raises(query.QueryTooLarge, match="limit") as err:
        build("<<.LabelMatchers>>", names=names)
    assert err.value.client_error
    assert len(build("<<.LabelMatchers>>", names=names[:100])) < 128 * 1024


def test_empty_query_and_template_failures_are_rule_errors() -> None:
    with pytest.raises(query.EmptyQuery, match="empty query produced by metrics query template") as err:
        build("", names=["p"])
    assert not err.value.client_error
    with pytest.raises(query.TemplateFailed):
        build("<<index .GroupBySlice 5>>", names=["p"])


@pytest.mark.parametrize("series", [
    pytest.param('up{a="b"} or vector(1)', id="selector and operator"),
    pytest.param("x) or (vector(1)", id="parentheses"),
    pytest.param("caf\u00e9_total", id="utf-8 name"),
    pytest.param("1up", id="leading digit"),
])
def test_a_series_name_that_is_no_plain_metric_name_is_not_pasted_into_the_query(series: str) -> None:
    """Prometheus 3 accepts any UTF-8 metric name (an exporter in any tenant can publish one),
    while `<<.Series>>{...}` is only a selector for a classic name: refuse to build the query,
    as a rule/data problem, instead of sending PromQL whose structure the name chose."""
    with pytest.raises(query.InvalidSeriesName) as err:
        build("sum(<<.Series>>{<<.LabelMatchers>>})", series=series, names=["p"])
    assert not err.value.client_error
    assert build("constant{<<.LabelMatchers>>}", series=series, names=["p"]) == 'constant{resource="p"}'


@pytest.mark.parametrize("series", ["up", "http_requests_total", "node:cpu:rate5m", "_x"])
def test_classic_metric_names_render(series: str) -> None:
    assert build("<<.Series>>{<<.LabelMatchers>>}", series=series, names=["p"]) == f'{series}{{resource="p"}}'


# series_registry_test.go: DefaultConfig(1m, "kube_") + its series, 12 exact queries.
SERIES_PER_RULE = [
    [("container_some_time_seconds_total", {"pod", "namespace", "container"})],
    [("container_some_count_total", {"pod", "namespace", "container"})],
    [("container_some_usage", {"pod", "namespace", "container"})],
    [("node_gigawatts", {"kube_node"}), ("service_proxy_packets", {"kube_service", "kube_namespace"})],
    [("ingress_hits_total", {"kube_ingress", "kube_service", "kube_pod", "kube_namespace"}),
     ("volume_claims_total", {"kube_persistentvolume"})],
    [("work_queue_wait_seconds_total", {"kube_deployment", "kube_namespace"}),
     ("node_fan_seconds_total", {"kube_node"})],
]


def _registry() -> dict:
    compiled = compile_text(DEFAULT_CONFIG_KUBE_PREFIX, REGISTRY_TEST_TABLE)
    out = {}
    for rule, series in zip(compiled.custom, SERIES_PER_RULE, strict=True):
        for name, labels in series:
            for resource in rule.resources_for(sorted(labels)):
                out[(resource, rule.expand_name(name))] = (rule, name)
    return out


@pytest.mark.parametrize(("resource", "metric", "namespace", "names", "selector", "expected"), [
    pytest.param("pods", "some_usage", "somens", ["somepod1", "somepod2"], "",
                 'sum(container_some_usage{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}) by (pod)',
                 id="container metrics gauge / multiple resource names"),
    pytest.param("pods", "some_count", "somens", ["somepod1", "somepod2"], "",
                 'sum(rate(container_some_count_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
                 id="container metrics counter"),
    pytest.param("pods", "some_time", "somens", ["somepod1", "somepod2"], "",
                 'sum(rate(container_some_time_seconds_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
                 id="container metrics seconds counter"),
    pytest.param("service", "ingress_hits", "somens", ["somesvc"], "",
                 'sum(rate(ingress_hits_total{kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
                 id="namespaced metrics counter / multidimensional (service)"),
    pytest.param("service", "ingress_hits", "somens", ["somesvc"], "param1=value1",
                 'sum(rate(ingress_hits_total{param1="value1",kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
                 id="multidimensional (service) / selection using labels"),
    pytest.param("ingress.extensions", "ingress_hits", "somens", ["someingress"], "",
                 'sum(rate(ingress_hits_total{kube_namespace="somens",kube_ingress="someingress"}[1m])) by (kube_ingress)',
                 id="namespaced metrics counter / multidimensional (ingress)"),
    pytest.param("pod", "ingress_hits", "somens", ["somepod"], "",
                 'sum(rate(ingress_hits_total{kube_namespace="somens",kube_pod="somepod"}[1m])) by (kube_pod)',
                 id="namespaced metrics counter / multidimensional (pod)"),
    pytest.param("service", "service_proxy_packets", "somens", ["somesvc"], "",
                 'sum(service_proxy_packets{kube_namespace="somens",kube_service="somesvc"}) by (kube_service)',
                 id="namespaced metrics gauge"),
    pytest.param("deployment.extensions", "work_queue_wait", "somens", ["somedep"], "",
                 'sum(rate(work_queue_wait_seconds_total{kube_namespace="somens",kube_deployment="somedep"}[1m])) by (kube_deployment)',
                 id="namespaced metrics seconds counter"),
    pytest.param("node", "node_gigawatts", "", ["somenode"], "",
                 'sum(node_gigawatts{kube_node="somenode"}) by (kube_node)', id="root scoped metrics gauge"),
    pytest.param("persistentvolume", "volume_claims", "", ["somepv"], "",
                 'sum(rate(volume_claims_total{kube_persistentvolume="somepv"}[1m])) by (kube_persistentvolume)',
                 id="root scoped metrics counter"),
    pytest.param("node", "node_fan", "", ["somenode"], "",
                 'sum(rate(node_fan_seconds_total{kube_node="somenode"}[1m])) by (kube_node)',
                 id="root scoped metrics seconds counter"),
])
def test_series_registry_queries(resource: str, metric: str, namespace: str, names: list[str],
                                 selector: str, expected: str) -> None:
    parsed = GroupResource.parse(resource)
    normalised = REGISTRY_TEST_TABLE.normalize(parsed.group, parsed.resource)
    assert normalised is not None
    rule, series = _registry()[(normalised, metric)]
    got = query.render_custom(rule, series_name=series, resource=normalised, namespace=namespace or None,
                              names=names, metric_selector=parse_selector(selector))
    assert got == expected


def test_resource_rules_render_container_and_node_queries() -> None:
    rules = compile_text(DEFAULT_CONFIG_KUBE_PREFIX).resource
    assert rules is not None
    assert query.render_resource(rules, resource="cpu", level="container", namespace="some-ns",
                                 names=["pod1", "pod3"]) == (
        'sum(rate(container_cpu_usage_seconds_total{namespace="some-ns",pod=~"pod1|pod3"}[1m])) by (pod,container)')
    assert query.render_resource(rules, resource="memory", level="node", namespace=None,
                                 names=["node1", "node2"]) == (
        "sum(container_memory_working_set_bytes{instance=~\"node1|node2\",id='/'}) by (instance)")
    labels = query.result_labels(rules, resource="cpu", level="container")
    assert (labels.object_label, labels.namespace_label, labels.container_label) == ("pod", "namespace", "container")
    assert query.result_labels(rules, resource="memory", level="node").object_label == "instance"


def test_render_custom_without_names_selects_every_object_but_still_groups() -> None:
    rule = compile_text(DEFAULT_CONFIG_KUBE_PREFIX).custom[2]
    got = query.render_custom(rule, series_name="container_x", resource=GroupResource("", "pods"),
                              namespace="ns", names=None, metric_selector=parse_selector(""))
    assert got == 'sum(container_x{namespace="ns",container!="POD"}) by (pod)'


def test_external_rule_namespace_handling() -> None:
    text = """
externalRules:
- seriesQuery: 'queue_depth{name!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
- seriesQuery: 'queue_depth{name!=""}'
  resources: {namespaced: false}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (name)
- seriesQuery: 'queue_depth{name!=""}'
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>})
"""
    namespaced, global_, unmapped = compile_text(text).external
    sel = parse_selector("name=q1")
    assert query.render_external(namespaced, series_name="queue_depth", namespace="shop", metric_selector=sel) == (
        'sum(queue_depth{name="q1",namespace="shop"}) by ()')
    assert query.render_external(global_, series_name="queue_depth", namespace="shop", metric_selector=sel) == (
        'sum(queue_depth{name="q1"}) by (name)')
    with pytest.raises(query.MissingLabelMapping, match="no generic resource label form specified"):
        query.render_external(unmapped, series_name="queue_depth", namespace="shop", metric_selector=sel)
