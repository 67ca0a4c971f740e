"""Review of the load model: a sync never decides on data the history does not hold.

The live controller reads the target's replica count and each pod's metric every sync. When the
history lacks what the rescaled load needs (the replicas that really ran), that sync's per-pod
metric has failed, as it would live; when some of the target's pods reported nothing, the
algorithm is told so (upstream's missing-pod rules: 0 when scaling up, the target when scaling
down) instead of being handed made-up values for them.
"""

from __future__ import annotations

import re

import pytest

from controller.algorithm import ControllerConfig
from controller.algorithm.spec import (
    AutoscalerSpec, FetchFailure, MetricSpec, MetricTarget, PodSamples, TargetType,
)  # fmt: skip
from controller.backtest.model import Accumulator, Grid, LoadModel, MetricHistory
from controller.history.resolve import MetricQuery, QueryKind
from controller.backtest.simulate import simulate

GRID = Grid(start=1000.0, step=15.0, count=4)
SPEC = AutoscalerSpec(min_replicas=1, max_replicas=20, metrics=(
    MetricSpec(type="Pods", name="rps", target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000)),))
QUERY = MetricQuery(index=0, spec=SPEC.metrics[0], kind=QueryKind.PER_POD, promql="q",  # type: ignore[arg-type]
                    object_label="pod")


def _per_pod(per_tick: list[dict[str, float]]) -> MetricHistory:
    acc = Accumulator.for_query(QUERY, GRID, re.compile("web-.*"))
    pods = sorted({p for tick in per_tick for p in tick})
    acc.add([({"pod": p}, [[GRID.time(i), str(tick[p])] for i, tick in enumerate(per_tick) if p in tick])
             for p in pods])
    return acc.history()


def _actual(values: list[float | None]) -> MetricHistory:
    acc = Accumulator(grid=GRID, kind=QueryKind.EXTERNAL, one_series=True)
    acc.add([({}, [[GRID.time(i), str(v)] for i, v in enumerate(values) if v is not None])])
    return acc.history()


def _model(per_tick: list[dict[str, float]], actual: list[float | None] | None) -> LoadModel:
    return LoadModel(grid=GRID, queries=[QUERY], histories=[_per_pod(per_tick)],
                     actual=None if actual is None else _actual(actual), window=0.0)


def test_a_sync_without_the_recorded_replicas_fails_the_per_pod_metric() -> None:
    # Tick 2 has pod samples but no replica count: the load cannot be rescaled, so nothing is decided
    # on it (before: it silently fell back to the 2 reporting pods, half the 4 that really ran).
    model = _model([{"web-1": 10, "web-2": 10}] * 4, actual=[4, 4, None, 4])
    (obs,) = model.observations(2, 4)
    assert isinstance(obs, FetchFailure) and "replicas" in obs.message
    assert isinstance(model.observations(3, 4)[0], PodSamples)


@pytest.mark.parametrize(("actual", "simulated", "reporting", "value"), [
    pytest.param(4.0, 4, 3, 10_000, id="as recorded: 3 of 4 pods reported 10 each"),
    pytest.param(4.0, 8, 7, 5_000, id="twice the pods: the same one pod without metrics"),
    pytest.param(4.0, 1, 0, None, id="no simulated pod left with metrics"),
    pytest.param(2.0, 3, 3, 6_666, id="more pods reported than ran (terminating): none missing, 20 over 3"),
])
def test_pods_that_reported_nothing_stay_without_metrics(actual: float, simulated: int, reporting: int,
                                                         value: int | None) -> None:
    per_tick = [{"web-1": 10, "web-2": 10, "web-3": 10}] * 4
    (obs,) = _model(per_tick, actual=[actual] * 4).observations(0, simulated)
    assert isinstance(obs, PodSamples)
    assert len(obs.values) == reporting
    if value is not None:
        assert {m.value for m in obs.values.values()} == {value}


def test_missing_pods_slow_a_scale_up_as_upstream_does() -> None:
    # 4 pods ran, 2 reported 30 each (target 10): all four at 30 would ask for 12; upstream counts
    # the two silent pods as 0 when scaling up: (60 + 0) / 4 = 15 per pod -> 6 replicas.
    model = _model([{"web-1": 30, "web-2": 30}] * 4, actual=[4] * 4)
    timeline = simulate("web", SPEC, model, GRID, config=ControllerConfig(), requests={}, initial_replicas=4)
    assert timeline.replicas[0] == 6


def test_a_failed_external_read_names_the_autoscalers_namespace_as_the_controller_does() -> None:
    # The live controller words it "unable to get external metric <ns>/<metric>/<selector>: ..."; the
    # replay of the same spec must say the same, not "/queue/nil".
    spec = AutoscalerSpec(min_replicas=1, max_replicas=20, metrics=(
        MetricSpec(type="External", name="queue",
                   target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000)),))
    query = MetricQuery(index=0, spec=spec.metrics[0], kind=QueryKind.EXTERNAL, promql="q",  # type: ignore[arg-type]
                        object_label="")
    empty = Accumulator(grid=GRID, kind=QueryKind.EXTERNAL).history()  # no sample at any tick
    model = LoadModel(grid=GRID, queries=[query], histories=[empty], actual=None, window=0.0)
    timeline = simulate("web", spec, model, GRID, config=ControllerConfig(), requests={}, initial_replicas=4,
                        namespace="shop")
    assert "unable to get external metric shop/queue/nil: no sample in history" in timeline.errors[0]
    assert list(timeline.replicas) == [4] * GRID.count
