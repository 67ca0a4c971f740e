"""Strict loading of the rule file: what prometheus-adapter (yaml.UnmarshalStrict) accepts and
rejects, with errors naming file, rule, field and line, and every problem reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapter.config import ConfigError, load_config, parse_config
from adapter.config.load import parse_duration
from adapter.config.model import GroupResourceRef, LabelOverride

FULL = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  seriesFilters:
  - isNot: "^x$"
  - is: "_total$"
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {group: "", resource: pod}
    template: <<.Resource>>
  name:
    matches: "^(.*)_total$"
    as: "${1}_per_second"
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)
externalRules:
- seriesQuery: queue_depth
  resources: {namespaced: false}
  metricsQuery: sum(<<.Series>>)
resourceRules:
  cpu:
    containerQuery: a
    nodeQuery: b
    resources: {overrides: {node: {resource: node}}}
    containerLabel: container
  memory: {containerQuery: c, nodeQuery: d, containerLabel: container}
  window: 1m30s
"""


def test_every_field_is_read_into_the_model() -> None:
    cfg = parse_config(FULL, source="full.yaml")
    rule = cfg.rules[0]
    assert rule.series_query == 'http_requests_total{namespace!="",pod!=""}'
    assert [(f.is_, f.is_not) for f in rule.series_filters] == [("", "^x$"), ("_total$", "")]
    assert rule.resources.overrides == (
        LabelOverride(label="namespace", target=GroupResourceRef(resource="namespace")),
        LabelOverride(label="pod", target=GroupResourceRef(group="", resource="pod")),
    )
    assert rule.resources.template == "<<.Resource>>"
    assert rule.resources.namespaced is None
    assert (rule.name.matches, rule.name.as_) == ("^(.*)_total$", "${1}_per_second")
    assert rule.metrics_query.startswith("sum(rate(")
    assert cfg.external_rules[0].resources.namespaced is False
    rr = cfg.resource_rules
    assert rr is not None and rr.window == "1m30s" and rr.window_seconds == 90.0
    assert (rr.cpu.container_query, rr.cpu.node_query, rr.cpu.container_label) == ("a", "b", "container")
    assert rr.memory.resources.overrides == ()
    assert cfg.source == "full.yaml"


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("", dict(rules=0, external=0, resource=False), id="empty file"),
    pytest.param("rules:\nexternalRules: null\n", dict(rules=0, external=0, resource=False), id="null lists"),
    pytest.param("rules:\n- seriesQuery: up\n  name: {matches: null, as: ''}\n  seriesFilters: []\n",
                 dict(rules=1, external=0, resource=False), id="null and empty values keep defaults"),
])
def test_empty_and_null_values_load_like_yaml_v2(text: str, expected: dict) -> None:
    cfg = parse_config(text)
    assert (len(cfg.rules), len(cfg.external_rules), cfg.resource_rules is not None) == (
        expected["rules"], expected["external"], expected["resource"])


def test_scalars_in_string_fields_are_taken_as_written() -> None:
    cfg = parse_config("rules:\n- seriesQuery: 123\n  metricsQuery: true\n")
    assert (cfg.rules[0].series_query, cfg.rules[0].metrics_query) == ("123", "true")


def test_yaml_merge_keys_are_supported() -> None:
    text = "base: &b {seriesQuery: up, metricsQuery: up}\n"
    with pytest.raises(ConfigError, match="unknown field 'base'"):
        parse_config(text + "rules: [{<<: *b}]\n")
    cfg = parse_config("rules:\n- &b {seriesQuery: up, metricsQuery: up}\n- <<: *b\n  name: {as: x}\n")
    assert cfg.rules[1].series_query == "up" and cfg.rules[1].name.as_ == "x"


