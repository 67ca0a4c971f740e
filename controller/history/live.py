"""The live controller's metric history: read once per object, then kept up to date incrementally.

For each PromAutoscaler whose `spec.prediction` is not Off, `HistoryStore` holds one compact
history per metric (`window`: milli-units packed as float16 at `--history-step`, NaN gaps, at most
`lookbackSeconds` capped by `--history-max-lookback`), read with the PromQL the adapter runs for
the metric (`resolve`, through `--rules`) and folded as the backtest folds it (`fold`): per-pod
metrics (Resource, ContainerResource, Pods) as the total over the target's pods, the pods being
those whose name the target's controller gives them (`resolve.default_pod_regex`: history
outlives the pods that run now), Object metrics the described object's value, External metrics
the sum of the series (what the HPA sums).

Reads: the first is one chunked range read over the lookback (series discovery first, shared by
every object asking for the same `seriesQuery` within `SHAPES_TTL`); after it, at most one
incremental read per object per `refresh` (`--history-refresh`, by default `REFRESH_SECONDS`;
from the last ticks to now, re-reading `OVERLAP_TICKS` that Prometheus may not have had yet),
appended, the oldest ticks dropped. A read asks one range query per chunk for all the object's
metrics (`PrometheusHistory.fetch(combine=True)`), so k metrics cost one query a refresh, not k.
Reads are async with timeouts, one in flight per object shared by every caller (`SingleFlight`,
which also lets a caller give up without cancelling the read). A failed read keeps the last good
history and records the error; it is retried after `refresh`, never sooner.

`LiveForecasts` is the `ForecastSource` the reconciler calls: the object's histories (waiting at
most `wait` seconds, else the last ones held) into `controller.forecast.predict_metric`, with one
`PredictorState` per (object, metric) kept in memory and dropped with the object.

Non-goals: the PromQL (`resolve`), folding (`fold`), forecasting (`controller.forecast`).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from controller.algorithm.spec import FetchFailure, MetricForecast, MetricSpec, PredictionSpec
from controller.forecast import History, PredictorState, predict_metric
from controller.history import window
from controller.history.fold import Accumulator, Grid
from controller.history.prometheus import HistoryError, Job
from controller.history.resolve import MetricQuery, SeriesShapes, Unresolvable, default_pod_regex, resolve_all
from controller.history.resolve import series_queries
from controller.history.rules import CompiledConfig
from controller.history.source import ForecastSource
from controller.kube.objects import Autoscaler
from controller.kube.ports import ObjectKey
from kubecommon.singleflight import SingleFlight

__all__ = ["HistoryReader", "HistoryStore", "LiveForecasts", "ObjectHistory"]

REFRESH_SECONDS = 60.0  # by default at most one incremental read per object this often
OVERLAP_TICKS = 2  # the newest ticks are re-read: Prometheus may not have had their scrape yet
SHAPES_TTL = 600.0  # a seriesQuery's answer serves every object resolving within this
RESOLVE_RETRY = 600.0  # a metric the rules could not resolve is tried again after this
IDLE_SECONDS = 900.0  # an object not asked for in this long (deleted, another leader) is dropped
LIVE_CHUNK_POINTS = 1440  # one day at 60 s per range query: bounds an answer's size over many pods


class HistoryReader(Protocol):
    """The Prometheus reads the store needs (`prometheus.PrometheusHistory`)."""

    async def series_shapes(self, queries: Sequence[str], start: float, end: float
                            ) -> dict[str, tuple[tuple[str, frozenset[str]], ...]]: ...

    async def fetch(self, jobs: Sequence[Job], grid: Grid, *, chunk_points: int = ...,
                    combine: bool = ...) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectHistory:
    """One object's histories now: per metric a `History` (None: none, `problems[i]` says why)."""

    histories: tuple[History | None, ...]
    problems: tuple[str, ...]
    error: str | None = None  # the last read failed (the histories are the last good ones)
    read_at: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Target:
    """What an object's history depends on: a change of any of it starts the history afresh."""

    namespace: str
    kind: str
    name: str
    metrics: tuple[MetricSpec, ...]
    selectors: tuple[str | None, ...]  # per metric; None: the metric has no plan (why in `problems`)
    problems: tuple[str, ...]
    lookback: float


@dataclass(slots=True, kw_only=True)
class _Entry:
    """frozen=False: the store's record of one object, changed only by its one in-flight refresh."""

    target: _Target
    keep: int
    queries: tuple[MetricQuery | str, ...] | None = None  # per metric: its query, or why it has none
    resolved_at: float = 0.0
    histories: list[window.Packed] = field(default_factory=list)
    tried_at: float | None = None
    read_at: float | None = None
    error: str | None = None
    used_at: float = 0.0

    def view(self) -> ObjectHistory:
        qs = self.queries or ()
        hs: list[History | None] = []
        problems: list[str] = []
        for i, problem in enumerate(self.target.problems):
            q = qs[i] if i < len(qs) else "not read yet"
            why = problem or (q if isinstance(q, str) else "")
            packed = self.histories[i] if not why and i < len(self.histories) and self.histories[i].count else None
            h = None if packed is None else window.unpack(packed)
            hs.append(h)
            problems.append(why or ("" if h is not None else "no samples read yet"))
        return ObjectHistory(histories=tuple(hs), problems=tuple(problems), error=self.error, read_at=self.read_at)


