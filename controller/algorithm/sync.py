"""One sync of one autoscaler, decided from data: upstream `reconcileAutoscaler` without the I/O.

Order, as upstream: the scale was read (else `failed_get_scale`); the first sync records
`{current, now}` as a recommendation; then the range rules that skip metrics (`range_rules`:
target at 0 with minReplicas > 0, current above max / below min), else metrics -> combination ->
normalization (legacy or behavior path). When the
decision needs a `/scale` write the caller performs it and calls `complete` with the outcome,
which sets AbleToScale, the events, lastScaleTime and records the scale event.

Non-goals: fetching, listing pods, parsing selectors, writing status. Pure: no I/O, no clock reads
(`now` comes in with the input).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from controller.algorithm import conditions as c
from controller.algorithm.behavior import (
    Behavior,
    Recommendation,
    ScaleHistory,
    Limited,
    ScalingRules,
    Stabilized,
    convert_with_rules,
    effective_behavior,
    longest_period,
    rate_limit_with_behavior,
    record_scale,
    replicas_change_in_period,
    stabilize_legacy,
    stabilize_with_behavior,
)
from controller.algorithm.conditions import Condition, ConditionType, Event, EventReason, EventType, Reason
from controller.algorithm.decision import Decision, MetricTrace, Outcome, Stage, Trace, TraceStep
from controller.algorithm.multi_metric import (
    Combined,
    MetricContext,
    MetricResult,
    combine,
    evaluate_metric,
)
from controller.algorithm.prediction import PredictionTrace, predict
from controller.algorithm.range_rules import RangeVerdict, range_rule
from controller.algorithm.ratio import Tolerances
from controller.algorithm.spec import (
    AutoscalerSpec,
    ControllerConfig,
    FetchFailure,
    HpaStatus,
    MetricStatus,
    SyncInput,
)
from controller.algorithm.values import quick_init
from controller.algorithm import zero
from controller.algorithm.zero import ZeroStep

_NOT_FETCHED = FetchFailure(message="metric was not fetched")
_NO_METRICS = "no metrics are configured"


def tolerances_for(spec: AutoscalerSpec, config: ControllerConfig) -> Tolerances:
    """Upstream `tolerancesForHpa`: per-direction overrides only with a behavior and the gate."""
    down = up = config.tolerance
    b = spec.behavior
    if b is not None and config.configurable_tolerance:
        if b.scale_down is not None and b.scale_down.tolerance is not None:
            down = b.scale_down.tolerance
        if b.scale_up is not None and b.scale_up.tolerance is not None:
            up = b.scale_up.tolerance
    return Tolerances(scale_down=down, scale_up=up)


def _metric_trace(r: MetricResult, now: float) -> MetricTrace:
    p = r.proposal
    if p is None:
        return MetricTrace(index=r.index, type=r.spec.type, name=r.spec.name, proposal=None,
                           why=r.error or "")  # fmt: skip
    age = None if r.observed_at is None else now - r.observed_at
    return MetricTrace(
        index=r.index, type=r.spec.type, name=r.name, proposal=p.replicas, why=str(p.why),
        value=p.usage, utilization=p.utilization, ratio=p.ratio, new_ratio=p.new_ratio,
        counted=p.counted, age_seconds=age, ready=p.ready,
        unready=len(p.unready), missing=len(p.missing), ignored=len(p.ignored),
    )  # fmt: skip


def failed_get_scale(
    status: HpaStatus, error: str, *, now: float, history: ScaleHistory | None
) -> Decision:
    """The target's `/scale` could not be read (bad apiVersion, no mapping, GET failed)."""
    conds = _set(status.conditions, ConditionType.ABLE_TO_SCALE, False, Reason.FAILED_GET_SCALE,
                 c.msg_failed_get_scale(error), now)  # fmt: skip
    new_status = replace(status, conditions=conds)
    return Decision(
        outcome=Outcome.FAILED_GET_SCALE, current_replicas=status.current_replicas,
        desired_replicas=status.desired_replicas, rescale_reason="", status=new_status,
        previous_status=status,
        events=(Event(type=EventType.WARNING, reason=EventReason.FAILED_GET_SCALE, message=error),),
        history=history, error=error,
        trace=Trace(current=status.current_replicas, metrics=(), steps=(),
                    final=status.desired_replicas),
    )  # fmt: skip


