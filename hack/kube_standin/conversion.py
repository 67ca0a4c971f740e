"""Versions that share one storage: events.k8s.io/v1 Events with core/v1 Events, and
autoscaling/v1 HorizontalPodAutoscalers with autoscaling/v2.

kube-apiserver stores one internal type and converts per request; we store the core/v1 Event
and the autoscaling/v2 HPA shapes and convert the other view on the way in and out, field by
field as upstream's conversions do. Non-goals: round-tripping v2-only HPA fields through v1
(upstream keeps them in annotations; here a v1 write replaces the metrics with the CPU target).
Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import Any

from .resources import ResourceType

Obj = dict[str, Any]

# (events.k8s.io/v1 field, core/v1 field)
_EVENT_RENAMES = (
    ("regarding", "involvedObject"), ("note", "message"), ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"), ("reportingController", "reportingComponent"),
)
_EVENT_SAME = ("metadata", "eventTime", "series", "action", "reason", "type", "related",
               "reportingInstance")


def storage_view(rt: ResourceType) -> tuple[str, str, str] | None:
    """(group, version, plural) of the type whose shape is stored, when it is another one."""
    if rt.group == "events.k8s.io":
        return ("", "v1", "events")
    if (rt.group, rt.version, rt.plural) == ("autoscaling", "v1", "horizontalpodautoscalers"):
        return ("autoscaling", "v2", "horizontalpodautoscalers")
    return None


def to_storage(rt: ResourceType, obj: Obj) -> Obj:
    if rt.group == "events.k8s.io":
        return _event_to_core(obj)
    if storage_view(rt) is not None:
        return _hpa_v1_to_v2(obj)
    return obj


def from_storage(rt: ResourceType, obj: Obj) -> Obj:
    if rt.group == "events.k8s.io":
        return _event_from_core(obj)
    if storage_view(rt) is not None:
        return _hpa_v2_to_v1(obj)
    return obj


def _event_to_core(obj: Obj) -> Obj:
    out: Obj = {"apiVersion": "v1", "kind": "Event"}
    for new, old in _EVENT_RENAMES:
        if new in obj:
            out[old] = obj[new]
    for name in _EVENT_SAME:
        if name in obj:
            out[name] = obj[name]
    out.setdefault("involvedObject", {})
    return out


def _event_from_core(obj: Obj) -> Obj:
    out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for new, old in _EVENT_RENAMES:
        if old in obj and obj[old] not in (None, {}, ""):
            out[new] = obj[old]
    for name in _EVENT_SAME:
        if name in obj:
            out[name] = obj[name]
    out.setdefault("eventTime", None)
    return out


def _hpa_v1_to_v2(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["apiVersion"] = "autoscaling/v2"
    spec = out.get("spec") or {}
    target = spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None:
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": target}}}]
    status = out.get("status") or {}
    current = status.pop("currentCPUUtilizationPercentage", None)
    if current is not None:
        status["currentMetrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": current}}}]
    return out


def _hpa_v2_to_v1(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["apiVersion"] = "autoscaling/v1"
    spec = out.get("spec") or {}
    for metric in spec.pop("metrics", None) or []:
        res = metric.get("resource") or {}
        if metric.get("type") == "Resource" and res.get("name") == "cpu" \
                and (res.get("target") or {}).get("type") == "Utilization":
            spec["targetCPUUtilizationPercentage"] = res["target"].get("averageUtilization")
    spec.pop("behavior", None)
    status = out.get("status") or {}
    for metric in status.pop("currentMetrics", None) or []:
        res = metric.get("resource") or {}
        if metric.get("type") == "Resource" and res.get("name") == "cpu":
            value = (res.get("current") or {}).get("averageUtilization")
            if value is not None:
                status["currentCPUUtilizationPercentage"] = value
    status.pop("conditions", None)
    return out
