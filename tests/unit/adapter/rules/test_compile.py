"""Compiling rules: prometheus-adapter's start-time checks (NamersFromConfig, NewReMatcher,
NewResourceConverter, the `as` default) with errors naming file, rule, field, line and seriesQuery;
series filters (regex_matcher_test.go) and metric naming (metric_namer.go, Go Expand rules)."""

from __future__ import annotations

import pytest

from adapter.config import ConfigError
from adapter.rules.compile import RuleKind
from adapter.rules.resources import GroupResource
from tests.unit.adapter.rules.helpers import compile_text


def one_rule(body: str, *, external: bool = False):  # type: ignore[no-untyped-def]
    key = "externalRules" if external else "rules"
    compiled = compile_text(f"{key}:\n- seriesQuery: 'up{{job!=\"\"}}'\n{body}")
    return (compiled.external if external else compiled.custom)[0]


# regex_matcher_test.go
def test_re_matcher_is() -> None:
    rule = one_rule("  seriesFilters: [{is: 'my_.*'}]\n")
    assert rule.accepts_series("my_label") and not rule.accepts_series("your_label")


def test_re_matcher_is_not() -> None:
    rule = one_rule("  seriesFilters: [{isNot: 'my_.*'}]\n")
    assert not rule.accepts_series("my_label") and rule.accepts_series("your_label")


def test_enforces_is_or_is_not_but_not_both() -> None:
    with pytest.raises(ConfigError, match=r'cannot have both an `is` \("my_.\*"\) and `isNot` \("your_.\*"\)'):
        one_rule("  seriesFilters: [{is: 'my_.*', isNot: 'your_.*'}]\n")


def test_filters_are_unanchored_and_all_must_pass() -> None:
    rule = one_rule("  seriesFilters: [{is: total}, {isNot: '^container_'}]\n  name: {matches: '_(.*)_'}\n")
    assert rule.accepts_series("http_requests_total")
    assert not rule.accepts_series("container_cpu_total")  # isNot
    assert not rule.accepts_series("requeststotal")  # implicit name.matches filter
    assert rule.metric_name("container_cpu_total") is None


@pytest.mark.parametrize(("matches", "as_", "series", "expected"), [
    pytest.param("^(.*)_total$", "${1}_per_second", "http_requests_total", "http_requests_per_second",
                 id="docs: braces"),
    pytest.param("^(.*)_total", "", "http_requests_total", "http_requests", id="one group defaults to $1"),
    pytest.param("^http_requests_total$", "", "http_requests_total", "http_requests_total",
                 id="no group defaults to $0"),
    pytest.param("_total$", "", "http_requests_total", "_total", id="unanchored match without groups"),
    pytest.param("", "", "anything", "anything", id="empty matches is .*"),
    pytest.param("^container_(.*)_seconds_total$", "", "container_cpu_usage_seconds_total", "cpu_usage",
                 id="config-gen container rule"),
    pytest.param("^(.*)_total$", "$1_per_second", "http_requests_total", "",
                 id="Go Expand: $1_per_second is the missing group 1_per_second"),
    pytest.param("^(?P<base>.*)_count$", "", "jobs_count", "jobs", id="named group counts for the default"),
    pytest.param("^(?P<base>.*)_count$", "$base-n", "jobs_count", "jobs-n", id="named group by name"),
    pytest.param("^(a)(b)?", "[$2][$$][${x}][$][$0]", "a", "[][$][][$][a]", id="unmatched, $$, malformed"),
    pytest.param(".*", "fixed", "x", "fixed", id="fixed as"),
    pytest.param("^.*_queue_(length|size)$", "$0", "a_queue_size", "a_queue_size", id="explicit $0 with a group"),
])
def test_metric_naming(matches: str, as_: str, series: str, expected: str) -> None:
    rule = one_rule(f"  name: {{matches: '{matches}', as: '{as_}'}}\n")
    assert rule.expand_name(series) == expected
    assert rule.metric_name(series) == (expected or None)


def test_two_groups_without_as_is_an_error_naming_rule_and_series_query() -> None:
    with pytest.raises(ConfigError) as err:
        compile_text("rules:\n- seriesQuery: 'a_total'\n  name:\n    matches: '^(a)_(.*)$'\n")
    text = str(err.value)
    assert "test.yaml: rules[0].name.as (line 3)" in text
    assert "must specify an 'as' value for name matcher" in text
    assert "seriesQuery 'a_total'" in text


