"""Builders that mirror the upstream test harnesses (replica_calculator_test.go `runTest`,
horizontal_test.go `testCase`) so ported cases read like their originals.

Fixture facts (see ../shared/spec/vectors/hpa-public.json `conventions`): every pod has two
containers each requesting the given amount; each container uses the given level; the PodReady
condition and the metrics carry Go's zero time; "hot" pods start now, "cool" ones 3 minutes ago;
CPU initialization period 2 min, initial readiness delay 10 s.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric, PodPhase, ReadinessConfig, ReadyStatus

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
