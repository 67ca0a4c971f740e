"""ResourceMetricsService: PodMetrics/NodeMetrics as prometheus-adapter's resource provider builds
them (cases ported from pkg/resourceprovider/provider_test.go), plus our get/404 wording."""

from __future__ import annotations

import pytest

from adapter.prometheus import errors as prom_errors
from adapter.prometheus.fake import FakePrometheus
from adapter.services import errors
from adapter.services.resource_metrics import ResourceMetricsService, ResourceQuery
from kubecommon import status
from kubecommon.fieldselectors import parse_field_selector
from kubecommon.selectors import parse_selector

from .conftest import caches, compiled, node, pod, sample

NOW = 1787220999.0


def _cpu(ns: str, names: str) -> str:
    return f'sum(rate(container_cpu_usage_seconds_total{{namespace="{ns}",{names},container!="",pod!=""}}[1m])) by (pod,container)'


def _mem(ns: str, names: str) -> str:
    return f'sum(container_memory_working_set_bytes{{namespace="{ns}",{names},container!="",pod!=""}}) by (pod,container)'


def _service(prom: FakePrometheus, objects, *, large: int = 100) -> ResourceMetricsService:
    rules = compiled().resource
    assert rules is not None
    return ResourceMetricsService(rules=rules, prometheus=prom, objects=objects, clock=lambda: NOW,
                                  large_selection=large)


def _two_namespaces() -> FakePrometheus:
    prom = FakePrometheus()
    prom.set_query(_cpu("some-ns", 'pod=~"pod1|pod3"'), [
        sample(1.1, 10, pod="pod1", container="cont1"), sample(1.11, 20, pod="pod1", container="cont2"),
        sample(1.3, 10, pod="pod3", container="cont1")])
    prom.set_query(_mem("some-ns", 'pod=~"pod1|pod3"'), [
        sample(3100, 11, pod="pod1", container="cont1"), sample(3110, 21, pod="pod1", container="cont2"),
        sample(3300, 11, pod="pod3", container="cont1")])
    prom.set_query(_cpu("other-ns", 'pod="pod27"'), [sample(2.2, 270, pod="pod27", container="cont1")])
    prom.set_query(_mem("other-ns", 'pod="pod27"'), [sample(4200, 271, pod="pod27", container="cont1")])
    return prom


def _pods_two_namespaces():
    return caches(pod("pod1", "some-ns", app="a"), pod("pod3", "some-ns", app="b"),
                  pod("pod27", "other-ns", app="a"), pod("pending", "some-ns", phase="Pending", app="a"))


async def test_pods_across_namespaces_one_query_pair_per_namespace() -> None:
    prom = _two_namespaces()
    result = await _service(prom, _pods_two_namespaces()).list_pods(None, ResourceQuery())
    assert [(p.namespace, p.name, p.timestamp, p.window_seconds, p.created) for p in result.items] == [
        ("other-ns", "pod27", 270, 60, NOW), ("some-ns", "pod1", 10, 60, NOW), ("some-ns", "pod3", 10, 60, NOW)]
    pod1 = result.items[1]
    assert [(c.name, str(c.usage["cpu"]), str(c.usage["memory"])) for c in pod1.containers] == [
        ("cont1", "1100m", "3100"), ("cont2", "1110m", "3110")]
    assert pod1.labels == {"app": "a"}
    assert len(prom.query_calls) == 4, "Pending pods are not queried"


async def test_negative_values_become_zero() -> None:
    # NaN and a container measured for one resource only leave the pod out (metrics-server's
    # rule): test_resource_metrics_upstream.py
    prom = FakePrometheus()
    prom.set_query(_cpu("ns", 'pod="p"'), [sample(-1.1, pod="p", container="a"),
                                          sample(0.5, pod="p", container="b")])
    prom.set_query(_mem("ns", 'pod="p"'), [sample(2048, pod="p", container="a"),
                                          sample(-5, pod="p", container="b")])
    [p] = (await _service(prom, caches(pod("p", "ns"))).list_pods("ns", ResourceQuery())).items
    assert [(c.name, str(c.usage["cpu"]), str(c.usage["memory"])) for c in p.containers] == [
        ("a", "0", "2Ki"), ("b", "500m", "0")]


async def test_cpu_is_reported_in_nanocores_like_metrics_server() -> None:
    prom = FakePrometheus()
    prom.set_query(_cpu("ns", 'pod="p"'), [sample(0.004123456, pod="p", container="a")])
    prom.set_query(_mem("ns", 'pod="p"'), [sample(14499840, pod="p", container="a")])
    [p] = (await _service(prom, caches(pod("p", "ns"))).list_pods("ns", ResourceQuery())).items
    assert {k: str(v) for k, v in p.containers[0].usage.items()} == {"cpu": "4123456n", "memory": "14160Ki"}


