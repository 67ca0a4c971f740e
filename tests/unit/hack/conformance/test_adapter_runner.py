"""The adapter conformance runner itself (hack/conformance/adapter_*.py): a deviation excuses a difference only when its normaliser
reproduces upstream's answer exactly; anything else is a FAIL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hack.conformance import adapter_compare as compare
from hack.conformance import adapter_runner
from hack.conformance import deviations

SELECTOR_RULE = {"metricsQuery": "<<.LabelMatchers>>", "resources": {"namespaced": True}}


def _selector_case(case_id: str, selector: str, expected: str) -> dict:
    return {"id": case_id, "category": "metrics_query.selector_to_promql", "rule": SELECTOR_RULE,
            "input": {"api": "external", "series": "s", "namespace": "", "metric_selector": selector},
            "expected": {"query": expected, "error": None}}


CASES = [
    _selector_case("exists", "foo", 'foo!=""'),
    _selector_case("escaped", "foo in (a.b)", 'foo=~"a.b"'),
    _selector_case("wrong", "foo in (a.b)", 'foo=~"a.c"'),
    {"id": "naming-wrong", "category": "naming", "rule": {"name": {"matches": "^(.*)_total$"}},
     "input": {"series_name": "x_total"}, "expected": {"metric_name": "y", "error": None}},
    {"id": "route-short", "category": "http.routing",
     "input": {"http": "GET /apis/custom.metrics.k8s.io/v1beta1/pods/x"},
     "expected": {"status": 400, "reason": "BadRequest", "message": "invalid request path"}},
    {"id": "custom-gt", "category": "custom.errors",
     "input": {"http": "GET /apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/web-1/http_requests"
                       "?metricLabelSelector=a%3C1"},
     "expected": {"status": 404, "reason": "NotFound",
                  "message": "the server could not find the metric http_requests for pods"}},
    {"id": "no-checker", "category": "something.new", "input": {}, "expected": {}},
]


def test_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": {}, "cases": CASES}))
    assert adapter_runner.run(path) == 1
    lines = capsys.readouterr().out.splitlines()
    verdicts = {line.split()[1].rstrip(":"): line.split()[0] for line in lines[:-1]}
    assert verdicts == {"exists": "PASS", "escaped": "SKIP", "wrong": "FAIL", "naming-wrong": "FAIL",
                        "route-short": "PASS", "custom-gt": "SKIP", "no-checker": "FAIL"}
    assert "deviation regex-escaped-values" in next(line for line in lines if " escaped:" in line)
    assert "deviation unsupported-selector-is-400" in next(line for line in lines if "custom-gt" in line)
    assert "unknown category 'something.new'" in next(line for line in lines if "no-checker" in line)
    assert lines[-1] == "2 passed, 3 failed, 2 skipped"


def test_the_unsupported_selector_deviation_excuses_only_our_400() -> None:
    """Its normaliser maps our 400 BadRequest to upstream's 404; an answer that is not that 400
    (the selector ignored, say) is kept, so it stays a FAIL."""
    case = next(c for c in CASES if c["id"] == "custom-gt")
    want = {"code": 404, "reason": "NotFound", "message": case["expected"]["message"]}
    ours = {"code": 400, "reason": "BadRequest", "message": "operator not supported by prometheus: a<1"}
    ignored = {"code": 200, "items": [], "values": []}
    deviation = deviations.excusing("adapter", case, ours, lambda got: compare.matches(want, got))
    assert deviation is not None and deviation.name == "unsupported-selector-is-400"
    assert deviations.excusing("adapter", case, ignored, lambda got: compare.matches(want, got)) is None


@pytest.mark.parametrize(("api", "value", "upstream"), [
    pytest.param("custom", "NaN", "0", id="custom NaN: upstream's PR 308 serves 0"),
    pytest.param("external", "NaN", "-9223372036854775808m", id="external NaN: upstream's unguarded conversion"),
    pytest.param("custom", "+Inf", "-9223372036854775808m", id="custom +Inf"),
])
def test_a_non_finite_sample_is_left_out_by_the_adapter_and_excused_only_as_such(api: str, value: str,
                                                                                 upstream: str) -> None:
    """The quantity family observes what the adapter serves: nothing, for NaN or ±Inf (never a
    harness conversion); the deviation maps that, and only that, to upstream's answer."""
    from hack.conformance.adapter_services import check_quantity

    case = {"id": "q", "category": "quantity_conversion", "input": {"api_path": api, "prometheus_value": value},
            "expected": {"quantity": upstream}}
    result = check_quantity(case, {})
    assert not result.ok and result.got == {"success": False, "error": "left out: its value in Prometheus is "
                                           + ("NaN" if value == "NaN" else "infinite")}
    want = case["expected"]
    deviation = deviations.excusing("adapter", case, result.got, lambda got: compare.matches(want, got))
    assert deviation is not None and deviation.name == "non-finite-values-left-out"
    served = {"success": True, "quantity": "12", "values": ["12"]}  # not what the adapter does: not excused
    assert deviations.excusing("adapter", case, served, lambda got: compare.matches(want, got)) is None


