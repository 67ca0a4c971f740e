"""An `autoscaling/v2` HorizontalPodAutoscaler spec (JSON) -> the algorithm's `AutoscalerSpec`.

Job: the one conversion of `spec` (scaleTargetRef, min/max, metrics, behavior) shared by the
PromAutoscaler and native-HPA readers and the conformance runner: quantities become milli-units
(`kubecommon.quantity`), metric selectors are printed as upstream prints them in names and
messages (Go's `%+v` of a `*LabelSelector`), behavior keeps unset fields unset so the algorithm
applies the API defaults, and each metric gets the `MetricQuery` the metrics port answers (or a
`FetchFailure` saying why it cannot be asked, which reconcile passes on as the observation).

Errors a user must fix in the object (missing maxReplicas, a quantity that does not parse,
min > max) raise `SpecError` naming the field. Non-goals: status, metadata, validation the API
server's schema already does beyond what keeps the algorithm safe. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.algorithm.behavior import Behavior, PolicyType, ScalingPolicy, ScalingRules, SelectPolicy
from controller.algorithm.spec import (
    AutoscalerSpec, FetchFailure, MetricSpec, MetricTarget, ObjectRef, SourceType, TargetType,
)  # fmt: skip
from controller.kube.ports import TargetRef
from controller.metrics.source import MetricQuery
from kubecommon.quantity import Quantity, QuantityError
from kubecommon.selectors import SelectorError, selector_from_label_selector

__all__ = ["DEFAULT_METRICS", "MetricPlan", "SpecError", "autoscaler_spec", "behavior", "metric_query", "metric_spec",
           "scale_target_ref", "selector_text", "source_body"]

Json = Mapping[str, Any]
MetricPlan = MetricQuery | FetchFailure  # what to ask for one metric, or why it cannot be asked

_MAX_INT32 = 2**31 - 1
# API defaulting (autoscaling/v2 SetDefaults): no metrics means CPU utilization at 80 %.
DEFAULT_METRICS: tuple[Json, ...] = (
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
)


class SpecError(ValueError):
    """The autoscaler's spec cannot be used; the message names the field (`spec.metrics[0]...`)."""


def _object(value: Any, path: str) -> Json:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(f"{path}: must be an object")
    return value


def _int(value: Any, path: str, *, minimum: int, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{path}: Required value" if value is None else f"{path}: must be an integer")
    if not minimum <= value <= _MAX_INT32:
        raise SpecError(f"{path}: Invalid value: {value}: must be between {minimum} and {_MAX_INT32}")
    return value


def _milli(body: Json, key: str, path: str) -> int | None:
    if body.get(key) is None:
        return None
    try:
        return Quantity.parse(str(body[key])).milli_value()
    except QuantityError as err:
        raise SpecError(f"{path}.{key}: {err}") from None


def selector_text(sel: Json | None) -> str:
    """The metric selector as upstream prints it with `%+v` (in metric names and messages)."""
    if sel is None:
        return "<nil>"
    labels = "".join(f"{k}: {v}," for k, v in sorted((sel.get("matchLabels") or {}).items()))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key')},Operator:{e.get('operator')},"
        f"Values:[{' '.join(e.get('values') or ())}],}},"
        for e in sel.get("matchExpressions") or ()
    )
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")  # fmt: skip


def source_body(metric: Json) -> Json:
    """The per-type member of a metrics[] entry (`resource`, `containerResource`, `pods`, ...)."""
    kind = str(metric.get("type") or "")
    body = metric.get(kind[:1].lower() + kind[1:]) if kind else None
    return body if isinstance(body, Mapping) else {}


def _target(tg: Json | None, path: str) -> MetricTarget | None:
    if not tg:
        return None
    raw_type = tg.get("type")
    try:
        target_type = TargetType(raw_type) if raw_type else None
    except ValueError:
        raise SpecError(f"{path}.type: Unsupported value: {raw_type!r}") from None
    utilization = tg.get("averageUtilization")
    if utilization is not None:
        utilization = _int(utilization, f"{path}.averageUtilization", minimum=1)
    return MetricTarget(type=target_type, average_utilization=utilization,
                        average_value=_milli(tg, "averageValue", path), value=_milli(tg, "value", path))


