"""Per-type defaulting, validation and selectable fields, after the upstream registry strategies.

Only what clients of this project observe: workload selectors must match their templates,
Service cluster IPs and port defaults, Namespace phase, HPA v2 defaults (minReplicas, default
CPU metric, behavior policies), CRD naming rules, APIService shape. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from kubecommon.selectors import (SelectorError, selector_from_label_selector,
                                  validate_label_name, validate_label_value)
from kubecommon.status import BadRequest, Invalid

from . import structural
from .resources import ResourceType

Causes = list[tuple[str, str]]
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Types whose names are only required to be valid path segments (upstream ValidatePathSegmentName).
_PATH_SEGMENT_NAMES = frozenset({"clusterroles", "clusterrolebindings", "roles", "rolebindings",
                                 "apiservices"})
_DNS_LABEL_NAMES = frozenset({"namespaces", "services"})

_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100,
                                                     "periodSeconds": 15}]}


def validate_name(rt: ResourceType, name: str) -> Causes:
    if not name:
        return [("metadata.name", "Required value: name or generateName is required")]
    if rt.plural in _PATH_SEGMENT_NAMES:
        ok = name not in (".", "..") and "/" not in name and "%" not in name
        msg = "may not contain '/' or '%'"
    elif rt.plural in _DNS_LABEL_NAMES:
        ok = len(name) <= 63 and bool(_DNS_LABEL.fullmatch(name))
        msg = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
               "or '-', and must start and end with an alphanumeric character")
    else:
        ok = len(name) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(name))
        msg = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
               "characters, '-' or '.', and must start and end with an alphanumeric character")
    return [] if ok else [("metadata.name", f'Invalid value: "{name}": {msg}')]


def apply_defaults(rt: ResourceType, obj: dict[str, Any], *, allocate_ip: Callable[[], str],
                   creating: bool) -> None:
    """Fill server-side defaults in place (the object is a fresh copy owned by the caller)."""
    spec = obj.get("spec")
    key = (rt.group, rt.plural)
    if key == ("", "namespaces"):
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = \
            obj["metadata"]["name"]
    elif key == ("", "secrets"):
        obj.setdefault("type", "Opaque")
    elif key == ("", "pods"):
        obj.setdefault("status", {}).setdefault("phase", "Pending")
        if isinstance(spec, dict):
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("serviceAccountName", "default")
    elif key == ("", "services") and isinstance(spec, dict):
        spec.setdefault("type", "ClusterIP")
        if creating and "clusterIP" not in spec:
            spec["clusterIP"] = allocate_ip()
        if spec.get("clusterIP") and spec["clusterIP"] != "None":
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
        spec.setdefault("sessionAffinity", "None")
    elif rt.group == "apps" and isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        if rt.plural == "deployments":
            spec.setdefault("progressDeadlineSeconds", 600)
            spec.setdefault("strategy", {"type": "RollingUpdate", "rollingUpdate": {
                "maxUnavailable": "25%", "maxSurge": "25%"}})
        if rt.plural == "statefulsets":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault("updateStrategy", {"type": "RollingUpdate",
                                               "rollingUpdate": {"partition": 0}})
    elif key == ("autoscaling", "horizontalpodautoscalers") and isinstance(spec, dict):
        _default_hpa(spec)
    elif key == ("apiregistration.k8s.io", "apiservices") and isinstance(spec, dict):
        if isinstance(spec.get("service"), dict):
            spec["service"].setdefault("port", 443)


def _default_hpa(spec: dict[str, Any]) -> None:
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for name, defaults in (("scaleUp", _SCALE_UP), ("scaleDown", _SCALE_DOWN)):
            rules = behavior.get(name) or {}
            merged = {**defaults, **{k: v for k, v in rules.items() if v is not None}}
            if name == "scaleDown" and "stabilizationWindowSeconds" not in rules:
                merged["stabilizationWindowSeconds"] = None
            behavior[name] = {k: v for k, v in merged.items() if v is not None}


def _validate_metadata(obj: dict[str, Any]) -> Causes:
    causes: Causes = []
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, dict):
        return [("metadata.labels", "Invalid value: must be a map of strings")]
    for key, value in labels.items():
        try:
            validate_label_name(str(key))
        except SelectorError as e:
            causes.append(("metadata.labels", f'Invalid value: "{key}": {e}'))
        try:
            if not isinstance(value, str):
                raise SelectorError("must be a string")
            validate_label_value(value)
        except SelectorError as e:
            causes.append(("metadata.labels", f'Invalid value: "{value}": {e}'))
    return causes


def _validate_pod_spec(spec: dict[str, Any], path: str) -> Causes:
    containers = spec.get("containers")
    if not containers:
        return [(f"{path}.containers", "Required value")]
    causes: Causes = []
    for i, c in enumerate(containers):
        if not c.get("name"):
            causes.append((f"{path}.containers[{i}].name", "Required value"))
        if not c.get("image"):
            causes.append((f"{path}.containers[{i}].image", "Required value"))
    return causes


def validate(rt: ResourceType, obj: dict[str, Any]) -> Causes:
    causes = _validate_metadata(obj)
    if not causes and rt.crd and rt.schema:
        return structural.validate(obj, rt.schema)
    return causes or _validate_kind(rt, obj)


def admit_custom(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Schema defaults and pruning of a custom resource, in place; the pruned field paths."""
    if not rt.schema:
        return []
    structural.apply_defaults(obj, rt.schema)
    return structural.prune(obj, rt.schema)


