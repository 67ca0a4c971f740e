"""Each metric of the spec -> the PromQL the adapter would run for it, through the rule file.

Resource metrics use `resourceRules` (the adapter's `containerQuery`, grouped by pod and
container, summed per pod here); Pods and Object metrics the custom rule whose series exposes
the metric for that resource (rules in file order, series in Prometheus' order, last one wins, as
the adapter's registry); External metrics the external rule that names it. The query text comes
from `adapter.rules.query`, the one renderer, so the backtest and the live controller's history
ask Prometheus exactly what the adapter would. Which series a rule exposes comes from its
`seriesQuery` answer (`SeriesShapes`), fetched by the caller.

The pod set: history outlives the pods that made it, so per-pod queries cover every pod of the
namespace (no name matcher, as the adapter does for a large selection) and the caller keeps the
pods whose name matches a regular expression (by default `default_pod_regex`: the target's name
and the suffixes its controller gives pod names). The live controller's watch cache knows only
the pods that run now, which is not the history's pod set.

Takes plain values (namespace, metric specs, selectors), not a backtest spec: the backtest and
the live controller both call it. Non-goals: fetching, the load model. Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from adapter.rules import query
from adapter.rules.compile import CompiledConfig, CompiledRule
from adapter.rules.resources import DEFAULT_TABLE, PODS, GroupResource, is_root_scoped_for_discovery
from controller.algorithm.spec import MetricSpec, SourceType
from kubecommon.selectors import SelectorError, parse_selector

__all__ = ["MetricQuery", "QueryKind", "SeriesShapes", "Unresolvable", "default_pod_regex", "resolve_all",
           "series_queries"]

# seriesQuery -> the (series name, label names) shapes Prometheus answered for it
SeriesShapes = Mapping[str, tuple[tuple[str, frozenset[str]], ...]]


class Unresolvable(ValueError):
    """A metric the rule file cannot turn into a query; the message names it and the fix."""


class QueryKind(StrEnum):
    PER_POD = "per-pod"  # Resource, ContainerResource, Pods: one value per pod
    OBJECT = "object"  # one value for the described object
    EXTERNAL = "external"  # the sum of every series


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricQuery:
    index: int
    spec: MetricSpec
    kind: QueryKind
    promql: query.PromQL
    object_label: str  # the pod (or described object) label in the result
    container_label: str = ""  # ContainerResource: keep only series of `spec.container`
    object_name: str = ""  # Object: the described object's name
    rule: str = ""  # where the rule sits in the rule file


def default_pod_regex(kind: str, name: str) -> str:
    """The target's pod names without reading its selector: a StatefulSet's are name-<ordinal>;
    a Deployment's name-<template hash>-<suffix>, a ReplicaSet's name-<suffix>. One or two segments after
    the name, never three, so the pods of a sibling Deployment `name-worker` are not taken for the target's."""
    if kind == "StatefulSet":
        return f"{re.escape(name)}-[0-9]+"
    return f"{re.escape(name)}-[a-z0-9]+(-[a-z0-9]+)?"


def series_queries(compiled: CompiledConfig, metrics: Sequence[MetricSpec]) -> tuple[str, ...]:
    """The seriesQuery strings whose answers `resolve_all` needs (none for Resource-only specs)."""
    kinds = {m.type for m in metrics}
    wanted: list[CompiledRule] = []
    if kinds & {SourceType.PODS, SourceType.OBJECT}:
        wanted += compiled.custom
    if SourceType.EXTERNAL in kinds:
        wanted += compiled.external
    return tuple(dict.fromkeys(r.series_query for r in wanted))


def resolve_all(compiled: CompiledConfig, shapes: SeriesShapes, *, namespace: str, metrics: Sequence[MetricSpec],
                metric_selectors: Sequence[str], rules_path: str) -> tuple[MetricQuery, ...]:
    """One query per metric, or `Unresolvable` for the first metric the rules cannot serve.
    `metric_selectors` holds each metric's selector in query-string form ("" for none)."""
    out = []
    for index, metric in enumerate(metrics):
        try:
            out.append(_resolve(compiled, shapes, namespace, metric_selectors[index], index, metric))
        except (query.QueryError, SelectorError) as err:
            raise Unresolvable(_hint(metric, f"the rule cannot render a query: {err}", rules_path)) from None
        except Unresolvable as err:
            raise Unresolvable(_hint(metric, str(err), rules_path)) from None
    return tuple(out)


