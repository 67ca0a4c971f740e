"""Decisions as documents: what `/debug/decisions/...` serves and `explain` prints.

With `--preview-native-hpas` the controller watches autoscaling/v2 HPAs read-only, converts them
like PromAutoscalers (`controller.kube.objects`) and decides for them with the same code, but
writes nothing: not their status, not their target's `/scale`, no events (the built-in controller
owns all three). What it publishes: our desired replicas next to the HPA's own
`status.desiredReplicas` (controller.telemetry) and, per object, the last decision with its full
trace, served read-only from the controller's HTTP port at
`/debug/decisions/{kind}/{namespace}/{name}` (kind: `hpa`, `pas`, or the full or plural name).
PromAutoscalers' last decisions are served there too (their status keeps a bounded copy).

The document's `lastDecision` has exactly the shape of a PromAutoscaler's `status.lastDecision`
(built by `controller.kube.last_decision`), so `explain` renders both the same way, but is never
cut to the status copy's size: it lists every metric and step the decision used. While
spec.prediction is not Off it also has `prediction`, shaped as `status.prediction`.

A previewed HPA's history starts at its first sync in this process (after a restart or a new
leader) as upstream's does after its own restart: one recommendation of the current count, no
scale events; nothing of the HPA's status is read into it (status keeps only the last rescale's
time, and its counts are overwritten at the HPA's next sync). Until the longest of the HPA's
windows and policy periods has passed, the document's `history` says so and until when.

Non-goals: deciding (controller.reconcile), serving HTTP (controller.telemetry). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.kube.last_decision import last_decision
from controller.kube.objects import HPA_KIND, KIND, Mode
from controller.kube.prediction_status import prediction_json
from controller.kube.ports import ObjectKey
from kubecommon.kubetime import format_time
from controller.kube.status import CONFLICTING_AUTOSCALER
from controller.report import SyncReport

__all__ = ["decision_document", "decision_lookup", "resolve_kind"]

_KINDS = {
    "hpa": HPA_KIND, "hpas": HPA_KIND, "horizontalpodautoscaler": HPA_KIND, "horizontalpodautoscalers": HPA_KIND,
    "pas": KIND, "promautoscaler": KIND, "promautoscalers": KIND,
}  # fmt: skip


def resolve_kind(text: str) -> str | None:
    """`hpa`, `HorizontalPodAutoscaler`, `pas`, `promautoscalers`, ... → the kind; None if unknown."""
    return _KINDS.get(text.strip().lower().split(".", 1)[0])


def decision_document(report: SyncReport) -> dict[str, Any]:
    """The last decision of one object, JSON-ready, with its whole trace and explanation."""
    obj, d = report.autoscaler, report.decision
    preview = obj.mode is Mode.PREVIEW or obj.key.kind != KIND
    held = any(c.reason == CONFLICTING_AUTOSCALER and not c.status for c in report.extra_conditions)
    doc: dict[str, Any] = {
        "kind": obj.key.kind, "namespace": obj.key.namespace, "name": obj.key.name,
        "target": {"apiVersion": obj.target.api_version, "kind": obj.target.kind, "name": obj.target.name},
        "mode": str(obj.mode), "paused": obj.paused, "writesScale": obj.writes_scale and not preview and not held,
        "minReplicas": obj.spec.min_replicas, "maxReplicas": obj.spec.max_replicas,
        "lastDecision": last_decision(d, obj.spec.metrics, now=report.now, paused=obj.paused, preview=preview,
                                      bounded=False),
        "conditions": [{**c.to_dict(), "lastTransitionTime": _time(c.last_transition_time)}
                       for c in d.status.conditions]
                      + [{"type": c.type, "status": "True" if c.status else "False", "reason": c.reason,
                          "message": c.message} for c in report.extra_conditions],
        "trace": d.trace.to_dict(),
        "explanation": d.explain().splitlines(),
    }  # fmt: skip
    if obj.spec.prediction is not None and d.prediction is not None:
        doc["prediction"] = prediction_json(d.prediction, obj.spec.prediction.mode)
    if obj.key.kind == HPA_KIND:
        doc["hpaDesiredReplicas"] = obj.status.desired_replicas
        history = _history(report)
        if history is not None:
            doc["history"] = history
    return doc


def _history(report: SyncReport) -> dict[str, str] | None:
    """While the shadow history is younger than the HPA's windows: since when, until when, and
    what that means. Upstream restarts the same way (one recommendation of the current count, no
    scale events), but the built-in controller did not restart with us: its history is older."""
    since, until = report.history_since, report.history_until
    if since is None or until is None or report.now >= until:
        return None
    note = (f"history since {format_time(since)}: decisions inside the stabilization window may differ "
            f"from the built-in controller's until {format_time(until)}")
    return {"since": format_time(since), "until": format_time(until), "note": note}


def _time(epoch: float | None) -> str | None:
    return None if epoch is None else format_time(epoch)


def decision_lookup(
    last_report: Callable[[ObjectKey], SyncReport | None],
) -> Callable[[str, str, str], Mapping[str, Any] | None]:
    """(kind text, namespace, name) → the document, for the HTTP handler."""

    def lookup(kind_text: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        kind = resolve_kind(kind_text)
        if kind is None:
            return None
        report = last_report(ObjectKey(kind=kind, namespace=namespace, name=name))
        return None if report is None else decision_document(report)

    return lookup
