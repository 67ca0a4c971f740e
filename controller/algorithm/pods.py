"""Pods as the replica calculator sees them: grouping, readiness, requests, usage per pod.

Reproduces `groupPods`, `calculateRequests` and the per-pod summing of the resource metrics client
(`metrics/client.go`) from upstream `pkg/controller/podautoscaler`, on plain values:

* grouping order: deleted or Failed -> ignored; Pending -> unready; no metric -> missing (even when
  NotReady); then, for the **cpu** resource only, the readiness heuristics (initialization period
  with the metric-window check, and the "never became ready" delay); otherwise ready;
* requests: pod-level requests (gate on, set, no container named) or the sum over containers plus
  restartable init containers (sidecars); a missing request is an error.

Times are float seconds on one clock chosen by the caller; `None` means "absent". Comparisons are
strict, as upstream's `Before`/`After`.

Non-goals: listing pods, parsing Kubernetes JSON. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from controller.algorithm.errors import MetricError
from controller.algorithm.values import quick_init

CPU = "cpu"


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class ReadyStatus(StrEnum):
    """Status of the PodReady condition."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerInfo:
    """A container's requests in milli-units per resource name (absent key = no request)."""

    name: str
    requests: Mapping[str, int] = field(default_factory=dict)
    # True for an init container with restartPolicy Always (a sidecar). Other init containers
    # must not be passed at all: upstream does not count their requests.
    restartable_init: bool = False


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PodInfo:
    """A pod as the calculator needs it. `containers` holds the regular containers followed by
    the restartable init containers (sidecars), the set upstream sums requests over."""

    name: str
    phase: PodPhase = PodPhase.RUNNING
    ready: ReadyStatus | None = ReadyStatus.TRUE  # None: no PodReady condition at all
    ready_transition: float | None = None  # PodReady lastTransitionTime
    start_time: float | None = None  # status.startTime
    deleted: bool = False  # metadata.deletionTimestamp set
    containers: tuple[ContainerInfo, ...] = ()
    pod_requests: Mapping[str, int] | None = None  # spec.resources.requests (pod level)
    # Every init container in spec order (sidecars flagged restartable_init). Only the pod-level
    # aggregate needs the plain ones; when empty, the sidecars in `containers` stand in.
    init_containers: tuple[ContainerInfo, ...] = ()
    overhead: Mapping[str, int] | None = None  # spec.overhead (RuntimeClass), pod-level path only


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PodMetric:
    """One pod's sample: milli-value, its timestamp and the window it covers (seconds)."""

    value: int
    timestamp: float = 0.0
    window: float = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadinessConfig:
    """`--horizontal-pod-autoscaler-cpu-initialization-period` / `-initial-readiness-delay`."""

    cpu_initialization_period: float = 300.0
    initial_readiness_delay: float = 30.0


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PodGroups:
    ready_count: int
    unready: tuple[str, ...]
    missing: tuple[str, ...]
    ignored: tuple[str, ...]


def _cpu_unready(pod: PodInfo, metric: PodMetric, now: float, cfg: ReadinessConfig) -> bool:
    if pod.ready is None or pod.start_time is None:
        return True
    transition = pod.ready_transition if pod.ready_transition is not None else float("-inf")
    if pod.start_time + cfg.cpu_initialization_period > now:
        # Still initializing: a sample counts only once a full window was collected after the
        # last readiness transition.
        return pod.ready is ReadyStatus.FALSE or metric.timestamp < transition + metric.window
    # Past initialization: drop the sample only if the pod never became ready.
    return (
        pod.ready is ReadyStatus.FALSE
        and pod.start_time + cfg.initial_readiness_delay > transition
    )


def group_pods(
    pods: Iterable[PodInfo],
    metrics: Mapping[str, PodMetric],
    *,
    resource: str,
    now: float,
    readiness: ReadinessConfig,
) -> PodGroups:
    """Upstream `groupPods`: classify pods; `resource` "" for Pods metrics (no readiness rules)."""
    ready = 0
    unready: list[str] = []
    missing: list[str] = []
    ignored: list[str] = []
    get = metrics.get
    failed, pending = PodPhase.FAILED, PodPhase.PENDING
    if resource != CPU:
        # One tight loop: this runs per metric per pod on every sync (see hack/bench).
        for pod in pods:
            name = pod.name
            if pod.deleted or pod.phase is failed:
                ignored.append(name)
            elif pod.phase is pending:
                unready.append(name)
            elif name in metrics:
                ready += 1
            else:
                missing.append(name)
    else:
        true = ReadyStatus.TRUE
        init_period = readiness.cpu_initialization_period
        for pod in pods:
            name = pod.name
            if pod.deleted or pod.phase is failed:
                ignored.append(name)
            elif pod.phase is pending:
                unready.append(name)
            else:
                metric = get(name)
                if metric is None:
                    missing.append(name)
                elif (
                    pod.ready is not true
                    or pod.start_time is None
                    or pod.start_time + init_period > now
                ) and _cpu_unready(pod, metric, now, readiness):
                    # Fast pre-check: a Ready pod past its initialization period always
                    # counts; only the others need the full rules.
                    unready.append(name)
                else:
                    ready += 1
    return PodGroups(
        ready_count=ready, unready=tuple(unready), missing=tuple(missing), ignored=tuple(ignored)
    )


