"""The replica calculator: one proposal per metric source and target type.

Reproduces upstream `replica_calculator.go` exactly, on plain values:

* `resource_utilization` - Resource / ContainerResource with a Utilization target
  (`GetResourceReplicas`): the percent is truncated to an int before the ratio; the fast path
  multiplies the **ready pod count**; otherwise missing pods are filled with
  `max(100, target)%` of their request on scale-down and 0 on scale-up, unready pods with 0 on
  scale-up only, and three vetoes keep the current count.
* `plain_average` - Resource / ContainerResource AverageValue and Pods metrics
  (`calcPlainMetricReplicas`): the same shape on a truncated plain average; missing pods get
  exactly the target on scale-down.
* `value_target` - Object and External Value targets (`getUsageRatioReplicaCount`): ratio x the
  number of Running+Ready pods, or `ceil(ratio)` with no tolerance at zero replicas.
* `per_pod_target` - Object and External AverageValue targets: the tolerance is checked against
  `usage / (target x status replicas)`, the proposal is `ceil(usage / target)`.

Each returns a `Proposal` that says which count was multiplied and why. Errors raise
`MetricError` with upstream's wording. Non-goals: fetching, conditions, normalization.
Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from controller.algorithm.errors import MetricError
from controller.algorithm.pods import (
    PodGroups,
    PodInfo,
    PodMetric,
    ReadinessConfig,
    calculate_requests,
    group_pods,
    running_and_ready,
)
from controller.algorithm.ratio import MAX_INT64, Tolerances, ceil_int32, div_trunc
from controller.algorithm.values import quick_init

NO_PODS = "no pods returned by selector while calculating replica count"
NO_READY_METRICS = "did not receive metrics for targeted pods (pods might be unready)"


class Why(StrEnum):
    """Why a calculator returned the number it returned (shown in the trace)."""

    WITHIN_TOLERANCE = "usage ratio within tolerance: keep current replicas"
    SCALED_READY = "ceil(ratio x ready pods with metrics)"
    REBALANCED = "ceil(rebalanced ratio x pods counted after filling missing/unready pods)"
    REBALANCED_WITHIN_TOLERANCE = "rebalanced ratio within tolerance: keep current replicas"
    DIRECTION_REVERSED = "rebalancing reversed the direction: keep current replicas"
    RECOUNT_REVERSED = "the rebalanced count moves against the ratio: keep current replicas"
    SCALED_RUNNING_READY = "ceil(ratio x Running+Ready pods)"
    FROM_ZERO = "current replicas is 0: ceil(ratio), tolerance not applied"
    PER_POD = "ceil(total / per-pod target)"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """One metric's replica proposal and the numbers behind it."""

    replicas: int
    why: Why
    ratio: float  # first-pass usage ratio (what the tolerance saw first)
    usage: int  # reported value: raw average, plain average, total, or per-pod average
    utilization: int | None = None  # reported percent of request (Utilization targets)
    new_ratio: float | None = None  # ratio after rebalancing, when it ran
    counted: int | None = None  # the pod count multiplied, when one was
    timestamp: float | None = None
    # The pod grouping (`group_pods`) the per-pod calculators ran; None for Object/External.
    ready: int | None = None
    unready: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


def _positive(target: float, what: str) -> None:
    if not target > 0:
        raise MetricError(f"invalid {what} target {target}: must be greater than zero")


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class _Rebalanced:
    replicas: int
    why: Why
    new_ratio: float
    counted: int  # upstream's len(metrics) after filling


