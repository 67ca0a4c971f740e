"""One sync of one autoscaler: read the target, its pods and metrics, decide, write, record.

Order (upstream `reconcileAutoscaler`, through ports only, no HTTP here):
1. GET `/scale`; a failure is `failed_get_scale` (no scaling on data that could not be read);
2. pods from the watch cache by the scale's selector (missing/invalid selector, or pods another
   autoscaler of the same kind also selects → `SelectorProblem`, upstream's AmbiguousSelector);
3. every metric of the object fetched *concurrently* (upstream fetches one after another);
4. `decide`; then the gates: `spec.paused` holds the replicas (condition and event `Paused`, our
   addition), Preview mode and a conflicting autoscaler write nothing to `/scale` (Preview emits
   `PreviewRescale`; a conflict sets `ScalingActive=False/ConflictingAutoscaler` and a Warning);
5. otherwise, when the decision asks for it, PUT `/scale` (409s retried by the client) and
   `complete` with the outcome;
6. events through the sink (one the object emitted less than half a period ago is not repeated:
   a retry after a failure comes sooner than upstream's next sync); the history kept in memory;
   status written only when `plan_status_write` says so (changes, new outcome, every scale
   write, else a history checkpoint at most once per interval).
`is_leader()` is checked before every write; a replica that lost its Lease mid-sync writes nothing. The first sync
after start or leadership gain restores the history from the status checkpoint and emits `StateRestored` once. Native
HPAs (preview) run the same steps with no writes and no events. `sync_invalid` is the sync of a PromAutoscaler whose
stored spec breaks an HPA validation rule: no reads, no scaling; status and one Warning say why (`InvalidSpec`).

Non-goals: scheduling (controller.run), status JSON (controller.kube.status), conflict detection
(controller.conflicts), telemetry (the caller reads the returned `SyncOutcome`).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from controller.algorithm import ControllerConfig, Decision, Outcome, complete, decide, failed_get_scale
from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.conditions import Event, EventReason, EventType, event_rescale
from controller.algorithm.pods import PodInfo
from controller.algorithm.history_rules import restorable, shadow_history_until, with_builtin_rescale
from controller.algorithm.shell import sync_input
from controller.algorithm.spec import FetchFailure, Observation, ScaleTarget, SelectorProblem
from controller.algorithm.range_rules import needs_metrics
from controller.history.source import ForecastSource, forecasts_for
from controller.kube.objects import KIND, Autoscaler, Mode
from controller.kube.ports import EventSink, ObjectKey, PodLister, ScaleClient, ScaleInfo, StatusWriter
from controller.metrics.source import MetricQuery, MetricsSource
from controller.kube.last_decision import limiting_reason
from controller.kube.status import StatusDraft, invalid_spec_status, plan_status_write
from controller.reconcile_state import (CONFLICTING_AUTOSCALER, PREVIEW, PREVIEW_MODE, SCALING_ACTIVE, ExtraCondition,
                                        ObjectState, PodClaims, Result, SyncReport, WriteResult, overlay_conditions,
                                        paused_in_status, unrepeated, forecast_events)  # fmt: skip
from kubecommon.kube.errors import KubeAPIError, KubeError
from kubecommon.selectors import SelectorError

__all__ = ["InvalidAutoscaler", "Reconciler", "SyncOutcome"]

_log = logging.getLogger(__name__)
# An event this object emitted less than this share of its sync period ago is not emitted again (a
# retry after a failure); regular syncs, at least half a period apart, emit each time as upstream.
REPEAT_WINDOW = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncOutcome:
    key: ObjectKey
    result: Result
    scale_write: WriteResult = WriteResult.NONE
    status_write: WriteResult = WriteResult.NONE
    report: SyncReport | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        """Retry sooner than the period (the queue's rate limiter decides how much sooner)."""
        return (self.result in (Result.BLOCKED, Result.FAILED_GET_SCALE, Result.WRITE_FAILED)
                or self.status_write is WriteResult.ERROR)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidAutoscaler:
    """A stored PromAutoscaler whose spec cannot be used (`SpecError`): what reporting it needs."""

    key: ObjectKey
    uid: str
    generation: int
    spec_json: Any  # the spec as stored (to tell a status-only change from an edit)
    status_json: Mapping[str, Any]
    error: str  # the field and upstream's message


@dataclass(frozen=True, slots=True, kw_only=True)
class _Read:
    """What the sync could read: the scale (None: failed) and the algorithm's input."""

    decision: Decision
    scale: ScaleInfo | None


class Reconciler:
    def __init__(
        self, *, scale: ScaleClient, pods: PodLister, metrics: MetricsSource, status: StatusWriter,
        events: EventSink, config: ControllerConfig, is_leader: Callable[[], bool],
        wall_clock: Callable[[], float], checkpoint_interval: float = 60.0, forecasts: ForecastSource | None = None,
    ) -> None:  # fmt: skip
        self._scale = scale
        self._pods = pods
        self._metrics = metrics
        self._status = status
        self._events = events
        self._config = config
        self._is_leader = is_leader
        self._clock = wall_clock
        self._checkpoint_interval = checkpoint_interval
        self._forecasts = forecasts  # spec.prediction's history and forecaster (None: reactive only)
        self._states: dict[ObjectKey, ObjectState] = {}
        self._claims = PodClaims()

    # --- memory --------------------------------------------------------------------------------
    def forget(self, key: ObjectKey) -> None:
        """The object was deleted: drop its history and its claim on pods."""
        self._states.pop(key, None)
        self._claims.release(key.kind, key.namespace, key.name)
        if self._forecasts is not None:
            self._forecasts.forget(key)

    def forget_all(self) -> None:
        """Leadership lost: histories are re-read from status on the next gain."""
        self._states.clear()
        self._claims = PodClaims()

    def resume(self, key: ObjectKey, history: ScaleHistory | None) -> None:
        """Hold `history` (None: none yet) as if this process had synced `key` all along (hack/conformance)."""
        self._states[key] = ObjectState(history=history, restored=True)

    def last_report(self, key: ObjectKey) -> SyncReport | None:
        state = self._states.get(key)
        return state.last_report if state else None

    def reports(self) -> list[SyncReport]:
        return [s.last_report for s in self._states.values() if s.last_report is not None]

    # --- one sync ------------------------------------------------------------------------------
    async def sync(self, obj: Autoscaler, *, conflict: str | None = None) -> SyncOutcome:
        state = self._states.setdefault(obj.key, ObjectState())
        shadow = obj.key.kind != KIND  # a native HPA: decide only
        restored_event = () if shadow else self._restore(obj, state)
        read = await self._read_and_decide(obj, state)
        decision = read.decision
        extra = _extra_conditions(obj, decision, conflict)
        hold = _hold_result(obj, conflict)
        scale_write = WriteResult.NONE
        if decision.write and hold is None and not shadow:
            decision, scale_write = await self._write_scale(obj, decision, read.scale)
        elif decision.write and (hold is Result.PREVIEW or (hold is Result.CONFLICT and obj.mode is Mode.PREVIEW)):
            # status shows what it would scale to (also next to the HPA it is to replace)
            decision = replace(decision, status=replace(decision.status, desired_replicas=decision.desired_replicas))
        if scale_write is WriteResult.SKIPPED_NOT_LEADER:
            return SyncOutcome(key=obj.key, result=Result.NOT_LEADER, scale_write=scale_write)
        state.history = decision.history
        if shadow and state.history_since is None and decision.history is not None:
            state.history_since = self._clock()  # the preview's history starts now, the HPA's did not
        if read.scale is not None:  # the initial-recommendation rule needed the current count
            state.fresh_restore = False
        report = SyncReport(autoscaler=obj, decision=decision, extra_conditions=extra,
                            limiting_reason=limiting_reason(decision, paused=obj.paused),
                            now=self._clock(), history_since=state.history_since,
                            history_until=None if state.history_since is None else shadow_history_until(
                                state.history_since, obj.spec.behavior,
                                downscale_stabilization=self._config.downscale_stabilization))  # fmt: skip
        state.last_report = report
        result = hold or _result(decision)
        if shadow:
            return SyncOutcome(key=obj.key, result=result, report=report, error=decision.error)
        events = (*restored_event, *decision.events, *self._gate_events(obj, state, decision, conflict))
        status_write = await self._maybe_write_status(obj, state, report, scale_written=scale_write
                                                      is WriteResult.SUCCESS)  # fmt: skip
        if status_write is WriteResult.ERROR:
            events += (Event(type=EventType.WARNING, reason=EventReason.FAILED_UPDATE_STATUS,
                             message=state.status_error),)  # fmt: skip
        if self._is_leader():  # also a sync with no events: an event that comes back is news
            events = unrepeated(state, events, now=self._clock(), within=obj.sync_period_seconds * REPEAT_WINDOW)
            if events:
                self._events.emit(obj.key, obj.uid, events)
        return SyncOutcome(key=obj.key, result=result, scale_write=scale_write, status_write=status_write,
                           report=report, error=decision.error)  # fmt: skip

    async def sync_invalid(self, obj: InvalidAutoscaler) -> SyncOutcome:
        """Never scale it; say why: status (`status.invalid_spec_status`) when that changes, and a
        Warning `InvalidSpec` once per error, not every sync (each would spend the object's event
        budget; the condition keeps saying it). It selects no pods while invalid."""
        state = self._states.setdefault(obj.key, ObjectState())
        state.last_report = None  # no decision to explain, nor to checkpoint over this status at shutdown
        self._claims.release(obj.key.kind, obj.key.namespace, obj.key.name)
        now = self._clock()
        previous = state.written if state.written is not None else obj.status_json
        new = invalid_spec_status(previous, generation=obj.generation, error=obj.error, now=now)
        status_write = WriteResult.NONE
        if plan_status_write(previous, new, now=now) is not None:
            status_write = await self._write_status(obj.key, state, new, history=None)
        events: tuple[Event, ...] = (Event(type=EventType.WARNING, reason=EventReason.INVALID_SPEC, message=obj.error),)
        if status_write is WriteResult.ERROR:
            events += (Event(type=EventType.WARNING, reason=EventReason.FAILED_UPDATE_STATUS,
                             message=state.status_error),)  # fmt: skip
        if self._is_leader():
            events = unrepeated(state, events, now=now, within=math.inf)
            if events:
                self._events.emit(obj.key, obj.uid, events)
        return SyncOutcome(key=obj.key, result=Result.BLOCKED, status_write=status_write, error=obj.error)

    def _restore(self, obj: Autoscaler, state: ObjectState) -> tuple[Event, ...]:
        if state.restored:
            return ()
        state.restored = True
        state.paused = paused_in_status(obj.status_json)  # announced before the restart: not again
        if obj.problems:
            _log.warning("%s %s: ignored in status: %s", obj.key.kind, obj.key, "; ".join(obj.problems))
        if obj.history is None:
            return ()
        state.history, state.fresh_restore = obj.history, True
        state.checkpointed = obj.history
        age = ("" if obj.history_saved_at is None
               else f" saved {max(0.0, self._clock() - obj.history_saved_at):.0f}s ago")
        h = obj.history
        message = (f"restored scale history from the status checkpoint{age}: {len(h.recommendations)} "
                   f"recommendations, {len(h.scale_up_events)} scale-up and {len(h.scale_down_events)} "
                   f"scale-down events")  # fmt: skip
        return (Event(type=EventType.NORMAL, reason=EventReason.STATE_RESTORED, message=message),)

    async def _read_and_decide(self, obj: Autoscaler, state: ObjectState) -> _Read:
        ns = obj.key.namespace
        try:
            scale = await self._scale.get(ns, obj.target)
        except KubeError as err:
            _log.debug("%s %s: scale not read: %s", obj.key.kind, obj.key, err)
            return _Read(decision=failed_get_scale(obj.status, _api_text(err), now=self._clock(),
                                                   history=state.history), scale=None)  # fmt: skip
        now = self._clock()
        history = state.history
        if obj.key.kind != KIND and state.last_report is not None:  # a native HPA: its own rescales count
            history = with_builtin_rescale(history, before=state.last_report.autoscaler.status, status=obj.status,
                                           behavior=state.last_report.decision.effective_behavior)  # fmt: skip
        target = ScaleTarget(spec_replicas=scale.spec_replicas, status_replicas=scale.status_replicas)
        pods, problem = self._select_pods(ns, scale.selector)
        if problem is None:
            names = frozenset(p.name for p in pods)
            others = self._claims.claim(obj.key.kind, ns, obj.key.name, names)
            if others:
                own = f"{ns}/{obj.key.name}"
                problem = SelectorProblem.ambiguous(scale.selector, tuple(sorted((own, *others))))
        observations: tuple[Observation, ...] = ()
        if problem is None and needs_metrics(obj.spec, target):
            observations = await self._observe_all(ns, obj, scale.selector)
        inp = sync_input(obj.spec, scale=target, now=now, status=obj.status, history=history,
                         restored=state.fresh_restore, pods=pods, observations=observations, selector_problem=problem,
                         namespace=ns, forecasts=await forecasts_for(self._forecasts, obj, now))  # fmt: skip
        return _Read(decision=decide(inp, self._config), scale=scale)

    def _select_pods(self, namespace: str, selector: str) -> tuple[tuple[PodInfo, ...], SelectorProblem | None]:
        if not selector:
            return (), SelectorProblem.missing()
        try:
            return tuple(self._pods.pods(namespace, selector)), None
        except SelectorError as err:
            return (), SelectorProblem.invalid(str(err))

    async def _observe_all(self, namespace: str, obj: Autoscaler, selector: str) -> tuple[Observation, ...]:
        """All metrics at once; a plan that could not be built, or a port that raised, is a failure."""

        async def one(plan: MetricQuery | FetchFailure) -> Observation:
            if isinstance(plan, FetchFailure):
                return plan
            try:
                return await self._metrics.observe(namespace, plan, pod_selector=selector)
            except (KubeError, OSError, asyncio.TimeoutError, ValueError) as err:
                return FetchFailure(message=f"unable to fetch metric {plan.name}: {err}")

        plans = obj.metric_plans
        if len(plans) == 1:  # the common case: no task creation for one fetch
            return (await one(plans[0]),)
        return tuple(await asyncio.gather(*(one(plan) for plan in plans)))

    async def _write_scale(self, obj: Autoscaler, decision: Decision,
                           scale: ScaleInfo | None) -> tuple[Decision, WriteResult]:  # fmt: skip
        assert scale is not None  # decide asks for a write only after the scale was read
        if not self._is_leader():
            return decision, WriteResult.SKIPPED_NOT_LEADER
        error: str | None = None
        try:
            await self._scale.update(obj.key.namespace, obj.target, decision.desired_replicas, scale)
        except KubeError as err:
            error = _api_text(err)
            _log.warning("%s %s: scale not written: %s", obj.key.kind, obj.key, err)
        done = complete(decision, write_error=error, now=self._clock())
        return done, WriteResult.ERROR if error is not None else WriteResult.SUCCESS

    def _gate_events(self, obj: Autoscaler, state: ObjectState, decision: Decision,
                     conflict: str | None) -> tuple[Event, ...]:  # fmt: skip
        events: list[Event] = []
        if obj.paused != state.paused:
            reason = EventReason.PAUSED if obj.paused else EventReason.UNPAUSED
            text = (f"scaling paused by spec.paused; holding {decision.current_replicas} replicas" if obj.paused
                    else "spec.paused cleared; scaling resumes")  # fmt: skip
            events.append(Event(type=EventType.NORMAL, reason=reason, message=text))
            state.paused = obj.paused
        if conflict is not None:
            events.append(Event(type=EventType.WARNING, reason=EventReason.CONFLICTING_AUTOSCALER, message=conflict))
        elif obj.mode is Mode.PREVIEW and decision.write and not obj.paused:
            events.append(Event(type=EventType.NORMAL, reason=EventReason.PREVIEW_RESCALE,
                                message="Preview: " + event_rescale(decision.desired_replicas,
                                                                    decision.rescale_reason)))  # fmt: skip
        return (*events, *forecast_events(state, obj.status_json, decision))

    async def _maybe_write_status(self, obj: Autoscaler, state: ObjectState, report: SyncReport, *,
                                  scale_written: bool) -> WriteResult:  # fmt: skip
        """Write the status when `plan_status_write` finds a reason (it builds only the fields it
        compares, so a sync that writes nothing never builds the whole document)."""
        previous = _previous_status(state, obj.status_json, obj.resource_version)
        new = self._status_draft(report, previous)
        if plan_status_write(previous, new, now=report.now, force_checkpoint=scale_written,
                             history_restorable=self._covered(state, report.decision),
                             checkpoint_interval=self._checkpoint_interval) is None:  # fmt: skip
            return WriteResult.NONE
        return await self._write_status(obj.key, state, new.to_dict(), history=report.decision.history)

    @staticmethod
    def _covered(state: ObjectState, decision: Decision) -> bool:
        """The checkpoint in status already restores to this decision's history (no timed save due)."""
        history = decision.history
        return history is None or restorable(state.checkpointed, history, decision.current_replicas)

    @staticmethod
    def _status_draft(report: SyncReport, previous: Mapping[str, Any]) -> StatusDraft:
        """The status `build_status` makes, with the extra conditions overlaid, built on demand."""
        if not report.extra_conditions:  # nothing to overlay: the draft compares conditions unbuilt
            return StatusDraft(report.autoscaler, report.decision, now=report.now)

        def finish(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
            overlaid = overlay_conditions({"conditions": conditions}, report.extra_conditions, previous=previous,
                                          now=report.now)  # fmt: skip
            return list(overlaid["conditions"])

        return StatusDraft(report.autoscaler, report.decision, now=report.now, finish_conditions=finish)

    async def _write_status(self, key: ObjectKey, state: ObjectState, status: Mapping[str, Any], *,
                            history: ScaleHistory | None) -> WriteResult:  # fmt: skip
        if not self._is_leader():
            return WriteResult.SKIPPED_NOT_LEADER
        try:
            await self._status.write(key, status)
        except KubeError as err:
            state.status_error = _api_text(err)
            _log.warning("%s %s: status not written: %s", key.kind, key, err)
            return WriteResult.ERROR
        state.written = status
        if history is not None:
            state.checkpointed = history
        return WriteResult.SUCCESS

    async def checkpoint_all(self) -> int:
        """Save every history not yet in status (SIGTERM, lease release); returns how many were written."""
        written = 0
        for key, state in list(self._states.items()):
            report = state.last_report
            if report is None or key.kind != KIND or state.history is None:
                continue
            previous = state.written if state.written is not None else report.autoscaler.status_json
            now = self._clock()
            new = self._status_draft(SyncReport(autoscaler=report.autoscaler, decision=report.decision,
                                               extra_conditions=report.extra_conditions,
                                               limiting_reason=report.limiting_reason, now=now), previous)  # fmt: skip
            if self._covered(state, report.decision):
                continue
            if plan_status_write(previous, new, now=now, force_checkpoint=True) is None:
                continue
            if await self._write_status(key, state, new.to_dict(),
                                        history=report.decision.history) is WriteResult.SUCCESS:  # fmt: skip
                written += 1
        return written


def _previous_status(state: ObjectState, cached: Mapping[str, Any], version: str) -> Mapping[str, Any]:
    """The status the write rule compares against: what this process last wrote (a lagging watch
    cache must not cause a second write), else the cached one. Once the watch echoes the written
    status back unchanged, the cache's copy takes its place, so each object's status is held once
    (compared once per cached resourceVersion)."""
    written = state.written
    if written is None or written is cached:
        return cached
    if state.echo_compared != version:
        state.echo_compared = version
        if written == cached:
            state.written = cached
            return cached
    return written


def _api_text(err: KubeError) -> str:
    """An API error as upstream's events and conditions show it: the API server's Status message
    (client-go's error text), without our request line; anything else as it reads."""
    if isinstance(err, KubeAPIError) and err.status.message:
        return err.status.message
    return str(err)


def _hold_result(obj: Autoscaler, conflict: str | None) -> Result | None:
    """Why this sync must not write /scale, as its result (None: it may)."""
    if obj.paused:
        return Result.PAUSED
    if conflict is not None:
        return Result.CONFLICT
    if obj.mode is Mode.PREVIEW or obj.key.kind != KIND:
        return Result.PREVIEW
    return None


def _result(decision: Decision) -> Result:
    return {
        Outcome.SCALED: Result.SCALED,
        Outcome.WRITE_FAILED: Result.WRITE_FAILED,
        Outcome.BLOCKED: Result.BLOCKED,
        Outcome.FAILED_GET_SCALE: Result.FAILED_GET_SCALE,
    }.get(decision.outcome, Result.UNCHANGED)


def _extra_conditions(obj: Autoscaler, decision: Decision, conflict: str | None) -> tuple[ExtraCondition, ...]:
    out: list[ExtraCondition] = []
    if obj.key.kind != KIND:
        return ()
    if conflict is not None:
        out.append(ExtraCondition(type=SCALING_ACTIVE, status=False, reason=CONFLICTING_AUTOSCALER, message=conflict))
    if obj.mode is Mode.PREVIEW:
        out.append(ExtraCondition(type=PREVIEW, status=True, reason=PREVIEW_MODE,
                                  message="spec.mode is Preview: decisions are recorded, the target's scale is never "
                                          f"written; last decision: {decision.desired_replicas} replicas"))  # fmt: skip
    return tuple(out)

