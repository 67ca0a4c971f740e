"""Invariants of the decision, checked over generated autoscalers, pods, samples and history:

* never outside [minReplicas, maxReplicas] (except the documented maintenance mode: target at 0);
* never scales down while a metric errored;
* behavior policies are never exceeded;
* stabilization never reverses the direction;
* the trace's final number is the result, and the decision serialises to JSON;
* `needs_metrics` (the caller's cue to skip fetching) agrees with whether `decide` read them.
"""

from __future__ import annotations

import json
import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.algorithm import Outcome, complete, decide
from controller.algorithm import behavior as bh
from controller.algorithm import zero
from controller.algorithm.decision import Stage
from controller.algorithm.range_rules import needs_metrics
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric, PodPhase, ReadinessConfig, ReadyStatus
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, ExternalSamples, FetchFailure, MetricSpec, MetricTarget, ObjectRef,
    ObjectSample, Observation, PodSamples, ScaleTarget, SourceType, SyncInput, TargetType,
)  # fmt: skip

NOW = 10_000.0
CONFIG = ControllerConfig(readiness=ReadinessConfig(cpu_initialization_period=120, initial_readiness_delay=10))
# Few examples per run keep each test inside the 2 s unit budget; the database and CI runs add up.
# PROPERTY_EXAMPLES=3000 searches harder (about 30 s for the file), as before a change to the algorithm lands
FAST = settings(max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.too_slow])

TIMES = [None, NOW - 3600, NOW - 150, NOW - 60, NOW - 5, NOW]
AGES = [0, 5, 15, 59, 60, 61, 200, 299, 300, 900]

# The structure (counts, ranges, which metrics, which paths) is drawn by Hypothesis so it shrinks
# to small cases; the bulky per-pod and per-sample details come from a drawn seed, which keeps
# generation cheap enough for the 2 s unit budget.


def _pods(rng: random.Random, count: int) -> tuple[PodInfo, ...]:
    phases = [PodPhase.RUNNING] * 5 + [PodPhase.PENDING, PodPhase.FAILED, PodPhase.SUCCEEDED]
    return tuple(
        PodInfo(
            name=f"p{i}", phase=rng.choice(phases),
            ready=rng.choice([ReadyStatus.TRUE] * 3 + [ReadyStatus.FALSE, None]),
            ready_transition=rng.choice(TIMES), start_time=rng.choice(TIMES), deleted=rng.random() < 0.15,
            containers=(ContainerInfo(name="app", requests={"cpu": rng.randint(1, 2000)}),),
        )
        for i in range(count)
    )  # fmt: skip


def _samples(rng: random.Random, pods: tuple[PodInfo, ...], high: int) -> PodSamples | FetchFailure:
    if rng.random() < 0.1:
        return FetchFailure(message="metrics API unavailable")
    values = {p.name: PodMetric(value=rng.randint(0, high), timestamp=rng.choice([NOW - 30, NOW]), window=60.0)
              for p in pods if rng.random() < 0.85}  # fmt: skip
    if rng.random() < 0.2:
        values["unknown-pod"] = PodMetric(value=rng.randint(0, high), timestamp=NOW, window=60.0)
    return PodSamples(values=values)


def _rules(rng: random.Random) -> bh.ScalingRules | None:
    if rng.random() < 0.4:
        return None
    policies = tuple(
        bh.ScalingPolicy(type=rng.choice(list(bh.PolicyType)), value=rng.randint(1, 300),
                         period_seconds=rng.choice([15, 60, 300]))
        for _ in range(rng.randint(0, 3))
    )  # fmt: skip
    return bh.ScalingRules(
        stabilization_window_seconds=rng.choice([None, 0, 60, 300]),
        select_policy=rng.choice([None, *bh.SelectPolicy]),
        policies=policies if rng.random() < 0.6 else None,
    )  # fmt: skip


