"""The `controller_reconcile` case kind: one upstream `reconcileAutoscaler()` pass, replayed on the
real `controller.reconcile.Reconciler`.

A case becomes a cluster on the map-backed fakes (`controller.kube.fake`, `controller.metrics.fake`):
the HPA as a PromAutoscaler object, read by `controller.kube.objects` (the product's spec parser);
the target's `/scale` with its selector; the pods with their labels; the metrics APIs' answers; the
API failures the case injects. Each HPA of `other_hpa_selectors` is a PromAutoscaler of its own,
synced first, so the Reconciler's own pod claims find the ambiguity. Upstream's in-memory history
(`recommendations`, scale events) is handed over with `Reconciler.resume`. Then one
`Reconciler.sync`, and the answer is what upstream's test harness observes, read off the fakes: the
status written (or attempted), the `/scale` update, the events, whether the sync failed.

The vectors model an HPA, whose status lacks what ours adds (observedGeneration, reference, the
Paused condition, lastDecision, targetsSummary, the scaleHistory checkpoint), and they may omit
condition messages and currentMetrics. What a vector does not state is taken as unchanged since the
previous sync: a first replay learns those fields (the status the controller writes for this case),
and the reported replay runs over the vector's status laid over them. The laid-over lastDecision
has no time (the previous write was long ago), so metric values that changed are written, as
upstream writes them every sync.

Harness facts (the vectors' `conventions.controller_reconcile`) are the case's own data; nothing
here assumes them. Non-goals: deciding, selecting pods, the status-write rule (all the product's),
the unit-kind cases, output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from controller.algorithm import pods as pd
from controller.algorithm.conditions import ConditionType
from controller.algorithm.errors import MetricError
from controller.algorithm.spec import (ControllerConfig, ExternalSamples, FetchFailure, ObjectSample, Observation,
                                       PodSamples, SourceType)  # fmt: skip
from controller.kube.hpa_spec import source_body
from controller.kube.fake import FakeEventSink, FakePodLister, FakeScaleClient, FakeStatusWriter, api_error, target_key
from controller.kube.objects import API_VERSION, KIND, Autoscaler, SpecError, autoscaler_from_object
from controller.kube.ports import ObjectKey
from controller.metrics.fake import FakeMetricsSource
from controller.metrics.source import MetricQuery
from controller.reconcile import InvalidAutoscaler, Reconciler
from controller.report import SyncOutcome, WriteResult
from hack.conformance.controller_cases import (
    NOW, CaseError, as_float, gate, history, metric_items, pod, pod_metrics, readiness, t,
)  # fmt: skip
from kubecommon.kubetime import format_time

Json = dict[str, Any]

# The API failures a case may inject (`inputs.failures`), each honoured below.
FAILURES = frozenset({
    "resource_metrics_error", "custom_metrics_error", "external_metrics_error", "scale_get_error",
    "scale_update_error", "scale_update_conflict_once", "status_update_error",
})  # fmt: skip
_HPA_CONDITIONS = frozenset(str(c) for c in ConditionType)  # ours (Paused, Preview) are not upstream's


# ---- the case as Kubernetes objects ----


def _quantities(body: Any) -> Any:
    """`averageValue_milli: 500` (the vectors' milli-units) -> `averageValue: "500m"`, recursively."""
    if isinstance(body, list):
        return [_quantities(v) for v in body]
    if not isinstance(body, dict):
        return body
    out = {}
    for key, value in body.items():
        if key.endswith("_milli") and value is not None:
            out[key.removesuffix("_milli")] = f"{int(value)}m"
        else:
            out[key] = _quantities(value)
    return out


def _rules_json(rules: Json | None) -> Json | None:
    """The vectors' spelling of scaling rules -> the API's (`select_policy` -> `selectPolicy`...)."""
    if rules is None:
        return None
    out: Json = {}
    if rules.get("select_policy") is not None:
        out["selectPolicy"] = rules["select_policy"]
    if rules.get("stabilization_window_s") is not None:
        out["stabilizationWindowSeconds"] = rules["stabilization_window_s"]
    if rules.get("policies") is not None:
        out["policies"] = [{"type": p["type"], "value": p["value"], "periodSeconds": p["period_s"]}
                           for p in rules["policies"]]  # fmt: skip
    if rules.get("tolerance") is not None:
        out["tolerance"] = f"{round(as_float(rules['tolerance']) * 1000)}m"
    return out


def _spec_json(hpa: Json) -> Json:
    spec: Json = {"scaleTargetRef": hpa["scaleTargetRef"], "maxReplicas": hpa["maxReplicas"],
                  "metrics": _quantities(hpa.get("metrics") or [])}  # fmt: skip
    if hpa.get("minReplicas") is not None:
        spec["minReplicas"] = hpa["minReplicas"]
    if hpa.get("minReplicas") == 0:  # upstream's HPAScaleToZero has no cooldown: it goes to 0 when the metrics say so
        spec["scaleToZero"] = {"cooldownSeconds": 0}
    behavior = hpa.get("behavior")
    if behavior is not None:
        spec["behavior"] = {k: _rules_json(behavior.get(k)) for k in ("scaleUp", "scaleDown") if behavior.get(k)}
    return spec


def _time_text(value: Any) -> str | None:
    when = t(value)
    return None if when is None else format_time(when)


def _status_json(given: Json) -> Json:
    """The vector's previous status as the API holds it (RFC 3339 times, quantities); null fields absent."""
    out: Json = {}
    for key, value in given.items():
        if value is None:
            continue
        if key == "lastScaleTime":
            out[key] = _time_text(value)
        elif key == "conditions":
            out[key] = [{**c, "lastTransitionTime": _time_text(c.get("lastTransitionTime"))} for c in value]
        else:
            out[key] = _quantities(value)
    return {k: v for k, v in out.items() if v is not None}


def _object(spec: Json, status: Json, *, namespace: str, name: str, as_upstream: bool = False) -> Autoscaler:
    """The PromAutoscaler read by the product. Raises `SpecError` when it refuses the spec. With
    `as_upstream`, a spec kube-apiserver refuses but upstream's controller syncs as given is read
    as that controller reads it: `minReplicas: 0` without an Object or External metric, and
    targets without a type (read by their value fields)."""
    meta = {"namespace": namespace, "name": name, "uid": f"uid-{name}", "generation": 1, "resourceVersion": "1"}
    obj = {"apiVersion": API_VERSION, "kind": KIND, "spec": spec, "status": status, "metadata": meta}
    try:
        return autoscaler_from_object(obj)
    except SpecError:
        if not as_upstream:
            raise
    untyped = [not (source_body(m).get("target") or {}).get("type") for m in spec.get("metrics") or ()]
    lenient = {k: v for k, v in spec.items() if k != "minReplicas" or v != 0}
    lenient["metrics"] = [_typed(m) if bare else m for m, bare in zip(spec.get("metrics") or (), untyped, strict=True)]
    read = autoscaler_from_object({**obj, "spec": lenient})
    metrics = tuple(replace(m, target=replace(m.target, type=None)) if bare and m.target is not None else m
                    for m, bare in zip(read.spec.metrics, untyped, strict=True))  # fmt: skip
    minimum = 0 if spec.get("minReplicas") == 0 else read.spec.min_replicas
    return replace(read, spec=replace(read.spec, min_replicas=minimum, metrics=metrics))


def _typed(metric: Json) -> Json:
    """`metric` with its target's type named after the value field it sets (for the parser only)."""
    member = next((k for k in metric if k != "type"), None)
    body = metric.get(member) if member else None
    target = body.get("target") if isinstance(body, dict) else None
    if not isinstance(target, dict) or member is None or not isinstance(body, dict):
        return metric
    kind = next((t for f, t in (("averageUtilization", "Utilization"), ("averageValue", "AverageValue"),
                                ("value", "Value")) if target.get(f) is not None), None)  # fmt: skip
    return {**metric, member: {**body, "target": {**target, "type": kind}}} if kind else metric


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


def _observation(query: MetricQuery, i: Json, failures: Json) -> Observation | None:
    """What the metrics APIs answer for `query`, with the injected failures (None: not found)."""
    try:
        if query.type in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
            if failures.get("resource_metrics_error"):
                return FetchFailure(message="injected resource metrics API error")
            items = metric_items(i.get("resource_metrics") or [])
            return PodSamples(values=pd.resource_usage_by_pod(items, resource=query.name, container=query.container))
        if query.type in (SourceType.PODS, SourceType.OBJECT):
            if failures.get("custom_metrics_error"):
                return FetchFailure(message="injected custom metrics API error")
            if query.type is SourceType.PODS:
                return PodSamples(values=pod_metrics(i.get("pod_custom_metrics") or []))
            value = i.get("object_metric_value_milli")
            return None if value is None else ObjectSample(value=int(value))
        if failures.get("external_metrics_error"):  # External
            return FetchFailure(message="injected external metrics API error")
        return ExternalSamples(values=tuple(int(v) for v in i.get("external_metric_values_milli") or ()))
    except MetricError as e:
        return FetchFailure(message=str(e))


# ---- one replay ----


class _AttemptRecorder(FakeStatusWriter):
    """The fake status writer that also keeps each status it was asked to write, failed or not."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: dict[ObjectKey, Mapping[str, Any]] = {}

    async def write(self, key: ObjectKey, status: Mapping[str, Any]) -> None:
        self.attempts[key] = dict(status)
        await super().write(key, status)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Replay:
    outcome: SyncOutcome
    attempted: Mapping[str, Any] | None  # the status the sync wrote or tried to write
    events: FakeEventSink
    scale: FakeScaleClient


async def _replay(i: Json, failures: Json, stored: Json, *, as_upstream: bool) -> _Replay:
    hpa = i["hpa"]
    ns, name = str(hpa.get("namespace") or "default"), str(hpa.get("name") or "hpa")
    spec = _spec_json(hpa)
    scale, pods, metrics = FakeScaleClient(), FakePodLister(), FakeMetricsSource()
    status, events = _AttemptRecorder(), FakeEventSink()
    reconciler = Reconciler(scale=scale, pods=pods, metrics=metrics, status=status, events=events,
                            config=_config(i), is_leader=lambda: True, wall_clock=lambda: NOW)  # fmt: skip
    try:
        main = _object(spec, stored, namespace=ns, name=name, as_upstream=as_upstream)
    except SpecError as e:  # never synced: status and a Warning say why
        invalid = InvalidAutoscaler(key=ObjectKey(kind=KIND, namespace=ns, name=name), uid=f"uid-{name}",
                                    generation=1, spec_json=spec, status_json=stored, error=str(e))  # fmt: skip
        outcome = await reconciler.sync_invalid(invalid)
        return _Replay(outcome=outcome, attempted=status.attempts.get(invalid.key), events=events, scale=scale)
    given = i["scale"]
    scale.set(ns, main.target, replicas=given["spec_replicas"], status_replicas=given["status_replicas"],
              selector=given.get("status_selector") or "")  # fmt: skip
    key = target_key(ns, main.target)
    if failures.get("scale_get_error"):
        scale.get_errors[key] = api_error(500, "InternalError", "injected error getting scale")
    if failures.get("scale_update_error"):
        scale.update_errors[key] = api_error(500, "InternalError", "injected scale update error", method="PUT")
    if failures.get("scale_update_conflict_once"):
        scale.conflicts[key] = 1
    if failures.get("status_update_error"):
        status.errors[main.key] = api_error(500, "InternalError", "injected status update error", method="PUT")
    for p in i.get("pods") or ():
        pods.add(ns, pod(p), p.get("labels") or {})
    for plan in main.metric_plans:
        if isinstance(plan, MetricQuery) and (answer := _observation(plan, i, failures)) is not None:
            metrics.answer(ns, plan, answer)
    for other in i.get("other_hpa_selectors") or ():  # they synced before, and claimed their pods
        other_ns, _, other_name = str(other["hpa"]).rpartition("/")
        theirs = {**spec, "scaleTargetRef": {**spec["scaleTargetRef"], "name": f"{other_name}-target"}}
        obj = _object(theirs, {}, namespace=other_ns or ns, name=other_name, as_upstream=as_upstream)
        scale.set(obj.key.namespace, obj.target, replicas=1, selector=other["selector"])
        await reconciler.sync(obj)
    reconciler.resume(main.key, None if i.get("recommendations") is None else history(i))
    outcome = await reconciler.sync(main)
    return _Replay(outcome=outcome, attempted=status.attempts.get(main.key), events=events, scale=scale)


def _stored(given: Json, learned: Mapping[str, Any]) -> Json:
    """The status the previous sync left: what the vector states, laid over what this sync
    writes (`learned`). A condition message it omits is the one written for the same condition."""
    stored: Json = {k: v for k, v in learned.items() if k not in given}
    stored.update(given)
    written = learned.get("conditions") or []
    messages = {(c["type"], c["status"], c["reason"]): c.get("message", "") for c in written}
    stated = [c if "message" in c else {**c, "message": messages.get((c.get("type"), c.get("status"),
                                                                      c.get("reason")), "")}
              for c in given.get("conditions") or ()]  # fmt: skip
    stored["conditions"] = [*stated, *(c for c in written if c["type"] not in _HPA_CONDITIONS)]
    if isinstance(stored.get("lastDecision"), Mapping):
        stored["lastDecision"] = {k: v for k, v in stored["lastDecision"].items() if k != "time"}
    return stored


def reconcile(i: Json, *, as_upstream: bool = False) -> Json:
    """What one sync of the case's HPA observably does. `as_upstream`: as upstream's controller
    would, given a spec kube-apiserver refuses (the deviation `invalid-spec-never-synced`)."""
    failures = i.get("failures") or {}
    unknown = sorted(set(failures) - FAILURES)
    if unknown:
        raise CaseError(f"unknown injected failure(s) {unknown}")
    given = _status_json(i["hpa"].get("status") or {})
    first = asyncio.run(_replay(i, {k: v for k, v in failures.items() if k != "status_update_error"}, given,
                                as_upstream=as_upstream))
    if first.attempted is None:
        raise CaseError("the first replay wrote no status to learn the unstated fields from")
    got = asyncio.run(_replay(i, failures, _stored(given, first.attempted), as_upstream=as_upstream))
    return _observed(got, first.attempted)


def _observed(got: _Replay, learned: Mapping[str, Any]) -> Json:
    outcome = got.outcome
    status = got.attempted if got.attempted is not None else learned
    key = outcome.key
    events = [r.event.to_dict() for r in got.events.recorded if r.key == key]
    target = outcome.report.autoscaler.target.name if outcome.report is not None else None
    updates = [replicas for ns, name, replicas in got.scale.updates if (ns, name) == (key.namespace, target)]
    cpu = next((m["resource"]["current"].get("averageUtilization") for m in status.get("currentMetrics") or ()
                if m.get("type") == "Resource" and m["resource"].get("name") == "cpu"), None)  # fmt: skip
    written = outcome.status_write in (WriteResult.SUCCESS, WriteResult.ERROR)
    return {
        "status_desired_replicas": status.get("desiredReplicas"),
        "conditions": [{"type": c["type"], "status": c["status"], "reason": c["reason"], "message": c.get("message")}
                       for c in status.get("conditions") or () if c["type"] in _HPA_CONDITIONS],
        "events": events,
        "event_reasons": [e["reason"] for e in events],
        "event_created": bool(events),
        "scale_updated": bool(updates),
        "scale_updated_to": updates[-1] if updates else None,
        "reconcile_returns_error": outcome.error is not None or outcome.status_write is WriteResult.ERROR,
        "error": None if outcome.error is None else str(outcome.error),
        "status_update": written,
        "status_cpu_current_utilization_percent": cpu,
        "status_current_replicas": status.get("currentReplicas"),
    }  # fmt: skip


def is_reconcile_case(case: Mapping[str, Any]) -> bool:
    return case.get("kind") == "controller_reconcile"


def as_upstream(got: Any, case: Mapping[str, Any]) -> Json:
    """The deviation `invalid-spec-never-synced`'s normaliser: the case replayed with a spec the API
    server refuses read as upstream's controller reads it (`_object`)."""
    return reconcile(case["inputs"], as_upstream=True)
