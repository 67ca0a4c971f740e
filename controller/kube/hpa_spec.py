"""An `autoscaling/v2` HorizontalPodAutoscaler spec (JSON) -> the algorithm's `AutoscalerSpec`.

Job: the one conversion of `spec` (scaleTargetRef, min/max, metrics, behavior) shared by the
PromAutoscaler and native-HPA readers and the conformance runner: quantities become milli-units
(`kubecommon.quantity`), metric selectors are printed as upstream prints them in names and
messages (Go's `%+v` of a `*LabelSelector`), behavior keeps unset fields unset so the algorithm
applies the API defaults, and each metric gets the `MetricQuery` the metrics port answers (or a
`FetchFailure` saying why it cannot be asked, which reconcile passes on as the observation).

A spec that breaks a rule of kube-apiserver's `ValidateHorizontalPodAutoscaler` raises `SpecError`
naming the field as upstream does (`spec.maxReplicas: Invalid value: 1: must be greater than or
equal to `minReplicas``). The CRD refuses the same at admission; this catches objects stored before
the CRD was upgraded, and the loop never syncs (never scales) them. An unknown metric source type
is no error here: the algorithm reports it (InvalidMetricSourceType) as upstream's controller does.
Non-goals: status, metadata, the target's API group (a scale lookup without one fails with
FailedGetScale, as upstream's controller does for HPAs stored before kube-apiserver checked it).
Pure: no I/O.
"""

from __future__ import annotations

import json
import re
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
_MAX_STABILIZATION_WINDOW = 3600  # seconds, upstream MaxStabilizationWindowSeconds
_MAX_POLICY_PERIOD = 1800  # seconds, upstream MaxPeriodSeconds
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_RESOURCE_SOURCES = (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE)
_SCALE_TO_ZERO_SOURCES = (SourceType.OBJECT, SourceType.EXTERNAL)
# API defaulting (autoscaling/v2 SetDefaults): no metrics means CPU utilization at 80 %.
DEFAULT_METRICS: tuple[Json, ...] = (
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
)


class SpecError(ValueError):
    """The autoscaler's spec cannot be used; the message names the field (`spec.metrics[0]...`)."""


def _invalid(path: str, value: Any, detail: str) -> SpecError:
    shown = json.dumps(value) if isinstance(value, str) else value
    return SpecError(f"{path}: Invalid value: {shown}: {detail}")


def _required(path: str, detail: str = "") -> SpecError:
    return SpecError(f"{path}: Required value" + (f": {detail}" if detail else ""))


def _forbidden(path: str, detail: str) -> SpecError:
    return SpecError(f"{path}: Forbidden: {detail}")


def _object(value: Any, path: str) -> Json:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(f"{path}: must be an object")
    return value


def _int(value: Any, path: str, *, minimum: int, maximum: int = _MAX_INT32, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _required(path) if value is None else SpecError(f"{path}: must be an integer")
    if value < minimum:
        raise _invalid(path, value, f"must be greater than or equal to {minimum}")
    if value > maximum:
        raise _invalid(path, value, f"must be less than or equal to {maximum}")
    return value


def _quantity(body: Json, key: str, path: str) -> Quantity | None:
    if body.get(key) is None:
        return None
    try:
        return Quantity.parse(str(body[key]))
    except QuantityError as err:
        raise SpecError(f"{path}.{key}: {err}") from None


def _milli(body: Json, key: str, path: str, *, positive: bool = False) -> int | None:
    quantity = _quantity(body, key, path)
    if quantity is None:
        return None
    if positive and quantity.value <= 0:
        raise _invalid(f"{path}.{key}", str(body[key]), "must be positive")
    try:
        return quantity.milli_value()
    except QuantityError as err:
        raise SpecError(f"{path}.{key}: {err}") from None


def _name(value: Any, path: str, *, required: str = "") -> str:
    """A name that becomes a URL path segment (upstream `IsValidPathSegmentName`)."""
    text = "" if value is None else str(value)
    if not text:
        raise _required(path, required)
    if text in (".", ".."):
        raise _invalid(path, text, f"may not be '{text}'")
    for illegal in ("/", "%"):
        if illegal in text:
            raise _invalid(path, text, f"may not contain '{illegal}'")
    return text


def selector_text(sel: Json | None) -> str:
    """The metric selector as upstream prints it with `%+v` (in metric names and messages)."""
    if sel is None:  # the generated `(*LabelSelector).String()` answers "nil" for a nil pointer
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted((sel.get("matchLabels") or {}).items()))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key')},Operator:{e.get('operator')},"
        f"Values:[{' '.join(e.get('values') or ())}],}},"
        for e in sel.get("matchExpressions") or ()
    )
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")  # fmt: skip


