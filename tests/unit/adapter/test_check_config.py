"""`python -m adapter check-config`: errors, the per-rule summary, and the per-rule explanation of
discovered series ("why doesn't my metric show up?")."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapter import check_config
from adapter.__main__ import main as adapter_main
from hack.stack.processes import free_port
from tests.unit.adapter.rules.helpers import compile_text

RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  seriesFilters: [{isNot: '^http_requests_debug'}]
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_total$', as: '${1}_per_second'}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)
- seriesQuery: '{__name__=~"^node_.*"}'
  resources: {overrides: {instance: {resource: node}}}
  name: {matches: '^node_(.*)_seconds$', as: '$1_latency'}
  metricsQuery: max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
externalRules:
- seriesQuery: 'queue_depth{queue!=""}'
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)
"""


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "adapter.yaml"
    path.write_text(RULES)
    return path


def test_summary_names_every_rule_its_metrics_resources_and_query(rules_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert adapter_main(["check-config", str(rules_file)]) == 0
    out = capsys.readouterr().out
    assert "2 custom rule(s)" in out and "1 external rule(s)" in out and "3 distinct seriesQuery" in out
    assert "rules[0] (custom) seriesQuery: http_requests_total{namespace!=\"\",pod!=\"\"}" in out
    assert "series filters: isNot /^http_requests_debug/, is /^(.*)_total$/ (from name.matches)" in out
    assert "(e.g. http_requests_total -> http_requests_per_second)" in out
    assert "resources: namespace -> namespaces, pod -> pods" in out
    assert ('example: (pods example in namespace default) sum(rate(http_requests_total{namespace="default",'
            'pod="example"}[2m])) by (pod)') in out
    assert "example: (nodes example) max(<series>{instance=\"example\"}) by (instance)" in out
    assert "warning: name.as: $1_latency refers to a capture group '1_latency'" in out
    assert "warning: resources: nothing maps the `namespaces` resource" in out  # externalRules[0]
    assert out.rstrip().endswith("loads; 2 warning(s)")


def test_quiet_hides_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("rules:\n- seriesQuery: x\n  metricsQuery: sum(x) by (pod)\n"
                    "  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}\n")
    check_config.main([str(path)])
    assert "note: metricsQuery: does not use <<.LabelMatchers>>" in capsys.readouterr().out
    check_config.main([str(path), "--quiet"])
    assert "note:" not in capsys.readouterr().out


def test_errors_go_to_stderr_all_at_once_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("rules:\n- seriesQuery: a\n  name: {matches: '('}\n- seriesQuery: b\n"
                    "  resources: {template: 'kube_<<.Group>>'}\n")
    assert check_config.main([str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{path}: rules[0].name.matches (line 3): error parsing regexp" in captured.err
    assert f"{path}: rules[1].resources.template (line 5)" in captured.err


def _series(name: str, **labels: str) -> dict[str, str]:
    return {"__name__": name, **labels}


def test_explain_series_reports_matches_drops_and_exposed_metrics() -> None:
    rule = compile_text(RULES).custom[0]
    report = check_config.explain_series(rule, [
        _series("http_requests_total", namespace="a", pod="p1"),
        _series("http_requests_total", namespace="a", pod="p2"),
        _series("http_requests_debug_total", namespace="a", pod="p1"),
        _series("http_requests_count", namespace="a", pod="p1"),
        _series("http_requests_total", job="x"),
    ])
    lines = check_config.report_lines(rule, report)
    assert lines[0] == "rules[0]: seriesQuery matched 5 series"
    assert "  1 dropped: seriesFilters isNot /^http_requests_debug/ (e.g. http_requests_debug_total)" in lines
    assert "  1 dropped: name does not match name.matches /^(.*)_total$/ (e.g. http_requests_count)" in lines
    assert any(line.startswith("  1 carry no label this rule maps to a resource") for line in lines)
    assert "  exposes pods/http_requests_per_second (namespaced, 2 series)" in lines
    assert "  exposes namespaces/http_requests_per_second (cluster-scoped, 2 series)" in lines


def test_explain_series_flags_names_that_expand_to_nothing_and_external_metrics() -> None:
    compiled = compile_text(RULES)
    node_rule, external = compiled.custom[1], compiled.external[0]
    lines = check_config.report_lines(node_rule, check_config.explain_series(
        node_rule, [_series("node_disk_seconds", instance="n1")]))
    assert "  1 dropped: name.as '$1_latency' expands to an empty name (e.g. node_disk_seconds)" in lines
    lines = check_config.report_lines(external, check_config.explain_series(
        external, [_series("queue_depth", queue="q1"), _series("queue_depth", queue="q2")]))
    assert lines[-1] == "  exposes external metric queue_depth (2 series)"
    empty = check_config.report_lines(external, check_config.explain_series(external, []))
    assert "nothing matched" in empty[1]


def test_unreachable_prometheus_is_reported_per_rule_with_exit_2(rules_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # a port nobody listens on
    code = check_config.main([str(rules_file), "--prometheus-url", f"http://127.0.0.1:{port}", "--timeout", "1s"])
    out = capsys.readouterr().out
    assert code == 2
    assert "rules[0]: seriesQuery failed: ConnectionError" in out
    assert "externalRules[0]: seriesQuery failed" in out


def test_live_check_sends_headers_and_token_and_reports_series(rules_file: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A stand-in speaking Prometheus' /api/v1/series wire format records what check-config sent."""
    import http.server
    import json
    import threading
    from urllib.parse import parse_qs, urlsplit

    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            query = parse_qs(urlsplit(self.path).query)
            seen.append({"path": urlsplit(self.path).path, "match": query["match[]"][0],
                         "tenant": self.headers.get("X-Scope-OrgID", ""),
                         "auth": self.headers.get("Authorization", "")})
            data = [{"__name__": "queue_depth", "queue": "q1"}] if "queue_depth" in query["match[]"][0] else []
            body = json.dumps({"status": "success", "data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    try:
        code = check_config.main([str(rules_file), "--prometheus-url", f"http://127.0.0.1:{server.server_port}",
                                  "--prometheus-header", "X-Scope-OrgID=team-a",
                                  "--prometheus-token-file", str(token)])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=2)
    out = capsys.readouterr().out
    assert code == 0
    assert len(seen) == 3  # one call per distinct seriesQuery
    assert {s["path"] for s in seen} == {"/api/v1/series"}
    assert {(s["tenant"], s["auth"]) for s in seen} == {("team-a", "Bearer s3cret")}
    assert "externalRules[0]: seriesQuery matched 1 series" in out
    assert "exposes external metric queue_depth (1 series)" in out


@pytest.mark.parametrize("max_age", ["600", "1m30s", "10m0s", "2h"])
def test_metrics_max_age_takes_the_adapters_own_flag_syntax(rules_file: Path, max_age: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m adapter --metrics-max-age 600` works, so check-config must accept it too."""
    port = free_port()  # a port nobody listens on: the flags are parsed before the call
    code = check_config.main([str(rules_file), "--prometheus-url", f"http://127.0.0.1:{port}",
                              "--metrics-max-age", max_age, "--timeout", "1s"])
    assert code == 2  # got as far as asking Prometheus
    assert "seriesQuery failed" in capsys.readouterr().out


def test_a_bad_metrics_max_age_is_a_usage_error_naming_the_flag(rules_file: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        check_config.main([str(rules_file), "--prometheus-url", "http://127.0.0.1:1", "--metrics-max-age", "ten"])
    assert exit_info.value.code == 2
    assert "--metrics-max-age: invalid duration 'ten'" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "value"), [("--timeout", "inf"), ("--timeout", "nan"), ("--timeout", "0"),
                                             ("--metrics-max-age", "nan"), ("--metrics-max-age", "-600")])
def test_durations_that_parse_as_floats_but_mean_nothing_are_usage_errors(
        rules_file: Path, flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        check_config.main([str(rules_file), "--prometheus-url", "http://127.0.0.1:1", flag, value])
    assert exit_info.value.code == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize("header", ["Bad Name=v", "=v"])
def test_a_bad_prometheus_header_is_a_usage_error_as_for_the_adapter(rules_file: Path, header: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        check_config.main([str(rules_file), "--prometheus-url", "http://127.0.0.1:1", "--prometheus-header", header])
    assert exit_info.value.code == 2
    assert f"--prometheus-header: invalid header name in {header!r}" in capsys.readouterr().err


def test_a_max_age_reaching_before_1970_asks_from_the_epoch(rules_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    code = check_config.main([str(rules_file), "--prometheus-url", f"http://127.0.0.1:{port}",
                              "--metrics-max-age", "1e12", "--timeout", "1s"])
    assert code == 2 and "seriesQuery failed" in capsys.readouterr().out  # asked, no traceback
