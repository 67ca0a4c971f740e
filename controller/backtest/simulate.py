"""Replay a spec over the history, sync by sync, with the live controller's decision code.

`sync_once` is one sync as the controller runs it against a target whose `/scale` write succeeds:
`controller.algorithm.decide`, then — when the decision asks for a write — `complete` with no
write error; the returned status and `ScaleHistory` are the next sync's input. `simulate` calls it
once per tick of the simulated clock, carrying status, history and the replica count, and feeds
it the observations the load model derives for the current simulated replica count.

Simulated pods carry `--pod-requests` on one container (named after a ContainerResource metric's
container, else `main`). A write creates or deletes pods at once (status replicas = spec replicas =
every pod, as a Deployment's status.replicas counts pods that are not ready yet). Without
`pod_startup` a pod is ready at once and past the CPU initialization period; with it, a pod added
at t is Running but not Ready until t + pod_startup (so the algorithm's readiness and missing-pod
rules apply to it) and serves no load until then: per-pod metrics spread the load over the ready
pods, and the figures show an AverageValue External/Object metric over the ready pods too (what
each serving pod carries). A scale-down deletes the pods not ready yet first, then the newest.

A predictive spec (`spec.prediction` not Off) gets each metric's forecast on every sync from
`controller.forecast.predict_metric`, the live controller's step, over that metric's recorded load
(`LoadModel.load`, with the history before the replay); `decide` combines it as live.

A replay may start before the range (`counted_from`, the warm-up): the controller's state (count,
stabilization and scale events, forecaster) is then built on the history before `--from`, and the
timeline returned covers the range only. The replay carries its
own count; the one write by someone else it follows from the recorded replicas is a target going
to or from 0 while minReplicas > 0 (the controller holds at 0, ScalingDisabled, then resumes from
the count it finds), marked `external` and not counted as a scale event.

Non-goals: fetching, summarising, rendering. Pure: no I/O, no clock (the grid is the clock).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from controller.algorithm import ControllerConfig, Decision, ScaleHistory, complete, decide
from controller.algorithm.shell import sync_input
from controller.algorithm.decision import Outcome, Stage
from controller.algorithm.pods import ContainerInfo, PodInfo, ReadyStatus
from controller.algorithm.spec import (
    AutoscalerSpec, HpaStatus, MetricForecast, MetricSpec, Observation, PredictionSpec, ScaleTarget,
    SourceType, TargetType,
)  # fmt: skip
from controller.algorithm.sync import tolerances_for
from controller.backtest.model import Grid, LoadModel
from controller.forecast import History, PredictorState, predict_metric

_OUTSIDE_TO_ZERO = "scaled to 0 outside the autoscaler (recorded): autoscaling disabled until scaled up"
_OUTSIDE_FROM_ZERO = "scaled up from 0 outside the autoscaler (recorded): autoscaling resumes"

__all__ = ["LiveState", "ScaleChange", "Timeline", "simulate", "sync_once"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveState:
    """What a live controller carries from one sync of an autoscaler to the next."""

    replicas: int
    status: HpaStatus = field(default_factory=HpaStatus)
    history: ScaleHistory | None = None


def sync_once(spec: AutoscalerSpec, config: ControllerConfig, state: LiveState, *, now: float,
              pods: tuple[PodInfo, ...], observations: tuple[Observation, ...],
              namespace: str = "", forecasts: tuple[MetricForecast | None, ...] = ()) -> tuple[Decision, LiveState]:
    """One sync: decide, write (always succeeds here), complete; and the state for the next one.
    `namespace` is the autoscaler's, named in messages as the controller names it; `forecasts` per
    metric, for a predictive spec."""
    decision = _decide(spec, config, state, now=now, pods=pods, observations=observations, namespace=namespace,
                       forecasts=forecasts)
    replicas = state.replicas
    if decision.write:
        decision = complete(decision, write_error=None, now=now)
        replicas = decision.desired_replicas
    return decision, LiveState(replicas=replicas, status=decision.status, history=decision.history)


def _decide(spec: AutoscalerSpec, config: ControllerConfig, state: LiveState, *, now: float,
            pods: tuple[PodInfo, ...], observations: tuple[Observation, ...], namespace: str,
            forecasts: tuple[MetricForecast | None, ...] = ()) -> Decision:
    """The decision at `state`'s count, status and history (nothing written)."""
    scale = ScaleTarget(spec_replicas=state.replicas, status_replicas=state.replicas)
    return decide(sync_input(spec, scale=scale, now=now, status=state.status, history=state.history, pods=pods,
                             observations=observations, namespace=namespace, forecasts=forecasts), config)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleChange:
    time: float
    before: int
    after: int
    reason: str
    external: bool = False  # made outside the autoscaler (followed from the recorded replicas), not a decision


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    """One spec's replay. Arrays have one entry per tick of `grid` (read-only by convention)."""

    name: str
    spec: AutoscalerSpec
    grid: Grid
    replicas: array[int]  # in effect after the tick's sync
    values: tuple[array[float], ...]  # per metric: what the algorithm compared to the target (NaN: failed)
    targets: tuple[float, ...]  # per metric, same unit as `values`
    limited_by: tuple[str, ...]  # per tick: the stage that held the count back ("" if none)
    errors: tuple[str, ...]  # per tick: the decision's error ("" if none)
    changes: tuple[ScaleChange, ...]
    explained: str = ""  # Decision.explain() at the --explain-at tick
    ready: array[int] = field(default_factory=lambda: array("i"))  # pods serving load after the tick's sync
    # replicas at which every metric read would sit at its target plus the tolerance (NaN: none read)
    needed: array[float] = field(default_factory=lambda: array("d"))
    tolerance: float = 0.1  # the scale-up tolerance the algorithm applied
    loads: tuple[array[float], ...] = ()  # per metric: the recorded load (`LoadModel.load`), milli-units
    forecasts: tuple[array[float], ...] = ()  # per metric: the forecast in effect (milli-units; NaN: none)
    predicted: bytes = b""  # per tick: 1 where the forecast raised the recommendation
    horizon: float = 0.0  # spec.prediction.horizonSeconds (0: not predictive)


