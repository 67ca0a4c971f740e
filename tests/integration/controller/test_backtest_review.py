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


def _spec(namespace: str, *, down_window: int = 300, max_replicas: int = 20, min_replicas: int = 1) -> str:
    return f"""
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: web, namespace: {namespace}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: {min_replicas}
  maxReplicas: {max_replicas}
  metrics:
  - type: Pods
    pods: {{metric: {{name: bt_rps}}, target: {{type: AverageValue, averageValue: "10"}}}}
  behavior:
    scaleDown: {{stabilizationWindowSeconds: {down_window}}}
"""


def _crd(name: str, sync_period: int) -> str:
    return f"""
apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
kind: PromAutoscaler
metadata: {{name: {name}, namespace: cadence}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 1
  maxReplicas: 20
  syncPeriodSeconds: {sync_period}
  metrics:
  - type: Pods
    pods: {{metric: {{name: bt_rps}}, target: {{type: AverageValue, averageValue: "10"}}}}
"""


def _history() -> str:
    series = []
    for pod in ("web-1", "web-2"):
        inf = [(T0 + STEP * i, float("inf") if i in INF_TICKS else 5.0) for i in range(TICKS)]
        series.append(("bt_rps", {"namespace": "inf", "pod": pod}, inf))
        series.append(("bt_rps", {"namespace": "ha", "pod": pod}, [(T0 + STEP * i, 15.0) for i in range(TICKS)]))
        series.append(("bt_rps", {"namespace": "steady", "pod": pod}, [(T0 + STEP * i, 10.0) for i in range(TICKS)]))
    for pod in ("web-1", "web-2"):  # the target scaled to 0 (by a person, a cron job) for the first minute
        series.append(("bt_rps", {"namespace": "zero", "pod": pod}, [(T0 + STEP * i, 10.0) for i in range(4, TICKS)]))
    series.append(("zero_replicas", {"namespace": "zero"}, [(T0 + STEP * i, 0.0 if i < 4 else 2.0)
                                                           for i in range(TICKS)]))
    series.append(("gap_replicas", {"namespace": "ha"}, [(T0 + STEP * i, 2.0) for i in range(TICKS) if i != 6]))
    for pod in ("web-1", "web-2"):  # load triples at tick 2
        series.append(("bt_rps", {"namespace": "cadence", "pod": pod},
                       [(T0 + STEP * i, 10.0 if i < 2 else 30.0) for i in range(TICKS)]))
    for pod, value in (("web-7d9c8b5f4-abcde", 10.0), ("web-7d9c8b5f4-fghij", 10.0),
                       ("web-worker-5f6d7c8b9-klmno", 1000.0)):  # web's, then Deployment web-worker's
        series.append(("bt_rps", {"namespace": "prefix", "pod": pod}, [(T0 + STEP * i, value) for i in range(TICKS)]))
    for instance in ("ksm-0", "ksm-1"):  # kube-state-metrics with two replicas: every series twice
        series.append(("ha_replicas", {"namespace": "ha", "instance": instance},
                       [(T0 + STEP * i, 2.0) for i in range(TICKS)]))
    return openmetrics(series)


@pytest.fixture(scope="module")
def prometheus() -> Iterator[BackfilledPrometheus]:
    with BackfilledPrometheus(_history()) as server:
        yield server


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"rules": tmp_path / "rules.yaml", "inf": tmp_path / "inf.yaml", "ha": tmp_path / "ha.yaml",
           "steady": tmp_path / "steady.yaml", "zero": tmp_path / "zero.yaml",
           "every15": tmp_path / "every15.yaml", "every60": tmp_path / "every60.yaml",
           "prefix": tmp_path / "prefix.yaml"}
    out["prefix"].write_text(_spec("prefix"))
    out["every15"].write_text(_crd("every15", 15))
    out["every60"].write_text(_crd("every60", 60))
    out["zero"].write_text(_spec("zero"))
    out["steady"].write_text(_spec("steady", min_replicas=2, max_replicas=2))
    out["rules"].write_text(RULES)
    out["inf"].write_text(_spec("inf"))
    out["ha"].write_text(_spec("ha"))
    return out