def _history(rng: random.Random) -> bh.ScaleHistory | None:
    if rng.random() < 0.25:
        return None

    def events() -> tuple[bh.ScaleEvent, ...]:
        return tuple(bh.ScaleEvent(replica_change=rng.randint(1, 20), timestamp=NOW - rng.choice(AGES))
                     for _ in range(rng.randint(0, 3)))  # fmt: skip

    recs = tuple(bh.Recommendation(replicas=rng.randint(0, 60), timestamp=NOW - rng.choice(AGES))
                 for _ in range(rng.randint(0, 4)))  # fmt: skip
    return bh.ScaleHistory(recommendations=recs, scale_up_events=events(), scale_down_events=events())


def _metric(rng: random.Random, kind: str, pods: tuple[PodInfo, ...]) -> tuple[MetricSpec, Observation]:
    if kind == "cpu":
        target = MetricTarget(type=TargetType.UTILIZATION, average_utilization=rng.randint(10, 120))
        return MetricSpec(type=SourceType.RESOURCE, name="cpu", target=target), _samples(rng, pods, 3000)
    if kind == "qps":
        target = MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=rng.randint(1, 20000))
        return MetricSpec(type=SourceType.PODS, name="qps", target=target), _samples(rng, pods, 40000)
    if kind == "ext":
        target = rng.choice([MetricTarget(type=TargetType.VALUE, value=5000),
                             MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=700)])  # fmt: skip
        obs = rng.choice([FetchFailure(message="down"), ExternalSamples(values=(0,)),
                          ExternalSamples(values=(2000, 9000)), ExternalSamples(values=(40000,))])  # fmt: skip
        return MetricSpec(type=SourceType.EXTERNAL, name="queue", target=target), obs
    if kind == "obj":
        spec = MetricSpec(type=SourceType.OBJECT, name="rps", described_object=ObjectRef(kind="Ingress", name="main"),
                          target=MetricTarget(type=TargetType.VALUE, value=3000))  # fmt: skip
        return spec, ObjectSample(value=rng.randint(0, 30000))
    return MetricSpec(type="CheddarCheese"), FetchFailure(message="n/a")


@st.composite
def sync_inputs(draw: st.DrawFn) -> SyncInput:
    rng = random.Random(draw(st.integers(0, 2**32)))
    pods = _pods(rng, draw(st.integers(0, 8)))
    kinds = draw(st.lists(st.sampled_from(["cpu", "qps", "ext", "obj", "bad"]), min_size=1, max_size=3))
    metrics = [_metric(rng, kind, pods) for kind in kinds]
    min_r = draw(st.integers(0, 4))
    max_r = draw(st.integers(max(min_r, 1), 40))
    current = draw(st.integers(0, 45))
    behavior = bh.Behavior(scale_up=_rules(rng), scale_down=_rules(rng)) if draw(st.booleans()) else None
    return SyncInput(
        spec=AutoscalerSpec(min_replicas=min_r, max_replicas=max_r, metrics=tuple(m for m, _ in metrics),
                            behavior=behavior),
        scale=ScaleTarget(spec_replicas=current, status_replicas=current + rng.randint(0, 1)),
        now=NOW, pods=pods, observations=tuple(o for _, o in metrics), history=_history(rng),
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
    # a Pods/Resource metric at 0 replicas with minReplicas 0 is not read (scale to zero), not failed
    if any(m.proposal is None and m.why != zero.NOT_READ for m in d.trace.metrics):
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
        woken = 1 if d.zero is not None and d.zero.wake else 0  # waking from 0 reaches 1 whatever the policies
        assert d.desired_replicas <= max(current, woken, bh.scale_up_limit(current, past, eff.scale_up, now=NOW))
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
    data = d.to_dict()
    assert json.loads(json.dumps(data)) == data  # JSON-ready: no tuples, no NaN
    assert d.explain().splitlines()[0].startswith(str(d.outcome))


@FAST
@given(sync_inputs())
def test_needs_metrics_agrees_with_decide(inp: SyncInput) -> None:
    d = decide(inp, CONFIG)
    skipped = bool(d.trace.steps) and d.trace.steps[0].stage in (Stage.DISABLED, Stage.RANGE)
    assert needs_metrics(inp.spec, inp.scale) is not skipped
    if skipped:
        assert d.trace.metrics == ()
