"""Small readers shared by the controller end-to-end tests: conditions, events, scale writes."""

from __future__ import annotations

from typing import Any

from hack.stack.controller_stack import ControllerProcess, ControllerStack

PAS = "promautoscalers.autoscaling.prom-autoscaler.io"
SCALE_PATH = r"/scale$"


def condition(stack: ControllerStack, namespace: str, name: str, ctype: str) -> dict[str, Any] | None:
    obj = stack.get(PAS, namespace, name) or {}
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def has_condition(stack: ControllerStack, namespace: str, name: str, ctype: str, status: str,
                  reason: str) -> bool:
    cond = condition(stack, namespace, name, ctype)
    return cond is not None and cond.get("status") == status and cond.get("reason") == reason


def event_reasons(stack: ControllerStack, namespace: str, name: str) -> list[str]:
    return [e.get("reason", "") for e in stack.events(namespace, name)]


def scale_writes(*replicas: ControllerProcess, since: float = 0.0, ok_only: bool = True) -> int:
    """PUT/PATCH requests to any /scale subresource the replicas sent (the injected ones excluded)."""
    total = 0
    for replica in replicas:
        for method in ("PUT", "PATCH"):
            for rec in replica.proxy.records(method, SCALE_PATH, since=since):
                if not ok_only or (200 <= rec.status < 300):
                    total += 1
    return total


_REVIEWS = ("/tokenreviews", "/subjectaccessreviews")


def writes(replica: ControllerProcess, *, since: float = 0.0) -> list[str]:
    """Every non-GET request except Lease and Event traffic and the reviews that check who reads the
    metrics port (TokenReview, SubjectAccessReview: they store nothing): what 'writes nothing' forbids."""
    out = []
    for method in ("PUT", "PATCH", "POST", "DELETE"):
        for rec in replica.proxy.records(method, since=since):
            if "/leases" not in rec.path and "/events" not in rec.path and not rec.path.endswith(_REVIEWS):
                out.append(f"{rec.method} {rec.path}")
    return out


def controller_events(stack: ControllerStack, namespace: str) -> list[str]:
    """Events the controller recorded on anything but its Lease, as "Kind/name reason"."""
    out = []
    for e in stack.events(namespace):
        component = e.get("reportingComponent") or (e.get("source") or {}).get("component") or ""
        if component.startswith("prom-autoscaler") and (e.get("involvedObject") or {}).get("kind") != "Lease":
            involved = e.get("involvedObject") or {}
            out.append(f"{involved.get('kind')}/{involved.get('name')} {e.get('reason')}")
    return out