def _run(capsys: pytest.CaptureFixture[str], prometheus: BackfilledPrometheus, files: dict[str, Path],
         spec: str, *argv: str, to: float = T0 + STEP * (TICKS - 1)) -> tuple[int, str, str]:
    code = main(["-f", str(files[spec]), "--prometheus-url", prometheus.url, "--rules", str(files["rules"]),
                 "--from", str(T0), "--to", str(to), *argv])
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
    assert body["runs"][0]["summary"]["blocked_ticks"] == len(INF_TICKS)
    code, text, err = _run(capsys, prometheus, files, "inf")
    held = next(line for line in text.splitlines() if line.startswith("syncs held: metrics missing or failed"))
    assert held.split()[-1] == str(len(INF_TICKS)) and "they held the count" in text


def test_actual_replicas_scraped_twice_are_refused_not_doubled(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    query = 'ha_replicas{namespace="ha"}'
    code, out, err = _run(capsys, prometheus, files, "ha", "-o", "json", "--actual-replicas-query", query)
    assert (code, out) == (1, "")
    assert query in err and "more than one series" in err and "max(" in err
    code, out, err = _run(capsys, prometheus, files, "ha", "-o", "json",
                          "--actual-replicas-query", f"max({query})")
    assert code == 0, err
    assert {s["actualReplicas"] for s in json.loads(out)["runs"][0]["steps"]} == {2.0}


def test_a_query_prometheus_refuses_is_named_with_prometheus_reason(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, prometheus, files, "ha", "--actual-replicas-query", "sum(ha_replicas")
    assert (code, out) == (1, "")
    assert "--actual-replicas-query sum(ha_replicas" in err and "bad_data" in err and "Traceback" not in err


def test_time_figures_cover_exactly_the_range_asked_for(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # 2 replicas (min = max = 2) for 160 s: 11 syncs, 15 s apart, the last one 10 s before --to.
    # Before, each of the 11 syncs counted a full step: 165 s at max and at min, in a 160 s range.
    code, out, err = _run(capsys, prometheus, files, "steady", "-o", "json", "--actual-replicas", "2",
                          to=T0 + 160)
    assert code == 0, err
    summary = json.loads(out)["runs"][0]["summary"]
    assert summary["replica_hours"] == pytest.approx(2 * 160 / 3600)
    assert summary["actual_replica_hours"] == pytest.approx(2 * 160 / 3600)
    assert (summary["seconds_at_max"], summary["seconds_at_min"]) == (160.0, 160.0)
    assert (summary["seconds_above_target"], summary["seconds_below_target"]) == (0.0, 0.0)  # exactly on target


def test_time_below_target_counts_only_syncs_whose_metrics_were_read(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # 5 per pod against 10: below target, except the 4 syncs whose samples were +Inf (not read).
    code, out, err = _run(capsys, prometheus, files, "inf", "-o", "json", to=T0 + STEP * TICKS)
    assert code == 0, err
    summary = json.loads(out)["runs"][0]["summary"]
    assert summary["seconds_below_target"] == (TICKS - len(INF_TICKS)) * STEP
    assert summary["seconds_above_target"] == 0.0


def test_the_report_names_the_syncs_that_decided_other_than_the_recorded_replicas(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # 2 replicas recorded at 15 per pod against 10: the replay wants 3 from the first sync on.
    argv = ("--actual-replicas-query", 'max(ha_replicas{namespace="ha"})')
    code, out, err = _run(capsys, prometheus, files, "ha", "-o", "json", *argv)
    assert code == 0, err
    summary = json.loads(out)["runs"][0]["summary"]
    assert summary["steps_differing"] == TICKS
    assert summary["seconds_above_actual"] == (TICKS - 1) * STEP and summary["seconds_below_actual"] == 0.0
    assert summary["differences"] == [{"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:02:45Z",
                                       "steps": TICKS, "replicas": [3, 3], "actual": [2.0, 2.0]}]
    code, text, err = _run(capsys, prometheus, files, "ha", *argv)
    assert code == 0, err
    assert "steps at another count than recorded" in text
    assert "2026-01-01T00:00:00Z .. 2026-01-01T00:02:45Z (12 steps): replay 3, recorded 2" in text


def test_a_target_scaled_to_zero_outside_the_autoscaler_is_followed_not_scaled(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # minReplicas 1: an autoscaler never scales to 0, so a recorded 0 was set by someone else and the
    # controller holds it (ScalingDisabled) until someone scales the target up again. Before, the replay
    # started at minReplicas (0 is falsy) and scaled a target that had no pods.
    code, out, err = _run(capsys, prometheus, files, "zero", "-o", "json",
                          "--actual-replicas-query", 'zero_replicas{namespace="zero"}')
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    assert [s["replicas"] for s in run["steps"]] == [0] * 4 + [2] * (TICKS - 4)
    assert (run["summary"]["scale_ups"], run["summary"]["scale_downs"], run["summary"]["steps_differing"]) == (0, 0, 0)
    assert [(c["from"], c["to"], c["external"]) for c in run["changes"]] == [(0, 2, True)]
    assert run["summary"]["seconds_at_min"] == 0.0  # held at 0 by someone else, not at minReplicas (1)


def test_a_sync_without_the_recorded_replicas_holds(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # The replica series misses tick 6 only; Prometheus' look-back would carry tick 5's value over, so
    # the range ends before the look-back could: the query below drops samples older than 1s.
    code, out, err = _run(capsys, prometheus, files, "ha", "-o", "json", "--actual-replicas-query",
                          'last_over_time(gap_replicas{namespace="ha"}[1s])')
    assert code == 0, err
    body = json.loads(out)
    steps = body["runs"][0]["steps"]
    assert "actual replicas" in steps[6]["error"]
    assert steps[6]["replicas"] == steps[5]["replicas"]
    assert [(g["what"], g["syncs"]) for g in body["gaps"]] == [("actual replicas", 1)]


def test_compared_specs_each_sync_at_their_own_period(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # The load triples at tick 2; the legacy scale-up limit is max(2 x current, 4). Syncing every 15 s
    # goes 2 -> 4 -> 6 on the next two syncs; every 60 s, at ticks 4 and 8. Before, the compared spec
    # was replayed at the first spec's 15 s, so both reacted alike.
    code, out, err = _run(capsys, prometheus, files, "every15", "-o", "json", "--compare", str(files["every60"]))
    assert code == 0, err
    body = json.loads(out)
    fast, slow = ([s["replicas"] for s in run["steps"]] for run in body["runs"])
    assert fast == [2, 2, 4] + [6] * (TICKS - 3)
    assert slow == [2] * 4 + [4] * 4 + [6] * (TICKS - 8)
    assert body["range"]["stepSeconds"] == 15
    assert body["inputs"]["sync periods"] == "every15: 15s, every60: 1m"
    slow_values = [s["values"][0] for s in body["runs"][1]["steps"]]
    assert slow_values[2] == 30_000  # between its syncs the load is still read for the time-above-target figure
    assert body["runs"][1]["summary"]["seconds_above_target"] == 7 * STEP  # ticks 2-8: 30, then 15 per pod
    assert body["runs"][1]["steps"][1]["limitedBy"] == "" and body["runs"][1]["summary"]["scale_ups"] == 2



def test_pods_of_a_sibling_workload_whose_name_starts_alike_are_not_the_targets(
        prometheus: BackfilledPrometheus, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # Deployment web's pods are web-<template hash>-<suffix>; Deployment web-worker's pods also start
    # with "web-". The default name pattern was web-.*, which took their load for web's.
    code, out, err = _run(capsys, prometheus, files, "prefix", "-o", "json")
    assert code == 0, err
    body = json.loads(out)
    assert [s["replicas"] for s in body["runs"][0]["steps"]] == [2] * TICKS
    assert body["inputs"]["pods"] == "names matching web-[a-z0-9]+(-[a-z0-9]+)?"