def test_every_deviation_has_a_reason() -> None:
    table = (*deviations.DEVIATIONS, *deviations.LOG_DEVIATIONS)
    names = [d.name for d in table]
    assert len(names) == len(set(names))
    assert all(len(d.reason) > 40 for d in table)
    assert {d.component for d in table} == {"adapter", "controller"}


MALFORMED_CASES = [
    "not-an-object",
    None,
    {"id": "no-category", "input": {}, "expected": {}},
    {"id": "list-category", "category": ["naming"], "input": {}, "expected": {}},
    {"id": "list-input", "category": "custom.errors", "input": [1], "expected": {}},
    {"id": "http-not-text", "category": "custom.errors", "input": {"http": 5}, "expected": {"status": 400}},
    {"category": "naming", "rule": {"name": {"matches": "^(.*)_total$"}},
     "input": {"series_name": "x_total"}, "expected": None},
    _selector_case("still-checked", "foo", 'foo!=""'),
]


def test_malformed_cases_fail_one_by_one_and_the_run_goes_on(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Hidden case files may hold shapes this runner never saw: each such case is a FAIL line
    saying why (never a traceback that ends the run, never a silent PASS)."""
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": {}, "cases": MALFORMED_CASES}))
    assert adapter_runner.run(path) == 1
    lines = capsys.readouterr().out.splitlines()
    verdicts = [line.split()[:2] for line in lines[:-1]]
    assert verdicts == [["FAIL", "cases[0]:"], ["FAIL", "cases[1]:"], ["FAIL", "no-category:"],
                        ["FAIL", "list-category:"], ["FAIL", "list-input:"], ["FAIL", "http-not-text:"],
                        ["FAIL", "cases[6]:"], ["PASS", "still-checked"]]
    assert lines[-1] == "1 passed, 7 failed, 0 skipped"


@pytest.mark.parametrize("content", [
    pytest.param("{not json", id="not JSON"),
    pytest.param("[1, 2]", id="top level is a list"),
    pytest.param('{"cases": {"a": 1}}', id="cases is no list"),
    pytest.param('{"fixtures": [], "cases": [{"id": "a"}]}', id="fixtures is no object"),
    pytest.param('{"fixtures": {}, "cases": []}', id="no cases: nothing checked"),
    pytest.param('{"fixtures": {}}', id="cases missing"),
    pytest.param(b"\xff\xfe", id="not UTF-8"),
])
def test_unreadable_case_file_is_one_fail_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         content: str | bytes) -> None:
    path = tmp_path / "cases.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert adapter_runner.run(path) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"FAIL {path.name}: ")
    assert lines[-1] == "0 passed, 1 failed, 0 skipped"


def test_missing_case_file_is_a_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert adapter_runner.run(tmp_path / "absent.json") == 1
    assert "cannot read the case file" in capsys.readouterr().out


def _public() -> dict:
    from tests import paths

    return json.loads((paths.VECTORS / "prometheus-adapter-public.json").read_text())


def _run_one(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict, case_id: str, change) -> str:
    """Run the public file with one case changed by `change(case)`; return that case's verdict line."""
    case = next(c for c in data["cases"] if c["id"] == case_id)
    change(case)
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(data))
    adapter_runner.run(path)
    return next(line for line in capsys.readouterr().out.splitlines() if line.split()[1].rstrip(":") == case_id)


