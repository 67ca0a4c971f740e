"""Builders that mirror the upstream test harnesses (replica_calculator_test.go `runTest`,
horizontal_test.go `testCase`) so ported cases read like their originals.

Fixture facts (see ../shared/spec/vectors/hpa-public.json `conventions`): every pod has two
containers each requesting the given amount; each container uses the given level; the PodReady
condition and the metrics carry Go's zero time; "hot" pods start now, "cool" ones 3 minutes ago;
CPU initialization period 2 min, initial readiness delay 10 s.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.algorithm.behavior import Behavior, ScaleHistory
from controller.algorithm.decision import Decision
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric, PodPhase, ReadinessConfig, ReadyStatus
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, HpaStatus, MetricSpec, MetricTarget, Observation, PodSamples, ScaleTarget,
    SelectorProblem, SourceType, SyncInput, TargetType,
)  # fmt: skip

ZERO = -62135596800.0  # Go's zero time, relative to now = 0
NOW = 0.0
HOT = NOW
COOL = NOW - 180.0
READINESS = ReadinessConfig(cpu_initialization_period=120.0, initial_readiness_delay=10.0)
T, F = ReadyStatus.TRUE, ReadyStatus.FALSE
RUNNING, PENDING, FAILED = PodPhase.RUNNING, PodPhase.PENDING, PodPhase.FAILED


def pod_name(i: int) -> str:
    return f"test-pod-{i}"


def harness_pods(
    count: int,
    *,
    requests: Sequence[int] = (),
    readiness: Sequence[ReadyStatus] = (),
    start: Sequence[float] = (),
    phase: Sequence[PodPhase] = (),
    deleted: Sequence[bool] = (),
) -> tuple[PodInfo, ...]:
    """`count` pods like upstream's fake pod lister (two containers each)."""
    n = max(count, len(phase))
    pods = []
    for i in range(n):
        req = {"cpu": requests[i]} if i < len(requests) else {}
        pods.append(PodInfo(
            name=pod_name(i),
            phase=phase[i] if i < len(phase) else RUNNING,
            ready=readiness[i] if i < len(readiness) else T,
            ready_transition=ZERO,
            start_time=start[i] if i < len(start) else ZERO,
            deleted=deleted[i] if i < len(deleted) else False,
            containers=(ContainerInfo(name="container1", requests=req),
                        ContainerInfo(name="container2", requests=req)),
        ))  # fmt: skip
    return tuple(pods)


def harness_metrics(
    levels: Sequence[int], *, per_pod_factor: int = 2, names: Sequence[str] = ()
) -> dict[str, PodMetric]:
    """One sample per level (per container level x 2 containers for resources)."""
    return {
        (names[i] if i < len(names) else pod_name(i)): PodMetric(
            value=level * per_pod_factor, timestamp=ZERO, window=60.0
        )
        for i, level in enumerate(levels)
    }


# ---- one sync, as horizontal_test.go's testCase builds it ----

CONFIG = ControllerConfig(readiness=READINESS, scale_up_limit_factor=8.0, configurable_tolerance=False)
CPU = MetricSpec(type=SourceType.RESOURCE, name="cpu",
                 target=MetricTarget(type=TargetType.UTILIZATION, average_utilization=30))  # fmt: skip
QPS_EXTERNAL = MetricSpec(type=SourceType.EXTERNAL, name="qps", selector="nil",
                          target=MetricTarget(type=TargetType.VALUE, value=1000))  # fmt: skip
ABLE, ACTIVE, LIMITED = "AbleToScale", "ScalingActive", "ScalingLimited"


def pod_samples(*levels: int) -> PodSamples:
    """Per-pod values (resource usage with both containers summed, or a Pods metric),
    timestamped now with a 60 s window."""
    return PodSamples(values={pod_name(i): PodMetric(value=v, timestamp=NOW, window=60) for i, v in enumerate(levels)})


def sync(
    *, current: int = 3, min_r: int = 2, max_r: int = 6, metrics: tuple[MetricSpec, ...] = (CPU,),
    observations: tuple[Observation, ...] = (), pods: int | None = None, request: int = 500,
    history: ScaleHistory | None = None, behavior: Behavior | None = None, status: HpaStatus | None = None,
    problem: SelectorProblem | None = None, status_replicas: int | None = None,
) -> SyncInput:  # fmt: skip
    spec = AutoscalerSpec(min_replicas=min_r, max_replicas=max_r, metrics=metrics, behavior=behavior)
    scale = ScaleTarget(spec_replicas=current, status_replicas=current if status_replicas is None else status_replicas)
    return SyncInput(spec=spec, scale=scale, now=NOW, pods=harness_pods(current if pods is None else pods,
                     requests=[request] * (current if pods is None else pods)),
                     observations=observations, history=history, selector_problem=problem,
                     status=status or HpaStatus(current_replicas=current, desired_replicas=current))  # fmt: skip


def conditions(d: Decision) -> list[tuple[str, bool, str]]:
    """The status conditions as (type, status, reason), in status order."""
    return [(str(c.type), c.status, str(c.reason)) for c in d.status.conditions]