def _rebalance(
    *,
    current: int,
    ratio: float,
    sums: tuple[int, int, int],
    unready: Sequence[str],
    missing: Sequence[str],
    fill_down: Callable[[str], int],
    weight: Callable[[str], int],
    ratio_of: Callable[[int, int], float],
    tolerances: Tolerances,
) -> _Rebalanced:
    """The conservative second pass shared by Utilization and plain averages.

    Upstream fills the metrics map and recomputes over all of it; filling only adds entries for
    pods that had none (missing pods, and unready pods whose samples were removed), so adding
    their contributions to the first-pass sums gives the same numbers in O(filled).
    `sums` is the usage map reduced to what the ratio needs: Σvalue, Σweight (request, or 1 per
    entry) and the number of map entries (upstream's `len(metrics)`, unknown pods included)."""
    total, weights, entries = sums
    fills: list[tuple[str, int]] = []
    if missing:
        if ratio < 1.0:
            fills.extend((name, fill_down(name)) for name in missing)
        elif ratio > 1.0:
            fills.extend((name, 0) for name in missing)
    if unready and ratio > 1.0:
        fills.extend((name, 0) for name in unready)
    for name, value in fills:
        total += value
        weights += weight(name)
        entries += 1
    new_ratio = ratio_of(total, weights)
    replicas, why = ceil_int32(new_ratio * entries), Why.REBALANCED
    if tolerances.contains(new_ratio):
        replicas, why = current, Why.REBALANCED_WITHIN_TOLERANCE
    elif (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        replicas, why = current, Why.DIRECTION_REVERSED
    elif (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        replicas, why = current, Why.RECOUNT_REVERSED
    return _Rebalanced(replicas=replicas, why=why, new_ratio=new_ratio, counted=entries)


def _grouped(
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    resource: str,
    now: float,
    readiness: ReadinessConfig,
) -> tuple[PodGroups, set[str]]:
    """Group the pods; the names whose samples upstream removes (ignored and unready)."""
    if not pods:
        raise MetricError(NO_PODS)
    groups = group_pods(pods, metrics, resource=resource, now=now, readiness=readiness)
    dropped = set(groups.ignored)
    dropped.update(groups.unready)
    return groups, dropped


def _first_timestamp(metrics: Mapping[str, PodMetric]) -> float | None:
    for m in metrics.values():
        return m.timestamp
    return None


def _propose(
    *, current: int, ratio: float, usage: int, utilization: int | None, groups: PodGroups,
    metrics: Mapping[str, PodMetric], sums: tuple[int, int, int], fill_down: Callable[[str], int],
    weight: Callable[[str], int], ratio_of: Callable[[int, int], float], tolerances: Tolerances,
) -> Proposal:  # fmt: skip
    """Fast path (no unready pods on a scale-up, no missing pods) or the rebalanced pass."""
    ready, unready, missing = groups.ready_count, groups.unready, groups.missing
    counted: int | None = None
    new_ratio: float | None = None
    if not (unready and ratio > 1.0) and not missing:
        if tolerances.contains(ratio):
            replicas, why = current, Why.WITHIN_TOLERANCE
        else:  # the ready pod count is multiplied, not current replicas
            replicas, why, counted = ceil_int32(ratio * ready), Why.SCALED_READY, ready
    else:
        r = _rebalance(
            current=current, ratio=ratio, sums=sums, unready=unready, missing=missing,
            fill_down=fill_down, weight=weight, ratio_of=ratio_of, tolerances=tolerances,
        )  # fmt: skip
        replicas, why, new_ratio, counted = r.replicas, r.why, r.new_ratio, r.counted
    return Proposal(
        replicas=replicas, why=why, ratio=ratio, usage=usage, utilization=utilization,
        new_ratio=new_ratio, counted=counted, timestamp=_first_timestamp(metrics), ready=ready,
        unready=unready, missing=missing, ignored=groups.ignored,
    )  # fmt: skip


def resource_utilization(
    *,
    current: int,
    target_utilization: int,
    metrics: Mapping[str, PodMetric],
    pods: Sequence[PodInfo],
    resource: str,
    container: str = "",
    tolerances: Tolerances,
    now: float,
    readiness: ReadinessConfig,
    pod_level_requests: bool = False,
) -> Proposal:
    """Upstream `GetResourceReplicas` (Utilization targets)."""
    _positive(target_utilization, "utilization")
    groups, dropped = _grouped(pods, metrics, resource, now, readiness)
    if len(metrics) <= len(dropped) and all(name in dropped for name in metrics):
        raise MetricError(NO_READY_METRICS)
    requests = calculate_requests(
        pods, resource=resource, container=container, pod_level=pod_level_requests
    )
    usage = request = n = entries = 0
    for name, m in metrics.items():
        if name in dropped:
            continue
        entries += 1
        r = requests.get(name)
        if r is not None:  # a sample for a pod we do not know counts in len() only
            usage += m.value
            request += r
            n += 1
    if request == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = div_trunc(usage * 100, request)
    fallback = max(100, target_utilization)
    return _propose(
        current=current, ratio=utilization / target_utilization, usage=div_trunc(usage, n),
        utilization=utilization, groups=groups, metrics=metrics,
        sums=(usage, request, entries),
        # on a scale-down a missing pod counts as max(100, target)% of its request (PR #112178)
        fill_down=lambda name: div_trunc(requests[name] * fallback, 100),
        weight=requests.__getitem__,
        ratio_of=lambda u, r: div_trunc(u * 100, r) / target_utilization,
        tolerances=tolerances,
    )  # fmt: skip


def _one(_name: str) -> int:
    return 1


def plain_average(
    *,
    current: int,
    target: int,
    metrics: Mapping[str, PodMetric],
    pods: Sequence[PodInfo],
    resource: str,
    tolerances: Tolerances,
    now: float,
    readiness: ReadinessConfig,
) -> Proposal:
    """Upstream `calcPlainMetricReplicas`: AverageValue of a resource ("cpu" keeps the CPU
    readiness rules) or of a Pods metric (`resource=""`: readiness ignored)."""
    _positive(target, "average value")
    groups, dropped = _grouped(pods, metrics, resource, now, readiness)
    total = entries = 0
    for name, m in metrics.items():
        if name not in dropped:
            total += m.value
            entries += 1
    if entries == 0:
        raise MetricError(NO_READY_METRICS)
    usage = div_trunc(total, entries)
    return _propose(
        current=current, ratio=usage / target, usage=usage, utilization=None, groups=groups,
        metrics=metrics, sums=(total, entries, entries),
        fill_down=lambda _name: target,  # a missing pod counts as exactly the target
        weight=_one, ratio_of=lambda t, n: div_trunc(t, n) / target, tolerances=tolerances,
    )  # fmt: skip


def value_target(
    *,
    current: int,
    target: int,
    usage: int,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
) -> Proposal:
    """Object / External Value targets (upstream `getUsageRatioReplicaCount`).

    The timestamp is deliberately dropped (upstream returns a zero time here)."""
    _positive(target, "value")
    ratio = float(usage) / float(target)
    if current == 0:
        return Proposal(replicas=ceil_int32(ratio), why=Why.FROM_ZERO, ratio=ratio, usage=usage)
    if tolerances.contains(ratio):
        return Proposal(replicas=current, why=Why.WITHIN_TOLERANCE, ratio=ratio, usage=usage)
    if not pods:
        raise MetricError(f"unable to calculate ready pods: {NO_PODS}")
    ready = running_and_ready(pods)
    return Proposal(
        replicas=ceil_int32(ratio * ready), why=Why.SCALED_RUNNING_READY, ratio=ratio,
        usage=usage, counted=ready,
    )  # fmt: skip


def per_pod_target(
    *,
    status_replicas: int,
    target: int,
    usage: int,
    tolerances: Tolerances,
    timestamp: float | None = None,
) -> Proposal:
    """Object / External AverageValue targets (`Get{Object,External}PerPodMetricReplicas`).

    With zero status replicas upstream divides by zero; here the ratio is +inf (so never within
    tolerance) and the reported average is the total (documented deviation)."""
    _positive(target, "average value")
    if status_replicas == 0:
        ratio = math.inf
    else:
        ratio = float(usage) / (float(target) * float(status_replicas))
    if tolerances.contains(ratio):
        replicas, why = status_replicas, Why.WITHIN_TOLERANCE
    else:
        replicas, why = ceil_int32(float(usage) / float(target)), Why.PER_POD
    if float(usage) >= float(MAX_INT64):  # upstream compares as float64: 2^63-512 and up saturate
        average = MAX_INT64
    elif status_replicas == 0:
        average = usage
    else:
        average = math.ceil(float(usage) / float(status_replicas))
    return Proposal(replicas=replicas, why=why, ratio=ratio, usage=average, timestamp=timestamp)
