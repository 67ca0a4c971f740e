"""metrics.k8s.io: PodMetrics and NodeMetrics from `resourceRules`, so `kubectl top` and the
HPA's resource metrics work.

Semantics of prometheus-adapter's resource provider (with metrics-server's API layer):
pods come from the pod watch cache (Running pods only), grouped by namespace, with one CPU and one
memory query per namespace, all in parallel; a pod with no CPU or no memory sample is left out of
lists (404 on get); negative values become 0; the timestamp is the earliest sample's; `window` is
`resourceRules.window`. Nodes: one CPU and one memory query; the first sample per node counts.
An object that exists but has no metrics is 404 on metrics-server's own resource names
(`podmetrics.metrics.k8s.io "ns/name" not found`, `nodemetrics.metrics.k8s.io "name" not found`).

A NaN, ±Inf or out-of-range sample (`services.values`) is dropped and counted (`dropped`), so a pod
or node with no usable sample is left out of a list as metrics-server leaves out what it cannot
measure (upstream served NaN as 0, and ±Inf failed the whole list with a 500); a get of that one
object answers 404 saying why.

Differences, on purpose: a pod with a container that has only one of the two resources (a new
container has memory before `rate()` has two CPU points) is left out of lists and 404 on get
saying which, as metrics-server serves a pod only when all its containers are measured; upstream
wrote `0` for the missing resource, so `kubectl top` and the HPA summed a pod without that
container's usage. Such a pod is counted as a drop with reason `half_measured` (a CPU and a memory
query that select different containers leave every pod out). CPU is reported in nano-cores like
metrics-server (upstream truncates to millicores); a failed query is an error (503/500) instead of
a silently empty list; large selections query the whole namespace and filter against the cache
instead of a giant `pod=~"a|b|…"` regex.

Non-goals: HTTP parsing, JSON rendering, PromQL text.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kubecommon.kube import errors as kube_errors
from kubecommon.kube.objects import KubeObject, ObjectCaches, ObjectReader
from adapter.prometheus.api import PrometheusAPI, Sample
from adapter.rules import query
from adapter.rules.compile import CompiledResourceRules
from adapter.rules.query import PromQL
from adapter.rules.resources import NODES, PODS, GroupResource
from adapter.services import errors
from adapter.services.queries import DEFAULT_LARGE_SELECTION, RenderedQueries, names_to_query
from adapter.services.values import DropSink, describe, ignore_drops, unusable
from adapter.services.results import (
    ContainerMetrics,
    NodeMetrics,
    NodeMetricsList,
    PodMetrics,
    PodMetricsList,
)
from kubecommon import status
from kubecommon.quantity import Format, Quantity, format_cpu_cores, milli_of_finite
from kubecommon.fieldselectors import FieldSelector
from kubecommon.selectors import Selector

__all__ = ["ResourceMetricsService", "ResourceQuery", "cpu_quantity", "memory_quantity"]

_METRICS_GROUP = "metrics.k8s.io"
#: the resources metrics-server's 404s name (its storage's group-resources, not the URL's)
_POD_METRICS, _NODE_METRICS = "podmetrics", "nodemetrics"
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
    #: why a sample of this object was dropped (the last reason seen), "" when none was
    unusable: list[str]

    def timestamp(self) -> float:
        return min(s.timestamp for s in (*self.cpu.values(), *self.memory.values()))

    def resources(self, container: str) -> dict[str, Quantity]:
        return {"cpu": cpu_quantity(self.cpu[container].value),
                "memory": memory_quantity(self.memory[container].value)}

    def left_out_because(self) -> str | None:
        """Why this pod cannot be served (a dropped sample, a container measured for one
        resource only, nothing at all), or None when every container has both."""
        if self.unusable:
            return describe(self.unusable[-1])
        half_measured = sorted(self.cpu.keys() ^ self.memory.keys())
        if not half_measured:
            return None
        container = half_measured[0]
        has, lacks = ("cpu", "memory") if container in self.cpu else ("memory", "cpu")
        return f'container "{container}" has {has} but no {lacks} usage'


def cpu_quantity(cores: float) -> Quantity:
    """CPU usage as metrics-server writes it (nano-cores, e.g. `1500000n`)."""
    return Quantity.parse(format_cpu_cores(cores))


def memory_quantity(num_bytes: float) -> Quantity:
    """Memory usage in BinarySI (e.g. `128Mi`); NaN and negative values are 0."""
    clean = 0.0 if math.isnan(num_bytes) or num_bytes < 0 else num_bytes
    if clean * 1000.0 < 2.0**63:
        return Quantity.from_float(clean, Format.BINARY_SI)
    return Quantity.of(Decimal(milli_of_finite(clean)).scaleb(-3), Format.BINARY_SI)  # not clamped


class ResourceMetricsService:
    def __init__(self, *, rules: CompiledResourceRules, prometheus: PrometheusAPI,
                 objects: ObjectCaches, clock: Callable[[], float],
                 large_selection: int = DEFAULT_LARGE_SELECTION, dropped: DropSink = ignore_drops) -> None:
        self._rules = rules
        self._dropped = dropped
        self._objects = objects
        self._clock = clock
        self._large_selection = large_selection
        self._queries = RenderedQueries(prometheus)
        # Result labels depend on the rules alone, but finding them may execute the rule's label
        # template: done once per (resource, level), not for every namespace of every request.
        self._result_labels: dict[tuple[str, str], query.ResultLabels] = {}

    def use_rules(self, rules: CompiledResourceRules) -> None:
        """Rules from a reloaded rule file: later requests render their queries from them."""
        self._rules = rules
        self._queries.forget()
        self._result_labels = {}

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
        unusable_by_pod: dict[str, str] = {}
        found = await self._pod_metrics([pod] if pod.phase == "Running" else [], unusable_by_pod)
        if not found:
            raise _not_found(_POD_METRICS, f"{namespace}/{name}", unusable_by_pod.get(name))
        return found[0]

    async def _pod_metrics(self, pods: Sequence[KubeObject],
                           unusable_by_pod: dict[str, str] | None = None) -> list[PodMetrics]:
        """Metrics of the pods whose containers all have usable samples; `unusable_by_pod`
        (when given) learns why a pod that has samples was left out."""
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
                why = None if found is None else found.left_out_because()
                if found is None or why is not None:
                    if found is not None and not found.unusable:  # dropped samples were counted
                        self._dropped("resource", "half_measured")
                    if why is not None and unusable_by_pod is not None:
                        unusable_by_pod[pod.name] = why
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
                entry = usage.setdefault(pod, _Usage(cpu={}, memory={}, unusable=[]))
                reason = unusable(sample.value)
                if reason is not None:
                    self._dropped("resource", reason)
                    entry.unusable.append(reason)
                    continue
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
        unusable_by_node: dict[str, str] = {}
        found = await self._node_metrics([node], unusable_by_node)
        if not found:
            reason = unusable_by_node.get(name)
            raise _not_found(_NODE_METRICS, name, None if reason is None else describe(reason))
        return found[0]

    async def _node_metrics(self, nodes: Sequence[KubeObject],
                            unusable_by_node: dict[str, str] | None = None) -> list[NodeMetrics]:
        if not nodes:
            return []
        names = self._names(nodes)
        cpu, memory = await asyncio.gather(self._query("cpu", "node", None, names),
                                           self._query("memory", "node", None, names))
        dropped: dict[str, str] = {} if unusable_by_node is None else unusable_by_node
        cpu_by = self._first_usable(cpu, self._labels("cpu", "node").object_label, dropped)
        memory_by = self._first_usable(memory, self._labels("memory", "node").object_label, dropped)
        now, window = self._clock(), self._rules.window_seconds
        result = []
        for node in sorted(nodes, key=lambda n: n.name):
            c, m = cpu_by.get(node.name), memory_by.get(node.name)
            if c is None or m is None:
                continue
            result.append(NodeMetrics(name=node.name, labels=node.labels, created=now,
                                      timestamp=min(c.timestamp, m.timestamp), window_seconds=window,
                                      usage={"cpu": cpu_quantity(c.value), "memory": memory_quantity(m.value)}))
        return result

    # --- shared ---------------------------------------------------------------------------

    def _names(self, objects: Sequence[KubeObject]) -> Sequence[str] | None:
        return names_to_query([obj.name for obj in objects], self._large_selection)

    def _first_usable(self, samples: Sequence[Sample], label: str,
                      unusable_by_name: dict[str, str]) -> dict[str, Sample]:
        """The first usable sample per object name (prometheus-adapter ignores later duplicates
        for nodes); NaN counts as usable (served as 0, as upstream), ±Inf samples are dropped,
        counted and their reason kept per name."""
        found: dict[str, Sample] = {}
        for sample in samples:
            name = sample.labels.get(label)
            if name is None or name in found:
                continue
            reason = unusable(sample.value)
            if reason is None or reason == "nan":
                # NaN is served as 0 (`cpu_quantity`, `memory_quantity`), as upstream serves a node
                # whose usage is NaN or negative: `kubectl top nodes` keeps listing it
                found[name] = sample
            else:
                self._dropped("resource", reason)
                unusable_by_name[name] = reason
        return found

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
        return await self._queries.run(key, render, what=f"{level} {resource} usage")


def _fields_match(obj: KubeObject, selector: FieldSelector | None) -> bool:
    return selector is None or selector.matches(obj.fields())


def _not_found(resource: str, name: str, why: str | None) -> status.NotFound:
    """metrics-server's 404 for an object it has no metrics of, saying why when we know."""
    error = status.NotFound.for_object(resource, _METRICS_GROUP, name)
    if why is None:
        return error
    return status.NotFound(f"{error.message}: {why}", details=error.details)
