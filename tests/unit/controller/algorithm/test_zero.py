"""Scale to zero as a rule of the algorithm: activation, cooldown, errors, with the clock a parameter
(`controller.algorithm.zero.zero_step` alone; through `decide` in test_zero_decide.py)."""

from __future__ import annotations

from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.spec import (
    AutoscalerSpec, ExternalSamples, FetchFailure, MetricSpec, MetricTarget, ObjectRef, ObjectSample, ScaleToZero,
    SourceType, TargetType,
)  # fmt: skip
from controller.algorithm.zero import Activity, enabled, zero_step

T0 = 1_000_000.0
QUEUE = MetricSpec(type=SourceType.EXTERNAL, name="queue",
                   target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000))  # 10 per pod
LAG = MetricSpec(type=SourceType.OBJECT, name="lag", described_object=ObjectRef(kind="Service", name="q"),
                 target=MetricTarget(type=TargetType.VALUE, value=5_000, activation_value=2_000))  # active above 2
CPU = MetricSpec(type=SourceType.RESOURCE, name="cpu", target=MetricTarget(type=TargetType.UTILIZATION,
                                                                           average_utilization=80))


def _spec(*metrics: MetricSpec, cooldown: int = 60) -> AutoscalerSpec:
    return AutoscalerSpec(min_replicas=0, max_replicas=10, metrics=metrics,
                          scale_to_zero=ScaleToZero(cooldown_seconds=cooldown))


def test_enabled_only_with_min_zero_and_an_object_or_external_metric() -> None:
    assert enabled(_spec(QUEUE, CPU))
    assert not enabled(_spec(CPU))
    assert not enabled(AutoscalerSpec(min_replicas=1, max_replicas=10, metrics=(QUEUE,)))


def test_idle_counts_down_the_cooldown_from_the_first_idle_sync() -> None:
    spec = _spec(QUEUE, cooldown=60)
    empty = (ExternalSamples(values=(0,)),)
    first = zero_step(spec, current=2, observations=empty, idle_since=None, now=T0)
    assert first.activity is Activity.IDLE and first.idle_since == T0 and first.floor == 1
    assert first.remaining == 60 and "60s of 60s left" in first.why
    later = zero_step(spec, current=2, observations=empty, idle_since=first.idle_since, now=T0 + 45)
    assert later.floor == 1 and later.remaining == 15 and not later.to_zero
    done = zero_step(spec, current=2, observations=empty, idle_since=first.idle_since, now=T0 + 60)
    assert done.floor == 0 and done.to_zero and done.remaining == 0


def test_activation_value_is_the_level_above_which_it_runs() -> None:
    spec = _spec(LAG)
    at = zero_step(spec, current=0, observations=(ObjectSample(value=2_000),), idle_since=T0, now=T0 + 1)
    assert at.activity is Activity.IDLE and not at.wake and at.floor == 0 and at.idle_since == T0
    above = zero_step(spec, current=0, observations=(ObjectSample(value=2_001),), idle_since=T0, now=T0 + 1)
    assert above.activity is Activity.ACTIVE and above.wake and above.floor == 1 and above.idle_since is None
    assert "Object lag 2001m > activation 2" in above.why


def test_one_active_metric_restarts_the_cooldown_and_keeps_one_replica() -> None:
    spec = _spec(QUEUE, LAG)
    obs = (ExternalSamples(values=(0,)), ObjectSample(value=3_000))
    step = zero_step(spec, current=3, observations=obs, idle_since=T0 - 1000, now=T0)
    assert step.activity is Activity.ACTIVE and step.floor == 1 and step.idle_since is None and not step.wake
    assert step.decisive is not None and step.decisive.name == "Object lag"


def test_an_unread_metric_never_goes_to_zero_and_never_wakes() -> None:
    spec = _spec(QUEUE)
    down = (FetchFailure(message="prometheus unreachable"),)
    running = zero_step(spec, current=2, observations=down, idle_since=T0 - 1000, now=T0)
    assert running.activity is Activity.UNKNOWN and running.floor == 1 and running.idle_since is None
    assert "prometheus unreachable" in running.why
    at_zero = zero_step(spec, current=0, observations=down, idle_since=T0 - 1000, now=T0)
    assert at_zero.floor == 0 and not at_zero.wake
    nothing = zero_step(spec, current=2, observations=(ExternalSamples(values=()),), idle_since=None, now=T0)
    assert nothing.activity is Activity.UNKNOWN and nothing.floor == 1


def test_pods_and_resource_metrics_are_not_activation_metrics() -> None:
    spec = _spec(CPU, QUEUE)
    obs = (FetchFailure(message="no pods"), ExternalSamples(values=(35_000,)))
    step = zero_step(spec, current=0, observations=obs, idle_since=T0, now=T0 + 5)
    assert step.wake and [r.name for r in step.readings] == ["External queue"]


def test_idle_since_survives_the_checkpoint() -> None:
    h = ScaleHistory(idle_since=T0 + 0.25)
    assert ScaleHistory.from_dict(h.to_dict()) == h
    assert "idleSince" not in ScaleHistory().to_dict()
    assert ScaleHistory.from_dict(ScaleHistory().to_dict()).idle_since is None