_CAUSE_REASONS = {"Required value": "FieldValueRequired", "Unsupported value": "FieldValueNotSupported",
                  "Too long": "FieldValueTooLong", "Too many": "FieldValueTooMany",
                  "Duplicate value": "FieldValueDuplicate", "Forbidden": "FieldValueForbidden"}


def invalid(rt: ResourceType, name: str, causes: Causes) -> Invalid:
    """422 Invalid worded like apierrors.NewInvalid: `Kind.group "name" is invalid: field: msg`."""
    kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    texts = [f"{f}: {m}" for f, m in causes]
    text = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name, "kind": rt.kind, "causes": [
        {"reason": _CAUSE_REASONS.get(m.split(":", 1)[0], "FieldValueInvalid"), "message": m,
         "field": f} for f, m in causes]}
    if rt.group:
        details["group"] = rt.group
    return Invalid(f'{kind} "{name}" is invalid: {text}', details=details)


def strict_decoding_error(rt: ResourceType, unknown: list[str]) -> BadRequest:
    """What `fieldValidation=Strict` answers for undeclared fields (400, upstream wording)."""
    fields = ", ".join(f'unknown field "{path}"' for path in unknown)
    return BadRequest(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                      f"strict decoding error: {fields}")


def _validate_kind(rt: ResourceType, obj: dict[str, Any]) -> Causes:
    spec: dict[str, Any] = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    if rt.storage_key == ("", "pods"):
        return _validate_pod_spec(spec, "spec")
    if rt.storage_key == ("", "services"):
        return [(f"spec.ports[{i}].port", f"Invalid value: {p.get('port')}: must be between 1 "
                 "and 65535, inclusive") for i, p in enumerate(spec.get("ports") or [])
                if not isinstance(p.get("port"), int) or not 1 <= p["port"] <= 65535]
    if rt.group == "apps":
        return _validate_workload(spec)
    if (rt.group, rt.plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
        return _validate_crd(obj, spec)
    if (rt.group, rt.plural) == ("apiregistration.k8s.io", "apiservices"):
        return _validate_apiservice(obj, spec)
    if (rt.group, rt.plural) == ("autoscaling", "horizontalpodautoscalers"):
        causes: Causes = []
        if not (spec.get("scaleTargetRef") or {}).get("name"):
            causes.append(("spec.scaleTargetRef.name", "Required value"))
        if int(spec.get("maxReplicas") or 0) < max(1, int(spec.get("minReplicas") or 1)):
            causes.append(("spec.maxReplicas", f"Invalid value: {spec.get('maxReplicas')}: "
                           "must be greater than or equal to `minReplicas`"))
        return causes
    return []


def _validate_workload(spec: dict[str, Any]) -> Causes:
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not (selector.get("matchLabels")
                                              or selector.get("matchExpressions")):
        return [("spec.selector", "Required value")]
    try:
        sel = selector_from_label_selector(selector)
    except SelectorError as e:
        return [("spec.selector", f"Invalid value: {e}")]
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not sel.matches(labels):
        return [("spec.template.metadata.labels", f"Invalid value: {labels!r}: `selector` does "
                 "not match template `labels`")]
    if int(spec.get("replicas", 0)) < 0:
        return [("spec.replicas", "Invalid value: must be greater than or equal to 0")]
    return _validate_pod_spec((spec.get("template") or {}).get("spec") or {}, "spec.template.spec")


def _validate_crd(obj: dict[str, Any], spec: dict[str, Any]) -> Causes:
    names = spec.get("names") or {}
    expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
    causes: Causes = []
    if obj["metadata"].get("name") != expected:
        causes.append(("metadata.name", f'Invalid value: "{obj["metadata"].get("name")}": must '
                       f"be spec.names.plural+\".\"+spec.group"))
    if not names.get("kind"):
        causes.append(("spec.names.kind", "Required value"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("spec.scope", 'Unsupported value: must be "Cluster" or "Namespaced"'))
    if not spec.get("versions"):
        causes.append(("spec.versions", "Invalid value: must have exactly one version marked as "
                       "storage version"))
    return causes


def _validate_apiservice(obj: dict[str, Any], spec: dict[str, Any]) -> Causes:
    causes: Causes = []
    expected = f"{spec.get('version', '')}.{spec['group']}" if spec.get('group') else spec.get('version', '')
    if obj["metadata"].get("name") != expected:
        causes.append(("metadata.name", f'Invalid value: "{obj["metadata"].get("name")}": must '
                       f'be {expected}'))
    if spec.get("caBundle") and spec.get("insecureSkipTLSVerify"):
        causes.append(("spec.insecureSkipTLSVerify", "Invalid value: true: may not be true if "
                       "caBundle is present"))
    if spec.get("service") is not None:
        for field, lo, hi in (("groupPriorityMinimum", 1, 20000), ("versionPriority", 1, 1000)):
            value = spec.get(field)
            if not isinstance(value, int) or not lo <= value <= hi:
                causes.append((f"spec.{field}", f"Invalid value: {value}: must be positive and "
                               f"less than {hi}"))
    return causes


_POD_FIELDS = {"spec.nodeName": ("spec", "nodeName"), "spec.restartPolicy": ("spec", "restartPolicy"),
               "spec.schedulerName": ("spec", "schedulerName"),
               "spec.serviceAccountName": ("spec", "serviceAccountName"),
               "status.phase": ("status", "phase"), "status.podIP": ("status", "podIP"),
               "status.nominatedNodeName": ("status", "nominatedNodeName")}
_EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion",
                 "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                 "reportingComponent", "source", "type")


def field_set(rt: ResourceType, obj: dict[str, Any]) -> dict[str, str]:
    """The selectable fields of an object (upstream `GetAttrs`/`ToSelectableFields`)."""
    meta = obj.get("metadata") or {}
    fields = {"metadata.name": meta.get("name", "")}
    if rt.namespaced:
        fields["metadata.namespace"] = meta.get("namespace", "")
    if rt.storage_key == ("", "pods"):
        for name, (part, attr) in _POD_FIELDS.items():
            fields[name] = str((obj.get(part) or {}).get(attr) or "")
    elif rt.storage_key == ("", "events"):
        involved = obj.get("involvedObject") or {}
        for name in _EVENT_FIELDS:
            if name.startswith("involvedObject."):
                fields[name] = str(involved.get(name.split(".", 1)[1]) or "")
            elif name == "source":
                fields[name] = str((obj.get("source") or {}).get("component") or "")
            else:
                fields[name] = str(obj.get(name) or "")
    elif rt.storage_key == ("", "secrets"):
        fields["type"] = str(obj.get("type") or "")
    elif rt.storage_key == ("", "namespaces"):
        fields["status.phase"] = str((obj.get("status") or {}).get("phase") or "")
    elif rt.storage_key == ("", "nodes"):
        fields["spec.unschedulable"] = str(bool((obj.get("spec") or {}).get("unschedulable"))).lower()
    elif rt.storage_key == ("apps", "replicasets"):
        fields["status.replicas"] = str((obj.get("status") or {}).get("replicas") or 0)
    return fields


def check_field_selector_keys(rt: ResourceType, keys: list[str]) -> None:
    known = set(field_set(rt, {}))
    for key in keys:
        if key not in known:
            raise BadRequest(f'field label not supported: {key}')
