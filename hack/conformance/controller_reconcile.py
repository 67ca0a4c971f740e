"""The `controller_reconcile` case kind: one upstream `reconcileAutoscaler()` pass, replayed.

This module plays the I/O shell around `controller.algorithm.decide`: it lists the pods selected
by `scale.status_selector` (and detects selector problems as upstream does), answers the metrics
fetches from the case's fixtures, injects the API failures the case names, performs (or fails)
the `/scale` write and reports what upstream's test harness observes: the status written, the
scale update, the events, whether reconcile returned an error.

Harness facts (the vectors' `conventions.controller_reconcile`) are the case's own data; nothing
here assumes them. Non-goals: parsing the unit-kind cases, output. No I/O.
"""

from __future__ import annotations

from typing import Any

from controller.algorithm import behavior as bh
from controller.algorithm import pods as pd
from controller.algorithm.conditions import Condition, ConditionType, Event, EventReason, EventType, Reason
from controller.algorithm.decision import Decision, Outcome
from controller.algorithm.errors import MetricError
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, ExternalSamples, FetchFailure, HpaStatus, MetricSpec,
    MetricStatus, MetricTarget, ObjectRef, ObjectSample, Observation, PodSamples, ScaleTarget,
    SelectorProblem, SourceType, SyncInput, TargetType,
)  # fmt: skip
from controller.algorithm.sync import complete, decide, failed_get_scale
from hack.conformance.controller_cases import (
    NOW, CaseError, as_float, gate, history, metric_items, pod, pod_metrics,
    readiness, rules, t,
)  # fmt: skip
from controller.kube.hpa_spec import selector_text as _selector_text
from controller.kube.hpa_spec import source_body as _body
from kubecommon.quantity import Quantity
from kubecommon.selectors import SelectorError, parse_selector

Json = dict[str, Any]

# The API failures a case may inject (`inputs.failures`), each honoured below.
FAILURES = frozenset({
    "resource_metrics_error", "custom_metrics_error", "external_metrics_error", "scale_get_error",
    "scale_update_error", "scale_update_conflict_once", "status_update_error",
})  # fmt: skip


def _target(tg: Json | None) -> MetricTarget | None:
    if not tg:
        return None
    return MetricTarget(type=TargetType(tg["type"]) if tg.get("type") else None,
                        average_utilization=tg.get("averageUtilization"),
                        average_value=_q(tg, "averageValue"), value=_q(tg, "value"))  # fmt: skip


def _q(body: Json, key: str) -> int | None:
    """`key_milli` (milli-units) or `key` (a Quantity string, as in the API)."""
    if body.get(f"{key}_milli") is not None:
        return int(body[f"{key}_milli"])
    return None if body.get(key) is None else Quantity.parse(str(body[key])).milli_value()


def _metric_spec(m: Json) -> MetricSpec:
    kind, body = m.get("type") or "", _body(m)
    if kind in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
        return MetricSpec(type=kind, name=body.get("name", ""), container=body.get("container", ""),
                          target=_target(body.get("target")))  # fmt: skip
    metric, ref = body.get("metric") or {}, body.get("describedObject")
    obj = ObjectRef(kind=ref["kind"], name=ref["name"], api_version=ref.get("apiVersion", "")) if ref else None
    return MetricSpec(type=kind, name=metric.get("name", ""), target=_target(body.get("target")),
                      selector=_selector_text(metric.get("selector")), described_object=obj)  # fmt: skip


def _observe(spec: MetricSpec, i: Json, failures: Json) -> Observation:
    """What the metrics APIs would answer, with the injected failures."""
    try:
        if spec.type in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
            if failures.get("resource_metrics_error"):
                return FetchFailure(message="injected resource metrics API error")
            items = metric_items(i.get("resource_metrics") or [])
            return PodSamples(values=pd.resource_usage_by_pod(items, resource=spec.name, container=spec.container))
        if spec.type in (SourceType.PODS, SourceType.OBJECT):
            if failures.get("custom_metrics_error"):
                return FetchFailure(message="injected custom metrics API error")
            if spec.type == SourceType.PODS:
                return PodSamples(values=pod_metrics(i.get("pod_custom_metrics") or []))
            if i.get("object_metric_value_milli") is None:
                return FetchFailure(message="no metrics returned from custom metrics API")
            return ObjectSample(value=int(i["object_metric_value_milli"]))
        if spec.type == SourceType.EXTERNAL:
            if failures.get("external_metrics_error"):
                return FetchFailure(message="injected external metrics API error")
            return ExternalSamples(values=tuple(int(v) for v in i.get("external_metric_values_milli") or ()))
    except MetricError as e:
        return FetchFailure(message=str(e))
    return FetchFailure(message="unknown metric source type")


def _selection(i: Json, hpa: Json) -> tuple[tuple[pd.PodInfo, ...], SelectorProblem | None]:
    """List pods by `scale.status_selector`; detect the selector problems upstream reports."""
    text = i["scale"].get("status_selector") or ""
    if not text:
        return (), SelectorProblem.missing()
    try:
        selector = parse_selector(text)
    except SelectorError as e:
        return (), SelectorProblem.invalid(str(e))
    raw = [p for p in i.get("pods") or () if selector.matches(p.get("labels") or {})]
    owners = [f"{hpa.get('namespace')}/{hpa.get('name')}"]
    for other in i.get("other_hpa_selectors") or ():
        theirs = parse_selector(other["selector"])
        if any(theirs.matches(p.get("labels") or {}) for p in raw):
            owners.append(other["hpa"])
    if len(owners) > 1:
        return (), SelectorProblem.ambiguous(text, tuple(owners))
    return tuple(pod(p) for p in raw), None