def _member(kind: str) -> str:
    """The metrics[] member a source type names (`ContainerResource` -> `containerResource`)."""
    return kind[:1].lower() + kind[1:]


def source_body(metric: Json) -> Json:
    """The per-type member of a metrics[] entry (`resource`, `containerResource`, `pods`, ...)."""
    kind = str(metric.get("type") or "")
    body = metric.get(_member(kind)) if kind else None
    return body if isinstance(body, Mapping) else {}


def _source_type(metric: Json, path: str) -> SourceType | None:
    """The entry's source type once its member, and only it, is set; None for an unknown type."""
    try:
        kind = SourceType(str(metric.get("type") or ""))
    except ValueError:
        return None
    expected = _member(kind)
    if metric.get(expected) is None:
        raise _required(f"{path}.{expected}", "must populate information for the given metric source")
    for other in (_member(t) for t in SourceType if t is not kind):
        if metric.get(other) is not None:
            raise _forbidden(f"{path}.{other}", "must populate the given metric source only")
    return kind


def _check_values(kind: SourceType, tg: Json, path: str) -> None:
    """Which value fields each source's target needs (upstream validate*Source)."""
    has = {key for key in ("value", "averageValue", "averageUtilization") if tg.get(key) is not None}
    if kind in _RESOURCE_SOURCES:
        if not has & {"averageUtilization", "averageValue"}:
            raise _required(f"{path}.averageUtilization", "must set either a target raw value or a target utilization")
        if {"averageUtilization", "averageValue"} <= has:
            raise _forbidden(f"{path}.averageValue", "may not set both a target raw value and a target utilization")
    elif kind is SourceType.PODS:
        if "averageValue" not in has:
            raise _required(f"{path}.averageValue", "must specify a positive target averageValue")
    elif not has & {"value", "averageValue"}:
        detail = "a target value or averageValue" if kind is SourceType.OBJECT \
            else "a target value for metric or a per-pod target"
        raise _required(f"{path}.averageValue", f"must set either {detail}")
    elif kind is SourceType.EXTERNAL and {"value", "averageValue"} <= has:
        raise _forbidden(f"{path}.value", "may not set both a target value for metric and a per-pod target")


def _target(tg: Json, kind: SourceType | None, path: str) -> MetricTarget | None:
    """The target; for an unknown source type only what can be read (the algorithm reports it)."""
    raw_type = tg.get("type")
    if not raw_type and kind is not None:
        raise _required(f"{path}.type", "must specify a metric target type")
    if not tg:
        return None
    try:
        target_type = TargetType(raw_type) if raw_type else None
    except ValueError:
        raise _invalid(f"{path}.type", str(raw_type), "must be either Utilization, Value, or AverageValue") from None
    if kind is not None:
        _check_values(kind, tg, path)
    utilization = tg.get("averageUtilization")
    if utilization is not None:
        utilization = _int(utilization, f"{path}.averageUtilization", minimum=1)
    activation = _milli(tg, "activationValue", path)
    if activation is not None and activation < 0:
        raise _invalid(f"{path}.activationValue", str(tg["activationValue"]), "must be greater than or equal to 0")
    return MetricTarget(type=target_type, average_utilization=utilization,
                        average_value=_milli(tg, "averageValue", path, positive=kind is not None),
                        value=_milli(tg, "value", path, positive=kind is not None),
                        activation_value=activation)  # fmt: skip


def _container(value: Any, path: str) -> str:
    text = "" if value is None else str(value)
    if not text:
        raise _required(path, "must specify a container")
    if len(text) > 63:
        raise _invalid(path, text, "must be no more than 63 characters")
    if not _DNS_LABEL.fullmatch(text):
        raise _invalid(path, text, "must be a lowercase RFC 1123 label: lowercase letters, digits and '-', "
                       "starting and ending with a letter or digit")
    return text


def _described_object(raw: Any, path: str) -> ObjectRef:
    ref = _object(raw, path)
    api_version = str(ref.get("apiVersion") or "")
    if api_version.count("/") > 1:
        raise _invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}")
    return ObjectRef(kind=_name(ref.get("kind"), f"{path}.kind"), name=_name(ref.get("name"), f"{path}.name"),
                     api_version=api_version)  # fmt: skip


