"""Pod grouping, requests and per-pod usage: TestGroupPods / TestCalculateRequests ported, plus
the resource metrics client's summing rules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.algorithm import pods as pd
from controller.algorithm.errors import MetricError
from controller.algorithm.pods import ContainerInfo, ContainerUsage, PodInfo, PodMetric, PodMetricsItem, ReadyStatus
from tests.unit.controller.algorithm.harness import NOW, READINESS, ZERO

SUCCEEDED = pd.PodPhase.SUCCEEDED


def pod(name: str, *, phase: pd.PodPhase = SUCCEEDED, start: float | None = None,
        ready: ReadyStatus | None = None, transition: float | None = None, deleted: bool = False) -> PodInfo:  # fmt: skip
    return PodInfo(name=name, phase=phase, start_time=start, ready=ready, ready_transition=transition,
                   deleted=deleted)  # fmt: skip


def sample(value: int = 1, timestamp: float = ZERO, window: float = 0.0) -> PodMetric:
    return PodMetric(value=value, timestamp=timestamp, window=window)


T, F = ReadyStatus.TRUE, ReadyStatus.FALSE


@pytest.mark.parametrize(
    ("pods", "metrics", "resource", "expected"),
    [
        pytest.param([], {}, "cpu", (0, (), (), ()), id="void"),
        pytest.param([pod("bentham")], {"bentham": sample(timestamp=NOW, window=60)}, "memory", (1, (), (), ()),
                     id="count in a ready pod - memory"),
        pytest.param([pod("lucretius", start=NOW)], {"lucretius": sample()}, "cpu", (0, ("lucretius",), (), ()),
                     id="ignore a pod without ready condition - CPU"),
        pytest.param([pod("bentham", start=NOW - 60, ready=T, transition=NOW - 30)],
                     {"bentham": sample(timestamp=NOW, window=30)}, "cpu", (1, (), (), ()),
                     id="count in a ready pod with fresh metrics during initialization period - CPU"),
        pytest.param([pod("bentham", start=NOW - 60, ready=T, transition=NOW - 30)],
                     {"bentham": sample(timestamp=NOW, window=60)}, "cpu", (0, ("bentham",), (), ()),
                     id="ignore a ready pod without fresh metrics during initialization period - CPU"),
        pytest.param([pod("lucretius", start=NOW - 600, ready=F, transition=NOW - 594)],
                     {"lucretius": sample()}, "cpu", (0, ("lucretius",), (), ()),
                     id="ignore an unready pod during initialization period - CPU"),
        pytest.param([pod("bentham", start=NOW - 180, ready=T, transition=NOW - 180)],
                     {"bentham": sample(timestamp=NOW - 120, window=60)}, "cpu", (1, (), (), ()),
                     id="count in a ready pod without fresh metrics after initialization period - CPU"),
        pytest.param([pod("lucretius", start=NOW - 600, ready=F, transition=NOW - 540)],
                     {"lucretius": sample()}, "cpu", (1, (), (), ()),
                     id="count in an unready pod that was ready after initialization period - CPU"),
        pytest.param([pod("lucretius", start=NOW - 600, ready=F, transition=NOW - 595)],
                     {"lucretius": sample()}, "cpu", (0, ("lucretius",), (), ()),
                     id="ignore pod that has never been ready after initialization period - CPU"),
        pytest.param([pod("epicurus", start=NOW - 180)], {}, "cpu", (0, (), ("epicurus",), ()), id="a missing pod"),
        pytest.param([pod("lucretius", start=NOW), pod("niccolo", start=NOW - 180, ready=T, transition=NOW - 180),
                      pod("epicurus", start=NOW - 180)],
                     {"lucretius": sample(), "niccolo": sample()}, "cpu", (1, ("lucretius",), ("epicurus",), ()),
                     id="several pods"),
        pytest.param([pod("unscheduled", phase=pd.PodPhase.PENDING)], {}, "cpu", (0, ("unscheduled",), (), ()),
                     id="pending pods are unready"),
        pytest.param([pod("unscheduled", phase=pd.PodPhase.PENDING)], {"unscheduled": sample()}, "",
                     (0, ("unscheduled",), (), ()), id="pending pods are unready even with a sample, any metric"),
        pytest.param([pod("failed", phase=pd.PodPhase.FAILED)], {"failed": sample()}, "cpu", (0, (), (), ("failed",)),
                     id="Failed pods are ignored"),
        pytest.param([pod("gone", phase=pd.PodPhase.RUNNING, ready=T, start=ZERO, deleted=True)], {"gone": sample()},
                     "cpu", (0, (), (), ("gone",)), id="pods being deleted are ignored"),
        pytest.param([pod("notready", phase=pd.PodPhase.RUNNING, ready=F, start=NOW)], {}, "cpu",
                     (0, (), ("notready",), ()), id="a NotReady pod without a sample is missing, not unready"),
        pytest.param([pod("mem", phase=pd.PodPhase.RUNNING, ready=F, start=NOW)], {"mem": sample()}, "memory",
                     (1, (), (), ()), id="readiness is ignored for memory"),
        pytest.param([pod("custom", phase=pd.PodPhase.RUNNING, ready=None, start=None)], {"custom": sample()}, "",
                     (1, (), (), ()), id="readiness is ignored for Pods metrics"),
    ],
)  # fmt: skip
def test_group_pods_matches_upstream(pods: list[PodInfo], metrics: dict, resource: str, expected: tuple) -> None:
    g = pd.group_pods(pods, metrics, resource=resource, now=NOW, readiness=READINESS)
    assert (g.ready_count, g.unready, g.missing, g.ignored) == expected


def test_unready_ready_condition_unknown_counts_like_true() -> None:
    p = pod("u", phase=pd.PodPhase.RUNNING, start=NOW - 600, ready=ReadyStatus.UNKNOWN, transition=NOW - 600)
    g = pd.group_pods([p], {"u": sample()}, resource="cpu", now=NOW, readiness=READINESS)
    assert g.ready_count == 1


def cpod(name: str, *requests: int | None, pod_level: int | None = None, names: tuple[str, ...] = ()) -> PodInfo:
    containers = tuple(
        ContainerInfo(name=names[i] if i < len(names) else f"container{i + 1}",
                      requests={} if r is None else {"cpu": r})
        for i, r in enumerate(requests)
    )  # fmt: skip
    return PodInfo(name=name, containers=containers, pod_requests=None if pod_level is None else {"cpu": pod_level})


def memory_pod(name: str, *cpu: int | None) -> PodInfo:
    """Containers with the given cpu requests and a pod-level *memory* request only."""
    return replace(cpod(name, *cpu), pod_requests={"memory": 256_000})


@pytest.mark.parametrize(
    ("pods", "container", "pod_level", "expected"),
    [
        pytest.param([cpod("test-pod", 100, 50)], "", False, {"test-pod": 150},
                     id="Sum container requests if pod-level feature is disabled"),
        pytest.param([cpod("test-pod", 100, 50, pod_level=800)], "", True, {"test-pod": 800},
                     id="Pod-level requests override container requests"),
        pytest.param([cpod("test-pod", 100, 50)], "", True, {"test-pod": 150},
                     id="Pod-level resources enabled but not set: sum container requests"),
        pytest.param([cpod("test-pod", None, 50, pod_level=800)], "", True, {"test-pod": 800},
                     id="Pod-level requests win even when a container lacks one"),
        pytest.param([cpod("test-pod", 100, 50, pod_level=800)], "container2", True, {"test-pod": 50},
                     id="a named container uses its own request, not pod-level"),
        pytest.param([cpod("a", 100, 50), cpod("b", 10, 20)], "", False, {"a": 150, "b": 30}, id="several pods"),
        pytest.param([], "", False, {}, id="void"),
        # PodRequests = containers' aggregate overridden by pod-level values: a pod that sets only
        # a pod-level memory request still gets its cpu from the containers that request it.
        pytest.param([memory_pod("test-pod", 100, None)], "", True, {"test-pod": 100},
                     id="pod-level set for memory only: cpu from the containers that request it"),
        pytest.param([memory_pod("test-pod", 100, None)], "", False, None,
                     id="pod-level feature off: a container without cpu fails as usual"),
    ],
)  # fmt: skip
def test_calculate_requests(pods: list[PodInfo], container: str, pod_level: bool, expected: dict | None) -> None:
    if expected is None:
        with pytest.raises(MetricError, match="missing request for cpu in container container2 of Pod test-pod"):
            pd.calculate_requests(pods, resource="cpu", container=container, pod_level=pod_level)
        return
    assert pd.calculate_requests(pods, resource="cpu", container=container, pod_level=pod_level) == expected


def init(name: str, cpu: int | None, *, sidecar: bool = False) -> ContainerInfo:
    return ContainerInfo(name=name, requests={} if cpu is None else {"cpu": cpu}, restartable_init=sidecar)


@pytest.mark.parametrize(
    ("inits", "expected"),
    [
        pytest.param((init("setup", 500),), 500, id="a plain init container larger than the containers wins"),
        pytest.param((init("proxy", 50, sidecar=True), init("setup", 80)), 150,
                     id="a sidecar adds to the containers; a smaller plain init after it does not"),
        pytest.param((init("proxy", 50, sidecar=True), init("setup", 300)), 350,
                     id="a plain init container runs beside the sidecars started before it"),
        pytest.param((init("setup", 300), init("proxy", 50, sidecar=True)), 300,
                     id="a plain init container before the sidecar runs alone"),
        pytest.param((init("setup", None),), 100, id="an init container without cpu adds nothing"),
    ],
)  # fmt: skip
def test_pod_level_aggregate_follows_aggregate_container_requests(inits: tuple, expected: int) -> None:
    """component-helpers AggregateContainerRequests: max(containers + sidecars, peak while init
    containers run), used when pod-level requests are set but not for this resource."""
    sidecars = tuple(c for c in inits if c.restartable_init)
    p = replace(memory_pod("test-pod", 100), init_containers=inits)
    p = replace(p, containers=(*p.containers, *sidecars))
    assert pd.calculate_requests([p], resource="cpu", pod_level=True) == {"test-pod": expected}


@pytest.mark.parametrize(
    ("pod_level", "expected"),
    [
        pytest.param({"cpu": 800}, 850, id="pod-level cpu plus the overhead"),
        pytest.param({"memory": 256_000}, 150, id="containers' aggregate plus the overhead"),
    ],
)
def test_pod_level_requests_include_the_pod_overhead(pod_level: dict, expected: int) -> None:
    """PodRequests(pod, PodResourcesOptions{}) adds spec.overhead (e.g. a RuntimeClass's)."""
    p = replace(cpod("test-pod", 100), pod_requests=pod_level, overhead={"cpu": 50})
    assert pd.calculate_requests([p], resource="cpu", pod_level=True) == {"test-pod": expected}
    # Without pod-level requests the container sum is used, and upstream adds no overhead.
    assert pd.calculate_requests([replace(p, pod_requests=None)], resource="cpu", pod_level=True) == {"test-pod": 100}


def test_pod_level_requests_without_the_resource_anywhere_name_the_pod() -> None:
    """Upstream calculatePodLevelRequests: "missing pod-level request for cpu in Pod P"."""
    with pytest.raises(MetricError, match="^missing pod-level request for cpu in Pod test-pod$"):
        pd.calculate_requests([memory_pod("test-pod", None, None)], resource="cpu", pod_level=True)


@pytest.mark.parametrize(
    ("pods", "container", "message"),
    [
        pytest.param([cpod("test-pod", None, 50)], "", "missing request for cpu in container container1 of Pod test-pod",
                     id="Return error if missing request for container"),
        pytest.param([cpod("test-pod", 100, 50)], "sidecar", "container sidecar not found in Pod test-pod",
                     id="a named container that is absent"),
        pytest.param([cpod("ok", 100), cpod("bad", None)], "", "missing request for cpu in container container1 of Pod bad",
                     id="any pod without a request fails the metric"),
    ],
)  # fmt: skip
def test_calculate_requests_errors(pods: list[PodInfo], container: str, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        pd.calculate_requests(pods, resource="cpu", container=container)


def item(pod_name: str, *usages: tuple[str, int | None]) -> PodMetricsItem:
    return PodMetricsItem(pod=pod_name, timestamp=NOW - 5, window=30.0, containers=tuple(
        ContainerUsage(name=n, usage={} if u is None else {"cpu": u}) for n, u in usages))  # fmt: skip


@pytest.mark.parametrize(
    ("items", "container", "expected"),
    [
        pytest.param([item("p", ("a", 100), ("b", 50))], "", {"p": 150}, id="pod value is the sum over containers"),
        pytest.param([item("p", ("a", 100), ("b", None))], "", {}, id="a container without the resource: no entry"),
        pytest.param([item("p")], "", {}, id="a pod without containers: no entry"),
        pytest.param([item("p", ("a", 100), ("b", 50))], "b", {"p": 50}, id="ContainerResource takes that container"),
        pytest.param([item("p", ("a", 100))], "b", {}, id="ContainerResource, container absent: no entry (1.32+)"),
    ],
)  # fmt: skip
def test_resource_usage_by_pod(items: list[PodMetricsItem], container: str, expected: dict) -> None:
    got = pd.resource_usage_by_pod(items, resource="cpu", container=container)
    assert {k: v.value for k, v in got.items()} == expected
    assert all(v.timestamp == NOW - 5 and v.window == 30.0 for v in got.values())


def test_resource_usage_by_pod_empty_list_is_an_error() -> None:
    with pytest.raises(MetricError, match="no metrics returned from resource metrics API"):
        pd.resource_usage_by_pod([], resource="cpu")


def test_running_and_ready_counts_only_running_ready_pods() -> None:
    pods = [
        PodInfo(name="a"),
        PodInfo(name="b", ready=ReadyStatus.FALSE),
        PodInfo(name="c", phase=pd.PodPhase.PENDING),
        PodInfo(name="d", deleted=True),  # upstream does not exclude deleting pods here
    ]
    assert pd.running_and_ready(pods) == 2
