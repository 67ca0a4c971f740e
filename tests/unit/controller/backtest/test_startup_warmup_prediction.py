"""Issue 24: pod start-up, the warm-up before --from, the deficit figures, predictive replays, JSON."""

from __future__ import annotations

import json
import math
from array import array

import numpy as np
import pytest

from adapter.rules.query import PromQL
from controller.algorithm import ControllerConfig
from controller.algorithm.spec import (
    AutoscalerSpec, MetricSpec, MetricTarget, PodSamples, PredictionMode, PredictionSpec, TargetType,
)  # fmt: skip
from controller.backtest.model import Grid, LoadModel, MetricHistory, since
from controller.backtest.options import Options, parse_options
from controller.backtest.report import MetricInfo, Report, SpecRun, render_text
from controller.backtest.report_data import render_json
from controller.backtest.report_html import render_html
from controller.backtest.run import Inputs, _Fetched, _key, replay
from controller.backtest.simulate import Timeline, simulate
from controller.backtest.spec_file import BacktestSpec
from controller.backtest.summary import summarize
from controller.forecast import History
from controller.history.resolve import MetricQuery, QueryKind

STEP = 15.0
EXTERNAL = MetricSpec(type="External", name="queue",
                      target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000))  # 10 per pod
PODS = MetricSpec(type="Pods", name="rps", target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000))
NO_WINDOW = ControllerConfig(downscale_stabilization=0)


def _history(loads: list[float]) -> MetricHistory:
    """Totals (not milli) per tick; NaN: no sample."""
    return MetricHistory(total=array("d", [0.0 if math.isnan(v) else v * 1000.0 for v in loads]),
                         present=bytes(0 if math.isnan(v) else 1 for v in loads), pods=array("H", [2] * len(loads)))


def _query(metric: MetricSpec, kind: QueryKind) -> MetricQuery:
    return MetricQuery(index=0, spec=metric, kind=kind, promql=PromQL("q"), object_label="pod")


def _replay(loads: list[float], *, startup: float = 0.0, initial: int = 2,
            spec: AutoscalerSpec | None = None) -> tuple[Timeline, LoadModel]:
    grid = Grid(start=0.0, step=STEP, count=len(loads))
    spec = spec or AutoscalerSpec(min_replicas=1, max_replicas=10, metrics=(EXTERNAL,))
    model = LoadModel(grid=grid, queries=[_query(spec.metrics[0], QueryKind.EXTERNAL)], histories=[_history(loads)],
                      actual=None, window=0.0)
    timeline = simulate("web", spec, model, grid, config=NO_WINDOW, requests={}, initial_replicas=initial,
                        pod_startup=startup)
    return timeline, model


def test_deficit_and_time_beyond_tolerance_on_a_hand_computed_replay() -> None:
    # tick 0: 20 over 2 pods = 10, at target. tick 1: 50 over 2 = 25 -> 5 wanted, the legacy limit gives 4;
    # needed 50 / (10 x 1.1) = 4.545 against 4 ready. tick 2: 42 over 4 = 10.5: above the target, inside the
    # tolerance, so the HPA holds (needed 3.8 < 4: no deficit). tick 3: 20 over 4 -> 2.
    timeline, model = _replay([20, 50, 42, 20])
    assert list(timeline.replicas) == [2, 4, 4, 2]
    assert list(timeline.ready) == [2, 4, 4, 2]
    s = summarize(timeline, model, flap_window=600, per_node=None)
    assert s.seconds_above_target == 30.0  # ticks 1 and 2 (the last tick spans nothing: the range ends there)
    assert s.seconds_above_tolerance == 15.0  # tick 1 only: 10.5 is inside 10 x 1.1
    assert s.deficit_replica_hours == pytest.approx((50 / 11 - 4) * 15 / 3600)
    assert s.replica_hours == pytest.approx((2 + 4 + 4) * 15 / 3600)


def test_pod_start_up_delays_capacity() -> None:
    # The same load with a 30 s start-up: the 2 pods added at tick 1 serve from tick 3 (t = 45).
    timeline, model = _replay([20, 50, 42, 20], startup=30.0)
    assert list(timeline.replicas) == [2, 4, 4, 2]  # status.replicas counts the starting pods: the HPA holds
    assert list(timeline.ready) == [2, 2, 2, 2]  # scaled back down to 2 (the not-ready pods went first)
    assert timeline.values[0][2] == 21_000.0  # what each serving pod carries: 42 over the 2 ready pods
    s = summarize(timeline, model, flap_window=600, per_node=None)
    assert s.deficit_replica_hours == pytest.approx(((50 / 11 - 2) + (42 / 11 - 2)) * 15 / 3600)
    assert s.seconds_above_tolerance == 30.0