@pytest.mark.parametrize(("text", "fragments"), [
    pytest.param("Rules: []\n", ["f.yaml: Rules (line 1)", "unknown field 'Rules'", "did you mean 'rules'"],
                 id="unknown top-level key"),
    pytest.param("rules:\n- seriesQuery: up\n  name:\n    as: x\n    metricsQuery: up\n",
                 ["rules[0].name.metricsQuery (line 5)", "unknown field 'metricsQuery'", "field metricsQuery not found in type config.NameMapping",
                  "check its indentation"], id="key indented under the wrong parent"),
    pytest.param("rules:\n- seriesQuery: up\n  seriesQuery: down\n",
                 ["rules[0].seriesQuery (line 3)", "duplicate key 'seriesQuery'"], id="duplicate key"),
    pytest.param("rules:\n- seriesQuery: up\n  resources:\n    overrides:\n      pod: {resource: pod}\n      pod: {resource: pod}\n",
                 ["rules[0].resources.overrides.pod (line 6)", "duplicate key 'pod'"], id="duplicate override"),
    pytest.param("rules: {seriesQuery: up}\n", ["rules (line 1)", "expected a list of DiscoveryRule, got a mapping"],
                 id="mapping where a list is expected"),
    pytest.param("rules:\n- seriesQuery: [a]\n", ["rules[0].seriesQuery (line 2)", "expected a string, got a list"],
                 id="list where a string is expected"),
    pytest.param("externalRules:\n- resources: {namespaced: 'false'}\n",
                 ["externalRules[0].resources.namespaced (line 2)", "expected true or false, got 'false'"],
                 id="quoted bool"),
    pytest.param("resourceRules:\n  window: 5\n", ["resourceRules.window (line 2)", "not a valid duration string: '5'"],
                 id="duration without unit"),
    pytest.param("resourceRules:\n  cpu:\n    containerQuery: a\n    podQuery: b\n",
                 ["resourceRules.cpu.podQuery (line 4)", "field podQuery not found in type config.ResourceRule"],
                 id="unknown key in a resource rule"),
    pytest.param('rules:\n- metricsQuery: "sum(x{a!="POD"})"\n', ["f.yaml: rules[0].metricsQuery (line 2)", "invalid YAML", "unescaped \""],
                 id="unescaped double quote (issue 697)"),
    pytest.param("- 1\n", ["expected a mapping (MetricsDiscoveryConfig), got a list"], id="document is a list"),
])
def test_shape_errors_name_file_rule_field_line(text: str, fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="f.yaml")
    for fragment in fragments:
        assert fragment in str(err.value)


def test_all_problems_are_reported_at_once() -> None:
    text = "rules:\n- seriesQuery: up\n  bogus: 1\n- nmae: {}\nexternalRules:\n- seriesQuery: [x]\n"
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="f.yaml")
    assert [(p.location, p.field, p.line) for p in err.value.problems] == [
        ("rules[0]", "bogus", 3), ("rules[1]", "nmae", 4), ("externalRules[0]", "seriesQuery", 6)]
    assert str(err.value).startswith("unable to parse metrics discovery config: 3 problems in f.yaml:")


@pytest.mark.parametrize("text", [
    pytest.param("rules:\n- seriesQuery: up\n  bogus: 1\n", id="unknown key (strict YAML)"),
    pytest.param("rules:\n- seriesQuery: [x]\n", id="wrong shape"),
    pytest.param('rules:\n- metricsQuery: "a{b!="c"}"\n', id="YAML syntax"),
])
def test_a_file_that_does_not_read_as_a_rule_file_says_so_in_upstreams_words(text: str) -> None:
    """prometheus-adapter prefixes these `unable to parse metrics discovery config:`; users grep for it."""
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="f.yaml")
    assert str(err.value).startswith("unable to parse metrics discovery config: f.yaml: rules[0]")


def test_load_config_reads_the_file_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "adapter.yaml"
    path.write_text("rules:\n- seriesQuery: up\n  metricsQuery: up\n")
    assert load_config(path).rules[0].series_query == "up"
    with pytest.raises(ConfigError, match="missing.yaml: cannot read file"):
        load_config(tmp_path / "missing.yaml")


@pytest.mark.parametrize(("text", "seconds"), [
    pytest.param("0", 0.0, id="zero"), pytest.param("5m", 300.0, id="minutes"),
    pytest.param("1h30m", 5400.0, id="compound"), pytest.param("1d", 86400.0, id="days"),
    pytest.param("250ms", 0.25, id="milliseconds"), pytest.param("1y", 365 * 86400.0, id="year"),
])
def test_prometheus_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", [pytest.param("", id="empty"), pytest.param("5", id="no unit"),
                                  pytest.param("1.5m", id="fraction"), pytest.param("m5", id="reversed")])
def test_invalid_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
