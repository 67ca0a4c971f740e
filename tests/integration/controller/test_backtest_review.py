"""Review of `backtest` end to end against a real Prometheus holding a backfilled history.

Each scenario has its own namespace in one Prometheus (promtool backfill): values the adapter
cannot serve (+Inf), kube-state-metrics scraped twice (two series for the actual replicas), a
query Prometheus refuses. The command is run as a user runs it (`main(argv)`), nothing patched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.backtest.cli import main
from hack.stack.backfill import BackfilledPrometheus, openmetrics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
STEP = 15
TICKS = 12
INF_TICKS = range(4, 8)

RULES = """
rules:
- seriesQuery: '{__name__=~"^bt_.*",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def _spec(namespace: str, *, down_window: int = 300, max_replicas: int = 20) -> str:
    return f"""
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: web, namespace: {namespace}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 1
  maxReplicas: {max_replicas}
  metrics:
  - type: Pods
    pods: {{metric: {{name: bt_rps}}, target: {{type: AverageValue, averageValue: "10"}}}}
  behavior:
    scaleDown: {{stabilizationWindowSeconds: {down_window}}}
"""


def _history() -> str:
    series = []
    for pod in ("web-1", "web-2"):
        inf = [(T0 + STEP * i, float("inf") if i in INF_TICKS else 5.0) for i in range(TICKS)]
        series.append(("bt_rps", {"namespace": "inf", "pod": pod}, inf))
        series.append(("bt_rps", {"namespace": "ha", "pod": pod}, [(T0 + STEP * i, 15.0) for i in range(TICKS)]))
    for instance in ("ksm-0", "ksm-1"):  # kube-state-metrics with two replicas: every series twice
        series.append(("ha_replicas", {"namespace": "ha", "instance": instance},
                       [(T0 + STEP * i, 3.0) for i in range(TICKS)]))
    return openmetrics(series)


@pytest.fixture(scope="module")
def prometheus() -> Iterator[BackfilledPrometheus]:
    with BackfilledPrometheus(_history()) as server:
        yield server


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"rules": tmp_path / "rules.yaml", "inf": tmp_path / "inf.yaml", "ha": tmp_path / "ha.yaml"}
    out["rules"].write_text(RULES)
    out["inf"].write_text(_spec("inf"))
    out["ha"].write_text(_spec("ha"))
    return out


def _run(capsys: pytest.CaptureFixture[str], prometheus: BackfilledPrometheus, files: dict[str, Path],
         spec: str, *argv: str) -> tuple[int, str, str]:
    code = main(["-f", str(files[spec]), "--prometheus-url", prometheus.url, "--rules", str(files["rules"]),
                 "--from", str(T0), "--to", str(T0 + STEP * (TICKS - 1)), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_values_the_adapter_cannot_serve_hold_the_count_instead_of_scaling_to_max(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # +Inf (x/0 in a ratio) was folded in as the largest int64 and drove the replay to maxReplicas;
    # the adapter leaves such a sample out, so the live controller saw the metric fail and held.
    code, out, err = _run(capsys, prometheus, files, "inf", "-o", "json")
    assert code == 0, err
    body = json.loads(out)
    steps = body["runs"][0]["steps"]
    assert [s["replicas"] for s in steps] == [2] * TICKS
    assert all(steps[i]["error"] for i in INF_TICKS)
    assert [(g["what"], g["syncs"]) for g in body["gaps"]] == [("Pods bt_rps (AverageValue)", len(INF_TICKS))]


def test_actual_replicas_scraped_twice_are_refused_not_doubled(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    query = 'ha_replicas{namespace="ha"}'
    code, out, err = _run(capsys, prometheus, files, "ha", "-o", "json", "--actual-replicas-query", query)
    assert (code, out) == (1, "")
    assert query in err and "more than one series" in err and "max(" in err
    code, out, err = _run(capsys, prometheus, files, "ha", "-o", "json",
                          "--actual-replicas-query", f"max({query})")
    assert code == 0, err
    assert {s["actualReplicas"] for s in json.loads(out)["runs"][0]["steps"]} == {3.0}


def test_a_query_prometheus_refuses_is_named_with_prometheus_reason(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, prometheus, files, "ha", "--actual-replicas-query", "sum(ha_replicas")
    assert (code, out) == (1, "")
    assert "--actual-replicas-query sum(ha_replicas" in err and "bad_data" in err and "Traceback" not in err