class HistoryStore:
    """Per-object metric histories from one Prometheus, through the adapter's compiled rules."""

    def __init__(self, reader: HistoryReader, rules: CompiledConfig, *, rules_path: str, step: float = 60.0,
                 max_lookback: float = 14 * 86_400.0, chunk_points: int = LIVE_CHUNK_POINTS,
                 refresh: float = REFRESH_SECONDS) -> None:
        self._reader = reader
        self._rules = rules
        self._rules_path = rules_path
        self._step = step
        self._max_lookback = max_lookback
        self._chunk_points = chunk_points
        self._refresh_every = refresh
        self._entries: dict[ObjectKey, _Entry] = {}
        self._flight: SingleFlight[ObjectKey, None] = SingleFlight()
        self._shapes: dict[str, tuple[float, tuple[tuple[str, frozenset[str]], ...]]] = {}
        self._shape_flight: SingleFlight[tuple[str, ...], SeriesShapes] = SingleFlight()
        self._swept = 0.0

    @property
    def step(self) -> float:
        return self._step

    def lookback(self, spec: PredictionSpec) -> float:
        """`lookbackSeconds` capped by `--history-max-lookback`, whole steps."""
        return max(self._step, min(float(spec.lookback_seconds), self._max_lookback) // self._step * self._step)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        """Whether anything is held for `key` (without building its histories as `cached` does)."""
        return key in self._entries

    def forget(self, key: ObjectKey) -> None:
        self._entries.pop(key, None)

    def cached(self, key: ObjectKey) -> ObjectHistory | None:
        """What is held for `key` now, without reading."""
        entry = self._entries.get(key)
        return None if entry is None else entry.view()

    async def read(self, obj: Autoscaler, now: float) -> ObjectHistory:
        """The object's histories, read or brought up to date first when due."""
        assert obj.spec.prediction is not None, "only objects with spec.prediction have history"
        target = self._target(obj, obj.spec.prediction)
        entry = self._entries.get(obj.key)
        if entry is None or entry.target != target:
            entry = self._entries[obj.key] = _Entry(target=target, keep=round(target.lookback / self._step))
        entry.used_at = now
        self._sweep(now)
        if self._due(entry, now):
            await self._flight.do(obj.key, lambda: self._refresh(entry, now))
        return entry.view()

    def _target(self, obj: Autoscaler, spec: PredictionSpec) -> _Target:
        plans = obj.metric_plans
        return _Target(namespace=obj.key.namespace, kind=obj.target.kind, name=obj.target.name,
                       metrics=obj.spec.metrics, lookback=self.lookback(spec),
                       selectors=tuple(None if isinstance(p, FetchFailure) else p.metric_selector for p in plans),
                       problems=tuple(p.message if isinstance(p, FetchFailure) else "" for p in plans))

    def _due(self, entry: _Entry, now: float) -> bool:
        if entry.tried_at is None:
            return True
        if now - entry.tried_at < max(self._refresh_every, self._step):
            return False
        ends = [h.end for h in entry.histories if h.count]
        return entry.error is not None or not ends or self._tick(now) > min(ends)

    def _tick(self, t: float) -> float:
        return math.floor(t / self._step) * self._step

    def _sweep(self, now: float) -> None:
        if now - self._swept < REFRESH_SECONDS:
            return
        self._swept = now
        for key in [k for k, e in self._entries.items() if now - e.used_at > IDLE_SECONDS]:
            del self._entries[key]
        self._shapes = {q: v for q, v in self._shapes.items() if now - v[0] < SHAPES_TTL}

    async def _refresh(self, entry: _Entry, now: float) -> None:
        entry.tried_at = now
        end = self._tick(now)
        try:
            if entry.queries is None or (now - entry.resolved_at >= RESOLVE_RETRY
                                         and any(isinstance(q, str) for q in entry.queries)):
                entry.queries = await self._resolve(entry.target, end, now)
                entry.resolved_at = now
            await self._read(entry, end)
        except HistoryError as err:
            entry.error = str(err)
            return
        entry.error, entry.read_at = None, now

    async def _resolve(self, t: _Target, end: float, now: float) -> tuple[MetricQuery | str, ...]:
        """Per metric its query or why none; one unresolvable metric does not stop the others."""
        wanted = [m for m, sel in zip(t.metrics, t.selectors, strict=True) if sel is not None]
        shapes = await self._series_shapes(series_queries(self._rules, wanted), end - t.lookback, end, now)
        out: list[MetricQuery | str] = []
        for metric, selector, problem in zip(t.metrics, t.selectors, t.problems, strict=True):
            if selector is None:
                out.append(problem)
                continue
            try:
                (q,) = resolve_all(self._rules, shapes, namespace=t.namespace, metrics=(metric,),
                                   metric_selectors=(selector,), rules_path=self._rules_path)
            except Unresolvable as err:
                out.append(str(err))
                continue
            out.append(q)
        return tuple(out)

    async def _series_shapes(self, queries: Sequence[str], start: float, end: float, now: float) -> SeriesShapes:
        missing = tuple(q for q in queries if q not in self._shapes or now - self._shapes[q][0] >= SHAPES_TTL)
        if missing:
            found = await self._shape_flight.do(missing, lambda: self._reader.series_shapes(missing, start, end))
            for q in missing:
                self._shapes[q] = (now, found.get(q, ()))
        return {q: self._shapes[q][1] for q in queries}

    async def _read(self, entry: _Entry, end: float) -> None:
        """One range read (chunked) from the held histories' last ticks, or over the lookback, to `end`."""
        queries = entry.queries or ()
        while len(entry.histories) < len(queries):
            entry.histories.append(window.empty(self._step))
        first = end - (entry.keep - 1) * self._step
        held = [h for h, q in zip(entry.histories, queries, strict=False) if isinstance(q, MetricQuery) and h.count]
        if held and len(held) == sum(isinstance(q, MetricQuery) for q in queries):
            first = max(first, min(h.end for h in held) - OVERLAP_TICKS * self._step)
        grid = Grid(start=first, step=self._step, count=round((end - first) / self._step) + 1)
        pattern = re.compile(default_pod_regex(entry.target.kind, entry.target.name))
        folds: dict[str, Accumulator] = {}
        jobs: list[Job] = []
        for q in queries:
            if isinstance(q, MetricQuery) and _key(q) not in folds:
                acc = folds[_key(q)] = Accumulator.for_query(q, grid, pattern)
                jobs.append(Job(what=f"{q.spec.type} {q.spec.name}: {q.promql}", promql=q.promql, consume=acc.add))
        if not jobs:
            return
        await self._reader.fetch(jobs, grid, chunk_points=self._chunk_points, combine=True)
        for i, q in enumerate(queries):
            if isinstance(q, MetricQuery):
                new = window.from_fold(folds[_key(q)].history(), grid)
                entry.histories[i] = window.merge(entry.histories[i], new, keep=entry.keep)


def _key(q: MetricQuery) -> str:
    return "\x00".join((q.promql, q.kind, q.object_label, q.object_name, q.container_label, q.spec.container))


class LiveForecasts:
    """`ForecastSource` over a `HistoryStore`: one `PredictorState` per (object, metric)."""

    def __init__(self, store: HistoryStore, *, wait: float = 1.5) -> None:
        self._store = store
        self._wait = wait
        self._states: dict[ObjectKey, tuple[object, list[PredictorState | None]]] = {}
        self._swept = 0.0

    def forget(self, key: ObjectKey) -> None:
        self._store.forget(key)
        self._states.pop(key, None)

    async def forecasts(self, obj: Autoscaler, now: float) -> tuple[MetricForecast | None, ...]:
        spec = obj.spec.prediction
        assert spec is not None, "the reconciler asks only for objects with spec.prediction"
        try:
            view: ObjectHistory | None = await asyncio.wait_for(self._store.read(obj, now), self._wait)
        except TimeoutError:  # the read goes on (shared, shielded); this sync uses what is held
            view = self._store.cached(obj.key)
        if view is None:
            return tuple(_none(f"history unavailable: not read within {self._wait:g} s (still reading)")
                         for _ in obj.spec.metrics)
        spec = replace(spec, lookback_seconds=int(self._store.lookback(spec)))
        signature = (spec, obj.spec.metrics, obj.metric_plans)
        if now - self._swept >= REFRESH_SECONDS:  # the store dropped an idle object: so does the forecaster
            self._swept = now
            self._states = {k: v for k, v in self._states.items() if k == obj.key or k in self._store}
        held = self._states.get(obj.key)
        if held is None or held[0] != signature:
            held = self._states[obj.key] = (signature, [None] * len(obj.spec.metrics))
        states = held[1]
        out: list[MetricForecast | None] = []
        for i, h in enumerate(view.histories):
            if view.error is not None:
                out.append(_none(f"history unavailable: {view.error}"))
            elif h is None:
                out.append(_none(f"history unavailable: {view.problems[i]}"))
            else:
                forecast, states[i] = predict_metric(h, states[i], now=now, spec=spec)
                out.append(forecast)
        return tuple(out)


def _none(why: str) -> MetricForecast:
    return MetricForecast(value=None, why=why, trusted=False)


def _protocol_checks(store: HistoryStore) -> None:
    """mypy proves the real source satisfies the port (Go's `var _ I = &T{}`)."""
    source: ForecastSource = LiveForecasts(store)
    del source
