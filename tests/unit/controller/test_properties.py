"""Invariants of the decision, checked over generated autoscalers, pods, samples and history:

* never outside [minReplicas, maxReplicas] (except the documented maintenance mode: target at 0);
* never scales down while a metric errored;
* behavior policies are never exceeded;
* stabilization never reverses the direction;
* the trace's final number is the result, and the decision serialises to JSON.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.algorithm import Outcome, complete, decide
from controller.algorithm import behavior as bh
from controller.algorithm.decision import Stage
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric, PodPhase, ReadinessConfig, ReadyStatus
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, ExternalSamples, FetchFailure, MetricSpec, MetricTarget, ObjectRef,
    ObjectSample, PodSamples, ScaleTarget, SourceType, SyncInput, TargetType,
)  # fmt: skip

NOW = 10_000.0
CONFIG = ControllerConfig(readiness=ReadinessConfig(cpu_initialization_period=120, initial_readiness_delay=10))
# Few examples per run keep each test inside the 2 s unit budget; the database and CI runs add up.
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

times = st.sampled_from([None, NOW - 3600, NOW - 150, NOW - 60, NOW - 5, NOW])


@st.composite
def pod_lists(draw: st.DrawFn) -> tuple[PodInfo, ...]:
    count = draw(st.integers(0, 6))
    return tuple(
        PodInfo(
            name=f"p{i}",
            phase=draw(st.sampled_from([PodPhase.RUNNING] * 5 + [PodPhase.PENDING, PodPhase.FAILED, PodPhase.SUCCEEDED])),
            ready=draw(st.sampled_from([ReadyStatus.TRUE] * 3 + [ReadyStatus.FALSE, None])),
            ready_transition=draw(times), start_time=draw(times), deleted=draw(st.booleans()) and draw(st.booleans()),
            containers=(ContainerInfo(name="app", requests={"cpu": draw(st.integers(1, 2000))}),),
        )
        for i in range(count)
    )  # fmt: skip


def samples(draw: st.DrawFn, pods: tuple[PodInfo, ...], high: int) -> PodSamples | FetchFailure:
    if draw(st.integers(0, 9)) == 0:
        return FetchFailure(message="metrics API unavailable")
    values = {p.name: PodMetric(value=draw(st.integers(0, high)), timestamp=draw(st.sampled_from([NOW - 30, NOW])),
                                window=60.0) for p in pods if draw(st.integers(0, 5))}  # fmt: skip
    if draw(st.booleans()) and draw(st.booleans()):
        values["unknown-pod"] = PodMetric(value=draw(st.integers(0, high)), timestamp=NOW, window=60.0)
    return PodSamples(values=values)


def rules(draw: st.DrawFn) -> bh.ScalingRules | None:
    if draw(st.booleans()):
        return None
    policies = tuple(
        bh.ScalingPolicy(type=draw(st.sampled_from(list(bh.PolicyType))), value=draw(st.integers(1, 300)),
                         period_seconds=draw(st.sampled_from([15, 60, 300])))
        for _ in range(draw(st.integers(0, 3)))
    )  # fmt: skip
    return bh.ScalingRules(
        stabilization_window_seconds=draw(st.sampled_from([None, 0, 60, 300])),
        select_policy=draw(st.sampled_from([None, *bh.SelectPolicy])),
        policies=policies if draw(st.booleans()) else None,
    )  # fmt: skip


def history(draw: st.DrawFn) -> bh.ScaleHistory | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    ages = st.sampled_from([0, 5, 15, 59, 60, 61, 200, 299, 300, 900])
    return bh.ScaleHistory(
        recommendations=tuple(bh.Recommendation(replicas=draw(st.integers(0, 60)), timestamp=NOW - draw(ages))
                              for _ in range(draw(st.integers(0, 3)))),
        scale_up_events=tuple(bh.ScaleEvent(replica_change=draw(st.integers(1, 20)), timestamp=NOW - draw(ages))
                              for _ in range(draw(st.integers(0, 3)))),
        scale_down_events=tuple(bh.ScaleEvent(replica_change=draw(st.integers(1, 20)), timestamp=NOW - draw(ages))
                                for _ in range(draw(st.integers(0, 3)))),
    )  # fmt: skip


@st.composite
def sync_inputs(draw: st.DrawFn) -> SyncInput:
    pods = draw(pod_lists())
    cpu = MetricSpec(type=SourceType.RESOURCE, name="cpu",
                     target=MetricTarget(type=TargetType.UTILIZATION, average_utilization=draw(st.integers(10, 120))))
    qps = MetricSpec(type=SourceType.PODS, name="qps",
                     target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=draw(st.integers(1, 20000))))
    ext = MetricSpec(type=SourceType.EXTERNAL, name="queue", target=draw(st.sampled_from([
        MetricTarget(type=TargetType.VALUE, value=5000), MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=700)])))
    obj = MetricSpec(type=SourceType.OBJECT, name="rps", described_object=ObjectRef(kind="Ingress", name="main"),
                     target=MetricTarget(type=TargetType.VALUE, value=3000))
    chosen = draw(st.lists(st.sampled_from(["cpu", "qps", "ext", "obj", "bad"]), min_size=1, max_size=3))
    specs, observations = [], []
    for name in chosen:
        if name == "cpu":
            specs.append(cpu)
            observations.append(samples(draw, pods, 3000))
        elif name == "qps":
            specs.append(qps)
            observations.append(samples(draw, pods, 40000))
        elif name == "ext":
            specs.append(ext)
            observations.append(draw(st.sampled_from([FetchFailure(message="down"), ExternalSamples(values=(0,)),
                                                      ExternalSamples(values=(2000, 9000)), ExternalSamples(values=(40000,))])))
        elif name == "obj":
            specs.append(obj)
            observations.append(ObjectSample(value=draw(st.integers(0, 30000))))
        else:
            specs.append(MetricSpec(type="CheddarCheese"))
            observations.append(FetchFailure(message="n/a"))
    min_r = draw(st.integers(0, 4))
    max_r = draw(st.integers(max(min_r, 1), 40))
    behavior = None
    if draw(st.booleans()):
        behavior = bh.Behavior(scale_up=rules(draw), scale_down=rules(draw))
    current = draw(st.integers(0, 45))
    return SyncInput(
        spec=AutoscalerSpec(min_replicas=min_r, max_replicas=max_r, metrics=tuple(specs), behavior=behavior),
        scale=ScaleTarget(spec_replicas=current, status_replicas=draw(st.sampled_from([current, current + 1])),
                          selector="app=web"),
        now=NOW, pods=pods, observations=tuple(observations), history=history(draw),
    )  # fmt: skip


def run(inp: SyncInput):  # type: ignore[no-untyped-def]
    d = decide(inp, CONFIG)
    return complete(d, write_error=None, now=NOW) if d.write else d


@FAST
@given(sync_inputs())
def test_never_outside_min_max_except_maintenance_mode(inp: SyncInput) -> None:
    d = run(inp)
    if d.outcome is Outcome.DISABLED:  # target at 0 with minReplicas > 0: the HPA stands aside
        assert inp.scale.spec_replicas == 0 < inp.spec.min_replicas and d.desired_replicas == 0
        return
    assert inp.spec.min_replicas <= d.desired_replicas <= inp.spec.max_replicas


@FAST
@given(sync_inputs())
def test_never_scales_down_while_a_metric_errored(inp: SyncInput) -> None:
    d = run(inp)
    if any(m.proposal is None for m in d.trace.metrics):
        assert d.desired_replicas >= inp.scale.spec_replicas
        assert d.error is not None


@FAST
@given(sync_inputs())
def test_behavior_policies_are_never_exceeded(inp: SyncInput) -> None:
    d = run(inp)
    if inp.spec.behavior is None or not any(s.stage is Stage.LIMITS for s in d.trace.steps):
        return
    current = inp.scale.spec_replicas
    eff = bh.effective_behavior(inp.spec.behavior, downscale_stabilization=int(CONFIG.downscale_stabilization))
    assert eff.scale_up is not None and eff.scale_down is not None
    past = inp.history or bh.ScaleHistory()
    if d.desired_replicas > current:
        assert d.desired_replicas <= max(current, bh.scale_up_limit(current, past, eff.scale_up, now=NOW))
    if d.desired_replicas < current:
        assert d.desired_replicas >= min(current, bh.scale_down_limit(current, past, eff.scale_down, now=NOW))


@FAST
@given(sync_inputs())
def test_with_a_behavior_the_direction_never_reverses(inp: SyncInput) -> None:
    d = run(inp)
    metric_steps = [s for s in d.trace.steps if s.stage is Stage.METRICS]
    if inp.spec.behavior is None or not metric_steps or d.outcome is Outcome.BLOCKED:
        return
    current, proposed = inp.scale.spec_replicas, metric_steps[0].after
    change = d.desired_replicas - current
    assert change == 0 or (change > 0) == (proposed > current)


@FAST
@given(
    recs=st.lists(st.tuples(st.integers(0, 50), st.sampled_from([0, 10, 59, 60, 61, 299, 300, 301, 1000])), max_size=6),
    prenormalized=st.integers(0, 50), current=st.integers(0, 50),
    up=st.sampled_from([0, 60, 300]), down=st.sampled_from([0, 60, 300]),
)  # fmt: skip
def test_stabilization_stays_between_current_and_the_proposal(
    recs: list[tuple[int, int]], prenormalized: int, current: int, up: int, down: int
) -> None:
    history = tuple(bh.Recommendation(replicas=r, timestamp=NOW - age) for r, age in recs)
    st_ = bh.stabilize_with_behavior(history, prenormalized=prenormalized, current=current, now=NOW,
                                     up_window=up, down_window=down)  # fmt: skip
    assert min(prenormalized, current) <= st_.replicas <= max(prenormalized, current)
    assert len(st_.recommendations) in (len(history), len(history) + 1)
    assert bh.Recommendation(replicas=prenormalized, timestamp=NOW) in st_.recommendations


@FAST
@given(sync_inputs())
def test_the_trace_ends_at_the_result_and_serialises(inp: SyncInput) -> None:
    first = decide(inp, CONFIG)
    assert decide(inp, CONFIG) == first  # pure: same input, same decision
    d = complete(first, write_error=None, now=NOW) if first.write else first
    assert d.trace.final == d.desired_replicas
    if d.trace.steps:
        assert d.trace.steps[-1].after == d.desired_replicas
    if d.outcome is Outcome.SCALED:
        assert d.status.desired_replicas == d.desired_replicas != inp.scale.spec_replicas
    json.dumps(d.to_dict())
    assert d.explain().splitlines()[0].startswith(str(d.outcome))
