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
    PodInfo,
    PodMetric,
    ReadinessConfig,
    calculate_requests,
    group_pods,
    running_and_ready,
)
from controller.algorithm.ratio import MAX_INT64, Tolerances, ceil_int32, div_trunc

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
    ready: int | None = None
    unready: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


def _positive(target: float, what: str) -> None:
    if not target > 0:
        raise MetricError(f"invalid {what} target {target}: must be greater than zero")


def _utilization(values: Mapping[str, int], requests: Mapping[str, int]) -> tuple[int, int]:
    """(`int32(Σusage×100/Σrequest)`, `Σusage/n`) over pods that have a request."""
    usage = 0
    request = 0
    n = 0
    for name, value in values.items():
        r = requests.get(name)
        if r is None:
            continue  # a metric for a pod we do not know: upstream skips it here
        usage += value
        request += r
        n += 1
    if request == 0:
        raise MetricError("no metrics returned matched known pods")
    return div_trunc(usage * 100, request), div_trunc(usage, n)


def _rebalance(
    *,
    current: int,
    ratio: float,
    values: dict[str, int],
    unready: Sequence[str],
    missing: Sequence[str],
    fill_down: Callable[[str], int],
    ratio_of: Callable[[dict[str, int]], float],
    tolerances: Tolerances,
) -> tuple[int, Why, float, int]:
    """The conservative second pass shared by Utilization and plain averages."""
    filled = dict(values)
    if missing:
        if ratio < 1.0:
            for name in missing:
                filled[name] = fill_down(name)
        elif ratio > 1.0:
            for name in missing:
                filled[name] = 0
    if unready and ratio > 1.0:
        for name in unready:
            filled[name] = 0
    new_ratio = ratio_of(filled)
    counted = len(filled)
    if tolerances.contains(new_ratio):
        return current, Why.REBALANCED_WITHIN_TOLERANCE, new_ratio, counted
    if (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, Why.DIRECTION_REVERSED, new_ratio, counted
    replicas = ceil_int32(new_ratio * counted)
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current, Why.RECOUNT_REVERSED, new_ratio, counted
    return replicas, Why.REBALANCED, new_ratio, counted


def _grouped_values(
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    resource: str,
    now: float,
    readiness: ReadinessConfig,
) -> tuple[dict[str, int], tuple[int, tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    if not pods:
        raise MetricError(NO_PODS)
    groups = group_pods(pods, metrics, resource=resource, now=now, readiness=readiness)
    dropped = set(groups.ignored)
    dropped.update(groups.unready)
    if dropped:
        values = {k: m.value for k, m in metrics.items() if k not in dropped}
    else:
        values = {k: m.value for k, m in metrics.items()}
    if not values:
        raise MetricError(NO_READY_METRICS)
    return values, (groups.ready_count, groups.unready, groups.missing, groups.ignored)


def _first_timestamp(metrics: Mapping[str, PodMetric]) -> float | None:
    for m in metrics.values():
        return m.timestamp
    return None


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
    values, (ready, unready, missing, ignored) = _grouped_values(
        pods, metrics, resource, now, readiness
    )
    requests = calculate_requests(
        pods, resource=resource, container=container, pod_level=pod_level_requests
    )
    utilization, raw_average = _utilization(values, requests)
    ratio = utilization / target_utilization
    common = {
        "ratio": ratio, "usage": raw_average, "utilization": utilization,
        "timestamp": _first_timestamp(metrics), "ready": ready, "unready": unready,
        "missing": missing, "ignored": ignored,
    }  # fmt: skip
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.contains(ratio):
            return Proposal(replicas=current, why=Why.WITHIN_TOLERANCE, **common)  # type: ignore[arg-type]
        return Proposal(replicas=ceil_int32(ratio * ready), why=Why.SCALED_READY, counted=ready, **common)  # type: ignore[arg-type]
    fallback = max(100, target_utilization)
    replicas, why, new_ratio, counted = _rebalance(
        current=current, ratio=ratio, values=values, unready=unready, missing=missing,
        fill_down=lambda name: div_trunc(requests[name] * fallback, 100),
        ratio_of=lambda v: _utilization(v, requests)[0] / target_utilization,
        tolerances=tolerances,
    )  # fmt: skip
    return Proposal(replicas=replicas, why=why, new_ratio=new_ratio, counted=counted, **common)  # type: ignore[arg-type]


def _average(values: Mapping[str, int]) -> int:
    return div_trunc(sum(values.values()), len(values))


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
    values, (ready, unready, missing, ignored) = _grouped_values(
        pods, metrics, resource, now, readiness
    )
    usage = _average(values)
    ratio = usage / target
    common = {
        "ratio": ratio, "usage": usage, "timestamp": _first_timestamp(metrics), "ready": ready,
        "unready": unready, "missing": missing, "ignored": ignored,
    }  # fmt: skip
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.contains(ratio):
            return Proposal(replicas=current, why=Why.WITHIN_TOLERANCE, **common)  # type: ignore[arg-type]
        return Proposal(replicas=ceil_int32(ratio * ready), why=Why.SCALED_READY, counted=ready, **common)  # type: ignore[arg-type]
    replicas, why, new_ratio, counted = _rebalance(
        current=current, ratio=ratio, values=values, unready=unready, missing=missing,
        fill_down=lambda _name: target, ratio_of=lambda v: _average(v) / target,
        tolerances=tolerances,
    )  # fmt: skip
    return Proposal(replicas=replicas, why=why, new_ratio=new_ratio, counted=counted, **common)  # type: ignore[arg-type]


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
        usage=usage, counted=ready, ready=ready,
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
    if usage >= MAX_INT64:
        average = MAX_INT64
    elif status_replicas == 0:
        average = usage
    else:
        average = math.ceil(float(usage) / float(status_replicas))
    return Proposal(replicas=replicas, why=why, ratio=ratio, usage=average, timestamp=timestamp)