def _current_metric(m: Json) -> MetricStatus | None:
    if not m or not m.get("type"):
        return None
    body = _body(m)
    cur = body.get("current") or {}
    name = body.get("name") or (body.get("metric") or {}).get("name", "")
    return MetricStatus(type=SourceType(m["type"]), name=name, container=body.get("container", ""),
                        value=_q(cur, "value"), average_value=_q(cur, "averageValue"),
                        average_utilization=cur.get("averageUtilization"))  # fmt: skip


def _status(s: Json) -> HpaStatus:
    conds = tuple(
        Condition(type=ConditionType(c["type"]), status=c["status"] == "True", reason=Reason(c["reason"]),
                  message=c.get("message", ""), last_transition_time=t(c.get("lastTransitionTime")))
        for c in s.get("conditions") or ()
    )  # fmt: skip
    return HpaStatus(current_replicas=s.get("currentReplicas") or 0, desired_replicas=s.get("desiredReplicas") or 0,
                     last_scale_time=t(s.get("lastScaleTime")), conditions=conds,
                     current_metrics=tuple(_current_metric(m) for m in s.get("currentMetrics") or ()))  # fmt: skip


def _config(i: Json) -> ControllerConfig:
    cc = i.get("controller_config") or {}
    return ControllerConfig(
        tolerance=as_float(cc.get("tolerance", 0.1)),
        downscale_stabilization=float(cc.get("downscale_stabilization_s", 300)),
        readiness=readiness(cc),
        scale_up_limit_factor=float(cc.get("scale_up_limit_factor", 2.0)),
        scale_up_limit_minimum=float(cc.get("scale_up_limit_minimum", 4.0)),
        configurable_tolerance=gate(i, "HPAConfigurableTolerance"),
        pod_level_resources=gate(i, "PodLevelResources"),
    )


def _spec(hpa: Json) -> AutoscalerSpec:
    behavior = hpa.get("behavior")
    return AutoscalerSpec(
        min_replicas=1 if hpa.get("minReplicas") is None else hpa["minReplicas"],
        max_replicas=hpa["maxReplicas"], metrics=tuple(_metric_spec(m) for m in hpa.get("metrics") or ()),
        behavior=None if behavior is None else bh.Behavior(scale_up=rules(behavior.get("scaleUp")),
                                                           scale_down=rules(behavior.get("scaleDown"))),
    )  # fmt: skip


def _sync(i: Json, hpa: Json, hist: bh.ScaleHistory | None, failures: Json) -> Decision:
    spec = _spec(hpa)
    listed, problem = _selection(i, hpa)
    scale = ScaleTarget(spec_replicas=i["scale"]["spec_replicas"], status_replicas=i["scale"]["status_replicas"])
    inp = SyncInput(spec=spec, scale=scale, now=NOW, status=_status(hpa.get("status") or {}), pods=listed,
                    history=hist, observations=tuple(_observe(m, i, failures) for m in spec.metrics),
                    selector_problem=problem)  # fmt: skip
    d = decide(inp, _config(i))
    if d.write:  # a conflict once is retried by the shell (re-GET, update again); an error is final
        d = complete(d, write_error="injected scale update error" if failures.get("scale_update_error") else None,
                     now=NOW)  # fmt: skip
    return d


def _status_update(d: Decision, given: Json) -> bool:
    """Whether upstream would write status. Vectors may omit condition messages in the input
    status; then messages cannot take part in the comparison."""
    if all("message" in c for c in given.get("conditions") or ()):
        return d.status_changed
    old, new = d.previous_status, d.status
    return (old.current_replicas, old.desired_replicas, old.last_scale_time,
            [(c.type, c.status, c.reason) for c in old.conditions]) != (
        new.current_replicas, new.desired_replicas, new.last_scale_time,
        [(c.type, c.status, c.reason) for c in new.conditions]) or (
        "currentMetrics" in given and old.current_metrics != new.current_metrics)  # fmt: skip


def reconcile(i: Json) -> Json:
    hpa, failures = i["hpa"], i.get("failures") or {}
    unknown = sorted(set(failures) - FAILURES)
    if unknown:
        raise CaseError(f"unknown injected failure(s) {unknown}")
    hist = None if i.get("recommendations") is None else history(i)
    if failures.get("scale_get_error"):
        d = failed_get_scale(_status(hpa.get("status") or {}), "injected error getting scale", now=NOW, history=hist)
    else:
        d = _sync(i, hpa, hist, failures)
    status_update = _status_update(d, hpa.get("status") or {})
    events = [e.to_dict() for e in d.events]
    if failures.get("status_update_error") and status_update:  # upstream updateStatus's Warning
        events.append(Event(type=EventType.WARNING, reason=EventReason.FAILED_UPDATE_STATUS,
                            message="injected status update error").to_dict())  # fmt: skip
    cpu = next((m.average_utilization for m in d.status.current_metrics
                if m is not None and m.type is SourceType.RESOURCE and m.name == "cpu"), None)  # fmt: skip
    return {
        "status_desired_replicas": d.status.desired_replicas,
        "conditions": [{"type": str(c.type), "status": "True" if c.status else "False", "reason": str(c.reason),
                        "message": c.message} for c in d.status.conditions],
        "events": events,
        "event_reasons": [e["reason"] for e in events],
        "event_created": bool(events),
        "scale_updated": d.outcome is Outcome.SCALED,
        "scale_updated_to": d.desired_replicas if d.outcome is Outcome.SCALED else None,
        "reconcile_returns_error": d.error is not None
        or bool(failures.get("status_update_error") and status_update),
        "status_update": status_update,
        "status_cpu_current_utilization_percent": cpu,
        "status_current_replicas": d.status.current_replicas,
    }  # fmt: skip
