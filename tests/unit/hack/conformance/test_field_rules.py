"""The case vocabulary (../shared/spec/vectors/FIELDS.md) as the adapter runner applies it: each
comparison rule and each expected field with a case that passes and one that must fail, prose
expectations skipped, and anything outside the vocabulary a FAIL naming it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hack.conformance import adapter_runner
from hack.conformance import adapter_compare as compare
from tests import paths


@pytest.mark.parametrize("key, expected, got, ok", [
    pytest.param("x", {"found": False}, {"found": False, "error": "e"}, True, id="only present keys"),
    pytest.param("x", {"found": False, "error": None}, {"found": False}, True, id="null is not asserted"),
    pytest.param("x", {"found": False}, {"error": "e"}, False, id="a present key must be there"),
    pytest.param("a_unordered", [1, 2, 2], [2, 1, 2], True, id="unordered: a multiset"),
    pytest.param("a_unordered", [1, 2, 2], [2, 1, 1], False, id="unordered: counts matter"),
    pytest.param("pod_metrics_in_input_order", [1, 2], [2, 1], False, id="in input order: order matters"),
    pytest.param("startup_error_contains", "bad rule", "config: bad rule here", True, id="contains: substring"),
    pytest.param("startup_error_contains", "bad rule", "config: fine", False, id="contains: missing"),
    pytest.param("logged_error_prefix", "unable to list", ["x", "unable to list matching resources"], True,
                 id="logged prefix"),
    pytest.param("logged_error_prefix", "unable to list", ["we were unable to list"], False,
                 id="logged prefix: not a prefix"),
    pytest.param("error", 'no matches for "cheese.io/brand" (wording approximate)',
                 "override cheese.io/brand is not served", True, id="approximate: the value it names"),
    pytest.param("error", 'no matches for "cheese.io/brand" (wording approximate)', "something else", False,
                 id="approximate: value missing"),
    pytest.param("found", True, 1, False, id="a boolean is not a number"),
])
def test_comparison_rules(key: str, expected: Any, got: Any, ok: bool) -> None:
    assert compare.matches(expected, got, key) is ok


def _sample(field: str) -> tuple[Any, Any]:
    """A value for `field` and a different one of the same shape."""
    if field in compare.TEXT_FIELDS:
        return "v1", "v2"
    if field.endswith(("_count", "_calls")) or field.startswith("inner_calls") or field == "status":
        return 1, 2
    if field in ("found", "success", "callback_invoked", "namespaced", "client_certificates_present",
                 "second_list_series_count_nonzero"):
        return True, False
    if field.endswith(("_unordered", "_in_input_order")) or field in ("items", "values", "discovery",
                                                                       "discovery_resource_names",
                                                                       "items_described_object_names"):
        return ["a", "b"], ["a", "c"]
    return {"k": "v"}, {"k": "w"}


@pytest.mark.parametrize("field", sorted(compare.EXPECTED_FIELDS - compare.PROVENANCE_FIELDS))
def test_every_expected_field_passes_on_its_value_and_fails_on_another(field: str) -> None:
    value, other = _sample(field)
    assert compare.matches({field: value}, {field: value})
    assert not compare.matches({field: value}, {field: other})
    assert not compare.matches({field: value}, {})


@pytest.mark.parametrize("field", sorted(compare.STRUCTURED_FIELDS))
def test_a_sentence_in_a_structured_field_is_prose(field: str) -> None:
    assert compare.prose_fields({field: "non-empty; every node usage.cpu > 0"}) == [field]


@pytest.mark.parametrize("field", sorted(compare.PROVENANCE_FIELDS))
def test_provenance_is_never_compared(field: str) -> None:
    assert compare.matches({"found": True, field: "go test X"}, {"found": True})


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], cases: list[dict[str, Any]]) -> dict[str, str]:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": {}, "cases": cases}))
    adapter_runner.run(path)
    return {line.split()[1].rstrip(":"): line for line in capsys.readouterr().out.splitlines()[:-1]}


FORBIDDEN = {"http": "GET /apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/http_requests",
             "kube_list_error": "forbidden"}
CHEDDAR = {"seriesQuery": 'cheddar{brand!=""}', "metricsQuery": "sum(<<.Series>>)",
           "resources": {"overrides": {"brand": {"group": "cheese.io", "resource": "brand"}}}}
LISTER = {"first_list_series_count": 0, "inner_calls_after_first_list": 0, "inner_calls_after_update": 1,
          "second_list_series_count_nonzero": True, "inner_calls_after_second_list": 1}
SERIES_SETUP = {"config": {"rules": [{"seriesQuery": "a", "metricsQuery": "a"}, {"seriesQuery": "b", "metricsQuery": "b"},
                                     {"seriesQuery": "a", "metricsQuery": "sum(a)"}]}, "flags": {}}

QUEUE_RULE = {"seriesQuery": 'queue_depth{queue!=""}', "resources": {"namespaced": False},
              "metricsQuery": "sum(<<.Series>>)"}
QUEUE = [{"__name__": "queue_depth", "queue": "a"}]
X_RULE = {"seriesQuery": '{__name__=~"^x_.*"}', "resources": {"template": "<<.Resource>>"},
          "metricsQuery": "sum(<<.Series>>)"}
X = [{"__name__": "x_a", "pod": "p", "namespace": "n"}]

RUNNER_CASES = [  # (id, case, verdict)
    ("unknown-category", {"category": "custom.new", "input": {}, "expected": {"found": True}}, "FAIL"),
    ("unknown-expected", {"category": "naming", "rule": {"name": {"matches": "^(.*)$"}},
                          "input": {"series_name": "x"}, "expected": {"metric_name": "x", "colour": "red"}}, "FAIL"),
    ("unknown-input", {"category": "naming", "rule": {"name": {"matches": "^(.*)$"}},
                       "input": {"series_name": "x", "colour": "red"}, "expected": {"metric_name": "x"}}, "FAIL"),
    ("not-checked-here", {"category": "naming", "rule": {"name": {"matches": "^(.*)$"}},
                          "input": {"series_name": "x"}, "expected": {"metric_name": "x", "found": True}}, "FAIL"),
    ("prose", {"category": "resource_metrics.nodes", "input": {}, "expected": {"node_metrics": "non-empty"}}, "SKIP"),
    ("e2e-prose", {"category": "e2e", "input": {"steps": ["kubectl top pods"]},
                   "expected": {"pod_metrics": "every pod has usage.cpu > 0"}}, "SKIP"),
    ("e2e-concrete", {"category": "e2e", "input": {}, "expected": {"status": 200}}, "FAIL"),
    ("prose-input", {"category": "custom.discovery_http", "input": {"relist_1": "series a", "relist_2": "fails"},
                     "expected": {"registry_after_relist_2": ["a"]}}, "SKIP"),
    ("list-forbidden", {"category": "custom.errors", "input": FORBIDDEN,
                        "expected": {"status": 500, "reason": "InternalError",
                                     "message": "Internal error occurred: unable to list matching resources",
                                     "logged_error_prefix": "unable to list matching resources",
                                     "log_contains": 'cannot list resource "pods"'}}, "PASS"),
    ("list-forbidden-404", {"category": "custom.errors", "input": FORBIDDEN,
                            "expected": {"status": 404, "reason": "NotFound"}}, "FAIL"),
    ("list-forbidden-wrong-log", {"category": "custom.errors", "input": FORBIDDEN,
                                  "expected": {"status": 500, "logged_error_prefix": "metric not found"}}, "FAIL"),
    ("override-not-served", {"category": "config.parse", "rule": CHEDDAR,
                             "input": {"cluster_has_resource": {"cheese.io/brand": False}},
                             "expected": {"startup_error_contains": "unable to normalize group-resource"}}, "PASS"),
    ("override-served", {"category": "config.parse", "rule": CHEDDAR,
                         "input": {"cluster_has_resource": {"cheese.io/brand": True}},
                         "expected": {"startup_error_contains": "unable to normalize group-resource"}}, "FAIL"),
    ("lister-cached", {"category": "external.discovery", "input": {"steps": ["list", "update", "list"]},
                       "expected": LISTER}, "PASS"),
    ("lister-cached-wrong", {"category": "external.discovery", "input": {"steps": ["list", "update", "list"]},
                             "expected": {**LISTER, "inner_calls_after_second_list": 2}}, "FAIL"),
    ("matrix-result", {"category": "external.response_json",
                       "input": {"prometheus_result": {"resultType": "matrix", "result": []}},
                       "expected": {"status": 500, "message": "encountered an unexpected query result type"}}, "SKIP"),
    ("matrix-result-200", {"category": "external.response_json",
                           "input": {"prometheus_result": {"resultType": "matrix", "result": []}},
                           "expected": {"status": 200, "items": []}}, "FAIL"),
    ("client-query", {"category": "prometheus_client",
                      "input": {"--prometheus-url": "http://prom:9090/prometheus/", "call": "Query", "query": "up",
                                "time": 1565786045323},
                      "expected": {"request_url": "http://prom:9090/prometheus/api/v1/query?query=up&time=1565786045.323"}},
     "SKIP"),
    ("client-query-wrong-path", {"category": "prometheus_client",
                                 "input": {"--prometheus-url": "http://prom:9090/prometheus/", "call": "Query",
                                           "query": "up", "time": 1565786045323},
                                 "expected": {"request_url": "http://prom:9090/api/v1/query?query=up&time=1565786045.323"}},
     "FAIL"),
    ("client-query-range", {"category": "prometheus_client", "input": {"call": "QueryRange", "query": "up"},
                            "expected": {"request_url": "http://localhost:9090/api/v1/query_range?query=up"}}, "FAIL"),
    ("external-discovery-doc", {"category": "external.discovery", "rule": QUEUE_RULE, "input": {"discovered_series": QUEUE},
                                "expected": {"discovery": [{"name": "queue_depth", "namespaced": True}]}}, "PASS"),
    ("external-discovery-doc-wrong", {"category": "external.discovery", "rule": QUEUE_RULE,
                                      "input": {"discovered_series": QUEUE},
                                      "expected": {"discovery_names_unordered": ["queue_length"]}}, "FAIL"),
    ("custom-discovery-doc", {"category": "custom.discovery_list", "rule": X_RULE, "input": {"discovered_series": X},
                              "expected": {"discovery": [{"name": "namespaces/x_a", "namespaced": False},
                                                         {"name": "pods/x_a", "namespaced": True}],
                                           "discovery_resource_names": ["pods", "namespaces"]}}, "PASS"),
    ("custom-discovery-doc-wrong", {"category": "custom.discovery_list", "rule": X_RULE,
                                    "input": {"discovered_series": X},
                                    "expected": {"discovery": [{"name": "pods/x_a", "namespaced": False}]}}, "FAIL"),
    ("config-success", {"category": "config.parse", "rule": {"seriesQuery": "up", "metricsQuery": "up"}, "input": {},
                        "expected": {"success": True}}, "PASS"),
    ("config-success-wrong", {"category": "config.parse", "rule": {"seriesQuery": "up", "metricsQuery": "up"},
                              "input": {}, "expected": {"success": False}}, "FAIL"),
    ("flags-success-wrong", {"category": "cli.flags", "input": {"--prometheus-verb": "PUT"},
                             "expected": {"success": True}}, "FAIL"),
    ("external-values", {"category": "external.response_json",
                         "input": {"prometheus_result": {"resultType": "vector", "result": [
                             {"metric": {"queue": "a"}, "value": [1, "2.5"]}]}},
                         "expected": {"status": 200, "values": ["2500m"]}}, "PASS"),
    ("external-values-wrong", {"category": "external.response_json",
                               "input": {"prometheus_result": {"resultType": "vector", "result": [
                                   {"metric": {"queue": "a"}, "value": [1, "2.5"]}]}},
                               "expected": {"values": ["2"]}}, "FAIL"),
    ("series-without-resource", {"category": "metrics_query.build (custom/resource path)",
                                 "rule": {"metricsQuery": "series <<.Series>>"}, "input": {"series": "foo"},
                                 "expected": {"query": "series foo", "error": None}}, "PASS"),
    ("series-without-resource-wrong", {"category": "metrics_query.build (custom/resource path)",
                                       "rule": {"metricsQuery": "series <<.Series>>"}, "input": {"series": "foo"},
                                       "expected": {"query": "series bar"}}, "FAIL"),
    ("series-calls", {"category": "custom.discovery_http", "setup": SERIES_SETUP, "input": {},
                      "expected": {"prometheus_series_calls": 2, "before_relist": []}}, "PASS"),
    ("series-calls-wrong", {"category": "custom.discovery_http", "setup": SERIES_SETUP, "input": {},
                            "expected": {"prometheus_series_calls": 3}}, "FAIL"),
]


@pytest.mark.timeout(10)  # one runner pass over every case (a relist, the services): past 2 s when loaded
def test_runner_verdicts_per_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _run(tmp_path, capsys, [{"id": case_id, **case} for case_id, case, _ in RUNNER_CASES])
    got = {case_id: lines[case_id].split()[0] for case_id, _, _ in RUNNER_CASES}
    assert got == {case_id: verdict for case_id, _, verdict in RUNNER_CASES}, lines
    assert "unknown category 'custom.new'" in lines["unknown-category"]
    assert "unknown expected field colour" in lines["unknown-expected"]
    assert "unknown input field colour" in lines["unknown-input"]
    assert "prose expectation" in lines["prose"] and "prose expectation" in lines["e2e-prose"]
    assert "deviation result-type-named" in lines["matrix-result"]
    assert "deviation query-timeout-param" in lines["client-query"]
    assert "not checked: the client has no 'QueryRange' call" in lines["client-query-range"]


def test_every_category_has_a_checker_and_a_declared_set_of_fields() -> None:
    assert set(adapter_runner.CHECKERS) == compare.CATEGORIES


def _public() -> dict[str, Any]:
    return json.loads((paths.VECTORS / "prometheus-adapter-public.json").read_text())


def _public_case(case_id: str) -> dict[str, Any]:
    return next(c for c in _public()["cases"] if c["id"] == case_id)


def _with(case: dict[str, Any], new_id: str, **expected: Any) -> dict[str, Any]:
    return {**case, "id": new_id, "expected": {**case["expected"], **expected}}


@pytest.mark.timeout(10)
def test_object_metrics_fields_pass_and_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, pods = _public_case("resource.nodes.basic"), _public_case("resource.pods.multi_namespace")
    node_list = nodes["expected"]["node_metrics_in_input_order"]
    wrong_nodes = [{**node_list[0], "usage": {"cpu": "1", "memory": "2100"}}, *node_list[1:]]
    cases = [
        _with(nodes, "nodes-plain-field", node_metrics=node_list),
        _with(nodes, "nodes-plain-field-wrong", node_metrics=wrong_nodes),
        _with(nodes, "nodes-in-order-wrong", node_metrics_in_input_order=wrong_nodes),
        _with(nodes, "nodes-prose", node_metrics="non-empty; every node usage.cpu > 0"),
        _with(pods, "pods-plain-field", pod_metrics=pods["expected"]["pod_metrics_in_input_order"]),
        _with(pods, "pods-plain-field-wrong", pod_metrics=pods["expected"]["pod_metrics_in_input_order"][:1]),
    ]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": _public()["fixtures"], "cases": cases}))
    adapter_runner.run(path)
    verdicts = {line.split()[1].rstrip(":"): line.split()[0] for line in capsys.readouterr().out.splitlines()[:-1]}
    assert verdicts == {"nodes-plain-field": "PASS", "nodes-plain-field-wrong": "FAIL", "nodes-in-order-wrong": "FAIL",
                        "nodes-prose": "SKIP", "pods-plain-field": "PASS", "pods-plain-field-wrong": "FAIL"}


@pytest.mark.timeout(10)
def test_relist_listing_fields_pass_and_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _public_case("discovery.namespaced_flag")
    listed = case["expected"]["metrics_unordered"]
    cases = [_with(case, "listed-after", before_relist=[], after_relist_unordered=list(reversed(listed))),
             _with(case, "listed-before-wrong", before_relist=listed[:1]),
             _with(case, "listed-after-wrong", after_relist_unordered=listed[1:])]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": {}, "cases": cases}))
    adapter_runner.run(path)
    verdicts = {line.split()[1].rstrip(":"): line.split()[0] for line in capsys.readouterr().out.splitlines()[:-1]}
    assert verdicts == {"listed-after": "PASS", "listed-before-wrong": "FAIL", "listed-after-wrong": "FAIL"}


def _fields_md_section(title: str) -> set[str]:
    """The backquoted names of one section of FIELDS.md (the adapter half, before the HPA one)."""
    text = (paths.VECTORS / "FIELDS.md").read_text(encoding="utf-8").split("# Case-file vocabulary (HPA")[0]
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    if title != "Categories":  # remarks in parentheses name no fields
        section = re.sub(r"\([^()]*\)", "", section)
    return {name for name in re.findall(r"`([^`]+)`", section) if name != "*"}


def test_the_vocabulary_is_fields_md() -> None:
    """Every category and field FIELDS.md names is one the runner knows (none FAILs as unknown)."""
    assert _fields_md_section("Categories") == compare.CATEGORIES
    inputs = {f for f in _fields_md_section("Input fields") if not f.startswith(("--", '"')) and " " not in f}
    assert inputs <= compare.INPUT_FIELDS
    expected = {f for f in _fields_md_section("Expected fields") if " " not in f and "{" not in f}
    assert expected <= compare.EXPECTED_FIELDS, expected - compare.EXPECTED_FIELDS


@pytest.mark.parametrize("field", sorted(compare.INPUT_FIELDS))
def test_every_input_field_is_accepted(field: str) -> None:
    assert compare.unknown_input_fields({field: 1, "--any-flag": "x"}) == []
    assert compare.unknown_input_fields({field: 1, "colour": "red"}) == ["colour"]


@pytest.mark.parametrize("expected, got, ok", [
    pytest.param('cannot have both an `is` ("my_.*") and `isNot` ("your_.*") expression in a single filter',
                 "cannot have both an `is` ('my_.*') and `isNot` ('your_.*') expression in a single filter", True,
                 id="values quoted another way"),
    pytest.param('cannot have both an `is` ("my_.*") and `isNot` ("your_.*") expression in a single filter',
                 "cannot have both an `is` ('my_.*') and nothing else", False, id="the wording after a value counts"),
    pytest.param('series name "http_requests" did not match expected pattern',
                 "series name 'http_requests' did not match expected pattern '^(.*)_total$'", True,
                 id="a quoted value named the same"),
    pytest.param('series name "http_requests" did not match expected pattern',
                 "series name 'cpu_seconds' did not match expected pattern '^(.*)_total$'", False,
                 id="another quoted value is another error"),
    pytest.param("max age must not be less than relist interval (approximate)",
                 "unable to construct custom metrics provider: max age must not be less than relist interval", True,
                 id="a trailing remark is not wording"),
    pytest.param("template execution error: can't evaluate field Foo (exact text is Go-template specific)",
                 "template execution error: 'Foo' is undefined", True, id="a template error names its field"),
    pytest.param("template execution error: can't evaluate field Foo (exact text is Go-template specific)",
                 "template execution error: 'Bar' is undefined", False, id="another field is another error"),
])
def test_an_error_is_judged_on_all_of_upstreams_wording(expected: str, got: str, ok: bool) -> None:
    from hack.conformance.adapter_rules import judge_outcome

    assert judge_outcome({"error": expected}, {"error": got}).ok is ok