def test_per_pod_load_is_spread_over_the_ready_pods_only() -> None:
    grid = Grid(start=0.0, step=STEP, count=1)
    model = LoadModel(grid=grid, queries=[_query(PODS, QueryKind.PER_POD)], histories=[_history([60])],
                      actual=None, window=0.0)
    (samples,) = model.observations(0, 4, ready=("sim-0", "sim-1", "sim-2"))
    assert isinstance(samples, PodSamples)
    assert sorted(samples.values) == ["sim-0", "sim-1", "sim-2"]  # sim-3 is starting: no sample, a missing pod
    assert {m.value for m in samples.values.values()} == {20_000}


def test_a_starting_pod_is_running_but_not_ready_for_the_algorithm() -> None:
    spec = AutoscalerSpec(min_replicas=1, max_replicas=10, metrics=(PODS,))
    grid = Grid(start=0.0, step=STEP, count=4)
    loads = [20.0, 80.0, 80.0, 80.0]
    model = LoadModel(grid=grid, queries=[_query(PODS, QueryKind.PER_POD)], histories=[_history(loads)],
                      actual=None, window=0.0)
    slow = simulate("web", spec, model, grid, config=NO_WINDOW, requests={}, initial_replicas=2, pod_startup=600.0)
    fast = simulate("web", spec, model, grid, config=NO_WINDOW, requests={}, initial_replicas=2)
    # Ready at once: 80 over 4 then 8 pods. Starting pods report nothing: the 2 ready ones carry 40 each, and
    # the missing ones count as 0 on a scale-up (upstream's rule), so at 8 pods the ratio is 80 / (8 x 10) = 1
    # and the HPA holds instead of chasing the 4x it reads on the ready pods.
    assert list(fast.replicas) == [2, 4, 8, 8]
    assert list(slow.replicas) == [2, 4, 8, 8]
    assert list(slow.ready) == [2, 2, 2, 2]
    assert list(slow.values[0]) == [10_000, 40_000, 40_000, 40_000]


def _inputs(loads: list[float], *, warm: int, spec: AutoscalerSpec) -> tuple[Inputs, Options]:
    grid = Grid(start=warm * STEP, step=STEP, count=len(loads) - warm)
    query = _query(spec.metrics[0], QueryKind.EXTERNAL)
    opts = parse_options(["-f", "web.yaml", "--prometheus-url", "http://127.0.0.1:9", "--rules", "rules.yaml",
                          "--from", str(grid.start), "--to", str(grid.end), "-o", "json"], now=1e9)
    bt = BacktestSpec(name="web", namespace="shop", target_kind="Deployment", target_name="web", sync_period=STEP,
                      autoscaler=spec, metric_selectors=("",))
    fetched = _Fetched(histories={_key(query): _history(loads)}, actual=None, gaps=())
    return Inputs(grid=grid, specs=(bt,), resolved=((query,),), fetched=fetched, namespace="shop", pod_regex="web-.*",
                  warm=warm), opts


def test_the_warm_up_removes_the_cold_start() -> None:
    spec = AutoscalerSpec(min_replicas=1, max_replicas=20, metrics=(EXTERNAL,))
    loads = [100.0] * 60  # needs 10 replicas all along; the range is the last 40 ticks
    warm_inputs, opts = _inputs(loads, warm=20, spec=spec)
    cold_inputs = Inputs(grid=warm_inputs.grid, specs=warm_inputs.specs, resolved=warm_inputs.resolved,
                         fetched=_Fetched(histories={k: since(h, 20) for k, h in warm_inputs.fetched.histories.items()},
                                          actual=None, gaps=()),
                         namespace="shop", pod_regex="web-.*", warm=0)
    cold = replay(opts, cold_inputs).runs[0]
    warm = replay(opts, warm_inputs).runs[0]
    assert cold.timeline.replicas[0] == 4 and cold.summary.peak_ratio == pytest.approx(10.0)  # from minReplicas 1
    assert cold.summary.deficit_replica_hours > 0
    assert warm.timeline.grid == warm_inputs.grid and len(warm.timeline.replicas) == 40  # the range only
    assert set(warm.timeline.replicas) == {10}
    assert warm.summary.deficit_replica_hours == 0 and warm.summary.seconds_above_target == 0
    assert warm.summary.scale_ups == 0  # the warm-up's scale events are not the range's


DAY = 86_400.0