def metric_spec(metric: Json, path: str = "spec.metrics[0]") -> MetricSpec:
    """One metrics[] entry. An unknown `type` is kept, so the algorithm reports it."""
    kind_text, body = str(metric.get("type") or ""), source_body(metric)
    kind = _source_type(metric, path)
    where = f"{path}.{_member(kind_text)}" if kind_text else path
    target = _target(_object(body.get("target"), f"{where}.target"), kind, f"{where}.target")
    if kind_text in _RESOURCE_SOURCES:
        name = str(body.get("name") or "")
        if not name:
            raise _required(f"{where}.name", "must specify a resource name")
        container = _container(body.get("container"), f"{where}.container") \
            if kind is SourceType.CONTAINER_RESOURCE else str(body.get("container") or "")
        return MetricSpec(type=kind_text, name=name, container=container, target=target)
    described = body.get("describedObject")
    if kind is SourceType.OBJECT:
        ref: ObjectRef | None = _described_object(described, f"{where}.describedObject")
    else:
        ref = ObjectRef(kind=str(described.get("kind") or ""), name=str(described.get("name") or ""),
                        api_version=str(described.get("apiVersion") or "")) if isinstance(described, Mapping) else None
    metric_id = _object(body.get("metric"), f"{where}.metric")
    name = _name(metric_id.get("name"), f"{where}.metric.name", required="must specify a metric name") \
        if kind is not None else str(metric_id.get("name") or "")
    return MetricSpec(type=kind_text, name=name, target=target, selector=selector_text(metric_id.get("selector")),
                      described_object=ref)  # fmt: skip


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


def _policies(raw: Any, path: str) -> tuple[ScalingPolicy, ...] | None:
    """None: left to the API defaults; an explicit empty list is refused, as upstream does."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise SpecError(f"{path}: must be a list")
    if not raw:
        raise _required(path, "must specify at least one Policy")
    return tuple(_policy(_object(p, f"{path}[{i}]"), f"{path}[{i}]") for i, p in enumerate(raw))


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
    tolerance = _quantity(body, "tolerance", path)
    if tolerance is not None and tolerance.value < 0:
        raise _invalid(f"{path}.tolerance", str(body["tolerance"]), "must be greater than or equal to 0")
    tolerance_milli = _milli(body, "tolerance", path)
    return ScalingRules(
        stabilization_window_seconds=None if window is None else _int(
            window, f"{path}.stabilizationWindowSeconds", minimum=0, maximum=_MAX_STABILIZATION_WINDOW),
        select_policy=select_policy, policies=_policies(body.get("policies"), f"{path}.policies"),
        tolerance=None if tolerance_milli is None else tolerance_milli / 1000)


def _policy(body: Json, path: str) -> ScalingPolicy:
    kind = body.get("type")
    try:
        policy_type = PolicyType(str(kind))
    except ValueError:
        raise SpecError(f"{path}.type: Unsupported value: {kind!r}") from None
    return ScalingPolicy(type=policy_type, value=_int(body.get("value"), f"{path}.value", minimum=1),
                         period_seconds=_int(body.get("periodSeconds"), f"{path}.periodSeconds", minimum=1,
                                             maximum=_MAX_POLICY_PERIOD))  # fmt: skip


def behavior(raw: Any) -> Behavior | None:
    """`spec.behavior`; None when absent (the algorithm then uses the legacy path)."""
    if raw is None:
        return None
    body = _object(raw, "spec.behavior")
    return Behavior(scale_up=_rules(body.get("scaleUp"), "spec.behavior.scaleUp"),
                    scale_down=_rules(body.get("scaleDown"), "spec.behavior.scaleDown"))


def scale_target_ref(spec: Json) -> TargetRef:
    ref = _object(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    kind = _name(ref.get("kind"), "spec.scaleTargetRef.kind")
    name = _name(ref.get("name"), "spec.scaleTargetRef.name")
    return TargetRef(api_version=str(ref.get("apiVersion") or ""), kind=kind, name=name)


def autoscaler_spec(spec: Json) -> tuple[AutoscalerSpec, tuple[MetricPlan, ...]]:
    """The algorithm's spec and, in the same order as its metrics, what to ask for each."""
    minimum = _int(spec.get("minReplicas"), "spec.minReplicas", minimum=0, default=1)
    maximum = _int(spec.get("maxReplicas"), "spec.maxReplicas", minimum=1)
    if minimum > maximum:
        raise _invalid("spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`")
    raw_metrics = spec.get("metrics") or list(DEFAULT_METRICS)
    if not isinstance(raw_metrics, list):
        raise SpecError("spec.metrics: must be a list")
    metrics, plans = [], []
    for i, raw in enumerate(raw_metrics):
        entry = _object(raw, f"spec.metrics[{i}]")
        parsed = metric_spec(entry, f"spec.metrics[{i}]")
        metrics.append(parsed)
        plans.append(metric_query(entry, parsed))
    if minimum == 0 and not any(m.type in _SCALE_TO_ZERO_SOURCES for m in metrics):
        raise _forbidden("spec.metrics", "must specify at least one Object or External metric to support scaling "
                         "to zero replicas")
    return (AutoscalerSpec(min_replicas=minimum, max_replicas=maximum, metrics=tuple(metrics),
                           behavior=behavior(spec.get("behavior"))), tuple(plans))