def decide(inp: SyncInput, config: ControllerConfig) -> Decision:
    """Decide one sync. If `decision.write`, write the scale, then call `complete`."""
    now = inp.now
    current = inp.scale.spec_replicas
    spec = inp.spec
    history = inp.history
    if history is None:  # first sync: the current count is the first recommendation
        history = ScaleHistory(recommendations=(Recommendation(replicas=current, timestamp=now),))
    verdict = range_rule(spec, current)
    if verdict is not None:
        return _out_of_range(inp, config, history, verdict)
    if inp.selector_problem is not None:
        p = inp.selector_problem
        conds = _set(_got_scale(inp), ConditionType.SCALING_ACTIVE, False, p.condition_reason,
                     p.condition_message, now)  # fmt: skip
        events = (
            Event(type=EventType.WARNING, reason=p.event_reason, message=p.event_message),
            Event(type=EventType.WARNING, reason=EventReason.FAILED_COMPUTE_METRICS_REPLICAS,
                  message=p.event_message),
        )  # fmt: skip
        return _final(inp, history, outcome=Outcome.BLOCKED, desired=current, conds=conds, steps=(),
                      events=events, error=p.event_message)  # fmt: skip
    return _from_metrics(inp, config, current, history)


def _out_of_range(inp: SyncInput, config: ControllerConfig, history: ScaleHistory, verdict: RangeVerdict) -> Decision:
    """A range rule's verdict as the decision: no metrics read, the bound or a standstill."""
    conds = _got_scale(inp)
    if verdict.inactive is not None:
        reason, message = verdict.inactive
        conds = _set(conds, ConditionType.SCALING_ACTIVE, False, reason, message, inp.now)
    # Upstream stores the scale event of a jump to a bound too when a behavior is set.
    behavior = _effective_behavior(inp.spec, config) if verdict.outcome is Outcome.SCALE else None
    return _final(inp, history, outcome=verdict.outcome, desired=verdict.desired, conds=conds, steps=(verdict.step,),
                  rescale_reason=verdict.rescale_reason, behavior=behavior)  # fmt: skip


def _got_scale(inp: SyncInput) -> tuple[Condition, ...]:
    """AbleToScale after reading the scale; a sync that gets to normalize overwrites it."""
    return _set(inp.status.conditions, ConditionType.ABLE_TO_SCALE, True, Reason.SUCCEEDED_GET_SCALE,
                c.MSG_SUCCEEDED_GET_SCALE, inp.now)  # fmt: skip


def _effective_behavior(spec: AutoscalerSpec, config: ControllerConfig) -> Behavior | None:
    """The behavior with API defaults and the controller's downscale window; None: legacy path."""
    if spec.behavior is None:
        return None
    return effective_behavior(spec.behavior, downscale_stabilization=int(config.downscale_stabilization))


def _set(
    conds: tuple[Condition, ...], kind: ConditionType, ok: bool, reason: Reason, message: str, now: float
) -> tuple[Condition, ...]:
    return c.put_condition(conds, kind, ok, reason, message, now=now)