def metric_spec(metric: Json, path: str = "spec.metrics[0]") -> MetricSpec:
    """One metrics[] entry. An unknown `type` is kept, so the algorithm reports it."""
    kind, body = str(metric.get("type") or ""), source_body(metric)
    target = _target(_object(body.get("target"), f"{path}.target"), f"{path}.target")
    if kind in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
        return MetricSpec(type=kind, name=str(body.get("name") or ""), container=str(body.get("container") or ""),
                          target=target)  # fmt: skip
    described = body.get("describedObject")
    ref = ObjectRef(kind=str(described.get("kind") or ""), name=str(described.get("name") or ""),
                    api_version=str(described.get("apiVersion") or "")) if isinstance(described, Mapping) else None
    metric_id = _object(body.get("metric"), f"{path}.metric")
    return MetricSpec(type=kind, name=str(metric_id.get("name") or ""), target=target,
                      selector=selector_text(metric_id.get("selector")), described_object=ref)  # fmt: skip


def metric_query(metric: Json, spec: MetricSpec) -> MetricPlan:
    """What the metrics port is asked for this metric, or why it cannot be asked."""
    try:
        source = SourceType(spec.type)
    except ValueError:
        return FetchFailure(message=f"unknown metric source type {spec.type!r}")
    raw_selector = (source_body(metric).get("metric") or {}).get("selector")
    try:
        selector = str(selector_from_label_selector(raw_selector)) if raw_selector else ""
    except SelectorError as err:
        return FetchFailure(message=f"invalid metric selector: {err}")
    return MetricQuery(type=source, name=spec.name, container=spec.container, metric_selector=selector,
                       described_object=spec.described_object if source is SourceType.OBJECT else None)


def _rules(raw: Any, path: str) -> ScalingRules | None:
    if raw is None:
        return None
    body = _object(raw, path)
    window = body.get("stabilizationWindowSeconds")
    select = body.get("selectPolicy")
    try:
        select_policy = SelectPolicy(select) if select else None
    except ValueError:
        raise SpecError(f"{path}.selectPolicy: Unsupported value: {select!r}") from None
    policies = None if body.get("policies") is None else tuple(
        _policy(_object(p, f"{path}.policies[{i}]"), f"{path}.policies[{i}]")
        for i, p in enumerate(body["policies"]))
    tolerance = None
    if body.get("tolerance") is not None:
        milli = _milli(body, "tolerance", path)
        tolerance = None if milli is None else milli / 1000
    return ScalingRules(
        stabilization_window_seconds=None if window is None else _int(
            window, f"{path}.stabilizationWindowSeconds", minimum=0),
        select_policy=select_policy, policies=policies, tolerance=tolerance)


def _policy(body: Json, path: str) -> ScalingPolicy:
    kind = body.get("type")
    try:
        policy_type = PolicyType(str(kind))
    except ValueError:
        raise SpecError(f"{path}.type: Unsupported value: {kind!r}") from None
    return ScalingPolicy(type=policy_type, value=_int(body.get("value"), f"{path}.value", minimum=1),
                         period_seconds=_int(body.get("periodSeconds"), f"{path}.periodSeconds", minimum=1))


def behavior(raw: Any) -> Behavior | None:
    """`spec.behavior`; None when absent (the algorithm then uses the legacy path)."""
    if raw is None:
        return None
    body = _object(raw, "spec.behavior")
    return Behavior(scale_up=_rules(body.get("scaleUp"), "spec.behavior.scaleUp"),
                    scale_down=_rules(body.get("scaleDown"), "spec.behavior.scaleDown"))


def scale_target_ref(spec: Json) -> TargetRef:
    ref = _object(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    if not kind or not name:
        raise SpecError(f"spec.scaleTargetRef.{'kind' if not kind else 'name'}: Required value")
    return TargetRef(api_version=str(ref.get("apiVersion") or ""), kind=kind, name=name)


def autoscaler_spec(spec: Json) -> tuple[AutoscalerSpec, tuple[MetricPlan, ...]]:
    """The algorithm's spec and, in the same order as its metrics, what to ask for each."""
    minimum = _int(spec.get("minReplicas"), "spec.minReplicas", minimum=0, default=1)
    maximum = _int(spec.get("maxReplicas"), "spec.maxReplicas", minimum=1)
    if minimum > maximum:
        raise SpecError(f"spec.minReplicas: Invalid value: {minimum}: must be less than or equal to maxReplicas")
    raw_metrics = spec.get("metrics") or list(DEFAULT_METRICS)
    if not isinstance(raw_metrics, list):
        raise SpecError("spec.metrics: must be a list")
    metrics, plans = [], []
    for i, raw in enumerate(raw_metrics):
        entry = _object(raw, f"spec.metrics[{i}]")
        parsed = metric_spec(entry, f"spec.metrics[{i}]")
        metrics.append(parsed)
        plans.append(metric_query(entry, parsed))
    return (AutoscalerSpec(min_replicas=minimum, max_replicas=maximum, metrics=tuple(metrics),
                           behavior=behavior(spec.get("behavior"))), tuple(plans))
