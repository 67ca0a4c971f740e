"""The load model: how history becomes what the algorithm sees at each simulated sync."""

from __future__ import annotations

import re

import pytest

from controller.algorithm.spec import ExternalSamples, FetchFailure, MetricSpec, MetricTarget, ObjectSample, PodSamples, TargetType
from controller.backtest.model import Accumulator, Gap, Grid, LoadModel, assumption_for, gaps
from controller.history.resolve import MetricQuery, QueryKind

GRID = Grid(start=1000.0, step=15.0, count=6)


def _query(kind: QueryKind, target: TargetType = TargetType.AVERAGE_VALUE) -> MetricQuery:
    spec = MetricSpec(type="Pods", name="rps", target=MetricTarget(type=target, average_value=1000, value=1000))
    return MetricQuery(index=0, spec=spec, kind=kind, promql="q", object_label="pod" if kind is QueryKind.PER_POD else "service",  # type: ignore[arg-type]
                       object_name="web" if kind is QueryKind.OBJECT else "")


def _values(*pairs: tuple[float, str]) -> list[list[object]]:
    return [[t, v] for t, v in pairs]


def test_per_pod_history_keeps_the_sum_and_how_many_selected_pods_reported() -> None:
    acc = Accumulator.for_query(_query(QueryKind.PER_POD), GRID, re.compile("web-.*"))
    acc.add([({"pod": "web-1"}, _values((1000, "2"), (1015, "4"))),
             ({"pod": "web-2"}, _values((1000, "6"), (1030, "NaN"))),
             ({"pod": "db-1"}, _values((1000, "100"),))])  # not the target's pod
    acc.add([({"pod": "web-2"}, _values((1045, "1"), (9999, "5")))])  # a later chunk; a point off the grid
    h = acc.history()
    assert list(h.total[:4]) == [8000.0, 4000.0, 0.0, 1000.0]
    assert list(h.pods[:4]) == [2, 1, 0, 1]
    assert h.present == bytes([1, 1, 0, 1, 0, 0])
    assert h.pod_names == ("web-1", "web-2")


@pytest.mark.parametrize(("present", "expected"), [
    pytest.param(bytes([1, 1, 1, 1, 1, 1]), [], id="complete"),
    pytest.param(bytes([1, 0, 0, 1, 1, 0]), [(1015.0, 1030.0, 2), (1075.0, 1075.0, 1)], id="a hole and a missing end"),
    pytest.param(bytes(6), [(1000.0, 1075.0, 6)], id="nothing at all"),
])
def test_gaps_are_runs_of_syncs_without_a_sample(present: bytes, expected: list[tuple[float, float, int]]) -> None:
    assert gaps("m", present, GRID) == tuple(Gap(what="m", start=s, end=e, ticks=n) for s, e, n in expected)


def _model(kind: QueryKind, totals: list[float], pods: int = 2, actual: float | None = None) -> LoadModel:
    acc = Accumulator.for_query(_query(kind), GRID, None)
    names = [f"web-{k}" for k in range(pods)] if kind is QueryKind.PER_POD else ["web"]
    acc.add([({"pod": n, "service": n}, _values(*((1000 + 15 * i, str(t / len(names))) for i, t in enumerate(totals))))
             for n in names])
    real = None
    if actual is not None:
        replicas = Accumulator(grid=GRID, kind=QueryKind.EXTERNAL)
        replicas.add([({}, _values((1000, str(actual)),))])
        real = replicas.history()
    return LoadModel(grid=GRID, queries=[_query(kind)], histories=[acc.history()], actual=real, window=0.0)


@pytest.mark.parametrize(("actual", "simulated", "per_pod", "reporting"), [
    pytest.param(None, 2, 30_000, 2, id="as measured: 60 over the 2 reporting pods"),
    pytest.param(None, 4, 15_000, 4, id="twice the pods: half the load each"),
    pytest.param(3.0, 4, 22_500, 3, id="3 pods really ran (one did not report): 30 x 3 / 4, one pod stays silent"),
])
def test_per_pod_load_is_rescaled_from_the_total(actual: float | None, simulated: int, per_pod: int,
                                                  reporting: int) -> None:
    (obs,) = _model(QueryKind.PER_POD, [60.0], actual=actual).observations(0, simulated)
    assert isinstance(obs, PodSamples)
    assert sorted(obs.values) == [f"sim-{k}" for k in range(reporting)]
    assert {m.value for m in obs.values.values()} == {per_pod}


def test_object_and_external_values_are_exogenous() -> None:
    assert _model(QueryKind.OBJECT, [7.0]).observations(0, 9) == (ObjectSample(value=7000, timestamp=1000.0),)
    assert _model(QueryKind.EXTERNAL, [7.0]).observations(0, 9) == (ExternalSamples(values=(7000,), timestamp=1000.0),)


def test_a_gap_is_a_failed_metric_never_a_made_up_value() -> None:
    (obs,) = _model(QueryKind.PER_POD, [60.0]).observations(3, 2)
    assert isinstance(obs, FetchFailure) and "gap" in obs.message


@pytest.mark.parametrize(("kind", "target", "starts"), [
    pytest.param(QueryKind.PER_POD, TargetType.AVERAGE_VALUE, "counterfactual", id="per-pod"),
    pytest.param(QueryKind.EXTERNAL, TargetType.AVERAGE_VALUE, "exogenous: total as recorded", id="external average"),
    pytest.param(QueryKind.OBJECT, TargetType.VALUE, "exogenous: value as recorded", id="object value"),
])
def test_the_report_states_each_metrics_assumption(kind: QueryKind, target: TargetType, starts: str) -> None:
    assert assumption_for(_query(kind, target)).startswith(starts)
