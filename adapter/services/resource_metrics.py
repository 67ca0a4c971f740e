"""metrics.k8s.io: PodMetrics and NodeMetrics from `resourceRules`, so `kubectl top` and the
HPA's resource metrics work.

Semantics of prometheus-adapter's resource provider (with metrics-server's API layer):
pods come from the pod watch cache (Running pods only), grouped by namespace, with one CPU and one
memory query per namespace, all in parallel; a pod with no CPU or no memory sample is left out of
lists (404 on get); a container with only one resource gets `0` for the other; NaN and negative
values become 0; the timestamp is the earliest sample's; `window` is `resourceRules.window`.
Nodes: one CPU and one memory query; the first sample per node counts.

Differences, on purpose: CPU is reported in nano-cores like metrics-server (upstream truncates to
millicores); a failed query is an error (503/500) instead of a silently empty list; large selections
query the whole namespace and filter against the cache instead of a giant `pod=~"a|b|…"` regex.

Non-goals: HTTP parsing, JSON rendering, PromQL text.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from kubecommon.kube import errors as kube_errors
from kubecommon.kube.objects import KubeObject, ObjectCaches, ObjectReader
from adapter.prometheus.api import PrometheusAPI, Sample
from adapter.rules import query
from adapter.rules.compile import CompiledResourceRules
from adapter.rules.query import PromQL
from adapter.rules.resources import NODES, PODS, GroupResource
from adapter.services import errors
from adapter.services.custom_metrics import DEFAULT_LARGE_SELECTION, KEPT_QUERIES
from adapter.services.results import (
    ContainerMetrics,
    NodeMetrics,
    NodeMetricsList,
    PodMetrics,
    PodMetricsList,
)
from kubecommon import status
from kubecommon.lru import LRUCache
from kubecommon.quantity import Format, Quantity, format_cpu_cores
from kubecommon.fieldselectors import FieldSelector
from kubecommon.selectors import Selector

__all__ = ["ResourceMetricsService", "ResourceQuery"]

_METRICS_GROUP = "metrics.k8s.io"
_PARALLEL_NAMESPACES = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceQuery:
    """List options of a metrics.k8s.io request."""

    label_selector: Selector = Selector.empty()
    field_selector: FieldSelector | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Usage:
    """CPU and memory samples of one object, keyed by container ("" for nodes)."""

    cpu: dict[str, Sample]
    memory: dict[str, Sample]

    def timestamp(self) -> float:
        return min(s.timestamp for s in (*self.cpu.values(), *self.memory.values()))

    def resources(self, container: str) -> dict[str, Quantity]:
        cpu, memory = self.cpu.get(container), self.memory.get(container)
        return {"cpu": _cpu(cpu.value if cpu else 0.0), "memory": _memory(memory.value if memory else 0.0)}


def _cpu(cores: float) -> Quantity:
    return Quantity.parse(format_cpu_cores(cores))


def _memory(num_bytes: float) -> Quantity:
    clean = 0.0 if math.isnan(num_bytes) or num_bytes < 0 else num_bytes
    return Quantity.from_float(clean, Format.BINARY_SI)


class ResourceMetricsService:
    def __init__(self, *, rules: CompiledResourceRules, prometheus: PrometheusAPI,
                 objects: ObjectCaches, clock: Callable[[], float],
                 large_selection: int = DEFAULT_LARGE_SELECTION) -> None:
        self._rules = rules
        self._prometheus = prometheus
        self._objects = objects
        self._clock = clock
        self._large_selection = large_selection
        self._queries: LRUCache[Hashable, PromQL] = LRUCache(KEPT_QUERIES)
        # Result labels depend on the rules alone, but finding them may execute the rule's label
        # template: done once per (resource, level), not for every namespace of every request.
        self._result_labels: dict[tuple[str, str], query.ResultLabels] = {}

    # --- pods -----------------------------------------------------------------------------

    async def list_pods(self, namespace: str | None, options: ResourceQuery) -> PodMetricsList:
        reader = await self._reader(PODS)
        pods = [pod for pod in reader.list(namespace, options.label_selector)
                if pod.phase == "Running" and _fields_match(pod, options.field_selector)]
        return PodMetricsList(items=tuple(await self._pod_metrics(pods)))

    async def get_pod(self, namespace: str, name: str) -> PodMetrics:
        pod = (await self._reader(PODS)).get(namespace, name)
        if pod is None:
            raise status.NotFound.for_object("pods", "", name)
        found = await self._pod_metrics([pod] if pod.phase == "Running" else [])
        if not found:
            raise status.NotFound.for_object("pods", _METRICS_GROUP, f"{namespace}/{name}")
        return found[0]

    async def _pod_metrics(self, pods: Sequence[KubeObject]) -> list[PodMetrics]:
        by_namespace: dict[str, list[KubeObject]] = {}
        for pod in pods:
            by_namespace.setdefault(pod.namespace, []).append(pod)
        # Two queries per namespace, as upstream, but at most _PARALLEL_NAMESPACES at a time so
        # `kubectl top pods -A` on a cluster of many namespaces does not flood Prometheus.
        gate = asyncio.Semaphore(_PARALLEL_NAMESPACES)

        async def usage_of(namespace: str, group: list[KubeObject]) -> dict[str, _Usage]:
            async with gate:
                return await self._pod_usage(namespace, group)

        usages = await asyncio.gather(*(usage_of(ns, group) for ns, group in by_namespace.items()))
        now, window = self._clock(), self._rules.window_seconds
        result = []
        for group, usage in zip(by_namespace.values(), usages, strict=True):
            for pod in group:
                found = usage.get(pod.name)
                if found is None or not found.cpu or not found.memory:
                    continue
                containers = tuple(ContainerMetrics(name=c, usage=found.resources(c))
                                   for c in sorted({*found.cpu, *found.memory}))
                result.append(PodMetrics(name=pod.name, namespace=pod.namespace, labels=pod.labels,
                                         created=now, timestamp=found.timestamp(),
                                         window_seconds=window, containers=containers))
        result.sort(key=lambda p: (p.namespace, p.name))
        return result

    async def _pod_usage(self, namespace: str, pods: Sequence[KubeObject]) -> dict[str, _Usage]:
        names = self._names(pods)
        cpu, memory = await asyncio.gather(
            self._query("cpu", "container", namespace, names),
            self._query("memory", "container", namespace, names))
        usage: dict[str, _Usage] = {}
        picks: tuple[tuple[list[Sample], query.ResourceName], ...] = ((cpu, "cpu"), (memory, "memory"))
        for samples, pick in picks:
            labels = self._labels(pick, "container")
            for sample in samples:
                pod = sample.labels.get(labels.object_label)
                container = sample.labels.get(labels.container_label or "")
                if pod is None or container is None:
                    continue
                entry = usage.setdefault(pod, _Usage(cpu={}, memory={}))
                (entry.cpu if pick == "cpu" else entry.memory)[container] = sample
        return usage

    # --- nodes ----------------------------------------------------------------------------

    async def list_nodes(self, options: ResourceQuery) -> NodeMetricsList:
        reader = await self._reader(NODES)
        nodes = [node for node in reader.list(None, options.label_selector)
                 if _fields_match(node, options.field_selector)]
        return NodeMetricsList(items=tuple(await self._node_metrics(nodes)))

    async def get_node(self, name: str) -> NodeMetrics:
        node = (await self._reader(NODES)).get(None, name)
        if node is None:
            raise status.NotFound.for_object("nodes", "", name)
        found = await self._node_metrics([node])
        if not found:
            raise status.NotFound.for_object("nodes", _METRICS_GROUP, name)
        return found[0]

    async def _node_metrics(self, nodes: Sequence[KubeObject]) -> list[NodeMetrics]:
        if not nodes:
            return []
        names = self._names(nodes)
        cpu, memory = await asyncio.gather(self._query("cpu", "node", None, names),
                                           self._query("memory", "node", None, names))
        cpu_by = _first_by(cpu, self._labels("cpu", "node").object_label)
        memory_by = _first_by(memory, self._labels("memory", "node").object_label)
        now, window = self._clock(), self._rules.window_seconds
        result = []
        for node in sorted(nodes, key=lambda n: n.name):
            c, m = cpu_by.get(node.name), memory_by.get(node.name)
            if c is None or m is None:
                continue
            result.append(NodeMetrics(name=node.name, labels=node.labels, created=now,
                                      timestamp=min(c.timestamp, m.timestamp), window_seconds=window,
                                      usage={"cpu": _cpu(c.value), "memory": _memory(m.value)}))
        return result

    # --- shared ---------------------------------------------------------------------------

    def _names(self, objects: Sequence[KubeObject]) -> list[str] | None:
        names = [obj.name for obj in objects]
        return names if len(names) <= self._large_selection else None

    async def _reader(self, resource: GroupResource) -> ObjectReader:
        try:
            return await errors.kube_guarded(self._objects.reader(resource))
        except kube_errors.UnknownResource as err:  # pods and nodes: the API server is broken
            raise status.InternalError.wrapping("unable to list matching resources") from err

    def _labels(self, resource: query.ResourceName, level: query.Level) -> query.ResultLabels:
        found = self._result_labels.get((resource, level))
        if found is None:  # a rule that maps no label raises each time, as before: nothing kept
            with errors.query_errors(f"{level} {resource}", "usage", unmapped_is_not_found=False):
                found = query.result_labels(self._rules, resource=resource, level=level)
            self._result_labels[resource, level] = found
        return found

    async def _query(self, resource: query.ResourceName, level: query.Level, namespace: str | None,
                     names: Sequence[str] | None) -> list[Sample]:
        def render() -> PromQL:
            with errors.query_errors(f"{level} {resource}", "usage", unmapped_is_not_found=False):
                return query.render_resource(self._rules, resource=resource, level=level,
                                             namespace=namespace, names=names)

        key = (resource, level, namespace, None if names is None else tuple(names))
        promql = self._queries.get_or_compute(key, render)
        return await errors.guarded(self._prometheus.query(promql), what=f"{level} {resource} usage")


def _fields_match(obj: KubeObject, selector: FieldSelector | None) -> bool:
    return selector is None or selector.matches(obj.fields())


def _first_by(samples: Sequence[Sample], label: str) -> dict[str, Sample]:
    """The first sample per object name: prometheus-adapter ignores later duplicates for nodes."""
    found: dict[str, Sample] = {}
    for sample in samples:
        name = sample.labels.get(label)
        if name is not None and name not in found:
            found[name] = sample
    return found