def _hint(metric: MetricSpec, why: str, rules_path: str) -> str:
    return (f"metric {metric.type} {metric.name!r} cannot be resolved by the rules: {why}. "
            f"Run `python -m adapter check-config {rules_path} --prometheus-url URL` to see what the rules expose")


def _resolve(compiled: CompiledConfig, shapes: SeriesShapes, ns: str, metric_selector: str, index: int,
             metric: MetricSpec) -> MetricQuery:
    if metric.type in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
        return _resource(compiled, ns, index, metric)
    selector = parse_selector(metric_selector)
    if metric.type == SourceType.EXTERNAL:
        rule, series = _find_external(compiled, shapes, metric.name)
        promql = query.render_external(rule, series_name=series, namespace=ns, metric_selector=selector)
        return MetricQuery(index=index, spec=metric, kind=QueryKind.EXTERNAL, promql=promql, object_label="",
                           rule=str(rule.ref))
    if metric.type == SourceType.PODS:
        resource, names, kind = PODS, None, QueryKind.PER_POD
    else:
        ref = metric.described_object
        if ref is None:
            raise Unresolvable("an Object metric needs describedObject")
        group = ref.api_version.rpartition("/")[0] if "/" in ref.api_version else ""
        resource, names, kind = DEFAULT_TABLE.normalize_or_pass(group, ref.kind), [ref.name], QueryKind.OBJECT
    rule, series = _find_custom(compiled, shapes, resource, metric.name)
    namespace = None if is_root_scoped_for_discovery(resource) else ns
    promql = query.render_custom(rule, series_name=series, resource=resource, namespace=namespace,
                                 names=names, metric_selector=selector)
    return MetricQuery(index=index, spec=metric, kind=kind, promql=promql,
                       object_label=rule.mapper.label_for(resource), object_name=names[0] if names else "",
                       rule=str(rule.ref))


def _resource(compiled: CompiledConfig, namespace: str, index: int, metric: MetricSpec) -> MetricQuery:
    rules = compiled.resource
    if rules is None:
        raise Unresolvable("the rule file has no resourceRules")
    if metric.name not in ("cpu", "memory"):
        raise Unresolvable("resourceRules serve cpu and memory only")
    rule = rules.cpu if metric.name == "cpu" else rules.memory
    promql = query.render_resource_query(rule, level="container", namespace=namespace, names=None)
    labels = query.result_labels(rules, resource="cpu" if metric.name == "cpu" else "memory", level="container")
    return MetricQuery(index=index, spec=metric, kind=QueryKind.PER_POD, promql=promql,
                       object_label=labels.object_label, container_label=labels.container_label or "",
                       rule=str(rule.ref))


def _find_custom(compiled: CompiledConfig, shapes: SeriesShapes, resource: GroupResource,
                 metric: str) -> tuple[CompiledRule, str]:
    found: tuple[CompiledRule, str] | None = None
    for rule in compiled.custom:
        for name, labels in shapes.get(rule.series_query, ()):
            if rule.metric_name(name) == metric and resource in rule.resources_for(sorted(labels)):
                found = (rule, name)  # a later rule or series with the same key wins, as upstream
    if found is None:
        raise Unresolvable(f"no rule exposes it for {resource} (no series of any rule's seriesQuery is named "
                           f"{metric!r} with a label for {resource} in the range)")
    return found


def _find_external(compiled: CompiledConfig, shapes: SeriesShapes, metric: str) -> tuple[CompiledRule, str]:
    found: tuple[CompiledRule, str] | None = None
    for rule in compiled.external:
        for name, _labels in shapes.get(rule.series_query, ()):
            if rule.metric_name(name) == metric:
                found = (rule, name)
    if found is None:
        raise Unresolvable("no externalRules entry exposes it (no series of any externalRules seriesQuery "
                           "maps to that name in the range)")
    return found