def running_and_ready(pods: Iterable[PodInfo]) -> int:
    """The pod count Object/External Value targets multiply: phase Running and Ready=True."""
    running, ready = PodPhase.RUNNING, ReadyStatus.TRUE
    count = 0
    for p in pods:
        if p.phase is running and p.ready is ready:
            count += 1
    return count


# Resources that may be set at pod level (component-helpers `IsSupportedPodLevelResource`).
_POD_LEVEL_RESOURCES = frozenset({"cpu", "memory"})


def _pod_level_set(pod: PodInfo) -> bool:
    """Upstream `IsPodLevelRequestsSet`: some supported resource is requested at pod level."""
    return any(r in _POD_LEVEL_RESOURCES or r.startswith("hugepages-") for r in pod.pod_requests or ())


def _pod_level_request(pod: PodInfo, resource: str) -> int:
    """Upstream `calculatePodLevelRequests`: `PodRequests` is the containers' aggregate
    (`AggregateContainerRequests`) overridden by the pod-level value; a container lacking the
    resource adds nothing, and only a resource missing everywhere is an error."""
    extra = (pod.overhead or {}).get(resource, 0)  # PodRequests adds the pod overhead
    value = (pod.pod_requests or {}).get(resource)
    if value is not None:
        return value + extra
    regular = [c.requests[resource] for c in pod.containers if not c.restartable_init and resource in c.requests]
    total: int | None = sum(regular) if regular else None
    inits = pod.init_containers or tuple(c for c in pod.containers if c.restartable_init)
    sidecars: int | None = None  # running sum of the restartable init containers so far
    peak: int | None = None  # the largest request while init containers run
    for c in inits:
        own = c.requests.get(resource)
        if c.restartable_init:
            if own is not None:
                total, sidecars = (total or 0) + own, (sidecars or 0) + own
            during = sidecars
        else:  # a plain init container runs beside the sidecars started before it
            during = None if own is None and sidecars is None else (own or 0) + (sidecars or 0)
        if during is not None:
            peak = during if peak is None else max(peak, during)
    if peak is not None:
        total = peak if total is None else max(total, peak)
    if total is None and not extra:
        raise MetricError(f"missing pod-level request for {resource} in Pod {pod.name}")
    return (total or 0) + extra


def pod_request(pod: PodInfo, *, resource: str, container: str = "", pod_level: bool = False) -> int:
    """One pod's request in milli-units (upstream `calculateRequests` for one pod)."""
    if pod_level and not container and _pod_level_set(pod):
        # PodLevelResources: once the pod sets pod-level requests, they decide, even for a
        # resource set only on containers (then the tolerant aggregate, not the strict sum).
        return _pod_level_request(pod, resource)
    total = 0
    found = False
    for c in pod.containers:
        if container and c.name != container:
            continue
        found = True
        value = c.requests.get(resource)
        if value is None:
            raise MetricError(
                f"missing request for {resource} in container {c.name} of Pod {pod.name}"
            )
        total += value
    if container and not found:
        raise MetricError(f"container {container} not found in Pod {pod.name}")
    return total


def calculate_requests(
    pods: Iterable[PodInfo], *, resource: str, container: str = "", pod_level: bool = False
) -> dict[str, int]:
    """Requests per pod name for every listed pod (ignored ones too, as upstream)."""
    out: dict[str, int] = {}
    for pod in pods:
        if container or (pod_level and pod.pod_requests is not None):
            out[pod.name] = pod_request(pod, resource=resource, container=container, pod_level=pod_level)
            continue
        total = 0  # the common case inlined: sum over all containers
        for c in pod.containers:
            value = c.requests.get(resource)
            if value is None:
                return {pod.name: pod_request(pod, resource=resource)}  # raises with the message
            total += value
        out[pod.name] = total
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerUsage:
    name: str
    usage: Mapping[str, int]  # milli-units per resource; absent key = no value


@dataclass(frozen=True, slots=True, kw_only=True)
class PodMetricsItem:
    """One `metrics.k8s.io` PodMetrics item, reduced to what the calculator needs."""

    pod: str
    timestamp: float
    window: float
    containers: tuple[ContainerUsage, ...]


def resource_usage_by_pod(
    items: Sequence[PodMetricsItem], *, resource: str, container: str = ""
) -> dict[str, PodMetric]:
    """Per-pod usage as the resource metrics client builds it.

    Without a container: the sum over all containers; a pod with no containers, or with any
    container lacking the resource, gets no entry (it then counts as missing). With a container:
    that container's value; absent container or value -> no entry (since 1.32, PR #127193).
    An empty list is an error, as upstream.
    """
    if not items:
        raise MetricError("no metrics returned from resource metrics API")
    out: dict[str, PodMetric] = {}
    for item in items:
        total = 0
        ok = bool(item.containers)
        hit = False
        for c in item.containers:
            if container and c.name != container:
                continue
            value = c.usage.get(resource)
            if value is None:
                ok = False
                break
            hit = True
            total += value
        if container and not hit:
            ok = False
        if ok:
            out[item.pod] = PodMetric(value=total, timestamp=item.timestamp, window=item.window)
    return out
