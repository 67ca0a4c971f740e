"""One proposal per metric spec, then the combination across metrics.

`evaluate_metric` dispatches a metric spec and what was observed for it to the right calculator
in `sources`, and returns a `MetricResult`: the proposal, the status entry, the human name used in
conditions and events, or the failure with upstream's condition reason and wording.

`combine` is upstream `computeReplicasForMetrics` after the fetches: the maximum proposal (first
wins a tie; a 0 proposal is replaced by any later one), and the invalid-metric rule: if every
metric failed, or one failed and the valid ones would scale **down** below spec replicas, do not
scale and report the first failure (issue #99394); otherwise scale, still returning the error.

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.algorithm import conditions as c
from controller.algorithm import sources
from controller.algorithm.conditions import Reason
from controller.algorithm.errors import MetricError
from controller.algorithm.pods import PodInfo, ReadinessConfig
from controller.algorithm.ratio import Tolerances, saturating_sum
from controller.algorithm.sources import Proposal
from controller.algorithm.spec import (
    ExternalSamples,
    FetchFailure,
    MetricSpec,
    MetricStatus,
    ObjectSample,
    Observation,
    PodSamples,
    SourceType,
    TargetType,
)
from controller.algorithm.values import quick_init


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MetricContext:
    """What every metric of one sync shares."""

    spec_replicas: int
    status_replicas: int
    pods: tuple[PodInfo, ...]
    tolerances: Tolerances
    now: float
    readiness: ReadinessConfig
    pod_level_resources: bool = False
    namespace: str = ""  # the autoscaler's; named in External read errors as upstream does


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MetricResult:
    index: int
    spec: MetricSpec
    name: str = ""  # e.g. "cpu resource utilization (percentage of request)"
    proposal: Proposal | None = None
    status: MetricStatus | None = None
    error: str | None = None  # wrapped as upstream returns it from computeReplicasForMetric
    reason: Reason | None = None  # the FailedGet*Metric / InvalidMetricSourceType reason
    event_message: str | None = None  # the unwrapped error, as upstream's Warning event says it
    condition_message: str | None = None
    observed_at: float | None = None  # when the metrics API says the value was sampled


# What a calculator answers: the human name, the proposal and the status entry.
_Answer = tuple[str, Proposal, MetricStatus]


_REASONS = {
    SourceType.RESOURCE: Reason.FAILED_GET_RESOURCE_METRIC,
    SourceType.CONTAINER_RESOURCE: Reason.FAILED_GET_CONTAINER_RESOURCE_METRIC,
    SourceType.PODS: Reason.FAILED_GET_PODS_METRIC,
    SourceType.OBJECT: Reason.FAILED_GET_OBJECT_METRIC,
    SourceType.EXTERNAL: Reason.FAILED_GET_EXTERNAL_METRIC,
}


def _outer_error(spec: MetricSpec, inner: str) -> str:
    """The wrapping `computeReplicasForMetric` adds per source type."""
    t = spec.type
    if t == SourceType.RESOURCE:
        return f"failed to get {spec.name} resource metric value: {inner}"
    if t == SourceType.CONTAINER_RESOURCE:
        return f"failed to get {spec.container} container metric value: {inner}"
    if t == SourceType.PODS:
        return f"failed to get pods metric value: {inner}"
    if t == SourceType.OBJECT:
        return f"failed to get object metric value: {inner}"
    return f"failed to get {spec.name} external metric value: {inner}"


def _pod_values(obs: Observation, what: str) -> PodSamples:
    if isinstance(obs, FetchFailure):
        raise MetricError(f"{what}: {obs.message}")
    if not isinstance(obs, PodSamples):
        raise MetricError(f"{what}: per-pod samples expected")
    return obs


def _resource(spec: MetricSpec, obs: Observation, ctx: MetricContext) -> _Answer:
    target = spec.target
    res = spec.name
    stype = SourceType(spec.type)
    fetch = f"unable to get metrics for resource {res}"
    if target is not None and target.average_value is not None:
        try:
            samples = _pod_values(obs, fetch)
            p = sources.plain_average(
                current=ctx.spec_replicas, target=target.average_value, metrics=samples.values,
                pods=ctx.pods, resource=res, tolerances=ctx.tolerances, now=ctx.now,
                readiness=ctx.readiness,
            )  # fmt: skip
        except MetricError as e:
            raise MetricError(f"failed to get {res} usage: {e}") from None
        status = MetricStatus(type=stype, name=res, container=spec.container, average_value=p.usage)
        return (f"{res} resource", p, status)
    if target is None or target.average_utilization is None:
        raise MetricError(
            "invalid resource metric source: neither an average utilization target nor an "
            "average value (usage) target was set"
        )
    try:
        samples = _pod_values(obs, fetch)
        p = sources.resource_utilization(
            current=ctx.spec_replicas, target_utilization=target.average_utilization,
            metrics=samples.values, pods=ctx.pods, resource=res, container=spec.container,
            tolerances=ctx.tolerances, now=ctx.now, readiness=ctx.readiness,
            pod_level_requests=ctx.pod_level_resources,
        )  # fmt: skip
    except MetricError as e:
        raise MetricError(f"failed to get {res} utilization: {e}") from None
    kind = "container resource" if stype is SourceType.CONTAINER_RESOURCE else "resource"
    status = MetricStatus(type=stype, name=res, container=spec.container,
                          average_value=p.usage, average_utilization=p.utilization)  # fmt: skip
    return (f"{res} {kind} utilization (percentage of request)", p, status)


def _pods(spec: MetricSpec, obs: Observation, ctx: MetricContext) -> _Answer:
    target = spec.target
    if target is None or target.average_value is None:
        raise MetricError("invalid pods metric source: no average value target was set")
    samples = _pod_values(obs, f"unable to get metric {spec.name}")
    if not samples.values:
        raise MetricError(
            f"unable to get metric {spec.name}: no metrics returned from custom metrics API"
        )
    p = sources.plain_average(
        current=ctx.spec_replicas, target=target.average_value, metrics=samples.values,
        pods=ctx.pods, resource="", tolerances=ctx.tolerances, now=ctx.now,
        readiness=ctx.readiness,
    )  # fmt: skip
    status = MetricStatus(type=SourceType.PODS, name=spec.name, average_value=p.usage)
    return (f"pods metric {spec.name}", p, status)


def _object(spec: MetricSpec, obs: Observation, ctx: MetricContext) -> _Answer:
    target = spec.target
    ref = spec.described_object
    where = f"{ref.kind} {ref.name}" if ref else "object"
    if isinstance(obs, FetchFailure):
        raise MetricError(f"unable to get metric {spec.name} on {where}: {obs.message}")
    if not isinstance(obs, ObjectSample):
        raise MetricError(f"unable to get metric {spec.name} on {where}: one value expected")
    if target is not None and target.type is TargetType.VALUE and target.value is not None:
        p = sources.value_target(current=ctx.spec_replicas, target=target.value, usage=obs.value,
                                 pods=ctx.pods, tolerances=ctx.tolerances)  # fmt: skip
        kind = ref.kind if ref else "Object"
        status = MetricStatus(type=SourceType.OBJECT, name=spec.name, value=p.usage)
        return (f"{kind} metric {spec.name}", p, status)
    if (
        target is not None
        and target.type is TargetType.AVERAGE_VALUE
        and target.average_value is not None
    ):
        p = sources.per_pod_target(status_replicas=ctx.status_replicas, target=target.average_value,
                                   usage=obs.value, tolerances=ctx.tolerances,
                                   timestamp=obs.timestamp)  # fmt: skip
        # "external metric" for an Object target is upstream's own (copy-paste) wording.
        status = MetricStatus(type=SourceType.OBJECT, name=spec.name, average_value=p.usage)
        return (f"external metric {spec.name}({spec.selector})", p, status)
    raise MetricError(
        "invalid object metric source: neither a value target nor an average value target was set"
    )


def _external(spec: MetricSpec, obs: Observation, ctx: MetricContext) -> _Answer:
    target = spec.target
    name = f"external metric {spec.name}({spec.selector})"
    # `Get{External,ExternalPerPod}MetricReplicas`: "<namespace>/<metric>/<selector %+v>"
    failed = f"unable to get external metric {ctx.namespace}/{spec.name}/{spec.selector}"
    if isinstance(obs, FetchFailure):
        raise MetricError(f"{failed}: {obs.message}")
    if not isinstance(obs, ExternalSamples):
        raise MetricError(f"{failed}: values expected")
    if not obs.values:
        raise MetricError(f"{failed}: no metrics returned from external metrics API")
    usage = saturating_sum(obs.values)
    if target is not None and target.average_value is not None:
        p = sources.per_pod_target(status_replicas=ctx.status_replicas, target=target.average_value,
                                   usage=usage, tolerances=ctx.tolerances,
                                   timestamp=obs.timestamp)  # fmt: skip
        status = MetricStatus(type=SourceType.EXTERNAL, name=spec.name, average_value=p.usage)
        return (name, p, status)
    if target is not None and target.value is not None:
        p = sources.value_target(current=ctx.spec_replicas, target=target.value, usage=usage,
                                 pods=ctx.pods, tolerances=ctx.tolerances)  # fmt: skip
        status = MetricStatus(type=SourceType.EXTERNAL, name=spec.name, value=p.usage)
        return (name, p, status)
    raise MetricError(
        "invalid external metric source: neither a value target nor an average value target was set"
    )


_DISPATCH = {
    SourceType.RESOURCE: _resource,
    SourceType.CONTAINER_RESOURCE: _resource,
    SourceType.PODS: _pods,
    SourceType.OBJECT: _object,
    SourceType.EXTERNAL: _external,
}


def evaluate_metric(index: int, spec: MetricSpec, obs: Observation, ctx: MetricContext) -> MetricResult:
    """Upstream `computeReplicasForMetric` for one spec, on already fetched data."""
    handler = _DISPATCH.get(spec.type)  # type: ignore[call-overload]
    if handler is None:
        err = f'unknown metric source type "{spec.type}"'
        return MetricResult(index=index, spec=spec, error=err, reason=Reason.INVALID_METRIC_SOURCE_TYPE,
                            event_message=err, condition_message=c.msg_unable_to_compute(err))  # fmt: skip
    try:
        answer = handler(spec, obs, ctx)
    except MetricError as e:
        inner = str(e)
        return MetricResult(index=index, spec=spec, error=_outer_error(spec, inner),
                            reason=_REASONS[SourceType(spec.type)], event_message=inner,
                            condition_message=c.msg_unable_to_compute(inner))  # fmt: skip
    name, proposal, status = answer
    return MetricResult(index=index, spec=spec, name=name, proposal=proposal, status=status,
                        observed_at=_observed_at(obs))  # fmt: skip


def _observed_at(obs: Observation) -> float | None:
    """The sample time for the trace (upstream keeps it only in logs, and drops it for Value
    targets; a person asking "why" still wants to know how old the number was)."""
    if isinstance(obs, PodSamples):
        for m in obs.values.values():
            return m.timestamp
        return None
    if isinstance(obs, ObjectSample | ExternalSamples):
        return obs.timestamp
    return None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Combined:
    replicas: int  # max of the valid proposals (0 if none)
    metric_name: str  # the metric that won ("" if none)
    invalid: int
    error: str | None  # "invalid metrics (K invalid out of N), first error is: ..."
    first_failure: MetricResult | None
    blocked: bool  # do not scale: all failed, or a failure while the rest would scale down


def combine(results: Sequence[MetricResult], *, spec_replicas: int) -> Combined:
    replicas = 0
    name = ""
    first_failure: MetricResult | None = None
    invalid = 0
    for r in results:
        if r.proposal is None:
            if first_failure is None:
                first_failure = r
            invalid += 1
            continue
        if replicas == 0 or r.proposal.replicas > replicas:
            replicas, name = r.proposal.replicas, r.name
    error = None
    if first_failure is not None:
        error = (f"invalid metrics ({invalid} invalid out of {len(results)}), "
                 f"first error is: {first_failure.error}")  # fmt: skip
    blocked = invalid >= len(results) or (invalid > 0 and replicas < spec_replicas)
    return Combined(replicas=replicas, metric_name=name, invalid=invalid,
                    error=error, first_failure=first_failure, blocked=blocked)  # fmt: skip