@pytest.mark.parametrize("case_id, change", [
    pytest.param("naming.build.02", lambda c: c["expected"].update(group_by="x"),
                 id="expected key the checker never reads"),
    pytest.param("registry.not_found_unknown_metric", lambda c: c["expected"]["http"].update(code=500),
                 id="registry miss: HTTP code"),
    pytest.param("registry.not_found_no_names",
                 lambda c: c["expected"]["http"].update(message="the server could not find the metric x for pods"),
                 id="registry miss: HTTP message"),
    pytest.param("docs.config_walkthrough.response_shape", lambda c: c["expected"].update(status=404),
                 id="custom response: status"),
])
def test_a_hidden_case_cannot_pass_on_what_the_runner_does_not_compare(tmp_path, capsys, case_id, change):
    line = _run_one(tmp_path, capsys, _public(), case_id, change)
    assert line.startswith(f"FAIL {case_id}:")


@pytest.mark.timeout(30)  # the whole public case file: ~0.5 s alone, past 2 s on a loaded machine
def test_unchanged_public_cases_still_pass_with_their_http_answers_compared(tmp_path, capsys):
    for case_id in ("registry.not_found_unknown_metric", "registry.not_found_no_names",
                    "docs.config_walkthrough.response_shape"):
        assert _run_one(tmp_path, capsys, _public(), case_id, lambda c: None) == f"PASS {case_id}"
    # its Status matches; its log line is worded our way, a listed deviation
    line = _run_one(tmp_path, capsys, _public(), "custom.prometheus_error", lambda c: None)
    assert line.startswith("SKIP custom.prometheus_error: deviation prometheus-error-log-wording")


FLAG_CASES = [
    {"id": "unknown-flag", "category": "cli.flags", "input": {"--no-such-flag": "x"},
     "expected": {"fatal_error": "unknown flag: --no-such-flag"}},
    {"id": "bad-port", "category": "cli.flags", "input": {"--secure-port": "99999"},
     "expected": {"fatal_error": "invalid port"}},
    {"id": "server-flags-start", "category": "cli.flags",
     "input": {"--secure-port": 6443, "--cert-dir": "/tmp/x", "--prometheus-url": "http://p:9090"},
     "expected": {"fatal_error": None}},
    {"id": "unknown-flag-in-header-case", "category": "cli.prometheus_header",
     "input": {"--no-such-flag": "x"}, "expected": {"http_headers": {}}},
    _selector_case("after-the-flags", "foo", 'foo!=""'),
]


def test_flag_cases_use_the_adapters_whole_command_line_and_never_end_the_run(tmp_path, capsys):
    """argparse answers an unknown flag with SystemExit, which ended the whole run mid-file."""
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": {}, "cases": FLAG_CASES}))
    assert adapter_runner.run(path) == 1
    lines = capsys.readouterr().out.splitlines()
    verdicts = {line.split()[1].rstrip(":"): line.split()[0] for line in lines[:-1]}
    assert verdicts == {"unknown-flag": "PASS", "bad-port": "PASS", "server-flags-start": "PASS",
                        "unknown-flag-in-header-case": "FAIL", "after-the-flags": "PASS"}
    assert "unknown flag: --no-such-flag" in next(line for line in lines if "unknown-flag-in-header" in line)
    assert lines[-1] == "4 passed, 1 failed, 0 skipped"


