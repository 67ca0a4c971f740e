"""metrics.k8s.io answers as `meta.k8s.io` Tables, which `kubectl get podmetrics` and `kubectl get
nodemetrics` ask for (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...,application/json`).

The columns are metrics-server's (pkg/api/table.go): `Name`, one quantity column per resource
(`cpu`, `memory`; a pod's usage is the sum of its containers'), `Window`. Each row carries the
object as kube-apiserver's `includeObject` option says: `Metadata` (the default, a
PartialObjectMetadata, which kubectl reads the namespace from), `Object` (the whole PodMetrics or
NodeMetrics) or `None`. Which document the client prefers is decided as kube-apiserver's
negotiation does: ranges by quality, then specificity, in header order, the first it can serve.

Pure: builds dicts, no I/O, no aiohttp. Non-goals: Tables of the custom or external metrics APIs
(their objects are not served as resources kubectl gets), protobuf.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from adapter.server import render_metrics
from adapter.server.negotiation import MediaRange, parse_accept
from adapter.services.results import NodeMetrics, NodeMetricsList, PodMetrics, PodMetricsList
from kubecommon import status
from kubecommon.gotime import format_duration
from kubecommon.quantity import Quantity

__all__ = ["ResourceMetrics", "TableRequest", "render_table", "table_request"]

JSON = dict[str, Any]
ResourceMetrics = PodMetrics | PodMetricsList | NodeMetrics | NodeMetricsList

_TABLE_VERSIONS = frozenset({"v1", "v1beta1"})
_INCLUDE_OBJECT = ("None", "Metadata", "Object")
#: the quantity columns, sorted by name as metrics-server sorts the usage's resource names
_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRequest:
    #: `meta.k8s.io/<version>` of the Table
    version: str
    #: kube-apiserver's includeObject: None, Metadata or Object
    include_object: str = "Metadata"


def table_request(accept: str | None, include_object: str | None) -> TableRequest | None:
    """The Table the client prefers to plain JSON, or None when JSON comes first (or no Table
    version we serve is offered); a bad `includeObject` is the client's mistake (400)."""
    ranges = sorted(parse_accept(accept), key=_preference)
    for media in ranges:
        if media.quality <= 0:
            continue
        version = _table_version(media)
        if version is not None:
            return TableRequest(version=version, include_object=_include(include_object))
        if _is_plain_json(media):
            return None
    return None


def _preference(media: MediaRange) -> tuple[float, bool, bool]:
    """goautoneg's order: higher quality first, then concrete types before wildcards (stable)."""
    return -media.quality, media.type == "*", media.subtype == "*"


def _table_version(media: MediaRange) -> str | None:
    params = dict(media.parameters)
    if (media.type, media.subtype) != ("application", "json") or params.get("as") != "Table":
        return None
    if params.get("g") != "meta.k8s.io" or params.get("v") not in _TABLE_VERSIONS:
        return None
    return params["v"]


def _is_plain_json(media: MediaRange) -> bool:
    if any(key in ("as", "g", "v") for key, _ in media.parameters):
        return False
    return (media.type, media.subtype) in (("application", "json"), ("application", "*"), ("*", "*"))


def _include(value: str | None) -> str:
    if not value:
        return "Metadata"
    if value not in _INCLUDE_OBJECT:
        # kube-apiserver validates TableOptions before converting (optionsForTransform)
        raise status.BadRequest(f"Unable to convert to Table as requested: includeObject: Invalid value: "
                                f"{json.dumps(value)}: must be 'Metadata', 'Object', 'None', or empty")
    return value


def render_table(result: ResourceMetrics, table: TableRequest) -> JSON:
    """`result` (one object or a list) as a Table of metrics-server's columns."""
    rows = []
    match result:
        case PodMetrics() | PodMetricsList():
            for pod in (result,) if isinstance(result, PodMetrics) else result.items:
                usage = _sum(container.usage for container in pod.containers)
                rows.append(_row(table, usage, pod.window_seconds, render_metrics.render_pod_metrics(pod)))
        case NodeMetrics() | NodeMetricsList():
            for node in (result,) if isinstance(result, NodeMetrics) else result.items:
                rows.append(_row(table, node.usage, node.window_seconds, render_metrics.render_node_metrics(node)))
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{table.version}", "metadata": {},
            "columnDefinitions": _columns(_RESOURCES), "rows": rows}


def _columns(resources: Sequence[str]) -> list[JSON]:
    name = {"name": "Name", "type": "string", "format": "name", "description": "Name of the resource",
            "priority": 0}
    quantities = [{"name": r, "type": "string", "format": "quantity", "description": "", "priority": 0}
                  for r in resources]
    window = {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0}
    return [name, *quantities, window]


def _row(table: TableRequest, usage: Mapping[str, Quantity], window_seconds: float, document: JSON) -> JSON:
    """One row: the cells, and `document` (the object's own JSON) as includeObject asks."""
    cells = [document["metadata"]["name"], *(str(usage[r]) if r in usage else "0" for r in _RESOURCES),
             format_duration(window_seconds)]
    row: JSON = {"cells": cells}
    if table.include_object == "Object":
        row["object"] = document
    elif table.include_object == "Metadata":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{table.version}",
                         "metadata": document["metadata"]}
    return row


def _sum(usages: Iterable[Mapping[str, Quantity]]) -> dict[str, Quantity]:
    """Per resource, the sum of `usages` in the first one's format (apimachinery's Add)."""
    totals: dict[str, Decimal] = {}
    formats: dict[str, Quantity] = {}
    for usage in usages:
        for resource, quantity in usage.items():
            totals[resource] = totals.get(resource, Decimal(0)) + quantity.value
            formats.setdefault(resource, quantity)
    return {r: Quantity.of(total, formats[r].format) for r, total in totals.items()}
