"""Server-side `Table` rendering for `kubectl get` (meta.k8s.io/v1 Table).

Columns for the types people look at (pods, workloads, HPAs, nodes, services, APIServices);
everything else gets NAME and AGE as upstream's default table convertor does. Custom resources
get NAME plus their CRD's additionalPrinterColumns (JSONPath cells typed as the column says:
strings, integers, numbers, booleans, dates shown as ages; `priority` kept for `-o wide`), or
NAME and AGE when it declares none. Each row carries its object as `includeObject` asks (the
`PartialObjectMetadata` by default, the whole object for `Object`, none for `None`), as
kube-apiserver does: `kubectl get --sort-by` asks for the whole object and sorts on its fields.
Non-goals: every upstream printer column.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable, Mapping

from . import jsonpath, listing
from kubecommon.status import BadRequest

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
    cond: dict[str, Any] = next((c for c in _get(o, "status", "conditions") or []
                                 if c.get("type") == "Available"), {})
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


def _cell(column: Mapping[str, Any], obj: Obj, now: dt.datetime) -> Any:
    """One printer-column cell as apiextensions' table convertor fills it (None: `<none>`)."""
    try:
        found = jsonpath.find(obj, str(column.get("jsonPath", "")))
    except jsonpath.JsonPathError:
        return None
    if not found or found[0] is None:
        return None
    value, kind = found[0], column.get("type", "string")
    if kind == "string":
        return json.dumps(value, separators=(",", ":")) if isinstance(value, (dict, list)) \
            else (str(value).lower() if isinstance(value, bool) else str(value))
    if kind == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value) if float(value).is_integer() else None
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            then = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return human_duration((now - then).total_seconds())
    return None


def _column_definition(column: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": column.get("name", ""), "type": column.get("type", "string"),
            "format": column.get("format", ""), "description": column.get("description", ""),
            "priority": int(column.get("priority", 0))}


def _custom_table(rt: ResourceType, objects: list[Obj]) -> tuple[list[dict[str, Any]],
                                                                 list[list[Any]]]:
    """Name plus the CRD's additionalPrinterColumns (or Age when it declares none)."""
    columns = list(rt.columns) or [{"name": "Age", "type": "date",
                                    "jsonPath": ".metadata.creationTimestamp"}]
    now = dt.datetime.now(dt.timezone.utc)
    rows = [[o["metadata"]["name"], *(_cell(c, o, now) for c in columns)] for o in objects]
    return [_column_definition(c) for c in columns], rows


def _builtin_table(rt: ResourceType, objects: list[Obj]) -> tuple[list[dict[str, Any]],
                                                                  list[list[Any]]]:
    names, row = _COLUMNS.get((rt.group, rt.plural)) or ([], lambda o: [])
    columns = [{"name": n, "type": "string", "format": "", "description": n, "priority": 0}
               for n in names]
    columns.append({"name": "Age", "type": "string", "format": "", "description": "Age",
                    "priority": 0})
    return columns, [[o["metadata"]["name"], *row(o), _age(o)] for o in objects]


def include_object(query: Mapping[str, str]) -> str:
    """TableOptions' `includeObject`: Metadata (the default), Object or None; anything else is a 400."""
    value = query.get("includeObject", "") or "Metadata"
    if value not in ("Metadata", "Object", "None"):
        raise BadRequest(f"Unable to convert to Table as requested: includeObject: Invalid value: "
                         f"{json.dumps(value)}: must be 'Metadata', 'Object', 'None', or empty")
    return value


def _row_object(rt: ResourceType, obj: Obj, include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return {"apiVersion": rt.api_version, "kind": rt.kind, **obj}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table_for(rt: ResourceType, objects: list[Obj], rv: int, *, continue_token: str = "",
              include: str = "Metadata") -> dict[str, Any]:
    columns, cells = (_custom_table if rt.crd else _builtin_table)(rt, objects)
    name = {"name": "Name", "type": "string", "format": "name", "description": "Name",
            "priority": 0}
    rows: list[dict[str, Any]] = []
    for o, row in zip(objects, cells, strict=True):
        shown = _row_object(rt, o, include)
        rows.append({"cells": row} if shown is None else {"cells": row, "object": shown})
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": [name, *columns], "rows": rows}


def table(store: Store, rt: ResourceType, namespace: str | None, query: Any) -> dict[str, Any]:
    include = include_object(query)
    entries, meta = listing.list_page(store, rt, namespace, query)
    return table_for(rt, [listing.view(rt, e.obj) for e in entries], int(meta["resourceVersion"]),
                     continue_token=meta.get("continue", ""), include=include)
