"""The history as the simulation sees it, and the counterfactual load model, stated.

`Grid` is the simulated clock's ticks (start, step, count). `Accumulator`s fold range-query
answers, chunk by chunk, into per-tick arrays (never the raw series): per-pod metrics keep the sum
over the selected pods and how many pods reported; Object metrics the described object's value;
External metrics the sum of every series (what the HPA sums); actual replicas their sum.

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

import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.algorithm.spec import (
    ExternalSamples, FetchFailure, ObjectSample, Observation, PodSamples, TargetType,
)  # fmt: skip
from controller.algorithm.pods import PodMetric
from controller.backtest.resolve import MetricQuery, QueryKind
from kubecommon import kubetime
from kubecommon.quantity import milli_from_float

__all__ = ["Accumulator", "Gap", "Grid", "LoadModel", "MetricHistory", "Series", "assumption_for", "gaps", "iso_time"]

# |value| below this has milli-units inside int64; the adapter leaves out NaN, ±Inf and larger values
_MILLI_LIMIT = float(2**63) / 1000.0
# One range-query answer: (labels, [[unix seconds, "value"], ...]) per series.
Series = tuple[Mapping[str, str], Sequence[Sequence[Any]]]


def iso_time(ts: float) -> str:
    """RFC 3339 UTC, whole seconds, as Kubernetes prints a time (`kubecommon.kubetime`)."""
    return kubetime.format_time(ts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Grid:
    start: float
    step: float
    count: int
    stop: float | None = None  # the range's end (`--to`), at or after the last tick; None: the last tick

    def time(self, index: int) -> float:
        return self.start + index * self.step

    def span(self, index: int) -> float:
        """Seconds of the range tick `index` stands for: until the next tick; the last one until `stop`.
        The spans add up to exactly the range, so no figure exceeds it."""
        end = self.end if self.stop is None else self.stop
        return max(0.0, min(self.time(index + 1), end) - self.time(index))

    def index(self, timestamp: float) -> int:
        return round((timestamp - self.start) / self.step)

    @property
    def end(self) -> float:
        return self.time(self.count - 1)


@dataclass(slots=True, kw_only=True)
class Accumulator:
    """Mutable fold of one query's chunks (fed by the fetcher, frozen by `history()`)."""

    grid: Grid
    kind: QueryKind
    object_label: str = ""
    object_name: str = ""
    container_label: str = ""
    container: str = ""
    pod_pattern: re.Pattern[str] | None = None
    one_series: bool = False  # more than one series answering for a tick is an error (actual replicas)
    total: array[float] = field(init=False)
    present: bytearray = field(init=False)
    _counts: array[int] = field(init=False)  # per-pod: pods that reported at each tick
    _names: set[str] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self.total = array("d", bytes(8 * self.grid.count))
        self.present = bytearray(self.grid.count)
        self._counts = array("H", bytes(2 * self.grid.count))

    @classmethod
    def for_query(cls, q: MetricQuery, grid: Grid, pod_pattern: re.Pattern[str] | None) -> Accumulator:
        return cls(grid=grid, kind=q.kind, object_label=q.object_label, object_name=q.object_name,
                   container_label=q.container_label, container=q.spec.container, pod_pattern=pod_pattern)

    def add(self, series: Iterable[Series]) -> None:
        """Fold one range query's answer. Calls cover disjoint ticks (one chunk each): a pod is counted
        once per tick however many series (containers) it has, with memory for this answer only."""
        reported: dict[str, set[int]] = {}  # per-pod: the ticks each pod reported in this answer
        for labels, values in series:
            use, pod = self._selects(labels)
            if not use:
                continue
            ticks = reported.setdefault(pod, set()) if pod else None
            self._fold(labels, values, ticks)
        counts = self._counts
        for pod, ticks in reported.items():
            self._names.add(pod)
            for i in ticks:
                counts[i] += 1

    def _fold(self, labels: Mapping[str, str], values: Sequence[Any], ticks: set[int] | None) -> None:
        last, one = self.kind is QueryKind.OBJECT, self.one_series
        start, step, count = self.grid.start, self.grid.step, self.grid.count
        total, present = self.total, self.present
        try:
            for ts, raw in values:
                value = float(raw)
                i = round((float(ts) - start) / step)
                if not -_MILLI_LIMIT < value < _MILLI_LIMIT or not 0 <= i < count:
                    continue  # NaN, ±Inf, beyond a quantity: the adapter serves no value for it
                if one and present[i]:
                    raise _TooManySeries(
                        f"the query answered more than one series at {iso_time(start + i * step)} (one of "
                        f"them {dict(labels)}); it must give one number per moment: aggregate it, e.g. "
                        "max(kube_deployment_spec_replicas{...}) when kube-state-metrics runs twice")
                milli = milli_from_float(value)
                total[i] = milli if last else total[i] + milli
                present[i] = 1
                if ticks is not None:
                    ticks.add(i)
        except _TooManySeries:
            raise
        except (TypeError, ValueError):
            raise ValueError(f"Prometheus answered series {dict(labels)} with a sample that is not a "
                             f"[time, value] pair of numbers: {_first_bad(values)}") from None

    def _selects(self, labels: Mapping[str, str]) -> tuple[bool, str]:
        """Whether the series counts, and for a per-pod query the pod it belongs to."""
        if self.kind is QueryKind.OBJECT:
            return labels.get(self.object_label) == self.object_name, ""
        if self.kind is not QueryKind.PER_POD:
            return True, ""
        pod = labels.get(self.object_label)
        if pod is None or (self.pod_pattern is not None and not self.pod_pattern.fullmatch(pod)):
            return False, ""
        if self.container and labels.get(self.container_label) != self.container:
            return False, ""
        return True, pod

    def history(self) -> MetricHistory:
        return MetricHistory(total=self.total, present=bytes(self.present), pods=array("H", self._counts),
                             pod_names=tuple(sorted(self._names)))