def metric_target(spec: AutoscalerSpec, index: int) -> float:
    """The target in the unit `Timeline.values` uses: percent for Utilization, else milli-units."""
    t = spec.metrics[index].target
    if t is None:
        return math.nan
    if t.type is TargetType.UTILIZATION or (t.type is None and t.average_utilization is not None):
        return float(t.average_utilization or 0)
    found = t.average_value if t.average_value is not None else t.value
    return math.nan if found is None else float(found)


def simulate(name: str, spec: AutoscalerSpec, model: LoadModel, grid: Grid, *, config: ControllerConfig,
             requests: Mapping[str, int], initial_replicas: int, explain_at: int | None = None,
             sync_every: int = 1, namespace: str = "", pod_startup: float = 0.0,
             histories: Sequence[History | None] = (), counted_from: int = 0) -> Timeline:
    """Replay the grid, syncing on every `sync_every`-th tick (the spec's sync period over the grid's
    step); `initial_replicas` is the target's count before the first sync (all ready). Between syncs the
    count holds and the metrics are still read (not decided on) for the figures. `histories`: per
    metric, the load the forecaster reads (a predictive spec; None: no forecast for that metric).
    The timeline returned starts at tick `counted_from` (the ticks before it are the warm-up)."""
    metrics = spec.metrics
    replicas = array("i", bytes(4 * grid.count))
    ready_after = array("i", bytes(4 * grid.count))
    needed = array("d", [math.nan]) * grid.count
    values = tuple(array("d", [math.nan]) * grid.count for _ in metrics)
    loads = tuple(array("d", [math.nan]) * grid.count for _ in metrics)
    forecast_values = tuple(array("d", [math.nan]) * grid.count for _ in metrics)
    predicted = bytearray(grid.count)
    limited: list[str] = []
    errors: list[str] = []
    changes: list[ScaleChange] = []
    explained = ""
    explain_sync = None if explain_at is None else explain_at - explain_at % sync_every
    fleet = _Fleet(spec, model, requests, startup=pod_startup, initial=initial_replicas, long_ago=grid.start - 1e9)
    tolerance = tolerances_for(spec, config).scale_up
    needs = _Needs(spec.metrics, requests, tolerance)
    prediction = spec.prediction if spec.predicts else None
    sources = tuple(histories) if prediction is not None else ()
    states: list[PredictorState | None] = [None] * len(sources)
    forecasts: tuple[MetricForecast | None, ...] = ()
    averaged = tuple(_averaged_outside(m) for m in metrics) if pod_startup > 0 else ()
    state = LiveState(replicas=initial_replicas)
    for i in range(grid.count):
        now = grid.time(i)
        outside = _scaled_outside(spec, state.replicas, model.actual_replicas(i))
        if outside is not None:
            changes.append(ScaleChange(time=now, before=state.replicas, after=outside, external=True,
                                       reason=_OUTSIDE_TO_ZERO if outside == 0 else _OUTSIDE_FROM_ZERO))
            state = replace(state, replicas=outside)
            fleet.resize(outside, now)
        n = state.replicas
        pods, serving = fleet.at(now)
        observations = model.observations(i, n, ready=serving)
        if i % sync_every:  # no sync now: read what the metrics show, change nothing
            decision = _decide(spec, config, state, now=now, pods=pods, observations=observations,
                               namespace=namespace)
            limited.append("")
            errors.append("")
        else:
            if prediction is not None:
                forecasts = tuple(_forecast(h, states, k, now, prediction) for k, h in enumerate(sources))
            decision, state = sync_once(spec, config, state, now=now, pods=pods, observations=observations,
                                        namespace=namespace, forecasts=forecasts)
            limited.append(_limiting_stage(decision))
            errors.append(decision.error or "")
            if state.replicas != n:
                changes.append(ScaleChange(time=now, before=n, after=state.replicas,
                                           reason=decision.rescale_reason))
                fleet.resize(state.replicas, now)
            if i == explain_sync:
                explained = decision.explain()
            if decision.prediction is not None and decision.prediction.used:
                predicted[i] = 1
        replicas[i] = state.replicas
        ready_now = ready_after[i] = fleet.ready_count(now)
        for m in decision.trace.metrics:
            if m.proposal is not None:
                shown = m.utilization if m.utilization is not None else m.value
                values[m.index][i] = math.nan if shown is None else float(shown)
        _record(model, i, loads, values, forecast_values, forecasts, averaged, serving)
        needed[i] = needs(loads, i, ready_now)
    first = min(max(counted_from, 0), grid.count - 1)
    start = grid.time(first)
    return Timeline(name=name, spec=spec, grid=replace(grid, start=start, count=grid.count - first),
                    replicas=replicas[first:], values=tuple(v[first:] for v in values),
                    targets=tuple(metric_target(spec, k) for k in range(len(metrics))),
                    limited_by=tuple(limited[first:]), errors=tuple(errors[first:]),
                    changes=tuple(c for c in changes if c.time >= start),
                    explained=explained, ready=ready_after[first:], needed=needed[first:], tolerance=tolerance,
                    loads=tuple(v[first:] for v in loads),
                    forecasts=tuple(v[first:] for v in forecast_values) if prediction is not None else (),
                    predicted=bytes(predicted[first:]),
                    horizon=float(prediction.horizon_seconds) if prediction is not None else 0.0)


