"""One sync end to end on data: branches, conditions, events, status, history and the trace.
Scenarios follow horizontal_test.go (same inputs, same conditions and replica counts)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from controller.algorithm import Outcome, Reason, complete, decide, failed_get_scale
from controller.algorithm.behavior import (
    Behavior,
    PolicyType,
    Recommendation,
    ScaleEvent,
    ScaleHistory,
    ScalingPolicy,
    ScalingRules,
)
from controller.algorithm.conditions import ConditionType, EventReason
from controller.algorithm.pods import PodMetric
from controller.algorithm.spec import (
    ExternalSamples, FetchFailure, HpaStatus, MetricSpec, MetricTarget,
    ObjectRef, ObjectSample, PodSamples, SelectorProblem, SourceType, TargetType,
)  # fmt: skip
from tests.unit.controller.algorithm.harness import (
    ABLE, ACTIVE, CONFIG, CPU, LIMITED, NOW, QPS_EXTERNAL, conditions, pod_samples, sync,
)  # fmt: skip


def test_scale_up_writes_and_reports_like_upstream() -> None:
    """TestScaleUp: 3 pods at 30/50/70% of request, target 30% -> 5."""
    d = decide(sync(observations=(pod_samples(300, 500, 700),)), CONFIG)
    assert (d.outcome, d.desired_replicas, d.write) == (Outcome.SCALE, 5, True)
    assert d.status.desired_replicas == 3  # unchanged until the write is known to have worked
    done = complete(d, write_error=None, now=NOW)
    assert done.outcome is Outcome.SCALED
    assert conditions(done) == [(ABLE, True, "SucceededRescale"), (ACTIVE, True, "ValidMetricFound"),
                                (LIMITED, False, "DesiredWithinRange")]  # fmt: skip
    assert (done.status.desired_replicas, done.status.last_scale_time) == (5, NOW)
    assert done.status.current_metrics[0].average_utilization == 50  # type: ignore[union-attr]
    assert done.events[-1].reason is EventReason.SUCCESSFUL_RESCALE
    assert done.events[-1].message == "New size: 5; reason: cpu resource utilization (percentage of request) above target"
    assert done.status.conditions[1].message == (
        "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)")
    assert done.error is None


def test_failed_write_keeps_the_previous_desired_count() -> None:
    """TestConditionFailedUpdateScale."""
    d = decide(sync(min_r=1, max_r=5, observations=(pod_samples(450, 450, 450),)), CONFIG)
    failed = complete(d, write_error="conflict", now=NOW)
    assert failed.outcome is Outcome.WRITE_FAILED
    assert conditions(failed)[0] == (ABLE, False, "FailedUpdateScale")
    assert failed.status.desired_replicas == 3
    assert failed.status.last_scale_time is None
    assert failed.events[-1].reason is EventReason.FAILED_RESCALE
    assert failed.events[-1].message.endswith("; error: conflict")
    assert failed.error == "failed to rescale: conflict"


def test_target_at_zero_with_min_above_zero_disables_scaling() -> None:
    """The implicit maintenance mode: no metrics read, nothing written."""
    d = decide(sync(current=0, min_r=1), CONFIG)
    assert (d.outcome, d.desired_replicas, d.write) == (Outcome.DISABLED, 0, False)
    assert conditions(d) == [(ABLE, True, "SucceededGetScale"), (ACTIVE, False, "ScalingDisabled")]
    assert d.status.current_metrics == ()


@pytest.mark.parametrize(
    ("current", "expected", "reason"),
    [
        pytest.param(8, 6, "Current number of replicas above Spec.MaxReplicas", id="above max jumps to max"),
        pytest.param(1, 2, "Current number of replicas below Spec.MinReplicas", id="below min jumps to min"),
    ],
)  # fmt: skip
def test_out_of_range_jumps_without_metrics(current: int, expected: int, reason: str) -> None:
    d = complete(decide(sync(current=current), CONFIG), write_error=None, now=NOW)
    assert (d.status.desired_replicas, d.rescale_reason) == (expected, reason)
    assert conditions(d) == [(ABLE, True, "SucceededRescale")]  # no ScalingActive/Limited touched
    assert d.status.current_metrics == ()


def test_scale_down_to_zero_with_min_zero_and_an_external_metric() -> None:
    """TestScaleDownToZeroCMExternal."""
    metric = replace(QPS_EXTERNAL, target=MetricTarget(type=TargetType.VALUE, value=14400))
    d = decide(sync(current=5, min_r=0, metrics=(metric,), observations=(ExternalSamples(values=(0,)),),
                    history=ScaleHistory()), CONFIG)  # fmt: skip
    assert (d.outcome, d.desired_replicas) == (Outcome.SCALE, 0)


def test_scale_from_zero_with_an_object_metric_ignores_tolerance() -> None:
    """TestScaleUpFromZeroIgnoresToleranceCMObject."""
    metric = MetricSpec(type=SourceType.OBJECT, name="qps", described_object=ObjectRef(kind="Deployment", name="d"),
                        target=MetricTarget(type=TargetType.VALUE, value=1000))  # fmt: skip
    d = decide(sync(current=0, min_r=0, pods=0, metrics=(metric,), observations=(ObjectSample(value=1000),)), CONFIG)
    assert d.desired_replicas == 1


@pytest.mark.parametrize(
    ("problem", "event_reason"),
    [
        pytest.param(SelectorProblem.missing(), EventReason.SELECTOR_REQUIRED, id="missing selector"),
        pytest.param(SelectorProblem.invalid("unable to parse requirement"), EventReason.INVALID_SELECTOR,
                     id="unparsable selector"),
        pytest.param(SelectorProblem.ambiguous("name=test-pod", ("ns/a", "ns/b")), EventReason.AMBIGUOUS_SELECTOR,
                     id="pods selected by two HPAs"),
    ],
)  # fmt: skip
def test_selector_problems_stop_the_sync(problem: SelectorProblem, event_reason: EventReason) -> None:
    d = decide(sync(problem=problem), CONFIG)
    assert (d.outcome, d.write, d.desired_replicas) == (Outcome.BLOCKED, False, 3)
    assert conditions(d)[1] == (ACTIVE, False, str(problem.condition_reason))
    assert [e.reason for e in d.events] == [event_reason, EventReason.FAILED_COMPUTE_METRICS_REPLICAS]
    assert d.error


def test_a_failed_metric_blocks_a_scale_down() -> None:
    """TestNoScaleDownOneMetricEmpty: cpu says 3, the external metric failed -> no scaling."""
    d = decide(sync(current=5, metrics=(replace(CPU, target=MetricTarget(type=TargetType.UTILIZATION,
                                                                        average_utilization=50)), QPS_EXTERNAL),
                    observations=(pod_samples(100, 300, 500, 250, 250), FetchFailure(message="boom")),
                    history=ScaleHistory()), CONFIG)  # fmt: skip
    assert (d.outcome, d.write, d.desired_replicas, d.status.desired_replicas) == (Outcome.BLOCKED, False, 5, 5)
    assert conditions(d) == [(ABLE, True, "SucceededGetScale"), (ACTIVE, False, "FailedGetExternalMetric")]
    assert d.error is not None and d.error.startswith("invalid metrics (1 invalid out of 2), first error is: ")
    assert [e.reason for e in d.events] == [EventReason.FAILED_GET_EXTERNAL_METRIC,
                                            EventReason.FAILED_COMPUTE_METRICS_REPLICAS]  # fmt: skip
    assert d.status.current_metrics[1] is None and d.status.current_metrics[0] is not None


def test_a_failed_metric_does_not_block_a_scale_up() -> None:
    """TestScaleUpOneMetricInvalid: the valid metric scales up; the error is still returned."""
    d = decide(sync(metrics=(CPU, MetricSpec(type="CheddarCheese")), observations=(pod_samples(300, 400, 500),)), CONFIG)
    assert (d.outcome, d.desired_replicas) == (Outcome.SCALE, 4)
    assert conditions(d)[1] == (ACTIVE, True, "ValidMetricFound")
    assert d.error is not None and 'unknown metric source type "CheddarCheese"' in d.error


def test_only_an_unknown_metric_type_reports_invalid_metric_source_type() -> None:
    d = decide(sync(metrics=(MetricSpec(type="CheddarCheese"),)), CONFIG)
    assert conditions(d)[1] == (ACTIVE, False, "InvalidMetricSourceType")


def test_the_first_sync_holds_a_downscale_for_the_window() -> None:
    """TestScaleDownStabilizeInitialSize: with no history, {current, now} is recorded first."""
    low = pod_samples(50, 50, 50)  # 5% of request: metrics say 1 replica
    first = decide(sync(min_r=1, observations=(low,)), CONFIG)
    assert (first.outcome, first.desired_replicas) == (Outcome.NO_CHANGE, 3)
    assert conditions(first)[0] == (ABLE, True, "ScaleDownStabilized")
    assert [r.replicas for r in first.history.recommendations] == [3, 1]
    empty = decide(sync(min_r=1, observations=(low,), history=ScaleHistory()), CONFIG)
    assert empty.desired_replicas == 1


def test_legacy_stabilization_uses_the_max_recent_recommendation() -> None:
    """TestStabilizeDownscale."""
    history = ScaleHistory(recommendations=(Recommendation(replicas=10, timestamp=NOW - 600),
                                            Recommendation(replicas=4, timestamp=NOW - 60)))  # fmt: skip
    cpu100 = replace(CPU, target=MetricTarget(type=TargetType.UTILIZATION, average_utilization=100))
    d = decide(sync(current=4, min_r=1, max_r=5, metrics=(cpu100,), observations=(pod_samples(50, 50, 50),),
                    pods=3, history=history), CONFIG)  # fmt: skip
    assert (d.outcome, d.desired_replicas) == (Outcome.NO_CHANGE, 4)
    assert conditions(d)[0] == (ABLE, True, "ScaleDownStabilized")
    step = d.trace.steps[1]
    assert (step.before, step.after) == (1, 4) and "recommendation 4 from 60s ago won" in step.note


def test_behavior_policies_cap_the_scale_up_and_events_are_recorded() -> None:
    """TestUpscaleCap: Percent 700 / 60 s from 3 -> 24; the event is stored after the write."""
    behavior = Behavior(scale_up=ScalingRules(stabilization_window_seconds=0, policies=(
        ScalingPolicy(type=PolicyType.PERCENT, value=700, period_seconds=60),)))  # fmt: skip
    cpu10 = replace(CPU, target=MetricTarget(type=TargetType.UTILIZATION, average_utilization=10))
    d = decide(sync(min_r=1, max_r=100, metrics=(cpu10,), request=100, behavior=behavior,
                    observations=(pod_samples(100, 200, 300),)), CONFIG)  # fmt: skip
    assert d.desired_replicas == 24
    assert conditions(d)[2] == (LIMITED, True, "ScaleUpLimit")
    done = complete(d, write_error=None, now=NOW)
    assert [(e.replica_change, e.timestamp) for e in done.history.scale_up_events] == [(21, NOW)]
    failed = complete(d, write_error="nope", now=NOW)
    assert failed.history.scale_up_events == ()


def test_the_limit_step_counts_recent_scale_events_like_the_policies() -> None:
    """The trace note sums events strictly inside each direction's longest period, the window
    the policy limit itself used: the +5 exactly 60 s ago is out, so the period starts at
    3 - 2 + 1 = 2 and Percent 700 allows ceil(2 x 8) = 16."""
    behavior = Behavior(scale_up=ScalingRules(stabilization_window_seconds=0, policies=(
        ScalingPolicy(type=PolicyType.PERCENT, value=700, period_seconds=60),)))  # fmt: skip
    history = ScaleHistory(
        scale_up_events=(ScaleEvent(replica_change=2, timestamp=NOW - 30), ScaleEvent(replica_change=5, timestamp=NOW - 60)),
        scale_down_events=(ScaleEvent(replica_change=1, timestamp=NOW - 10),),
    )  # fmt: skip
    cpu10 = replace(CPU, target=MetricTarget(type=TargetType.UTILIZATION, average_utilization=10))
    d = decide(sync(min_r=1, max_r=100, metrics=(cpu10,), request=100, behavior=behavior, history=history,
                    observations=(pod_samples(100, 200, 300),)), CONFIG)  # fmt: skip
    assert d.desired_replicas == 16
    step = d.trace.steps[-1]
    assert step.note == "recent scale events: +2 in 60s, -1 in 15s; policy limit 16; min 1, max 100"


def test_configurable_tolerance_needs_the_gate() -> None:
    behavior = Behavior(scale_up=ScalingRules(tolerance=0.5))
    inp = sync(observations=(pod_samples(400, 400, 400),), behavior=behavior)  # 40% of 30%: ratio 1.33
    assert decide(inp, CONFIG).desired_replicas == 4
    gated = replace(CONFIG, configurable_tolerance=True)
    assert decide(inp, gated).desired_replicas == 3


def test_steady_state_does_not_rewrite_status() -> None:
    """TestAvoidUnnecessaryUpdates: feeding the written status back changes nothing."""
    inp = sync(observations=(pod_samples(300, 300, 300),), history=ScaleHistory())
    first = decide(inp, CONFIG)
    assert first.outcome is Outcome.NO_CHANGE and first.status_changed
    second = decide(replace(inp, status=first.status, history=first.history), CONFIG)
    assert not second.status_changed
    assert second.status.conditions == first.status.conditions  # transition times kept


def test_condition_positions_and_transition_times_follow_upstream() -> None:
    inp = sync(observations=(pod_samples(300, 300, 300),), history=ScaleHistory())
    first = decide(inp, CONFIG)
    later = replace(inp, now=NOW + 15, status=first.status, history=first.history,
                    observations=(FetchFailure(message="down"),))  # fmt: skip
    d = decide(later, CONFIG)
    by_type = {c.type: c for c in d.status.conditions}
    assert [c.type for c in d.status.conditions] == [ConditionType.ABLE_TO_SCALE, ConditionType.SCALING_ACTIVE,
                                                     ConditionType.SCALING_LIMITED]  # fmt: skip
    assert by_type[ConditionType.SCALING_ACTIVE].last_transition_time == NOW + 15  # True -> False
    assert by_type[ConditionType.ABLE_TO_SCALE].last_transition_time == NOW  # stayed True
    assert by_type[ConditionType.SCALING_LIMITED].reason is Reason.DESIRED_WITHIN_RANGE  # left as it was


def test_failed_get_scale() -> None:
    d = failed_get_scale(HpaStatus(current_replicas=3, desired_replicas=3), "not found", now=NOW, history=None)
    assert conditions(d) == [(ABLE, False, "FailedGetScale")]
    assert d.events[0].reason is EventReason.FAILED_GET_SCALE and d.error == "not found"


def test_the_trace_explains_the_decision_and_serialises() -> None:
    d = complete(decide(sync(observations=(pod_samples(300, 500, 700),)), CONFIG), write_error=None, now=NOW)
    text = d.explain()
    assert text.splitlines()[0] == (
        "scaled: 3 -> 5 replicas (cpu resource utilization (percentage of request) above target)")
    assert "utilization 50% of request" in text and "ratio 1.667" in text and "-> 5" in text
    assert "stabilization window" in text and "condition AbleToScale=True SucceededRescale" in text
    data = json.loads(json.dumps(d.to_dict()))
    assert data["trace"]["final"] == 5 == data["desiredReplicas"]
    assert data["trace"]["metrics"][0]["proposal"] == 5
    assert [s["stage"] for s in data["trace"]["steps"]] == [
        "maximum of the metric proposals", "stabilization window", "rate limits and [min, max]"]
    assert data["currentMetrics"][0] == {"type": "Resource", "name": "cpu", "averageValue": 500, "averageUtilization": 50}


def test_metric_age_is_reported_in_the_trace() -> None:
    samples = PodSamples(values={f"test-pod-{i}": PodMetric(value=300, timestamp=NOW - 42, window=60)
                                 for i in range(3)})  # fmt: skip
    d = decide(sync(observations=(samples,), history=ScaleHistory()), CONFIG)
    assert d.trace.metrics[0].age_seconds == 42


def test_the_trace_shows_the_age_of_an_external_value_upstream_drops() -> None:
    d = decide(sync(metrics=(QPS_EXTERNAL,), observations=(ExternalSamples(values=(9000,), timestamp=NOW - 7),),
                    history=ScaleHistory()), CONFIG)  # fmt: skip
    m = d.trace.metrics[0]
    assert (m.age_seconds, m.value, m.proposal) == (7, 9000, 27)  # ratio 9 x 3 Running+Ready pods
    assert (m.counted, m.ready) == (3, None)  # no pod grouping ran: no ready/unready line
    assert "pods ready" not in m.line()
    assert d.desired_replicas == 6  # then clamped to maxReplicas


def test_a_jump_into_range_is_recorded_as_a_scale_event_with_a_behavior() -> None:
    """storeScaleEvent runs after every successful rescale, the min/max jumps included."""
    behavior = Behavior(scale_down=ScalingRules(policies=(ScalingPolicy(type=PolicyType.PODS, value=1,
                                                                        period_seconds=60),)))  # fmt: skip
    d = complete(decide(sync(current=9, behavior=behavior), CONFIG), write_error=None, now=NOW)
    assert d.desired_replicas == 6
    assert [(e.replica_change, e.timestamp) for e in d.history.scale_down_events] == [(3, NOW)]


def test_failed_get_scale_keeps_no_history_so_the_next_sync_records_its_first_recommendation() -> None:
    d = failed_get_scale(HpaStatus(current_replicas=3, desired_replicas=3), "timeout", now=NOW, history=None)
    assert d.history is None
    later = decide(sync(min_r=1, observations=(pod_samples(50, 50, 50),), history=d.history), CONFIG)
    assert later.desired_replicas == 3  # held by the recorded initial recommendation
