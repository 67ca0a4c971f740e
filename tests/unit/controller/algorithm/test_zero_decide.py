"""Scale to zero through `decide`: activation, cooldown, the stabilization window and the policies
together, with the clock a parameter (each sync is called at an explicit `now`)."""

from __future__ import annotations

from controller.algorithm import complete, decide
from controller.algorithm.behavior import Behavior, PolicyType, ScaleHistory, ScalingPolicy, ScalingRules
from controller.algorithm.conditions import ConditionType, EventReason, Reason
from controller.algorithm.decision import Decision, Outcome, Stage
from controller.algorithm.pods import PodInfo, PodMetric
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, ExternalSamples, FetchFailure, HpaStatus, MetricSpec, MetricTarget, Observation,
    PodSamples, ScaleTarget, ScaleToZero, SourceType, SyncInput, TargetType,
)  # fmt: skip

T0 = 1_000_000.0
QUEUE = MetricSpec(type=SourceType.EXTERNAL, name="queue",
                   target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000))  # 10 per pod
CPU = MetricSpec(type=SourceType.PODS, name="busy", target=MetricTarget(type=TargetType.AVERAGE_VALUE,
                                                                        average_value=500))
NO_WINDOW = ControllerConfig(downscale_stabilization=0)


def _spec(*metrics: MetricSpec, cooldown: int = 60, behavior: Behavior | None = None) -> AutoscalerSpec:
    return AutoscalerSpec(min_replicas=0, max_replicas=10, metrics=metrics or (QUEUE,), behavior=behavior,
                          scale_to_zero=ScaleToZero(cooldown_seconds=cooldown))


def _queue(messages: int | None) -> Observation:
    return FetchFailure(message="prometheus down") if messages is None else ExternalSamples(values=(messages * 1000,))


class Loop:
    """Syncs one autoscaler against a target whose replicas follow every successful write."""

    def __init__(self, spec: AutoscalerSpec, replicas: int, config: ControllerConfig = NO_WINDOW) -> None:
        self.spec, self.replicas, self.config = spec, replicas, config
        self.history: ScaleHistory | None = None
        self.last: Decision | None = None

    def sync(self, now: float, *observations: Observation) -> Decision:
        pods = tuple(PodInfo(name=f"p{i}", ready=True) for i in range(self.replicas))
        inp = SyncInput(spec=self.spec, scale=ScaleTarget(spec_replicas=self.replicas, status_replicas=self.replicas),
                        now=now, pods=pods, observations=observations, history=self.history,
                        status=self.last.status if self.last else HpaStatus())
        d = decide(inp, self.config)
        d = complete(d, write_error=None, now=now)
        self.history, self.last = d.history, d
        if d.outcome is Outcome.SCALED:
            self.replicas = d.desired_replicas
        return d


def test_an_empty_queue_goes_to_zero_after_the_cooldown_and_holds_it() -> None:
    loop = Loop(_spec(cooldown=60), replicas=2)
    counts = [loop.sync(T0 + 15 * i, _queue(0)).desired_replicas for i in range(8)]
    # running, the HPA's floor is 1; the recommendation is 0 once the queue was empty for 60 s
    assert counts == [1, 1, 1, 1, 0, 0, 0, 0]
    d = loop.last
    assert d is not None and d.outcome is Outcome.NO_CHANGE
    active = next(c for c in d.status.conditions if c.type is ConditionType.SCALING_ACTIVE)
    assert (active.status, active.reason) == (False, Reason.SCALED_TO_ZERO)
    assert "External queue 0 <= activation 0" in active.message


def test_the_event_of_going_to_zero_names_the_metric_and_value() -> None:
    loop = Loop(_spec(cooldown=30), replicas=1)
    decisions = [loop.sync(T0 + 15 * i, _queue(0)) for i in range(3)]
    went = [e for d in decisions for e in d.events if e.reason is EventReason.SCALED_TO_ZERO]
    assert len(went) == 1 and "1 -> 0" in went[0].message and "External queue 0 <= activation 0" in went[0].message


def test_explain_counts_the_cooldown_down() -> None:
    loop = Loop(_spec(cooldown=300), replicas=1)
    loop.sync(T0, _queue(0))
    d = loop.sync(T0 + 120, _queue(0))
    assert d.desired_replicas == 1 and d.zero is not None and d.zero.remaining == 180
    assert "cooldown: 180s of 300s left before 0 replicas" in d.explain()


def test_35_messages_wake_it_to_4_in_one_sync() -> None:
    loop = Loop(_spec(), replicas=0)
    assert loop.sync(T0, _queue(0)).desired_replicas == 0
    d = loop.sync(T0 + 15, _queue(35))
    assert (d.outcome, d.desired_replicas) == (Outcome.SCALED, 4)
    woke = [e for e in d.events if e.reason is EventReason.WOKEN_FROM_ZERO]
    assert woke and "waking from 0 to 4 replicas: External queue 35 > activation 0" in woke[0].message
    assert Stage.ZERO in [s.stage for s in d.trace.steps]


def test_activation_value_holds_zero_below_it_and_wakes_above_it() -> None:
    target = MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000, activation_value=5_000)
    loop = Loop(_spec(MetricSpec(type=SourceType.EXTERNAL, name="queue", target=target)), replicas=0)
    assert loop.sync(T0, _queue(5)).desired_replicas == 0
    assert loop.sync(T0 + 15, _queue(6)).desired_replicas == 1