def _from_metrics(inp: SyncInput, config: ControllerConfig, current: int, history: ScaleHistory) -> Decision:
    spec, now = inp.spec, inp.now
    zs = zero.zero_step(spec, current=current, observations=inp.observations, idle_since=history.idle_since,
                        now=now) if zero.enabled(spec) else None  # fmt: skip
    history = history if zs is None else history.with_idle_since(zs.idle_since)
    ctx = MetricContext(
        spec_replicas=current, status_replicas=inp.scale.status_replicas, pods=inp.pods,
        tolerances=tolerances_for(spec, config), now=now, readiness=config.readiness,
        pod_level_resources=config.pod_level_resources, namespace=inp.namespace,
    )  # fmt: skip
    obs = inp.observations
    results = [
        zero.skipped(i, m) if zero.not_read(zs, m)
        else evaluate_metric(i, m, obs[i] if i < len(obs) else _NOT_FETCHED, ctx)
        for i, m in enumerate(spec.metrics)
    ]
    combined = combine(zero.counted(zs, results), spec_replicas=current)
    # Every failed metric is announced, even when it does not block scaling (upstream).
    events = tuple([
        Event(type=EventType.WARNING, reason=EventReason(r.reason), message=r.event_message or "")
        for r in results if r.reason is not None
    ]) if combined.invalid else ()  # fmt: skip
    seen = _Seen(traces=tuple([_metric_trace(r, now) for r in results]),
                 statuses=tuple([r.status for r in results]))  # fmt: skip
    if combined.blocked:
        blocked = predict(spec, inp.forecasts, current=current, reactive=current, pods=inp.pods,
                          status_replicas=inp.scale.status_replicas,
                          tolerances=ctx.tolerances, pod_level=config.pod_level_resources, blocked=True)  # fmt: skip
        return _blocked(inp, history, combined, _got_scale(inp), events, seen, blocked, zs)
    if zs is not None and zs.at_zero and not zs.wake:  # idle at 0 (or an activation metric unread): hold 0
        conds = _set(_got_scale(inp), ConditionType.SCALING_ACTIVE, False, Reason.SCALED_TO_ZERO, zs.why, now)
        step = TraceStep(stage=Stage.ZERO, before=0, after=0, reason=zs.why, note=f"cooldown {zs.cooldown}s")
        return _final(inp, history, outcome=Outcome.NO_CHANGE, desired=0, conds=conds, steps=(step,), events=events,
                      error=combined.error, seen=seen, zero=zs)  # fmt: skip
    prenormalized = max(0, combined.replicas)
    reason = ""  # decided before normalization, as upstream
    if prenormalized > current:
        reason = f"{combined.metric_name} above target"
    elif prenormalized < current:
        reason = c.RESCALE_ALL_BELOW
    first = TraceStep(stage=Stage.METRICS, before=current, after=prenormalized,
                      reason=combined.metric_name or "no proposal",
                      note=f"{combined.invalid} metric(s) failed" if combined.invalid else "")  # fmt: skip
    steps: tuple[TraceStep, ...] = (first,)
    predicted = predict(spec, inp.forecasts, current=current, reactive=prenormalized, pods=inp.pods,
                        status_replicas=inp.scale.status_replicas,
                        tolerances=ctx.tolerances, pod_level=config.pod_level_resources)  # fmt: skip
    if predicted is not None and predicted.used and predicted.replicas is not None:
        steps += (TraceStep(stage=Stage.PREDICTION, before=prenormalized, after=predicted.replicas,
                            reason="forecast above the reactive recommendation",
                            note=f"horizon {spec.prediction.horizon_seconds if spec.prediction else 0}s"),)
        prenormalized = predicted.replicas
        if prenormalized > current:
            reason = c.RESCALE_FORECAST_ABOVE
    zs = zero.held_while_busy(zs, proposal=prenormalized, current=current)
    after_zero = zero.recommendation(zs, prenormalized)
    if zs is not None and after_zero is not None:
        steps += (TraceStep(stage=Stage.ZERO, before=prenormalized, after=after_zero, reason=zs.why,
                            note=f"cooldown {zs.cooldown}s"),)
        prenormalized, reason = after_zero, zs.why
    n = _normalize(inp, config, prenormalized, history, floor=0 if zs is None else zs.floor)
    # Set in the order a sync sets them (AbleToScale first: a missing one is appended first); the
    # "succeeded get scale" AbleToScale it would set before the metrics is overwritten here anyway.
    conds = _set(inp.status.conditions, ConditionType.ABLE_TO_SCALE, True, n.stabilized.reason,
                 n.stabilized.message, now)  # fmt: skip
    conds = _set(conds, ConditionType.SCALING_ACTIVE, True, Reason.VALID_METRIC_FOUND,
                 c.msg_valid_metric_found(combined.metric_name), now)  # fmt: skip
    conds = _set(conds, ConditionType.SCALING_LIMITED, n.limited.replicas != n.stabilized.replicas,
                 n.limited.reason, n.limited.message, now)  # fmt: skip
    desired, steps = n.limited.replicas, (*steps, *n.steps)
    if zs is not None and zs.wake and desired < 1:  # a Percent-only scale-up policy allows nothing from 0
        steps += (TraceStep(stage=Stage.ZERO, before=desired, after=1, reason=zs.why,
                            note="waking takes at least one replica whatever the scale-up policies allow"),)
        desired = 1
    events += zero.zero_events(zs, current=current, desired=desired)
    return _final(inp, n.history, outcome=Outcome.SCALE if desired != current else Outcome.NO_CHANGE,
                  desired=desired, conds=conds, steps=steps, events=events,
                  error=combined.error, rescale_reason=reason, behavior=n.behavior, seen=seen,
                  prediction=predicted, zero=zs)  # fmt: skip


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class _Seen:
    """What the metrics showed, carried into the decision whatever happens next."""

    traces: tuple[MetricTrace, ...] = ()
    statuses: tuple[MetricStatus | None, ...] = ()


