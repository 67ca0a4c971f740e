"""Legacy discovery documents (APIGroupList, APIGroup, APIResourceList) for the served groups.

Shapes and rules from spec §3.2: top-level `kind`/`apiVersion: v1`; custom metrics listed as
`<resource>[.<group>]/<metric>` with the described object's scope, kind `MetricValueList`, verbs
`["get"]`; external metrics by name with kind `ExternalMetricValueList`; metrics.k8s.io has the
fixed `nodes`/`pods` entries. A list is NEVER empty (client-go treats an empty group-version as a
discovery failure): with no metrics a placeholder entry is listed, as custom-metrics-apiserver
does. Order is stable (sorted), and all subresources of one parent share one scope, because
kube-apiserver fails the whole group-version on a mismatch when converting to aggregated
discovery.

Non-goals: aggregated (apidiscovery.k8s.io/v2) documents; the middleware answers 406 for those.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from adapter.server.render_metrics import CUSTOM_GROUP as CUSTOM
from adapter.server.render_metrics import EXTERNAL_GROUP as EXTERNAL
from adapter.server.render_metrics import RESOURCE_GROUP as RESOURCE

__all__ = ["CUSTOM", "EXTERNAL", "RESOURCE", "VERSIONS", "api_group", "api_group_list", "custom_resources",
           "external_resources", "resource_list", "resource_metrics_resources"]

# Versions in priority order: the first is the preferred version.
VERSIONS: dict[str, tuple[str, ...]] = {CUSTOM: ("v1beta2", "v1beta1"), EXTERNAL: ("v1beta1",),
                                        RESOURCE: ("v1beta1",)}
JSON = dict[str, Any]


def _gv(group: str, version: str) -> JSON:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _group(group: str) -> JSON:
    versions = VERSIONS[group]
    return {"name": group, "versions": [_gv(group, v) for v in versions],
            "preferredVersion": _gv(group, versions[0])}


def api_group_list(groups: Sequence[str]) -> JSON:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in groups]}


def api_group(group: str) -> JSON:
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group)}


def _entry(name: str, namespaced: bool, kind: str, verbs: Sequence[str] = ("get",)) -> JSON:
    return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": list(verbs)}


def resource_list(group: str, version: str, resources: Sequence[JSON]) -> JSON:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
            "resources": list(resources)}


def custom_resources(infos: Iterable[Any]) -> list[JSON]:
    """Entries from `Registry.custom_metrics()` (objects with .resource, .metric, .namespaced)."""
    scope: dict[str, bool] = {}
    names: dict[str, bool] = {}
    for info in infos:
        parent = str(info.resource)
        # Namespace-describing metrics are cluster-scoped objects; the first scope seen for a
        # parent wins so that every subresource of it agrees.
        namespaced = scope.setdefault(parent, bool(info.namespaced) and parent != "namespaces")
        names.setdefault(f"{parent}/{info.metric}", namespaced)
    if not names:
        return [_entry("custommetrics", True, "MetricValueList")]
    return [_entry(name, names[name], "MetricValueList") for name in sorted(names)]


def external_resources(infos: Iterable[Any]) -> list[JSON]:
    """Entries from `Registry.external_metrics()` (objects with .metric or .name)."""
    names = sorted({str(getattr(info, "metric", None) or info.name) for info in infos})
    if not names:
        return [_entry("externalmetrics", True, "ExternalMetricValueList")]
    return [_entry(name, True, "ExternalMetricValueList") for name in names]


def resource_metrics_resources() -> list[JSON]:
    return [_entry("nodes", False, "NodeMetrics", ("get", "list")),
            _entry("pods", True, "PodMetrics", ("get", "list"))]
