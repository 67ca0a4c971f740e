"""metrics.k8s.io held to metrics-server, which `kubectl top` and the HPA were written against
(kubernetes-sigs/metrics-server pkg/api/pod.go, node.go, pkg/storage/pod.go): the 404 of an
object that exists but has no metrics, and a pod whose containers are not all measured."""

from __future__ import annotations

import pytest

from adapter.prometheus.api import Sample
from adapter.prometheus.fake import FakePrometheus
from adapter.services.resource_metrics import ResourceMetricsService, ResourceQuery
from kubecommon import status

from .conftest import caches, compiled, node, pod, sample

NOW = 1787220999.0
NAN = float("nan")


def _cpu(names: str) -> str:
    return f'sum(rate(container_cpu_usage_seconds_total{{namespace="ns",{names},container!="",pod!=""}}[1m])) by (pod,container)'


def _mem(names: str) -> str:
    return f'sum(container_memory_working_set_bytes{{namespace="ns",{names},container!="",pod!=""}}) by (pod,container)'


def _service(prom: FakePrometheus, *pods: str) -> ResourceMetricsService:
    rules = compiled().resource
    assert rules is not None
    return ResourceMetricsService(rules=rules, prometheus=prom, objects=caches(*(pod(p, "ns") for p in pods)),
                                  clock=lambda: NOW)


async def test_pod_that_exists_without_metrics_is_podmetrics_not_found() -> None:
    """metrics-server answers NotFound on its own resource, `podmetrics`, named `ns/name`."""
    prom = FakePrometheus()
    prom.set_query(_cpu('pod="q"'), [])
    prom.set_query(_mem('pod="q"'), [])
    with pytest.raises(status.NotFound) as caught:
        await _service(prom, "q").get_pod("ns", "q")
    assert caught.value.message == 'podmetrics.metrics.k8s.io "ns/q" not found'
    assert caught.value.details == {"name": "ns/q", "group": "metrics.k8s.io", "kind": "podmetrics"}


async def test_node_that_exists_without_metrics_is_nodemetrics_not_found() -> None:
    prom = FakePrometheus()
    prom.set_query('sum(rate(node_cpu_usage_seconds_total{node="n3"}[1m])) by (node)', [])
    prom.set_query('sum(node_memory_working_set_bytes{node="n3"}) by (node)', [])
    service = ResourceMetricsService(rules=compiled().resource, prometheus=prom,  # type: ignore[arg-type]
                                     objects=caches(nodes=[node("n3")]), clock=lambda: NOW)
    with pytest.raises(status.NotFound) as caught:
        await service.get_node("n3")
    assert caught.value.message == 'nodemetrics.metrics.k8s.io "n3" not found'
    assert caught.value.details == {"name": "n3", "group": "metrics.k8s.io", "kind": "nodemetrics"}


# (cpu samples, memory samples, the get's 404 message) of pod "p"; pod "ok" is always complete
PARTIAL = [
    pytest.param([sample(0.2, pod="p", container="app"), sample(0.1, pod="p", container="sidecar")],
                 [sample(2048, pod="p", container="app")],
                 'podmetrics.metrics.k8s.io "ns/p" not found: container "sidecar" has cpu but no memory usage',
                 id="container-without-memory"),
    pytest.param([sample(0.2, pod="p", container="app")],
                 [sample(2048, pod="p", container="app"), sample(1024, pod="p", container="new")],
                 'podmetrics.metrics.k8s.io "ns/p" not found: container "new" has memory but no cpu usage',
                 id="container-without-cpu-yet"),
    pytest.param([sample(0.2, pod="p", container="app")],
                 [sample(NAN, pod="p", container="app")],
                 'podmetrics.metrics.k8s.io "ns/p" not found: its value in Prometheus is NaN',
                 id="nan-memory-of-the-only-container"),
    pytest.param([sample(0.2, pod="p", container="app"), sample(NAN, pod="p", container="b")],
                 [sample(2048, pod="p", container="app"), sample(1024, pod="p", container="b")],
                 'podmetrics.metrics.k8s.io "ns/p" not found: its value in Prometheus is NaN',
                 id="nan-cpu-of-one-container"),
]


@pytest.mark.parametrize(("cpu", "memory", "message"), PARTIAL)
async def test_pod_with_a_container_not_fully_measured_is_left_out(
        cpu: list[Sample], memory: list[Sample], message: str) -> None:
    """metrics-server serves a pod only when every container has usage (allContainersPresent);
    upstream prometheus-adapter wrote 0 for the missing resource, so `kubectl top` and the HPA
    read a pod's CPU without its sidecar's (or memory without a new container's)."""
    prom = FakePrometheus()
    ok_cpu, ok_memory = sample(0.5, pod="ok", container="app"), sample(4096, pod="ok", container="app")
    prom.set_query(_cpu('pod=~"ok|p"'), [ok_cpu, *cpu])
    prom.set_query(_mem('pod=~"ok|p"'), [ok_memory, *memory])
    prom.set_query(_cpu('pod="p"'), cpu)
    prom.set_query(_mem('pod="p"'), memory)
    service = _service(prom, "ok", "p")
    listed = await service.list_pods("ns", ResourceQuery())
    assert [p.name for p in listed.items] == ["ok"]
    with pytest.raises(status.NotFound) as caught:
        await service.get_pod("ns", "p")
    assert caught.value.message == message


async def test_pod_with_every_container_measured_is_served_whole() -> None:
    prom = FakePrometheus()
    prom.set_query(_cpu('pod="p"'), [sample(0.25, pod="p", container="app"), sample(0, pod="p", container="proxy")])
    prom.set_query(_mem('pod="p"'), [sample(2048, pod="p", container="app"), sample(1024, pod="p", container="proxy")])
    got = await _service(prom, "p").get_pod("ns", "p")
    assert [(c.name, str(c.usage["cpu"]), str(c.usage["memory"])) for c in got.containers] == [
        ("app", "250m", "2Ki"), ("proxy", "0", "1Ki")]


async def test_a_half_measured_pod_is_counted_where_operators_look() -> None:
    """A rule pair whose CPU and memory queries select different containers (one filters
    container="POD", the other does not) leaves every pod out: /metrics says why, per pod."""
    prom = FakePrometheus()
    prom.set_query(_cpu('pod=~"p|q"'), [sample(0.2, pod="p", container="app"), sample(0.2, pod="q", container="app")])
    prom.set_query(_mem('pod=~"p|q"'), [sample(2048, pod="p", container="app"), sample(0, pod="p", container="POD"),
                                        sample(2048, pod="q", container="app"), sample(0, pod="q", container="POD")])
    drops: list[tuple[str, str]] = []
    rules = compiled().resource
    assert rules is not None
    service = ResourceMetricsService(rules=rules, prometheus=prom, objects=caches(pod("p", "ns"), pod("q", "ns")),
                                     clock=lambda: NOW, dropped=lambda api, reason: drops.append((api, reason)))
    assert (await service.list_pods("ns", ResourceQuery())).items == ()
    assert drops == [("resource", "half_measured")] * 2