def _blocked(
    inp: SyncInput, history: ScaleHistory, combined: Combined, conds: tuple[Condition, ...],
    events: tuple[Event, ...], seen: _Seen, prediction: PredictionTrace | None, zs: ZeroStep | None,
) -> Decision:  # fmt: skip
    """All metrics failed, or one failed and the others would scale down: do not scale."""
    first = combined.first_failure
    if first is not None and first.reason is not None:
        reason, message = first.reason, first.condition_message or ""
    else:  # no metrics at all (API defaulting normally adds cpu at 80%)
        reason, message = Reason.INVALID_METRIC_SOURCE_TYPE, c.msg_unable_to_compute(_NO_METRICS)
    conds = _set(conds, ConditionType.SCALING_ACTIVE, False, reason, message, inp.now)
    error = combined.error or _NO_METRICS
    events += (Event(type=EventType.WARNING, reason=EventReason.FAILED_COMPUTE_METRICS_REPLICAS,
                     message=error),)  # fmt: skip
    current = inp.scale.spec_replicas
    step = TraceStep(stage=Stage.METRICS, before=current, after=current, reason=error,
                     note="a metric failed and the others do not scale up: no scaling")  # fmt: skip
    return _final(inp, history, outcome=Outcome.BLOCKED, desired=current, conds=conds, steps=(step,),
                  events=events, error=error, seen=seen, prediction=prediction, zero=zs)  # fmt: skip


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class _Normalized:
    stabilized: Stabilized
    limited: Limited
    history: ScaleHistory
    behavior: Behavior | None
    steps: tuple[TraceStep, ...]


def _normalize(
    inp: SyncInput, config: ControllerConfig, prenormalized: int, history: ScaleHistory, *, floor: int
) -> _Normalized:
    """Legacy path without `behavior`, else the behavior path; both record the recommendation.
    `floor`: the scale-to-zero rule's lowest count this sync (1 unless idle for the whole cooldown)."""
    spec, now, current = inp.spec, inp.now, inp.scale.spec_replicas
    lo = max(spec.min_replicas, floor)
    behavior = _effective_behavior(spec, config)
    if behavior is None:
        window = config.downscale_stabilization
        st = stabilize_legacy(history.recommendations, prenormalized=prenormalized, now=now, window=window)
        lim = convert_with_rules(
            current=current, desired=st.replicas, min_replicas=lo,
            max_replicas=spec.max_replicas, scale_up_limit_factor=config.scale_up_limit_factor,
            scale_up_limit_minimum=config.scale_up_limit_minimum,
        )  # fmt: skip
        windows = f"downscale window {window:g}s"
        limits = (f"scale-up limit max({config.scale_up_limit_factor:g} x {current}, "
                  f"{config.scale_up_limit_minimum:g})")  # fmt: skip
    else:
        up, down = behavior.scale_up, behavior.scale_down
        assert up is not None and down is not None  # effective_behavior fills both
        st = stabilize_with_behavior(
            history.recommendations, prenormalized=prenormalized, current=current, now=now,
            up_window=up.stabilization_window_seconds or 0,
            down_window=down.stabilization_window_seconds or 0,
        )  # fmt: skip
        lim = rate_limit_with_behavior(
            current=current, desired=st.replicas, min_replicas=lo,
            max_replicas=spec.max_replicas, behavior=behavior, history=history, now=now,
        )  # fmt: skip
        windows = (f"up window {up.stabilization_window_seconds}s, "
                   f"down window {down.stabilization_window_seconds}s")  # fmt: skip
        limits = _policy_note(history, up, down, now, lim.limit)
    won = ""
    if st.winner is not None:
        won = f"; recommendation {st.winner.replicas} from {now - st.winner.timestamp:g}s ago won"
    steps = (
        TraceStep(stage=Stage.STABILIZATION, before=prenormalized, after=st.replicas,
                  reason=str(st.reason), note=windows + won),
        TraceStep(stage=Stage.LIMITS, before=st.replicas, after=lim.replicas, reason=str(lim.reason),
                  note=f"{limits}; min {lo}, max {spec.max_replicas}"),
    )  # fmt: skip
    return _Normalized(stabilized=st, limited=lim, behavior=behavior, steps=steps,
                       history=history.with_recommendations(st.recommendations))  # fmt: skip


