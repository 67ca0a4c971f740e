"""Scale to zero in the backtest: two days of a queue that empties every night, replayed with
`minReplicas: 0` and compared (`--compare`) with the same spec at `minReplicas: 1`: the summary
shows the time at 0 replicas and the replica-hours saved."""

from __future__ import annotations

from array import array

import pytest
import yaml

from controller.algorithm import ControllerConfig
from controller.backtest.model import Grid, LoadModel, MetricHistory
from controller.backtest.report import MetricInfo, Report, SpecRun, render_text
from controller.backtest.simulate import simulate
from controller.backtest.spec_file import spec_from_manifest
from controller.backtest.summary import summarize
from controller.history.resolve import MetricQuery, QueryKind

STEP, DAY = 300.0, 86_400
T0 = 1_700_006_400.0  # midnight UTC
MANIFEST = """
apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
kind: PromAutoscaler
metadata: {name: worker, namespace: jobs}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  minReplicas: %d
  maxReplicas: 10
  scaleToZero: {cooldownSeconds: 600}
  metrics:
  - type: External
    external: {metric: {name: queue_messages_ready}, target: {type: AverageValue, averageValue: "10"}}
"""


def _queue(t: float) -> float:
    """30 messages from 08:00 to 20:00 (3 replicas), an empty queue at night."""
    return 30.0 if 8 * 3600 <= (t - T0) % DAY < 20 * 3600 else 0.0


def test_idle_nights_show_time_at_zero_and_the_replica_hours_saved() -> None:
    grid = Grid(start=T0, step=STEP, count=int(2 * DAY / STEP))
    queue = MetricHistory(total=array("d", [_queue(grid.time(i)) * 1000 for i in range(grid.count)]),
                          present=b"\x01" * grid.count, pods=array("H", [1] * grid.count))
    runs = []
    for minimum in (0, 1):
        spec = spec_from_manifest(yaml.safe_load(MANIFEST % minimum)).autoscaler
        query = MetricQuery(index=0, spec=spec.metrics[0], kind=QueryKind.EXTERNAL, promql="q", object_label="pod")  # type: ignore[arg-type]
        model = LoadModel(grid=grid, queries=[query], histories=[queue], actual=None, window=0.0)
        timeline = simulate(f"min {minimum}", spec, model, grid, config=ControllerConfig(), requests={},
                            initial_replicas=1)
        runs.append((timeline, summarize(timeline, model, flap_window=600, per_node=None)))
    (zero_run, zero), (one_run, one) = runs
    assert min(zero_run.replicas) == 0 and max(zero_run.replicas) == 3 and min(one_run.replicas) == 1
    # the empty hours (0-8 h, 20-32 h, 44-48 h: 24 h) less each cooldown and the downscale window
    assert 23 * 3600 <= zero.seconds_at_zero < 24 * 3600, zero.seconds_at_zero
    assert one.seconds_at_zero == 0
    saved = one.replica_hours - zero.replica_hours
    assert saved == pytest.approx(zero.seconds_at_zero / 3600)  # a replica-hour for every hour at 0 instead of 1
    assert zero.scale_ups == 2  # woken once each morning, straight to 3 (no 0 -> 1 -> 3 staircase)
    info = MetricInfo(label="External queue_messages_ready (AverageValue)", unit="m", promql="q", rule="r",
                      assumption="exogenous")
    report = Report(inputs={}, runs=tuple(SpecRun(source=f"{t.name}.yaml", timeline=t, summary=s, metrics=(info,))
                                          for t, s in runs),
                    gaps=(), actual=(), actual_source="-", per_node=None, flap_window=600)
    text = render_text(report)
    assert "time at 0 replicas" in text
    row = next(line for line in text.splitlines() if line.startswith("replica-hours saved against the other spec"))
    assert f"{saved:.1f}" in row and f"{-saved:.1f}" in row, row
