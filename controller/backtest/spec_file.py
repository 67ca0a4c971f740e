"""The spec file a backtest replays: a PromAutoscaler or an `autoscaling/v2` HPA manifest.

Converts the parsed manifest into the algorithm's `AutoscalerSpec` plus what the backtest needs
around it (name, namespace, scale target, sync period). Applies the API defaults the API server
would (minReplicas 1; no metrics means cpu at 80 % utilization). Quantities become milli-units.

Non-goals: reading files (the CLI does), talking to a cluster, the status fields. Pure.
NOTE: a second converter for the live controller is planned in controller.kube.objects; the two
should become one once it lands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.algorithm.behavior import Behavior, PolicyType, ScalingPolicy, ScalingRules, SelectPolicy
from controller.algorithm.spec import AutoscalerSpec, MetricSpec, MetricTarget, ObjectRef, SourceType, TargetType
from kubecommon.quantity import Quantity, QuantityError

__all__ = ["BacktestSpec", "SpecError", "spec_from_manifest"]

CRD_API_VERSION = "autoscaling.prom-autoscaler.io/v1alpha1"
HPA_API_VERSION = "autoscaling/v2"
DEFAULT_SYNC_PERIOD = 15.0
_KINDS = {(CRD_API_VERSION, "PromAutoscaler"), (HPA_API_VERSION, "HorizontalPodAutoscaler")}
_DEFAULT_CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                           "averageUtilization": 80}}}
Json = Mapping[str, Any]


class SpecError(ValueError):
    """The manifest is not a spec the backtest can replay; the message says which field."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BacktestSpec:
    name: str
    namespace: str
    target_kind: str
    target_name: str
    sync_period: float
    autoscaler: AutoscalerSpec
    metric_selectors: tuple[Json | None, ...]  # each metric's `metric.selector` (a LabelSelector)


def spec_from_manifest(doc: object, *, source: str = "spec") -> BacktestSpec:
    """The spec a manifest describes, or `SpecError` naming the field at fault."""
    if not isinstance(doc, Mapping):
        raise SpecError(f"{source}: expected a YAML mapping (a PromAutoscaler or HorizontalPodAutoscaler)")
    if (doc.get("apiVersion"), doc.get("kind")) not in _KINDS:
        raise SpecError(f"{source}: apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')} is neither "
                        f"{CRD_API_VERSION} PromAutoscaler nor {HPA_API_VERSION} HorizontalPodAutoscaler")
    meta, spec = doc.get("metadata") or {}, doc.get("spec")
    if not isinstance(spec, Mapping):
        raise SpecError(f"{source}: spec is missing")
    ref = spec.get("scaleTargetRef") or {}
    if not ref.get("name"):
        raise SpecError(f"{source}: spec.scaleTargetRef.name is required")
    if not isinstance(spec.get("maxReplicas"), int):
        raise SpecError(f"{source}: spec.maxReplicas is required (an integer)")
    metrics = list(spec.get("metrics") or [_DEFAULT_CPU])
    try:
        autoscaler = AutoscalerSpec(
            min_replicas=1 if spec.get("minReplicas") is None else int(spec["minReplicas"]),
            max_replicas=int(spec["maxReplicas"]),
            metrics=tuple(_metric(m, f"spec.metrics[{i}]") for i, m in enumerate(metrics)),
            behavior=_behavior(spec.get("behavior")),
        )
    except (KeyError, TypeError, ValueError, QuantityError) as err:
        raise SpecError(f"{source}: {err}") from None
    return BacktestSpec(
        name=str(meta.get("name") or ref["name"]), namespace=str(meta.get("namespace") or "default"),
        target_kind=str(ref.get("kind") or "Deployment"), target_name=str(ref["name"]),
        sync_period=float(spec.get("syncPeriodSeconds") or DEFAULT_SYNC_PERIOD),
        autoscaler=autoscaler,
        metric_selectors=tuple(_body(m).get("metric", {}).get("selector") for m in metrics),
    )


def _body(m: Json) -> Json:
    kind = str(m.get("type") or "")
    body = m.get(kind[:1].lower() + kind[1:])
    return body if isinstance(body, Mapping) else {}


def _milli(body: Json, key: str, where: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    try:
        return Quantity.parse(str(value)).milli_value()
    except QuantityError as err:
        raise ValueError(f"{where}.{key}: {err}") from None


def _target(body: Json | None, where: str) -> MetricTarget | None:
    if not body:
        return None
    kind = body.get("type")
    if kind is not None and kind not in TargetType.__members__.values():
        raise ValueError(f"{where}.type {kind!r} is not Utilization, Value or AverageValue")
    return MetricTarget(
        type=TargetType(kind) if kind else None, average_utilization=body.get("averageUtilization"),
        average_value=_milli(body, "averageValue", where), value=_milli(body, "value", where),
    )


def _metric(m: Json, where: str) -> MetricSpec:
    kind, body = str(m.get("type") or ""), _body(m)
    if kind not in SourceType.__members__.values():
        raise ValueError(f"{where}.type {kind!r} is not Resource, ContainerResource, Pods, Object or External")
    target = _target(body.get("target"), f"{where}.target")
    if kind in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
        return MetricSpec(type=kind, name=str(body.get("name", "")), container=str(body.get("container", "")),
                          target=target)
    metric, ref = body.get("metric") or {}, body.get("describedObject")
    if not metric.get("name"):
        raise ValueError(f"{where}.metric.name is required")
    obj = None
    if ref:
        obj = ObjectRef(kind=str(ref["kind"]), name=str(ref["name"]), api_version=str(ref.get("apiVersion", "")))
    return MetricSpec(type=kind, name=str(metric["name"]), target=target, described_object=obj,
                      selector=_selector_text(metric.get("selector")))


def _selector_text(sel: Json | None) -> str:
    """The metric selector as upstream prints it with `%+v` (used in metric names)."""
    if sel is None:
        return "<nil>"
    labels = "".join(f"{k}: {v}," for k, v in sorted((sel.get("matchLabels") or {}).items()))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key')},Operator:{e.get('operator')},"
        f"Values:[{' '.join(e.get('values') or ())}],}},"
        for e in sel.get("matchExpressions") or ()
    )
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")


def _rules(r: Json | None) -> ScalingRules | None:
    if r is None:
        return None
    policies = r.get("policies")
    tolerance = r.get("tolerance")
    return ScalingRules(
        stabilization_window_seconds=r.get("stabilizationWindowSeconds"),
        select_policy=SelectPolicy(r["selectPolicy"]) if r.get("selectPolicy") else None,
        policies=None if policies is None else tuple(
            ScalingPolicy(type=PolicyType(p["type"]), value=int(p["value"]), period_seconds=int(p["periodSeconds"]))
            for p in policies),
        tolerance=None if tolerance is None else Quantity.parse(str(tolerance)).as_float(),
    )


def _behavior(b: Json | None) -> Behavior | None:
    if b is None:
        return None
    return Behavior(scale_up=_rules(b.get("scaleUp")), scale_down=_rules(b.get("scaleDown")))