def _policy_note(
    history: ScaleHistory, up: ScalingRules, down: ScalingRules, now: float, limit: int | None
) -> str:
    up_span = longest_period(up)
    down_span = longest_period(down)
    ups = replicas_change_in_period(history.scale_up_events, now=now, period=up_span)
    downs = replicas_change_in_period(history.scale_down_events, now=now, period=down_span)
    text = f"recent scale events: +{ups} in {up_span}s, -{downs} in {down_span}s"
    return text if limit is None else f"{text}; policy limit {limit}"


def _final(
    inp: SyncInput, history: ScaleHistory, *, outcome: Outcome, desired: int,
    conds: tuple[Condition, ...], steps: tuple[TraceStep, ...], events: tuple[Event, ...] = (),
    error: str | None = None, rescale_reason: str = "", seen: _Seen = _Seen(),
    behavior: Behavior | None = None, prediction: PredictionTrace | None = None, zero: ZeroStep | None = None,
) -> Decision:  # fmt: skip
    prev = inp.status
    current = inp.scale.spec_replicas
    if outcome is Outcome.SCALE or outcome is Outcome.BLOCKED:
        # Blocked keeps the old desired count (upstream setCurrentReplicasAndMetricsInStatus);
        # a pending write keeps it until `complete` knows the write worked.
        status_desired = prev.desired_replicas
    else:  # no change (desired is current) or disabled (current is 0)
        status_desired = current
    final = desired if outcome is Outcome.SCALE else current
    status = HpaStatus(current_replicas=current, desired_replicas=status_desired,
                       last_scale_time=prev.last_scale_time, current_metrics=seen.statuses,
                       conditions=conds)  # fmt: skip
    return Decision(
        outcome=outcome, current_replicas=current, desired_replicas=final,
        rescale_reason=rescale_reason, status=status, previous_status=prev, events=events,
        history=history, error=error,
        trace=Trace(current=current, metrics=seen.traces, steps=steps, final=final),
        effective_behavior=behavior, prediction=prediction, zero=zero,
    )  # fmt: skip


def complete(decision: Decision, *, write_error: str | None, now: float) -> Decision:
    """Apply the outcome of the `/scale` write that `decision` asked for."""
    if not decision.write:
        return decision
    desired = decision.desired_replicas
    status = decision.status
    if write_error is not None:
        conds = _set(status.conditions, ConditionType.ABLE_TO_SCALE, False, Reason.FAILED_UPDATE_SCALE,
                     c.msg_failed_update_scale(write_error), now)  # fmt: skip
        event = Event(type=EventType.WARNING, reason=EventReason.FAILED_RESCALE,
                      message=c.event_failed_rescale(desired, decision.rescale_reason, write_error))  # fmt: skip
        return _after_write(decision, Outcome.WRITE_FAILED, status.desired_replicas, status.last_scale_time,
                            conds, event, decision.history, f"failed to rescale: {write_error}")  # fmt: skip
    conds = _set(status.conditions, ConditionType.ABLE_TO_SCALE, True, Reason.SUCCEEDED_RESCALE,
                 c.msg_succeeded_rescale(desired), now)  # fmt: skip
    event = Event(type=EventType.NORMAL, reason=EventReason.SUCCESSFUL_RESCALE,
                  message=c.event_rescale(desired, decision.rescale_reason))  # fmt: skip
    assert decision.history is not None  # a write is only asked for after the scale was read
    history = record_scale(decision.history, behavior=decision.effective_behavior,
                           previous=decision.current_replicas, new=desired, now=now)  # fmt: skip
    return _after_write(decision, Outcome.SCALED, desired, now, conds, event, history, decision.error)


def _after_write(
    d: Decision, outcome: Outcome, status_desired: int, last_scale_time: float | None,
    conds: tuple[Condition, ...], event: Event, history: ScaleHistory | None, error: str | None,
) -> Decision:  # fmt: skip
    # Built directly rather than with dataclasses.replace: this runs on every scaling sync.
    s = d.status
    status = HpaStatus(current_replicas=s.current_replicas, desired_replicas=status_desired,
                       last_scale_time=last_scale_time, current_metrics=s.current_metrics,
                       conditions=conds)  # fmt: skip
    return Decision(
        outcome=outcome, current_replicas=d.current_replicas, desired_replicas=d.desired_replicas,
        rescale_reason=d.rescale_reason, status=status, previous_status=d.previous_status,
        events=(*d.events, event), history=history, error=error, trace=d.trace,
        effective_behavior=d.effective_behavior, prediction=d.prediction, zero=d.zero,
    )  # fmt: skip