def test_a_pods_metric_neither_blocks_nor_wakes_at_zero() -> None:
    loop = Loop(_spec(CPU, QUEUE), replicas=0)
    idle = loop.sync(T0, PodSamples(values={}), _queue(0))
    assert idle.outcome is Outcome.NO_CHANGE and idle.error is None
    assert "not read at 0 replicas" in idle.trace.metrics[0].why
    assert loop.sync(T0 + 15, FetchFailure(message="no pods"), _queue(12)).desired_replicas == 2


def test_an_outage_at_zero_neither_wakes_nor_scales() -> None:
    loop = Loop(_spec(), replicas=0)
    d = loop.sync(T0, _queue(None))
    assert d.desired_replicas == 0 and d.outcome is Outcome.BLOCKED
    assert any(e.reason is EventReason.FAILED_GET_EXTERNAL_METRIC for e in d.events)


def test_a_metric_error_while_running_never_goes_to_zero_and_restarts_the_cooldown() -> None:
    loop = Loop(_spec(cooldown=60), replicas=1)
    loop.sync(T0, _queue(0))
    loop.sync(T0 + 45, _queue(0))
    assert loop.sync(T0 + 60, _queue(None)).desired_replicas == 1  # the cooldown would have ended here
    assert loop.history is not None and loop.history.idle_since is None
    assert [loop.sync(T0 + 60 + 15 * i, _queue(0)).desired_replicas for i in range(1, 6)] == [1, 1, 1, 1, 0]


def test_the_downscale_window_and_the_cooldown_both_hold_zero_back() -> None:
    loop = Loop(_spec(cooldown=60), replicas=3, config=ControllerConfig(downscale_stabilization=120))
    counts = [loop.sync(T0 + 15 * i, _queue(0)).desired_replicas for i in range(11)]
    # the cooldown ended at T0 + 60, but the first sync's recommendation of 3 is in the 120 s window until T0 + 120
    assert counts == [3] * 8 + [0] * 3


def test_scale_down_policies_step_down_to_zero() -> None:
    one_a_minute = Behavior(scale_down=ScalingRules(
        stabilization_window_seconds=0, policies=(ScalingPolicy(type=PolicyType.PODS, value=1, period_seconds=60),)))
    loop = Loop(_spec(cooldown=30, behavior=one_a_minute), replicas=2)
    counts = [loop.sync(T0 + 15 * i, _queue(0)).desired_replicas for i in range(7)]
    # 2 -> 1 at T0; the cooldown ends at T0 + 30, but 1 -> 0 waits for the policy's period (T0 + 60)
    assert counts == [1, 1, 1, 1, 0, 0, 0]


def test_a_busy_queue_keeps_it_running_with_min_zero() -> None:
    loop = Loop(_spec(cooldown=0), replicas=3)
    assert [loop.sync(T0 + 15 * i, _queue(25)).desired_replicas for i in range(3)] == [3, 3, 3]


def test_a_percent_only_scale_up_policy_still_wakes_to_one() -> None:
    percent = Behavior(scale_up=ScalingRules(policies=(ScalingPolicy(type=PolicyType.PERCENT, value=100,
                                                                     period_seconds=15),)))  # 100% of 0 is 0
    loop = Loop(_spec(behavior=percent), replicas=0)
    assert [loop.sync(T0 + 15 * i, _queue(35)).desired_replicas for i in range(3)] == [1, 2, 4]
    woken = loop.sync(T0 + 45, _queue(35))
    assert woken.trace.steps[-1].after == woken.desired_replicas  # the trace ends where the sync does


def test_busy_pods_hold_off_zero_until_their_work_is_done() -> None:
    # the queue is empty (idle past the cooldown) but the pods' own metric asks for more replicas:
    # they are still working off what they pulled; 0 comes at the first sync that asks for no more
    loop = Loop(_spec(CPU, QUEUE, cooldown=0), replicas=1)

    def load(per_pod: int) -> PodSamples:
        return PodSamples(values={f"p{i}": PodMetric(value=per_pod) for i in range(loop.replicas)})

    counts = [loop.sync(T0 + 15 * i, load(1_000), _queue(0)).desired_replicas for i in range(5)]
    assert counts == [2, 4, 8, 10, 10]  # 2x the 500m target each time, up to maxReplicas
    held = loop.last
    assert held is not None and held.zero is not None and "the other metrics ask for 20 replicas" in held.zero.why
    assert loop.sync(T0 + 75, load(0), _queue(0)).desired_replicas == 0


def test_one_of_two_activation_metrics_down_at_zero_holds_and_reports_the_error() -> None:
    lag = MetricSpec(type=SourceType.EXTERNAL, name="lag", target=MetricTarget(type=TargetType.VALUE, value=5_000))
    loop = Loop(_spec(QUEUE, lag), replicas=0)
    d = loop.sync(T0, _queue(0), FetchFailure(message="prometheus down"))
    assert d.desired_replicas == 0 and d.error is not None and "prometheus down" in d.error
    assert any(e.reason is EventReason.FAILED_GET_EXTERNAL_METRIC for e in d.events)
