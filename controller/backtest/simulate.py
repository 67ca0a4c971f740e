"""Replay a spec over the history, sync by sync, with the live controller's decision code.

`sync_once` is one sync as the controller runs it against a target whose `/scale` write succeeds:
`controller.algorithm.decide`, then — when the decision asks for a write — `complete` with no
write error; the returned status and `ScaleHistory` are the next sync's input. `simulate` calls it
once per tick of the simulated clock, carrying status, history and the replica count, and feeds
it the observations the load model derives for the current simulated replica count.

Simulated pods are ready, past the CPU initialization period, and carry `--pod-requests` on one
container (named after a ContainerResource metric's container, else `main`); a write takes
effect at once (status replicas = spec replicas), with no start-up delay. The replay carries its
own count; the one write by someone else it follows from the recorded replicas is a target going
to or from 0 while minReplicas > 0 (the controller holds at 0, ScalingDisabled, then resumes from
the count it finds), marked `external` and not counted as a scale event.

Non-goals: fetching, summarising, rendering. Pure: no I/O, no clock (the grid is the clock).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from controller.algorithm import ControllerConfig, Decision, ScaleHistory, SyncInput, complete, decide
from controller.algorithm.decision import Outcome, Stage
from controller.algorithm.pods import ContainerInfo, PodInfo
from controller.algorithm.spec import AutoscalerSpec, HpaStatus, Observation, ScaleTarget, SourceType, TargetType
from controller.backtest.model import Grid, LoadModel

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
              namespace: str = "") -> tuple[Decision, LiveState]:
    """One sync: decide, write (always succeeds here), complete; and the state for the next one.
    `namespace` is the autoscaler's, named in messages as the controller names it."""
    scale = ScaleTarget(spec_replicas=state.replicas, status_replicas=state.replicas)
    decision = decide(SyncInput(spec=spec, scale=scale, now=now, status=state.status, pods=pods,
                                observations=observations, history=state.history, namespace=namespace), config)
    replicas = state.replicas
    if decision.write:
        decision = complete(decision, write_error=None, now=now)
        replicas = decision.desired_replicas
    return decision, LiveState(replicas=replicas, status=decision.status, history=decision.history)


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
             sync_every: int = 1, namespace: str = "") -> Timeline:
    """Replay the grid, syncing on every `sync_every`-th tick (the spec's sync period over the grid's
    step); `initial_replicas` is the target's count before the first sync. Between syncs the count
    holds and the metrics are still read (not decided on) for the figures."""
    metrics = spec.metrics
    replicas = array("i", bytes(4 * grid.count))
    values = tuple(array("d", [math.nan]) * grid.count for _ in metrics)
    limited: list[str] = []
    errors: list[str] = []
    changes: list[ScaleChange] = []
    explained = ""
    explain_sync = None if explain_at is None else explain_at - explain_at % sync_every
    pods_for = _PodSets(spec, model, requests, long_ago=grid.start - 1e9)
    state = LiveState(replicas=initial_replicas)
    for i in range(grid.count):
        now = grid.time(i)
        outside = _scaled_outside(spec, state.replicas, model.actual_replicas(i))
        if outside is not None:
            changes.append(ScaleChange(time=now, before=state.replicas, after=outside, external=True,
                                       reason=_OUTSIDE_TO_ZERO if outside == 0 else _OUTSIDE_FROM_ZERO))
            state = replace(state, replicas=outside)
        n = state.replicas
        pods, observations = pods_for(n), model.observations(i, n)
        if i % sync_every:  # no sync now: read what the metrics show, change nothing
            decision = decide(SyncInput(spec=spec, scale=ScaleTarget(spec_replicas=n, status_replicas=n), now=now,
                                        status=state.status, pods=pods, observations=observations,
                                        history=state.history, namespace=namespace), config)
            limited.append("")
            errors.append("")
        else:
            decision, state = sync_once(spec, config, state, now=now, pods=pods, observations=observations,
                                        namespace=namespace)
            limited.append(_limiting_stage(decision))
            errors.append(decision.error or "")
            if state.replicas != n:
                changes.append(ScaleChange(time=now, before=n, after=state.replicas,
                                           reason=decision.rescale_reason))
            if i == explain_sync:
                explained = decision.explain()
        replicas[i] = state.replicas
        for m in decision.trace.metrics:
            if m.proposal is not None:
                shown = m.utilization if m.utilization is not None else m.value
                values[m.index][i] = math.nan if shown is None else float(shown)
    return Timeline(name=name, spec=spec, grid=grid, replicas=replicas, values=values,
                    targets=tuple(metric_target(spec, k) for k in range(len(metrics))),
                    limited_by=tuple(limited), errors=tuple(errors), changes=tuple(changes),
                    explained=explained)


class _PodSets:
    """The simulated pods at each replica count (ready long ago, carrying the pod requests), built once."""

    def __init__(self, spec: AutoscalerSpec, model: LoadModel, requests: Mapping[str, int], *,
                 long_ago: float) -> None:
        self._container = next((m.container for m in spec.metrics
                                if m.type == SourceType.CONTAINER_RESOURCE and m.container), "main")
        self._model, self._requests, self._long_ago = model, requests, long_ago
        self._by_count: dict[int, tuple[PodInfo, ...]] = {}

    def __call__(self, n: int) -> tuple[PodInfo, ...]:
        pods = self._by_count.get(n)
        if pods is None:
            pods = self._by_count[n] = tuple(
                PodInfo(name=pod, start_time=self._long_ago, ready_transition=self._long_ago,
                        containers=(ContainerInfo(name=self._container, requests=self._requests),))
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
