"""Warnings for rules that load but fail or mislead at query time."""

from __future__ import annotations

import pytest

from adapter.rules.lint import Severity, lint_config
from tests.unit.adapter.rules.helpers import compile_text


def warnings_for(text: str) -> list[str]:
    return [f"{f.ref.location}.{f.field}: {f.message}" for f in lint_config(compile_text(text))
            if f.severity is Severity.WARNING]


GOOD = "  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}\n"


@pytest.mark.parametrize(("body", "fragment"), [
    pytest.param("rules:\n- seriesQuery: a\n" + GOOD, "rules[0].metricsQuery: metricsQuery is empty",
                 id="empty metricsQuery"),
    pytest.param("rules:\n- seriesQuery: a\n  metricsQuery: x\n  resources: {overrides: {pod: {resource: pod}}}\n",
                 "rules[0].resources: nothing maps the `namespaces` resource", id="pods without namespace mapping"),
    pytest.param("rules:\n- seriesQuery: a\n  metricsQuery: x\n", "rules[0].resources: no overrides and no template",
                 id="custom rule mapping nothing"),
    pytest.param("externalRules:\n- seriesQuery: a\n  metricsQuery: x\n",
                 "externalRules[0].resources: nothing maps the `namespaces` resource to a label and `namespaced` is not false",
                 id="external rule without namespace mapping"),
    pytest.param("rules:\n- seriesQuery: a\n  metricsQuery: 'x by ({{ .GroupBy }})'\n" + GOOD,
                 "contains `{{ ... }}`", id="wrong delimiters"),
    pytest.param("rules:\n- seriesQuery: a\n  metricsQuery: x\n  name: {matches: '^(.*)_seconds', as: '$1_latency'}\n" + GOOD,
                 "rules[0].name.as: $1_latency refers to a capture group '1_latency'", id="Go Expand trap"),
    pytest.param("rules:\n- seriesQuery: a\n  metricsQuery: 'x{p=\"<<index .LabelValuesByName \"pod\">>\"}'\n"
                 "  resources: {template: 'kube_<<.Resource>>'}\n",
                 ".LabelValuesByName 'pod': no resource maps to label 'pod'", id="index key never mapped"),
    pytest.param("rules:\n- seriesQuery: a\n  metricsQuery: x\n  resources: {overrides: {exported-ns: {resource: namespace}}}\n",
                 "'exported-ns' is not a valid Prometheus label name", id="invalid override label"),
    pytest.param("resourceRules:\n  cpu: {containerQuery: x, nodeQuery: y, containerLabel: c}\n  memory: {}\n",
                 "resourceRules.memory.containerQuery: containerQuery is empty", id="empty resource query"),
    pytest.param("resourceRules:\n  cpu: {containerQuery: x, nodeQuery: y, containerLabel: c}\n  memory: {}\n",
                 "resourceRules.cpu.resources: nothing maps pods to a label", id="resource rule without pod mapping"),
])
def test_runtime_problems_are_flagged(body: str, fragment: str) -> None:
    assert any(fragment in w for w in warnings_for(body)), warnings_for(body)


def test_a_sound_rule_has_no_warnings() -> None:
    text = ("rules:\n- seriesQuery: 'http_requests_total{namespace!=\"\",pod!=\"\"}'\n" + GOOD +
            "  name: {matches: '^(.*)_total$', as: '${1}_per_second'}\n"
            "  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)\n"
            "- seriesQuery: 'node_up{node!=\"\"}'\n  resources: {overrides: {node: {resource: node}}}\n"
            "  metricsQuery: x{<<.LabelMatchers>>}\n"
            "externalRules:\n- seriesQuery: q\n  resources: {namespaced: false}\n"
            "  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>})\n")
    assert lint_config(compile_text(text)) == ()


def test_queries_ignoring_label_matchers_get_a_note() -> None:
    findings = lint_config(compile_text("rules:\n- seriesQuery: a\n  metricsQuery: sum(a) by (pod)\n" + GOOD))
    assert [(f.severity, f.field) for f in findings] == [(Severity.NOTE, "metricsQuery")]
