"""Structural-schema admission for custom resources, as kube-apiserver's apiextensions does it.

Given a CRD version's `openAPIV3Schema`: `apply_defaults` fills `default` values (and drops
nulls that are not `nullable`), `prune` removes fields the schema does not declare (kept under
`x-kubernetes-preserve-unknown-fields`; the root's apiVersion, kind and metadata are never
pruned) and returns their paths, `validate` returns (field path, message) pairs worded like
kube-apiserver's field errors: `Required value`, `Unsupported value: "x": supported values:
...`, `Invalid value: "string": spec.n in body must be of type integer: "string"`, bounds,
lengths, patterns, item and property counts, allOf/anyOf/oneOf/not, then the CEL rules
(`x-kubernetes-validations`, the subset `cel` evaluates).
Non-goals: transition rules (`oldSelf`), `format` checks, ratcheting of unchanged invalid
values. Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, Mapping

from . import cel

Schema = Mapping[str, Any]
Causes = list[tuple[str, str]]
_ROOT_KEPT = ("apiVersion", "kind", "metadata")
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_COMBINATORS = frozenset({"allOf", "anyOf", "oneOf", "not"})


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_name(value: Any) -> str:
    """The JSON type name kube-apiserver reports for a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _show(value: Any) -> str:
    """A value as field.Invalid prints it: strings quoted, numbers and booleans bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# --- defaulting ----------------------------------------------------------------------------


def apply_defaults(obj: dict[str, Any], schema: Schema) -> None:
    """Fill `default`s in place, top-down; nulls without `nullable` are dropped or defaulted."""
    _default_object(obj, schema, root=True)


def _default_value(value: Any, schema: Schema) -> None:
    if isinstance(value, dict):
        _default_object(value, schema, root=False)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            _default_value(item, schema["items"])


def _default_object(obj: dict[str, Any], schema: Schema, *, root: bool) -> None:
    properties = schema.get("properties") or {}
    for key, sub in properties.items():
        if root and key in _ROOT_KEPT:
            continue
        if key in obj and obj[key] is None and not sub.get("nullable"):
            del obj[key]
        if key not in obj and "default" in sub:
            obj[key] = copy.deepcopy(sub["default"])
        if key in obj:
            _default_value(obj[key], sub)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        for key in list(obj):
            if obj[key] is None and not extra.get("nullable"):
                del obj[key]
            else:
                _default_value(obj[key], extra)


# --- pruning -------------------------------------------------------------------------------


def prune(obj: dict[str, Any], schema: Schema) -> list[str]:
    """Remove undeclared fields in place; return their paths (`spec.foo`, `spec.list[0].bar`)."""
    pruned: list[str] = []
    _prune_object(obj, schema, "", pruned, root=True)
    return pruned


def _prune_value(value: Any, schema: Schema, path: str, pruned: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(value, schema, path, pruned, root=False)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            _prune_value(item, schema["items"], f"{path}[{i}]", pruned)


def _prune_object(obj: dict[str, Any], schema: Schema, path: str, pruned: list[str], *,
                  root: bool) -> None:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    embedded = schema.get("x-kubernetes-embedded-resource")
    for key in list(obj):
        if (root or embedded) and key in _ROOT_KEPT:
            continue
        if key in properties:
            _prune_value(obj[key], properties[key], _join(path, key), pruned)
        elif isinstance(extra, Mapping):
            _prune_value(obj[key], extra, _join(path, key), pruned)
        elif not (schema.get(_PRESERVE) or extra is True):
            pruned.append(_join(path, key))
            del obj[key]


# --- validation ----------------------------------------------------------------------------


def validate(obj: Mapping[str, Any], schema: Schema) -> Causes:
    """Every violation of the schema, as (field path, message) pairs in document order; the
    CEL rules are evaluated once the object fits the schema."""
    causes: Causes = []
    _check(obj, schema, "", causes)
    if not causes:
        _check_rules(obj, schema, "", causes)
    return causes


_RULE_ERRORS = {"FieldValueForbidden": "Forbidden", "FieldValueRequired": "Required value"}


def _check_rules(value: Any, schema: Schema, path: str, causes: Causes) -> None:
    """`x-kubernetes-validations` on every node that has a value, worded as upstream words a
    failed rule: `spec: Invalid value: "object": <message or 'failed rule: <rule>'>`."""
    for rule in schema.get("x-kubernetes-validations") or []:
        text = str(rule.get("rule", "")).strip()
        if "oldSelf" in text:
            continue  # transition rules need the stored object
        where = path + str(rule.get("fieldPath") or "") if path or not rule.get("fieldPath") \
            else str(rule["fieldPath"]).lstrip(".")
        try:
            ok = cel.evaluate(text, value) is True
        except cel.CelError as e:
            causes.append((where, f'Invalid value: "{schema.get("type", "object")}": {e} '
                           f"evaluating rule: {text}"))
            continue
        if ok:
            continue
        detail = str(rule.get("message") or f"failed rule: {text}")
        if rule.get("messageExpression"):
            try:
                detail = str(cel.evaluate(str(rule["messageExpression"]), value))
            except cel.CelError:
                pass
        prefix = _RULE_ERRORS.get(str(rule.get("reason", "")))
        causes.append((where, f"{prefix}: {detail}" if prefix else
                       f'Invalid value: "{schema.get("type", "object")}": {detail}'))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key) or (extra if isinstance(extra, Mapping) else None)
            if sub is not None and not (not path and key in _ROOT_KEPT):
                _check_rules(item, sub, _join(path, key), causes)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            _check_rules(item, schema["items"], f"{path}[{i}]", causes)


def _check(value: Any, schema: Schema, path: str, causes: Causes) -> None:
    if value is None:
        if not schema.get("nullable") and ("type" in schema or schema.get(_INT_OR_STRING)):
            causes.append((path, f'Invalid value: "null": {path} in body must be of type '
                           f'{schema.get("type") or "integer"}: "null"'))
        return
    if not _type_ok(value, schema, path, causes):
        return
    _check_enum(value, schema, path, causes)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(value, schema, path, causes)
    elif isinstance(value, str):
        _check_string(value, schema, path, causes)
    elif isinstance(value, list):
        _check_array(value, schema, path, causes)
    elif isinstance(value, dict):
        _check_object(value, schema, path, causes)
    _check_combinators(value, schema, path, causes)


def _type_ok(value: Any, schema: Schema, path: str, causes: Causes) -> bool:
    wanted = schema.get("type")
    actual = _type_name(value)
    if schema.get(_INT_OR_STRING):
        ok = actual in ("integer", "string")
        wanted = wanted or "integer"
    elif not wanted:
        return True
    elif wanted == "integer":
        ok = actual == "integer" or (actual == "number" and float(value).is_integer())
    elif wanted == "number":
        ok = actual in ("integer", "number")
    else:
        ok = actual == wanted
    if not ok:
        causes.append((path, f'Invalid value: "{actual}": {path} in body must be of type '
                       f'{wanted}: "{actual}"'))
    return ok


def _check_enum(value: Any, schema: Schema, path: str, causes: Causes) -> None:
    enum = schema.get("enum")
    if enum and value not in enum:
        supported = ", ".join(_show(v) for v in enum)
        causes.append((path, f"Unsupported value: {_show(value)}: supported values: {supported}"))


def _check_number(value: float, schema: Schema, path: str, causes: Causes) -> None:
    shown = f"Invalid value: {_show(value)}: {path} in body should be"
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None:
        if schema.get("exclusiveMinimum") and value <= low:
            causes.append((path, f"{shown} greater than {_number(low)}"))
        elif value < low:
            causes.append((path, f"{shown} greater than or equal to {_number(low)}"))
    if high is not None:
        if schema.get("exclusiveMaximum") and value >= high:
            causes.append((path, f"{shown} less than {_number(high)}"))
        elif value > high:
            causes.append((path, f"{shown} less than or equal to {_number(high)}"))
    step = schema.get("multipleOf")
    if step and (value / step) != int(value / step):
        causes.append((path, f"{shown} a multiple of {_number(step)}"))


def _check_string(value: str, schema: Schema, path: str, causes: Causes) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append((path, f"Too long: may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append((path, f"Invalid value: {_show(value)}: {path} in body should be at least "
                       f"{schema['minLength']} chars long"))
    pattern = schema.get("pattern")
    if pattern and not re.search(pattern, value):
        causes.append((path, f"Invalid value: {_show(value)}: {path} in body should match "
                       f"'{pattern}'"))


def _check_array(value: list[Any], schema: Schema, path: str, causes: Causes) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append((path, f"Too many: {len(value)}: must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append((path, f"Invalid value: {len(value)}: {path} in body should have at least "
                       f"{schema['minItems']} items"))
    if schema.get("uniqueItems") or schema.get("x-kubernetes-list-type") == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                causes.append((f"{path}[{i}]", f"Duplicate value: {_show(item)}"))
            seen.append(item)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", causes)


def _check_object(value: dict[str, Any], schema: Schema, path: str, causes: Causes) -> None:
    for key in schema.get("required") or []:
        if key not in value:
            causes.append((_join(path, key), "Required value"))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        causes.append((path, f"Too many: {len(value)}: must have at most "
                       f"{schema['maxProperties']} items"))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        causes.append((path, f"Invalid value: {len(value)}: {path} in body should have at least "
                       f"{schema['minProperties']} properties"))
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if not path and key in ("apiVersion", "kind"):
            continue
        if key in properties:
            _check(item, properties[key], _join(path, key), causes)
        elif isinstance(extra, Mapping):
            _check(item, extra, _join(path, key), causes)


def _check_combinators(value: Any, schema: Schema, path: str, causes: Causes) -> None:
    if schema.get(_INT_OR_STRING) or not _COMBINATORS.intersection(schema):
        return  # anyOf [integer, string] only restates the int-or-string type
    for sub in schema.get("allOf") or []:
        _check(value, sub, path, causes)
    passing = [not _quiet(value, sub, path) for sub in schema.get("anyOf") or []]
    if passing and not any(passing):
        causes.append((path, f"Invalid value: {_show(value)}: {path} in body must validate at "
                       "least one schema (anyOf)"))
    passing = [not _quiet(value, sub, path) for sub in schema.get("oneOf") or []]
    if passing and sum(passing) != 1:
        causes.append((path, f"Invalid value: {_show(value)}: {path} in body must validate one "
                       "and only one schema (oneOf)"))
    if isinstance(schema.get("not"), Mapping) and not _quiet(value, schema["not"], path):
        causes.append((path, f"Invalid value: {_show(value)}: {path} in body should not be "
                       "valid against schema (not)"))


def _quiet(value: Any, schema: Schema, path: str) -> Causes:
    found: Causes = []
    _check(value, schema, path, found)
    return found