class _TooManySeries(ValueError):
    pass


def _first_bad(values: Sequence[Any]) -> str:
    for sample in values:
        try:
            ts, raw = sample
            float(ts), float(raw)
        except (TypeError, ValueError):
            return repr(sample)[:120]
    return "?"


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricHistory:
    total: array[float]  # milli-units per tick (per-pod: summed over the reporting pods)
    present: bytes  # 1 where the tick has a sample
    pods: array[int]  # per-pod metrics: how many pods reported at the tick
    pod_names: tuple[str, ...] = ()


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

    def observations(self, i: int, replicas: int) -> tuple[Observation, ...]:
        """What each metric shows at tick `i` when `replicas` pods run (one call per simulated sync)."""
        now = self._grid.start + i * self._grid.step
        actual = self.actual_replicas(i)
        out: list[Observation] = []
        for kind, h in zip(self._kinds, self._histories, strict=True):
            if not h.present[i]:
                out.append(FetchFailure(message=f"no sample in history at {iso_time(now)} (gap)"))
            elif kind is QueryKind.PER_POD:
                out.append(self._per_pod(h, i, replicas, actual, now))
            elif kind is QueryKind.OBJECT:
                out.append(ObjectSample(value=int(h.total[i]), timestamp=now))
            else:
                out.append(ExternalSamples(values=(int(h.total[i]),), timestamp=now))
        return tuple(out)

    def _per_pod(self, h: MetricHistory, i: int, replicas: int, actual: float | None, now: float) -> Observation:
        """The recorded load rescaled to `replicas` pods; as many of them as the target's pods that
        reported nothing at tick `i` stay without a value (the algorithm's missing-pod rules apply)."""
        if actual is None and self._actual is not None:
            return FetchFailure(message=f"no sample of the actual replicas in history at {iso_time(now)} (gap): "
                                        "the per-pod load cannot be rescaled")
        reporting = h.pods[i]
        demand = h.total[i] / reporting * (actual if actual is not None else reporting)
        silent = 0 if actual is None else min(max(round(actual) - reporting, 0), replicas)
        sample = PodMetric(value=int(demand / max(replicas, 1)), timestamp=now, window=self._window)
        return PodSamples(values=dict.fromkeys(self.pod_names(replicas)[:replicas - silent], sample))

    def first_actual(self) -> int | None:
        """The replicas at the first tick: the flag/query, else the pods reporting a per-pod metric."""
        actual = self.actual_replicas(0)
        if actual is not None:
            return round(actual)
        for kind, h in zip(self._kinds, self._histories, strict=True):
            if kind is QueryKind.PER_POD and h.present[0]:
                return int(h.pods[0])
        return None