def test_routing_case_may_name_the_metric_selector(tmp_path, capsys):
    case = {"id": "route-metric-selector", "category": "http.routing",
            "input": {"http": "GET /apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/web-1/rps"
                              "?metricLabelSelector=verb%3DGET"},
            "expected": {"op": "by_name", "group_resource": "pods", "namespace": "default", "namespaced": True,
                         "name": "web-1", "metric": "rps", "metric_selector": "verb=GET"}}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": {}, "cases": [case]}))
    assert adapter_runner.run(path) == 0
    assert capsys.readouterr().out.splitlines()[0] == "PASS route-metric-selector"


@pytest.mark.parametrize("http_status, verdict", [
    pytest.param(414, "PASS", id="414: our 500 like upstream"),
    pytest.param(401, "PASS", id="401: our 500 like upstream"),
    pytest.param(400, "PASS", id="400: bad query, our 500 like upstream"),
    pytest.param(503, "SKIP", id="503: our 503 is a listed deviation"),
    pytest.param(502, "SKIP", id="502: our 503 is a listed deviation"),
])
def test_prometheus_error_cases_go_through_the_real_clients_error_mapping(tmp_path, capsys, http_status, verdict):
    """The checker used to raise one fixed error type for any status, so a 5xx case 'passed' with
    the 500 upstream gives while the adapter really answers 503."""
    line = _run_one(tmp_path, capsys, _public(), "custom.prometheus_error",
                    lambda c: (c["input"].update(prometheus_http_status=http_status),
                               c["expected"].update(log_contains=None)))
    assert line.split()[0] == verdict, line
    if verdict == "SKIP":
        assert "deviation prometheus-5xx-is-503" in line


@pytest.mark.parametrize("change, verdict", [
    pytest.param(lambda c: c["input"].update(format="BinarySI", prometheus_value=2048.0),
                 ("PASS", "2048"), id="custom values are DecimalSI whatever format says"),
    pytest.param(lambda c: c["input"].update(api_path="external", prometheus_value=0.0015),
                 ("PASS", "1m"), id="external: milli-units truncated"),
    pytest.param(lambda c: c["input"].update(api_path="nonsense"), ("FAIL", "0"), id="unknown api path"),
])
def test_quantity_cases_format_as_the_api_does(tmp_path, capsys, change, verdict):
    status, quantity = verdict

    def apply(case):
        change(case)
        case["expected"]["quantity"] = quantity

    line = _run_one(tmp_path, capsys, _public(), "quantity.01", apply)
    assert line.split()[0] == status, line


@pytest.mark.parametrize("expected", [pytest.param({}, id="no error key"), pytest.param({"error": None}, id="error null")])
def test_a_config_case_expecting_success_fails_when_loading_fails(tmp_path, capsys, expected):
    """An empty expected error matched every message ('' is in any text): a rejected config passed."""
    line = _run_one(tmp_path, capsys, _public(), "config.template_without_resource",
                    lambda c: c.update(expected=expected))
    assert line.startswith("FAIL config.template_without_resource:")


def test_a_file_of_some_cases_finds_setups_and_fixtures_in_the_public_file(tmp_path, capsys):
    """Hidden files may hold only the cases left out of the public one, still naming its setups
    (`same_setup_as: registry.query.01`) and fixtures."""
    public = _public()
    picked = [dict(c, id="hidden." + c["id"]) for c in public["cases"]
              if c["id"] in ("registry.query.02", "registry.not_found_no_names", "resource.nodes.basic")]
    path = tmp_path / "prometheus-adapter-hidden.json"
    path.write_text(json.dumps({"schema_version": 1, "fixtures": {}, "cases": picked}))
    assert adapter_runner.run(path) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "3 passed, 0 failed, 0 skipped"
