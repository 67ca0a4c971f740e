"""Fold range-query answers into per-tick arrays: the one copy, used by the backtest and the live reader.

`Grid` is a range's ticks (start, step, count). An `Accumulator` folds a query's answers, chunk
by chunk, into per-tick arrays (never the raw series): per-pod metrics keep the sum over the
selected pods (those whose name matches the pod pattern) and how many pods reported; Object
metrics the described object's value; External metrics the sum of every series (what the HPA
sums). NaN, ±Inf and values beyond a quantity are no sample (the adapter serves none for them).

Non-goals: fetching (`prometheus`), the load model (`controller.backtest.model`). Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.history.resolve import MetricQuery, QueryKind
from kubecommon import kubetime
from kubecommon.quantity import milli_from_float

__all__ = ["Accumulator", "Grid", "MetricHistory", "Series"]

# |value| below this has milli-units inside int64; the adapter leaves out NaN, ±Inf and larger values
_MILLI_LIMIT = float(2**63) / 1000.0
# One range-query answer: (labels, [[unix seconds, "value"], ...]) per series.
Series = tuple[Mapping[str, str], Sequence[Sequence[Any]]]


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
                        f"the query answered more than one series at {kubetime.format_time(start + i * step)} (one of "
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