async def test_pod_without_cpu_or_memory_is_left_out_of_lists_and_404_on_get() -> None:
    prom = FakePrometheus()
    prom.set_query(_cpu("ns", 'pod=~"p|q"'), [sample(1, pod="p", container="a"), sample(1, pod="q", container="a")])
    prom.set_query(_mem("ns", 'pod=~"p|q"'), [sample(1, pod="p", container="a")])
    service = _service(prom, caches(pod("p", "ns"), pod("q", "ns")))
    assert [p.name for p in (await service.list_pods("ns", ResourceQuery())).items] == ["p"]
    with pytest.raises(status.NotFound) as caught:
        await service.get_pod("ns", "q")
    assert caught.value.message == 'podmetrics.metrics.k8s.io "ns/q" not found'
    assert caught.value.details == {"name": "ns/q", "group": "metrics.k8s.io", "kind": "podmetrics"}


async def test_get_of_unknown_pod_is_404_for_the_pod() -> None:
    with pytest.raises(status.NotFound) as caught:
        await _service(FakePrometheus(), caches()).get_pod("ns", "web-9")
    assert caught.value.message == 'pods "web-9" not found'


async def test_label_and_field_selectors_filter_pods() -> None:
    prom = _two_namespaces()
    for make in (_cpu, _mem):  # only pod1 is selected in some-ns
        prom.set_query(make("some-ns", 'pod="pod1"'), [
            s for s in prom.queries[make("some-ns", 'pod=~"pod1|pod3"')] if s.labels["pod"] == "pod1"])
    service = _service(prom, _pods_two_namespaces())
    by_label = await service.list_pods(None, ResourceQuery(label_selector=parse_selector("app=a")))
    by_field = await service.list_pods("some-ns", ResourceQuery(
        field_selector=parse_field_selector("metadata.name!=pod3")))
    assert [p.name for p in by_label.items] == ["pod27", "pod1"]
    assert [p.name for p in by_field.items] == ["pod1"]


async def test_large_pod_selection_queries_namespace_and_answers_identically() -> None:
    prom = _two_namespaces()
    extra = [sample(9, pod="other", container="x")]
    prom.set_query(_cpu("some-ns", "").replace(",,", ","), [*prom.queries[_cpu("some-ns", 'pod=~"pod1|pod3"')], *extra])
    prom.set_query(_mem("some-ns", "").replace(",,", ","), [*prom.queries[_mem("some-ns", 'pod=~"pod1|pod3"')], *extra])
    objects = _pods_two_namespaces()
    small = await _service(prom, objects).list_pods("some-ns", ResourceQuery())
    large = await _service(prom, objects, large=1).list_pods("some-ns", ResourceQuery())
    assert large == small and len(small.items) == 2
    assert prom.query_calls[-1][0] == 'sum(container_memory_working_set_bytes{namespace="some-ns",container!="",pod!=""}) by (pod,container)'


async def test_nodes_first_sample_counts_and_timestamp_is_the_earliest() -> None:
    prom = FakePrometheus()
    prom.set_query('sum(rate(node_cpu_usage_seconds_total{node=~"n1|n2|n3"}[1m])) by (node)',
                   [sample(1.1, 10, node="n1"), sample(5, 5, node="n1"), sample(1.2, 14, node="n2")])
    prom.set_query('sum(node_memory_working_set_bytes{node=~"n1|n2|n3"}) by (node)',
                   [sample(2100, 11, node="n1"), sample(2200, 12, node="n2")])
    service = _service(prom, caches(nodes=[node("n2"), node("n1", zone="a"), node("n3")]))
    result = await service.list_nodes(ResourceQuery())
    assert [(n.name, n.timestamp, str(n.usage["cpu"]), str(n.usage["memory"])) for n in result.items] == [
        ("n1", 10, "1100m", "2100"), ("n2", 12, "1200m", "2200")]
    with pytest.raises(status.NotFound, match='^nodemetrics.metrics.k8s.io "n3" not found$'):
        await service.get_node("n3")
    with pytest.raises(status.NotFound, match='^nodes "n4" not found$'):
        await service.get_node("n4")


async def test_prometheus_down_is_503_not_an_empty_list() -> None:
    prom = FakePrometheus()
    prom.set_query('sum(rate(node_cpu_usage_seconds_total{node="n1"}[1m])) by (node)',
                   prom_errors.PrometheusUnreachable("refused"))
    with pytest.raises(errors.MetricsUnavailable):
        await _service(prom, caches(nodes=[node("n1")])).list_nodes(ResourceQuery())


class _Counting(FakePrometheus):
    """Answers every query with one sample per pod and records how many ran at once."""

    def __init__(self) -> None:
        super().__init__()
        self.running = self.peak = 0

    async def query(self, promql, *, time=None):  # type: ignore[no-untyped-def]
        import asyncio

        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0)  # let the other queries start
        self.running -= 1
        namespace = promql.split('namespace="')[1].split('"')[0]
        return [sample(1, pod=f"p-{namespace}", container="c")]


async def test_all_namespaces_are_queried_a_few_namespaces_at_a_time() -> None:
    prom = _Counting()
    objects = caches(*(pod(f"p-ns{i}", f"ns{i}") for i in range(20)))
    result = await _service(prom, objects).list_pods(None, ResourceQuery())
    assert len(result.items) == 20
    assert 2 <= prom.peak <= 16, "two queries per namespace, at most 8 namespaces at once"
