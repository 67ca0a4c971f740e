"""Conversion between events.k8s.io/v1 Events and core/v1 Events, which share one storage.

kube-apiserver stores both as one internal type; we store the core/v1 shape and convert the
events.k8s.io/v1 view on the way in and out, field by field as upstream's conversion does.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

# (events.k8s.io/v1 field, core/v1 field)
_RENAMES = (
    ("regarding", "involvedObject"), ("note", "message"), ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"), ("reportingController", "reportingComponent"),
)
_SAME = ("metadata", "eventTime", "series", "action", "reason", "type", "related",
         "reportingInstance")


def to_core(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
    for new, old in _RENAMES:
        if new in obj:
            out[old] = obj[new]
    for name in _SAME:
        if name in obj:
            out[name] = obj[name]
    out.setdefault("involvedObject", {})
    return out


def from_core(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for new, old in _RENAMES:
        if old in obj and obj[old] not in (None, {}, ""):
            out[new] = obj[old]
    for name in _SAME:
        if name in obj:
            out[name] = obj[name]
    out.setdefault("eventTime", None)
    return out
