"""One sync of one autoscaler: read the target, its pods and metrics, decide, then do what the
gates allow.

`Reconciler.sync` in order (upstream `reconcileAutoscaler`, through ports only, no HTTP here):
1. the gates (`controller.gates.Gates`: native preview, paused, conflict, preview), once;
2. the first sync after start or leadership gain restores the history from the status
   checkpoint (`StateRestored`, once);
3. read and decide: GET `/scale` (a failure is `failed_get_scale`: no scaling on data that could
   not be read); pods from the watch cache by the scale's selector (missing/invalid selector, or
   pods another autoscaler of the same kind also selects: `SelectorProblem`, upstream's
   AmbiguousSelector); every metric fetched concurrently, unless a range rule needs none; `decide`;
4. act: when the decision asks for a write and no gate holds it, PUT `/scale` (409s retried by the
   client) and `complete` with the outcome; a held preview shows what it would scale to;
5. remember: the history and the report (`controller.reconcile_state.ObjectState`);
6. a native HPA stops here (no writes, no events); a PromAutoscaler writes its status when
   `plan_status_write` says so and emits its events (one it emitted less than half a period ago is
   not repeated: a retry after a failure comes sooner than upstream's next sync).
Leadership is asked before every write: a replica that lost its Lease mid-sync writes nothing.
`sync_invalid` is the sync of a PromAutoscaler whose stored spec breaks an HPA validation rule: no
reads, no scaling; status and one Warning say why (`InvalidSpec`).

Non-goals: scheduling (controller.run), status JSON (controller.kube.status), conflict detection
(controller.conflicts), telemetry (the caller reads the returned `SyncOutcome`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from controller.algorithm import ControllerConfig, Decision, complete, decide, failed_get_scale
from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.conditions import Event, EventReason, EventType
from controller.algorithm.history_rules import shadow_history_until
from controller.algorithm.pods import PodInfo
from controller.algorithm.range_rules import needs_metrics
from controller.algorithm.shell import sync_input
from controller.algorithm.spec import Observation, ScaleTarget, SelectorProblem
from controller.gates import Gates
from controller.history.source import ForecastSource, forecasts_for
from controller.kube.last_decision import limiting_reason
from controller.kube.objects import KIND, Autoscaler
from controller.kube.ports import EventSink, ObjectKey, PodLister, ScaleClient, ScaleInfo, StatusWriter
from controller.kube.status import StatusDraft, invalid_spec_status, paused_in_status, plan_status_write
from controller.metrics.gather import observe_all
from controller.metrics.source import MetricsSource
from controller.reconcile_state import ObjectState, PodClaims
from controller.report import Result, SyncOutcome, SyncReport, WriteResult
from kubecommon.kube.errors import KubeAPIError, KubeError
from kubecommon.selectors import SelectorError

__all__ = ["InvalidAutoscaler", "Reconciler"]

_log = logging.getLogger(__name__)
# An event this object emitted less than this share of its sync period ago is not emitted again (a
# retry after a failure); regular syncs, at least half a period apart, emit each time as upstream.
REPEAT_WINDOW = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidAutoscaler:
    """A stored PromAutoscaler whose spec cannot be used (`SpecError`): what reporting it needs."""

    key: ObjectKey
    uid: str
    generation: int
    spec_json: Any  # the spec as stored (to tell a status-only change from an edit)
    status_json: Mapping[str, Any]
    error: str  # the field and upstream's message


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
        """One sync of `obj`; `conflict`: why another autoscaler targets the same workload."""
        gates = Gates.of(obj, conflict)
        state = self._states.setdefault(obj.key, ObjectState())
        restored = () if gates.native else self._restore(obj, state)
        decision, scale = await self._read_and_decide(obj, state, native=gates.native)
        decision, scale_write = await self._act(obj, gates, decision, scale)
        if scale_write is WriteResult.SKIPPED_NOT_LEADER:
            return SyncOutcome(key=obj.key, result=Result.NOT_LEADER, scale_write=scale_write)
        report = self._remember(obj, state, gates, decision, scale_read=scale is not None)
        result = gates.hold or Result.of(decision)
        if gates.native:  # decide only: the built-in controller writes
            return SyncOutcome(key=obj.key, result=result, report=report, error=decision.error)
        events = (*restored, *decision.events, *state.announce_pause(obj.paused, holding=decision.current_replicas),
                  *gates.events(decision), *state.announce_forecast(obj.status_json, decision))  # fmt: skip
        status_write = await self._maybe_write_status(obj, state, report,
                                                      scale_written=scale_write is WriteResult.SUCCESS)  # fmt: skip
        self._emit(obj, state, events, status_write, within=obj.sync_period_seconds * REPEAT_WINDOW)
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
        events = (Event(type=EventType.WARNING, reason=EventReason.INVALID_SPEC, message=obj.error),)
        self._emit(obj, state, events, status_write, within=math.inf, now=now)
        return SyncOutcome(key=obj.key, result=Result.BLOCKED, status_write=status_write, error=obj.error)

    # --- the steps of a sync ---------------------------------------------------------------------
    def _restore(self, obj: Autoscaler, state: ObjectState) -> tuple[Event, ...]:
        """The first sync in this process: take the history from the status checkpoint."""
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

    async def _read_and_decide(self, obj: Autoscaler, state: ObjectState, *,
                               native: bool) -> tuple[Decision, ScaleInfo | None]:  # fmt: skip
        """The decision on what could be read, and the scale (None: it could not be read)."""
        ns = obj.key.namespace
        try:
            scale = await self._scale.get(ns, obj.target)
        except KubeError as err:
            _log.debug("%s %s: scale not read: %s", obj.key.kind, obj.key, err)
            return failed_get_scale(obj.status, _api_text(err), now=self._clock(), history=state.history), None
        now = self._clock()
        last = state.last_report  # a native HPA: its own rescale since our last sync counts
        native_before = (last.autoscaler.status, last.decision.effective_behavior) if native and last else None
        target = ScaleTarget(spec_replicas=scale.spec_replicas, status_replicas=scale.status_replicas)
        pods, problem = self._select_pods(obj.key, scale.selector)
        observations: tuple[Observation, ...] = ()
        if problem is None and needs_metrics(obj.spec, target):
            observations = await observe_all(self._metrics, ns, obj.metric_plans, pod_selector=scale.selector)
        inp = sync_input(obj.spec, scale=target, now=now, status=obj.status, history=state.history,
                         restored=state.fresh_restore, pods=pods, observations=observations, selector_problem=problem,
                         namespace=ns, forecasts=await forecasts_for(self._forecasts, obj, now),
                         native_before=native_before)  # fmt: skip
        decision = decide(inp, self._config)
        return decision, scale

    def _select_pods(self, key: ObjectKey, selector: str) -> tuple[tuple[PodInfo, ...], SelectorProblem | None]:
        """The pods the scale's selector selects, and claims them for `key` (AmbiguousSelector)."""
        if not selector:
            return (), SelectorProblem.missing()
        try:
            pods = tuple(self._pods.pods(key.namespace, selector))
        except SelectorError as err:
            return (), SelectorProblem.invalid(str(err))
        others = self._claims.claim(key.kind, key.namespace, key.name, frozenset(p.name for p in pods))
        if others:
            return pods, SelectorProblem.ambiguous(selector, tuple(sorted((f"{key.namespace}/{key.name}", *others))))
        return pods, None

    async def _act(self, obj: Autoscaler, gates: Gates, decision: Decision,
                   scale: ScaleInfo | None) -> tuple[Decision, WriteResult]:  # fmt: skip
        """Write `/scale` when the decision asks and no gate holds it, then `complete` with the
        outcome; a held preview's status shows what it would scale to."""
        if not decision.write:
            return decision, WriteResult.NONE
        if gates.hold is not None:
            if gates.shows_would_scale:  # also next to the HPA it is to replace
                decision = replace(decision, status=replace(decision.status,
                                                            desired_replicas=decision.desired_replicas))  # fmt: skip
            return decision, WriteResult.NONE
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

    def _remember(self, obj: Autoscaler, state: ObjectState, gates: Gates, decision: Decision, *,
                  scale_read: bool) -> SyncReport:  # fmt: skip
        """Keep the decision's history and this sync's report for the next sync, explain and preview."""
        state.history = decision.history
        if gates.native and state.history_since is None and decision.history is not None:
            state.history_since = self._clock()  # the preview's history starts now, the HPA's did not
        if scale_read:  # the initial-recommendation rule needed the current count
            state.fresh_restore = False
        since = state.history_since
        until = None if since is None else shadow_history_until(
            since, obj.spec.behavior, downscale_stabilization=self._config.downscale_stabilization)  # fmt: skip
        state.last_report = SyncReport(autoscaler=obj, decision=decision, extra_conditions=gates.conditions(decision),
                                       limiting_reason=limiting_reason(decision, paused=obj.paused), now=self._clock(),
                                       history_since=since, history_until=until)  # fmt: skip
        return state.last_report

    async def _maybe_write_status(self, obj: Autoscaler, state: ObjectState, report: SyncReport, *,
                                  scale_written: bool) -> WriteResult:  # fmt: skip
        """Write the status when `plan_status_write` finds a reason (it builds only the fields it
        compares, so a sync that writes nothing never builds the whole document)."""
        restorable = state.covers(report.decision)
        previous = state.previous_status(obj.status_json, obj.resource_version)
        new = StatusDraft(obj, report.decision, now=report.now, extra_conditions=report.extra_conditions,
                          previous=previous)  # fmt: skip
        if plan_status_write(previous, new, now=report.now, force_checkpoint=scale_written,
                             history_restorable=restorable,
                             checkpoint_interval=self._checkpoint_interval) is None:  # fmt: skip
            return WriteResult.NONE
        return await self._write_status(obj.key, state, new.to_dict(), history=report.decision.history)

    def _emit(self, obj: Autoscaler | InvalidAutoscaler, state: ObjectState, events: tuple[Event, ...],
              status_write: WriteResult, *, within: float, now: float | None = None) -> None:  # fmt: skip
        """Emit `events` (and a failed status write's Warning) but those emitted within `within`
        seconds; also a sync with no events is remembered: an event that comes back is news."""
        if status_write is WriteResult.ERROR:
            events += (Event(type=EventType.WARNING, reason=EventReason.FAILED_UPDATE_STATUS,
                             message=state.status_error),)  # fmt: skip
        if not self._is_leader():
            return
        events = state.unrepeated(events, now=self._clock() if now is None else now, within=within)
        if events:
            self._events.emit(obj.key, obj.uid, events)

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
            new = StatusDraft(report.autoscaler, report.decision, now=now, extra_conditions=report.extra_conditions,
                              previous=previous)  # fmt: skip
            if state.covers(report.decision):
                continue
            if plan_status_write(previous, new, now=now, force_checkpoint=True) is None:
                continue
            if await self._write_status(key, state, new.to_dict(),
                                        history=report.decision.history) is WriteResult.SUCCESS:  # fmt: skip
                written += 1
        return written


def _api_text(err: KubeError) -> str:
    """An API error as upstream's events and conditions show it: the API server's Status message
    (client-go's error text), without our request line; anything else as it reads."""
    if isinstance(err, KubeAPIError) and err.status.message:
        return err.status.message
    return str(err)