def _record(model: LoadModel, i: int, loads: Sequence[array[float]], values: Sequence[array[float]],
            forecast_values: Sequence[array[float]], forecasts: Sequence[MetricForecast | None],
            averaged: Sequence[bool], serving: Sequence[str] | None) -> None:
    """Tick `i`'s recorded load and forecast per metric; with start-up, an AverageValue metric shared by
    the pods as each serving pod carries it (the algorithm divides by every pod, ready or not)."""
    for k, load in enumerate(loads):
        load[i] = model.load(k, i)
        if k < len(forecasts) and (f := forecasts[k]) is not None and f.value is not None:
            forecast_values[k][i] = float(f.value)
        if averaged and averaged[k] and serving and not math.isnan(values[k][i]):
            values[k][i] = load[i] / len(serving)


def _forecast(history: History | None, states: list[PredictorState | None], k: int, now: float,
              prediction: PredictionSpec) -> MetricForecast | None:
    if history is None:
        return None
    forecast, states[k] = predict_metric(history, states[k], now=now, spec=prediction)
    return forecast


def _averaged_outside(m: MetricSpec) -> bool:
    """An Object or External metric with an AverageValue target: the value the pods share."""
    t = m.target
    return (m.type in (SourceType.OBJECT, SourceType.EXTERNAL) and t is not None
            and (t.type is TargetType.AVERAGE_VALUE or (t.type is None and t.average_value is not None)))


class _Needs:
    """The replicas at which every metric would sit at its target plus the tolerance, from the load:
    load / (per-pod target x (1 + tolerance)) for per-pod and AverageValue metrics (a Utilization
    target's per-pod value is the request times the percentage), ready x value / (target x (1 +
    tolerance)) for a Value target; the largest over the metrics read. A shortfall inside the
    tolerance, which the HPA itself accepts, needs no replica."""

    def __init__(self, metrics: Sequence[MetricSpec], requests: Mapping[str, int], tolerance: float) -> None:
        self._per_replica: list[float | None] = []  # milli-units one replica takes at target + tolerance
        self._value: list[float | None] = []  # Value targets: the target + tolerance
        for m in metrics:
            t, per, value = m.target, None, None
            if t is not None:
                utilization = t.type is TargetType.UTILIZATION or (t.type is None and t.average_utilization is not None)
                if utilization and t.average_utilization is not None and requests.get(m.name):
                    per = requests[m.name] * t.average_utilization / 100.0
                elif not utilization and t.average_value is not None:
                    per = float(t.average_value)
                elif not utilization and t.value is not None and m.type in (SourceType.OBJECT, SourceType.EXTERNAL):
                    value = float(t.value)
            self._per_replica.append(per * (1 + tolerance) if per else None)
            self._value.append(value * (1 + tolerance) if value else None)

    def __call__(self, loads: Sequence[array[float]], i: int, ready: int) -> float:
        best = math.nan
        for k, (per, value) in enumerate(zip(self._per_replica, self._value, strict=True)):
            load = loads[k][i]
            if math.isnan(load):
                continue
            want = load / per if per else ready * load / value if value else math.nan
            if not math.isnan(want) and (math.isnan(best) or want > best):
                best = want
        return best


