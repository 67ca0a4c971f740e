"""Server-side `Table` rendering for `kubectl get` (meta.k8s.io/v1 Table).

Columns for the types people look at (pods, workloads, HPAs, nodes, services, APIServices, CRD
additionalPrinterColumns); everything else gets NAME and AGE as upstream's default table
convertor does. Non-goals: every upstream printer column.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from . import listing
from .resources import ResourceType
from .store import Obj, Store


def _age(obj: Obj) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    then = dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    return human_duration((dt.datetime.now(dt.timezone.utc) - then).total_seconds())


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration (abridged)."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    return f"{h // 24}d"


def _get(obj: Obj, *path: str) -> Any:
    node: Any = obj
    for p in path:
        node = node.get(p) if isinstance(node, dict) else None
    return node


def _pod_row(o: Obj) -> list[Any]:
    statuses = _get(o, "status", "containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    total = len(_get(o, "spec", "containers") or [])
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    return [f"{ready}/{total}", _get(o, "status", "phase") or "", restarts]


def _workload_row(o: Obj) -> list[Any]:
    status = o.get("status") or {}
    return [f"{status.get('readyReplicas', 0)}/{_get(o, 'spec', 'replicas') or 0}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0)]


def _hpa_row(o: Obj) -> list[Any]:
    ref = _get(o, "spec", "scaleTargetRef") or {}
    return [f"{ref.get('kind', '')}/{ref.get('name', '')}", _get(o, "spec", "minReplicas") or 1,
            _get(o, "spec", "maxReplicas") or 0, _get(o, "status", "currentReplicas") or 0]


def _apiservice_row(o: Obj) -> list[Any]:
    svc = _get(o, "spec", "service")
    cond = next((c for c in _get(o, "status", "conditions") or [] if c.get("type") == "Available"), {})
    available = cond.get("status", "Unknown")
    if available != "True" and cond.get("reason"):
        available = f"{available} ({cond['reason']})"
    return [f"{svc['namespace']}/{svc['name']}" if svc else "Local", available]


def _event_row(o: Obj) -> list[Any]:
    involved = o.get("involvedObject") or o.get("regarding") or {}
    last = o.get("lastTimestamp") or o.get("deprecatedLastTimestamp") or o.get("eventTime") \
        or (o.get("metadata") or {}).get("creationTimestamp")
    seen = _age({"metadata": {"creationTimestamp": last[:19] + "Z"}}) if last else "<unknown>"
    return [seen, o.get("type", ""), o.get("reason", ""),
            f"{involved.get('kind', '').lower()}/{involved.get('name', '')}",
            o.get("message") or o.get("note") or ""]


_COLUMNS: dict[tuple[str, str], tuple[list[str], Callable[[Obj], list[Any]]]] = {
    ("", "pods"): (["Ready", "Status", "Restarts"], _pod_row),
    ("apps", "deployments"): (["Ready", "Up-to-date", "Available"], _workload_row),
    ("apps", "replicasets"): (["Desired", "Current", "Ready"], lambda o: [
        _get(o, "spec", "replicas") or 0, _get(o, "status", "replicas") or 0,
        _get(o, "status", "readyReplicas") or 0]),
    ("apps", "statefulsets"): (["Ready"], lambda o: [
        f"{_get(o, 'status', 'readyReplicas') or 0}/{_get(o, 'spec', 'replicas') or 0}"]),
    ("autoscaling", "horizontalpodautoscalers"): (["Reference", "MinPods", "MaxPods", "Replicas"],
                                                  _hpa_row),
    ("", "namespaces"): (["Status"], lambda o: [_get(o, "status", "phase") or ""]),
    ("", "events"): (["Last Seen", "Type", "Reason", "Object", "Message"], _event_row),
    ("events.k8s.io", "events"): (["Last Seen", "Type", "Reason", "Object", "Message"], _event_row),
    ("", "nodes"): (["Status"], lambda o: ["Ready"]),
    ("", "services"): (["Type", "Cluster-IP"], lambda o: [
        _get(o, "spec", "type") or "", _get(o, "spec", "clusterIP") or ""]),
    ("apiregistration.k8s.io", "apiservices"): (["Service", "Available"], _apiservice_row),
}


def _crd_columns(rt: ResourceType) -> tuple[list[str], Callable[[Obj], list[Any]]]:
    names = [str(c.get("name", "")) for c in rt.columns]
    paths = [str(c.get("jsonPath", "")).lstrip(".").split(".") for c in rt.columns]
    return names, lambda o: [_get(o, *p) for p in paths]


def table_for(rt: ResourceType, objects: list[Obj], rv: int, *, continue_token: str = "") -> dict[str, Any]:
    names, row = _COLUMNS.get((rt.group, rt.plural)) or (
        _crd_columns(rt) if rt.columns else ([], lambda o: []))
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "Name",
                "priority": 0}]
    columns += [{"name": n, "type": "string", "format": "", "description": n, "priority": 0}
                for n in names]
    columns.append({"name": "Age", "type": "string", "format": "", "description": "Age",
                    "priority": 0})
    rows = [{"cells": [o["metadata"]["name"], *row(o), _age(o)],
             "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": o["metadata"]}} for o in objects]
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": columns, "rows": rows}


def table(store: Store, rt: ResourceType, namespace: str | None, query: Any) -> dict[str, Any]:
    entries, meta = listing.list_page(store, rt, namespace, query)
    return table_for(rt, [listing.view(rt, e.obj) for e in entries], int(meta["resourceVersion"]),
                     continue_token=meta.get("continue", ""))
