"""The history as the simulation sees it, and the counterfactual load model, stated.

`Grid` is the simulated clock's ticks (start, step, count). `Accumulator`s fold range-query
answers, chunk by chunk, into per-tick arrays (`controller.history.fold`, the one copy the live
reader uses too: re-exported here); actual replicas are folded as their sum.

The model (issue 11): history was measured at the replica counts that actually ran. For per-pod
metrics (Resource, ContainerResource, Pods) the total load is the observed per-pod average times
the actual replicas, spread evenly over the simulated replicas, except that as many simulated pods
as the target's pods that reported nothing (actual replicas - reporting pods) get no value, so the
algorithm's missing-pod rules apply as they did live; a tick whose actual replicas the query
answered nothing for fails the per-pod metric (the load cannot be rescaled). Object and External metrics are
exogenous: passed as recorded (an AverageValue target is divided by the simulated replicas by the
algorithm itself). NaN, ±Inf and values beyond a quantity are no sample (the adapter serves none
for them). A tick with no sample is a gap: the metric is reported as failed to the
algorithm, as a live controller would see it, never filled in.

Non-goals: fetching, deciding. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from controller.algorithm.spec import (
    ExternalSamples, FetchFailure, ObjectSample, Observation, PodSamples, TargetType,
)  # fmt: skip
from controller.algorithm.pods import PodMetric
from controller.history.fold import Accumulator, Grid, MetricHistory, Series
from controller.history.resolve import MetricQuery, QueryKind
from kubecommon import kubetime

__all__ = ["Accumulator", "Gap", "Grid", "LoadModel", "MetricHistory", "Series", "assumption_for", "gaps", "iso_time",
           "since"]


def iso_time(ts: float) -> str:
    """RFC 3339 UTC, whole seconds, as Kubernetes prints a time (`kubecommon.kubetime`)."""
    return kubetime.format_time(ts)


def since(h: MetricHistory, first: int) -> MetricHistory:
    """The history from tick `first` on (the range after a warm-up)."""
    return MetricHistory(total=h.total[first:], present=h.present[first:], pods=h.pods[first:],
                         pod_names=h.pod_names)


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap:
    what: str
    start: float
    end: float
    ticks: int


def gaps(what: str, present: bytes, grid: Grid) -> tuple[Gap, ...]:
    """Runs of ticks without a sample, each as one `Gap`."""
    out, i, n = [], 0, len(present)
    while i < n:
        j = present.find(1, i) if present[i] == 0 else i
        if j != i:
            stop = n if j < 0 else j
            out.append(Gap(what=what, start=grid.time(i), end=grid.time(stop - 1), ticks=stop - i))
            i = stop
            continue
        k = present.find(0, i)
        i = n if k < 0 else k
    return tuple(out)


def assumption_for(q: MetricQuery) -> str:
    target = q.spec.target
    if q.kind is QueryKind.PER_POD:
        return "counterfactual: per-pod value x actual replicas / simulated replicas"
    if target is not None and target.type is TargetType.AVERAGE_VALUE:
        return "exogenous: total as recorded; the algorithm divides it by the simulated replicas"
    return "exogenous: value as recorded, independent of the replica count (open loop)"


class LoadModel:
    """Observations for tick `i` at `replicas` simulated pods (read-only after construction)."""

    __slots__ = ("_actual", "_grid", "_histories", "_kinds", "_names", "_window", "_pods_cache")

    def __init__(self, *, grid: Grid, queries: Sequence[MetricQuery], histories: Sequence[MetricHistory],
                 actual: MetricHistory | None, window: float) -> None:
        self._grid = grid
        self._kinds = tuple(q.kind for q in queries)
        self._names = tuple(f"{q.spec.type} {q.spec.name}" for q in queries)
        self._histories = tuple(histories)
        self._actual = actual
        self._window = window
        self._pods_cache: dict[int, tuple[str, ...]] = {}

    def pod_names(self, replicas: int) -> tuple[str, ...]:
        names = self._pods_cache.get(replicas)
        if names is None:
            names = self._pods_cache[replicas] = tuple(f"sim-{k}" for k in range(replicas))
        return names

    def actual_replicas(self, i: int) -> float | None:
        """Replicas that really ran at tick i: the flag/query when known, else None."""
        a = self._actual
        return a.total[i] / 1000.0 if a is not None and a.present[i] else None

    def observations(self, i: int, replicas: int, *,
                     ready: Sequence[str] | None = None) -> tuple[Observation, ...]:
        """What each metric shows at tick `i` when `replicas` pods run (one call per simulated sync).
        `ready`: the names of the pods serving load (default: all `replicas`, `pod_names`); a per-pod
        metric spreads the load over them, and the pods still starting report nothing."""
        now = self._grid.start + i * self._grid.step
        actual = self.actual_replicas(i)
        serving = self.pod_names(replicas) if ready is None else ready
        out: list[Observation] = []
        for kind, h in zip(self._kinds, self._histories, strict=True):
            if not h.present[i]:
                out.append(FetchFailure(message=f"no sample in history at {iso_time(now)} (gap)"))
            elif kind is QueryKind.PER_POD:
                out.append(self._per_pod(h, i, serving, actual, now))
            elif kind is QueryKind.OBJECT:
                out.append(ObjectSample(value=int(h.total[i]), timestamp=now))
            else:
                out.append(ExternalSamples(values=(int(h.total[i]),), timestamp=now))
        return tuple(out)

    def _per_pod(self, h: MetricHistory, i: int, serving: Sequence[str], actual: float | None,
                 now: float) -> Observation:
        """The recorded load rescaled to the `serving` pods; as many of them as the target's pods that
        reported nothing at tick `i` stay without a value (the algorithm's missing-pod rules apply)."""
        if actual is None and self._actual is not None:
            return FetchFailure(message=f"no sample of the actual replicas in history at {iso_time(now)} (gap): "
                                        "the per-pod load cannot be rescaled")
        n = len(serving)
        reporting = h.pods[i]
        demand = h.total[i] / reporting * (actual if actual is not None else reporting)
        silent = 0 if actual is None else min(max(round(actual) - reporting, 0), n)
        sample = PodMetric(value=int(demand / max(n, 1)), timestamp=now, window=self._window)
        return PodSamples(values=dict.fromkeys(serving[:n - silent], sample))

    def load(self, k: int, i: int) -> float:
        """Metric `k`'s recorded load at tick `i` in milli-units, NaN without a sample: the value served for
        Object and External metrics, the total over the target's pods for per-pod ones (the per-pod average
        times the actual replicas when known). What a forecaster of the metric reads."""
        h = self._histories[k]
        if not h.present[i]:
            return math.nan
        if self._kinds[k] is not QueryKind.PER_POD:
            return h.total[i]
        reporting = h.pods[i]
        if reporting == 0:
            return math.nan
        if self._actual is None:
            return h.total[i]
        actual = self.actual_replicas(i)
        return math.nan if actual is None else h.total[i] / reporting * actual

    def first_actual(self) -> int | None:
        """The replicas at the first tick: the flag/query, else the pods reporting a per-pod metric."""
        actual = self.actual_replicas(0)
        if actual is not None:
            return round(actual)
        for kind, h in zip(self._kinds, self._histories, strict=True):
            if kind is QueryKind.PER_POD and h.present[0]:
                return int(h.pods[0])
        return None