class _Fleet:
    """The simulated pods: without start-up, `_PodSets` (ready long ago, by count); with it, each pod's
    creation and ready time, deleted not-ready first, then newest first (as a ReplicaSet picks)."""

    def __init__(self, spec: AutoscalerSpec, model: LoadModel, requests: Mapping[str, int], *, startup: float,
                 initial: int, long_ago: float) -> None:
        self._startup = startup
        self._sets = _PodSets(spec, model, requests, long_ago=long_ago)
        self._container = ContainerInfo(name=self._sets.container, requests=requests)
        self._count = initial
        self._pods: list[tuple[str, float, float]] = [(name, long_ago, long_ago)
                                                      for name in model.pod_names(initial)]  # name, created, ready
        self._serial = initial
        self._cached: tuple[tuple[PodInfo, ...], tuple[str, ...]] | None = None
        self._cached_until = -math.inf  # the cache holds until the next pod becomes ready
        self._infos: dict[tuple[str, bool], PodInfo] = {}

    def resize(self, n: int, now: float) -> None:
        self._count = n
        if not self._startup:
            return
        pods = self._pods
        while len(pods) < n:
            pods.append((f"sim-{self._serial}", now, now + self._startup))
            self._serial += 1
        if len(pods) > n:
            starting = [p for p in pods if p[2] > now]
            ready = [p for p in pods if p[2] <= now]
            keep = (ready + starting)[:n]  # the newest starting pods go first, then the newest ready ones
            self._pods = sorted(keep, key=lambda p: p[1])
        self._cached = None

    def at(self, now: float) -> tuple[tuple[PodInfo, ...], tuple[str, ...] | None]:
        """The pods (PodInfo) and the names of those serving load (None: all of them)."""
        if not self._startup:
            return self._sets(self._count), None
        if self._cached is None or now >= self._cached_until:
            infos: list[PodInfo] = []
            serving: list[str] = []
            pending = math.inf
            for name, created, ready_at in self._pods:
                up = ready_at <= now
                if up:
                    serving.append(name)
                else:
                    pending = min(pending, ready_at)
                info = self._infos.get((name, up))
                if info is None:
                    info = self._infos[(name, up)] = PodInfo(
                        name=name, start_time=created, ready=ReadyStatus.TRUE if up else ReadyStatus.FALSE,
                        ready_transition=ready_at if up else created, containers=(self._container,))
                infos.append(info)
            self._cached, self._cached_until = (tuple(infos), tuple(serving)), pending
        return self._cached

    def ready_count(self, now: float) -> int:
        if not self._startup:
            return self._count
        return sum(1 for _name, _created, ready_at in self._pods if ready_at <= now)


class _PodSets:
    """The simulated pods at each replica count (ready long ago, carrying the pod requests), built once."""

    def __init__(self, spec: AutoscalerSpec, model: LoadModel, requests: Mapping[str, int], *,
                 long_ago: float) -> None:
        self.container = next((m.container for m in spec.metrics
                               if m.type == SourceType.CONTAINER_RESOURCE and m.container), "main")
        self._model, self._requests, self._long_ago = model, requests, long_ago
        self._by_count: dict[int, tuple[PodInfo, ...]] = {}

    def __call__(self, n: int) -> tuple[PodInfo, ...]:
        pods = self._by_count.get(n)
        if pods is None:
            pods = self._by_count[n] = tuple(
                PodInfo(name=pod, start_time=self._long_ago, ready_transition=self._long_ago,
                        containers=(ContainerInfo(name=self.container, requests=self._requests),))
                for pod in self._model.pod_names(n))
        return pods


def _scaled_outside(spec: AutoscalerSpec, current: int, recorded: float | None) -> int | None:
    """The recorded count when the target went to or from 0 outside the autoscaler, else None.

    With minReplicas > 0 the autoscaler never sets 0, so a recorded 0 was someone else's write; the
    live controller then holds (ScalingDisabled) until someone scales the target up, and resumes
    from that count. Any other difference from the record is the replay's own decision."""
    if spec.min_replicas == 0 or recorded is None:
        return None
    target = round(recorded)
    if (target == 0) != (current == 0):
        return target
    return None


def _limiting_stage(decision: Decision) -> str:
    """The stabilization or limit step that changed the metrics' proposal, with its reason."""
    if decision.outcome is Outcome.BLOCKED:
        return "blocked"
    for step in decision.trace.steps:
        if step.stage in (Stage.STABILIZATION, Stage.LIMITS) and step.before != step.after:
            return step.reason
    return ""