@pytest.mark.parametrize(("body", "fragments"), [
    pytest.param("  name: {matches: '(unclosed'}\n", ["rules[0].name.matches", "error parsing regexp"],
                 id="bad name regex"),
    pytest.param("  seriesFilters: [{isNot: '[z-a]'}]\n", ["rules[0].seriesFilters[0].isNot", "error parsing regexp"],
                 id="bad filter regex"),
    pytest.param("  seriesFilters: [{}]\n", ["seriesFilters[0]", "must have either an `is` or `isNot`"],
                 id="empty filter"),
    pytest.param("  name: {matches: '(a)\\1'}\n", ["invalid escape sequence"], id="RE2 has no backreferences"),
    pytest.param("  resources: {template: 'kube_<<.Group>>'}\n",
                 ["rules[0].resources.template", "must include at least `{{.Resource}}` in the label template"],
                 id="template without Resource"),
    pytest.param("  resources: {template: '${.Resource}$'}\n", ["must include at least `{{.Resource}}`"],
                 id="obsolete dollar delimiters"),
    pytest.param("  resources: {template: '<<.Kind>>'}\n", ["resources.template", "can't evaluate field Kind"],
                 id="unknown field in label template"),
    pytest.param("  metricsQuery: 'sum(<<.Series>>'\n  name: {}\n  resources: {}\n  seriesFilters: []\n"
                 "  metricsQuery: x\n", ["duplicate key 'metricsQuery'"], id="duplicate key"),
    pytest.param("  metricsQuery: 'sum(<<.Foo>>)'\n", ["rules[0].metricsQuery", "can't evaluate field Foo"],
                 id="unknown field in metricsQuery"),
    pytest.param("  metricsQuery: 'sum(<<if .Series>>x)'\n", ["rules[0].metricsQuery", "missing <<end>>"],
                 id="unterminated if"),
    pytest.param("  metricsQuery: '<<join .GroupBySlice>>x<<nope 1>>'\n", ['function "nope" not defined'],
                 id="unknown function"),
    pytest.param("  resources: {overrides: {pod: {group: apps}}}\n",
                 ["rules[0].resources.overrides.pod.resource", "`resource` is required"], id="override without resource"),
])
def test_rule_errors_name_rule_field_and_reason(body: str, fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        one_rule(body)
    for fragment in fragments:
        assert fragment in str(err.value)


def test_empty_series_query_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"rules\[0\]\.seriesQuery.*seriesQuery is required"):
        compile_text("rules:\n- metricsQuery: up\n")


def test_problems_from_every_rule_are_collected() -> None:
    text = ("rules:\n- seriesQuery: a\n  name: {matches: '('}\n"
            "externalRules:\n- seriesQuery: b\n  resources: {template: x}\n"
            "resourceRules:\n  cpu: {containerQuery: '<<.Nope>>'}\n")
    with pytest.raises(ConfigError) as err:
        compile_text(text)
    assert [p.location for p in err.value.problems] == ["rules[0]", "externalRules[0]", "resourceRules.cpu"]


def test_compiled_rule_interface() -> None:
    compiled = compile_text(
        "rules:\n- seriesQuery: 'http_requests_total{namespace!=\"\"}'\n"
        "  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}},"
        " template: 'kube_<<.Group>>_<<.Resource>>'}\n"
        "  name: {matches: '^(.*)_total$', as: '${1}_per_second'}\n  metricsQuery: x\n"
        "externalRules:\n- seriesQuery: q\n  metricsQuery: x\n  resources: {namespaced: false}\n"
    )
    rule, ext = compiled.custom[0], compiled.external[0]
    assert str(rule.ref) == "test.yaml: rules[0]" and rule.kind is RuleKind.CUSTOM
    assert rule.series_query == 'http_requests_total{namespace!=""}'
    assert rule.metric_name("http_requests_total") == "http_requests_per_second"
    assert rule.resources_for({"namespace": "a", "pod": "b", "kube_apps_deployment": "d", "method": "GET"}) == (
        GroupResource("", "namespaces"), GroupResource("", "pods"), GroupResource("apps", "deployments"))
    assert rule.label_for(GroupResource("", "pods")) == "pod"
    assert rule.label_for(GroupResource("apps", "statefulsets")) == "kube_apps_statefulset"
    assert rule.resource_for_label("kube_batch_job") == GroupResource("batch", "jobs")
    assert rule.resource_for_label("kube_x_unknownthing") is None
    assert ext.kind is RuleKind.EXTERNAL and ext.namespaced is False and rule.namespaced is True
    assert compiled.series_queries == ('http_requests_total{namespace!=""}', "q")