def _daily(t: np.ndarray) -> np.ndarray:
    """A daily cycle with a steep morning rise: 40 at night, 400 at noon (totals, milli-units)."""
    phase = (t % DAY) / DAY
    return 1000.0 * (40 + 360 * np.clip(np.sin(np.pi * (phase - 0.25) / 0.5), 0, None) ** 3)


def test_a_predictive_spec_replays_with_forecasts_and_a_lower_deficit() -> None:
    step, days_before = 60.0, 3
    # the day's ramp and peak only (the 2 s unit budget): from 04:48 to 13:12 of the fourth day
    grid = Grid(start=days_before * DAY + 0.2 * DAY, step=step, count=int(0.35 * DAY / step))
    t = np.arange(0.0, grid.end + step, step)
    load = _daily(t)
    history = History(start=0.0, step=step, values=load)
    present = load[-grid.count:] / 1000.0
    reactive = AutoscalerSpec(min_replicas=2, max_replicas=60, metrics=(EXTERNAL,))
    predictive = AutoscalerSpec(min_replicas=2, max_replicas=60, metrics=(EXTERNAL,),
                                prediction=PredictionSpec(mode=PredictionMode.ACTIVE, horizon_seconds=240))
    model = LoadModel(grid=grid, queries=[_query(EXTERNAL, QueryKind.EXTERNAL)], histories=[_history(list(present))],
                      actual=None, window=0.0)
    runs = {}
    for name, spec in (("reactive", reactive), ("predictive", predictive)):
        timeline = simulate(name, spec, model, grid, config=ControllerConfig(), requests={}, initial_replicas=4,
                            pod_startup=180.0, histories=(history,))
        runs[name] = (timeline, summarize(timeline, model, flap_window=600, per_node=None))
    predicted, summary = runs["predictive"]
    assert predicted.horizon == 240 and sum(predicted.predicted) > 0
    assert np.isfinite(np.frombuffer(predicted.forecasts[0], dtype=np.float64)).mean() > 0.9
    assert runs["reactive"][0].forecasts == ()
    assert summary.deficit_replica_hours < 0.5 * runs["reactive"][1].deficit_replica_hours
    assert summary.replica_hours < 1.25 * runs["reactive"][1].replica_hours
    info = MetricInfo(label="External queue (AverageValue)", unit="m", promql="q", rule="r", assumption="exogenous")
    report = Report(inputs={}, runs=tuple(SpecRun(source=f"{name}.yaml", timeline=t, summary=s, metrics=(info,))
                                          for name, (t, s) in runs.items()),
                    gaps=(), actual=(), actual_source="-", per_node=None, flap_window=600)
    html = render_html(report)  # the forecast drawn against what happened, for the predictive run only
    assert 'data-series="forecast 0: predictive"' in html and 'data-series="recorded load 0: predictive"' in html
    assert 'data-series="highest load over the horizon 0: predictive"' in html
    assert "forecast 0: reactive" not in html
    assert "syncs raised by the forecast" in render_text(report)


def test_json_summary_has_the_deficit_keys_and_the_runs_in_the_order_given() -> None:
    spec = AutoscalerSpec(min_replicas=1, max_replicas=20, metrics=(EXTERNAL,))
    inputs, opts = _inputs([100.0] * 30, warm=10, spec=spec)
    second = BacktestSpec(name="second", namespace="shop", target_kind="Deployment", target_name="web",
                          sync_period=STEP, autoscaler=spec, metric_selectors=("",))
    both = Inputs(grid=inputs.grid, specs=(inputs.specs[0], second), resolved=inputs.resolved * 2,
                  fetched=inputs.fetched, namespace="shop", pod_regex="web-.*", warm=10)
    body = json.loads(render_json(replay(opts, both)))
    assert [r["name"] for r in body["runs"]] == ["web", "second"]
    for run in body["runs"]:
        summary = run["summary"]
        assert {"deficit_replica_hours", "seconds_above_tolerance", "replica_hours",
                "seconds_above_target"} <= set(summary)
        assert run["steps"][0]["readyReplicas"] == 10


def test_pod_startup_is_a_duration_flag() -> None:
    base = ["-f", "web.yaml", "--prometheus-url", "http://127.0.0.1:9", "--rules", "r.yaml", "--from", "0", "--to", "60"]
    assert parse_options(base, now=1e9).pod_startup == 0.0
    assert parse_options([*base, "--pod-startup", "3m"], now=1e9).pod_startup == 180.0
    with pytest.raises(ValueError, match="--pod-startup"):
        parse_options([*base, "--pod-startup", "2h"], now=1e9)
