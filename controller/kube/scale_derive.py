"""The `/scale` a target's object implies, derived as kube-apiserver derives it (pure, no I/O).

Job: let the scale reads come from a watch cache of the target's own resource instead of a GET
of `/scale` per sync. For the built-in workloads the API server builds the Scale from the object
(`scaleFromDeployment` and its StatefulSet/ReplicaSet/ReplicationController twins):

* `spec.replicas` (the API server defaults it to 1; an object without it reads as 1),
  `status.replicas` (0 when absent), `metadata.resourceVersion`;
* `status.selector` = `metav1.LabelSelectorAsSelector(spec.selector).String()`: one requirement
  per matchLabels entry (`k=v`) and per matchExpression (`k in (a,b)`, `k notin (a,b)`, `k`,
  `!k`; values sorted), all sorted by key (stable: matchLabels before expressions of the same
  key), joined by ","; a null or empty selector is "" (ReplicationController: its map selector).

For a custom resource the CRD's `subresources.scale` of the served version names where to look:
`specReplicasPath`, `statusReplicasPath` (absent field: 0) and `labelSelectorPath` (the string as
stored; no path or no field: ""), as the apiextensions-apiserver's scale handler reads them.

Non-goals: anything the API server would refuse (a value of the wrong type, an invalid selector):
those derive to None, and the caller asks the API server, which reports the error itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.kube.ports import ScaleInfo

__all__ = ["BUILTIN_SCALABLE", "CustomScalePaths", "custom_scale_paths", "label_selector_string",
           "scale_from_custom", "scale_from_workload"]

#: (group, resource) whose Scale the API server derives from spec/status/selector as below
BUILTIN_SCALABLE = frozenset({("apps", "deployments"), ("apps", "statefulsets"), ("apps", "replicasets"),
                              ("", "replicationcontrollers")})
_OPERATORS = {"In": " in ", "NotIn": " notin "}


class _NotDerivable(Exception):
    """The object holds something the API server would refuse to turn into a Scale."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomScalePaths:
    """A CRD version's `subresources.scale`: JSON paths like `.spec.replicas`."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str = ""


def _requirement(expression: Mapping[str, Any]) -> tuple[str, str]:
    key, operator = expression.get("key"), expression.get("operator")
    values = expression.get("values") or []
    if not isinstance(key, str) or not key or not isinstance(values, list) \
            or not all(isinstance(v, str) for v in values):
        raise _NotDerivable(f"malformed matchExpression {expression!r}")
    if operator in _OPERATORS:
        if not values:
            raise _NotDerivable(f"{operator} needs values")
        return key, f"{key}{_OPERATORS[operator]}({','.join(sorted(values))})"
    if operator in ("Exists", "DoesNotExist"):
        if values:
            raise _NotDerivable(f"{operator} takes no values")
        return key, key if operator == "Exists" else f"!{key}"
    raise _NotDerivable(f"unknown operator {operator!r}")


def label_selector_string(selector: Mapping[str, Any] | None) -> str:
    """`LabelSelectorAsSelector(selector).String()`. Raises ValueError on a malformed selector."""
    if not selector:
        return ""
    labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(expressions, list):
        raise ValueError(f"malformed label selector {selector!r}")
    try:
        requirements = [(str(k), f"{k}={v}") for k, v in sorted(labels.items())]
        requirements += [_requirement(e) for e in expressions]
    except _NotDerivable as err:
        raise ValueError(str(err)) from None
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def _int_field(value: Any, *, absent: int) -> int:
    if value is None:
        return absent
    if isinstance(value, bool) or not isinstance(value, int):
        raise _NotDerivable(f"{value!r} is not an integer")
    return value


def _meta_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def scale_from_workload(obj: Mapping[str, Any], resource: str) -> ScaleInfo | None:
    """A built-in workload's Scale; None when the API server would refuse to derive one."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    try:
        raw_selector = spec.get("selector")
        if resource == "replicationcontrollers":
            if raw_selector is not None and not isinstance(raw_selector, Mapping):
                return None
            selector = ",".join(f"{k}={v}" for k, v in sorted((raw_selector or {}).items()))
        else:
            selector = label_selector_string(raw_selector)
        return ScaleInfo(spec_replicas=_int_field(spec.get("replicas"), absent=1),
                         status_replicas=_int_field(status.get("replicas"), absent=0),
                         selector=selector, resource_version=_meta_version(obj))
    except (_NotDerivable, ValueError, AttributeError):
        return None


def custom_scale_paths(crd: Mapping[str, Any], version: str) -> CustomScalePaths | None:
    """The scale subresource `version` of this CRD declares; None when it declares none."""
    versions: Sequence[Any] = (crd.get("spec") or {}).get("versions") or ()
    for entry in versions:
        if isinstance(entry, Mapping) and entry.get("name") == version:
            scale = (entry.get("subresources") or {}).get("scale")
            if not isinstance(scale, Mapping) or not scale.get("specReplicasPath") \
                    or not scale.get("statusReplicasPath"):
                return None
            return CustomScalePaths(spec_replicas_path=str(scale["specReplicasPath"]),
                                    status_replicas_path=str(scale["statusReplicasPath"]),
                                    label_selector_path=str(scale.get("labelSelectorPath") or ""))
    return None


def _at(obj: Mapping[str, Any], path: str) -> Any:
    """The value at a `.a.b.c` path; None when a step is missing. Raises _NotDerivable on a
    step through something that is not an object."""
    node: Any = obj
    for step in path.lstrip(".").split("."):
        if node is None:
            return None
        if not isinstance(node, Mapping):
            raise _NotDerivable(f"{path}: {step!r} is inside a non-object")
        node = node.get(step)
    return node


def scale_from_custom(obj: Mapping[str, Any], paths: CustomScalePaths) -> ScaleInfo | None:
    """A custom resource's Scale by its CRD's paths; None when a field has the wrong type."""
    try:
        selector: Any = _at(obj, paths.label_selector_path) if paths.label_selector_path else ""
        if selector is not None and not isinstance(selector, str):
            return None
        return ScaleInfo(spec_replicas=_int_field(_at(obj, paths.spec_replicas_path), absent=0),
                         status_replicas=_int_field(_at(obj, paths.status_replicas_path), absent=0),
                         selector=selector or "", resource_version=_meta_version(obj))
    except _NotDerivable:
        return None
