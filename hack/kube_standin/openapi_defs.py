"""OpenAPI schema definitions of the served kinds, shared by `/openapi/v2` and `/openapi/v3`.

Built-in kinds come from `protoschema.json` (the field tables of upstream's generated.proto:
names, scalar types, lists and maps, nested messages as `$ref`s), named as upstream names them
(`io.k8s.api.core.v1.ConfigMap`); kinds outside it get a permissive shape (apiVersion, kind,
ObjectMeta, free-form spec and status). Custom resources come from their CRD version's
`openAPIV3Schema` with ObjectMeta as `metadata` (`com.example.toys.v1.Gadget`); for v2 the schema
is reduced as kube-apiserver publishes it (no nullable, combinators or defaults;
preserve-unknown-fields and int-or-string nodes accept anything). Each kind carries
`x-kubernetes-group-version-kind`, which kubectl uses to find it.
Non-goals: descriptions of built-in fields, `required` of built-ins, patch-strategy extensions
(kubectl then keeps computing patches from its compiled-in types). Pure: no I/O beyond loading
the field table once.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from .resources import ResourceType

Definitions = dict[str, dict[str, Any]]
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_V2_REF = "#/definitions/"
_V3_REF = "#/components/schemas/"
_SCALARS = {"string": {"type": "string"}, "bool": {"type": "boolean"},
            "int32": {"type": "integer", "format": "int32"},
            "int64": {"type": "integer", "format": "int64"},
            "bytes": {"type": "string", "format": "byte"}}
_WELL_KNOWN = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": {"type": "string",
                                                       "format": "int-or-string"},
    f"{_META}.Time": {"type": "string", "format": "date-time"},
    f"{_META}.MicroTime": {"type": "string", "format": "date-time"},
    f"{_META}.Duration": {"type": "string"},
    f"{_META}.FieldsV1": {"type": "object"},
    "k8s.io.apimachinery.pkg.runtime.RawExtension": {"type": "object"},
}
# Kinds the field table does not cover, by the name upstream publishes them under.
_OTHER_NAMES = {
    ("apiregistration.k8s.io", "APIService"):
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
    ("apiextensions.k8s.io", "CustomResourceDefinition"):
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
}
_V2_DROPPED = ("nullable", "default", "anyOf", "oneOf", "allOf", "not", "x-kubernetes-validations",
               "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
               "x-kubernetes-embedded-resource", "x-kubernetes-list-type",
               "x-kubernetes-list-map-keys", "x-kubernetes-map-type")


@functools.cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(__file__).with_name("protoschema.json").read_text())
    return data


def definition_name(proto_name: str) -> str:
    """`k8s.io.api.core.v1.Pod` -> `io.k8s.api.core.v1.Pod` (upstream's definition names)."""
    return "io.k8s." + proto_name[len("k8s.io."):] if proto_name.startswith("k8s.io.") else proto_name


def _field_schema(type_name: str) -> dict[str, Any]:
    if type_name in _SCALARS:
        return dict(_SCALARS[type_name])
    if type_name in _WELL_KNOWN:
        return dict(_WELL_KNOWN[type_name])
    return {"$ref": _V2_REF + definition_name(type_name)}


def _message_schema(message: Mapping[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, label, type_name, *_ in message["fields"].values():
        item = _field_schema(type_name)
        if label == "repeated":
            item = {"type": "array", "items": item}
        elif label == "map":
            item = {"type": "object", "additionalProperties": item}
        properties[name] = item
    if message.get("list"):
        items: dict[str, Any] = properties["items"]
        return items
    return {"type": "object", "properties": properties}


@functools.cache
def _builtin_messages() -> dict[str, dict[str, Any]]:
    return {definition_name(name): _message_schema(message) for name, message in _table().items()
            if name not in _WELL_KNOWN}


def _gvk(rt: ResourceType) -> list[dict[str, str]]:
    return [{"group": rt.group, "kind": rt.kind, "version": rt.version}]


def kind_definition_name(rt: ResourceType) -> str:
    if rt.crd:
        domain = ".".join(reversed(rt.group.split(".")))
        return f"{domain}.{rt.version}.{rt.kind}"
    package = "core" if not rt.group else rt.group.split(".")[0]
    return _OTHER_NAMES.get((rt.group, rt.kind),
                            f"io.k8s.api.{package}.{rt.version}.{rt.kind}")


def _with_type_meta(schema: Mapping[str, Any], rt: ResourceType) -> dict[str, Any]:
    out = copy.deepcopy(dict(schema))
    out["type"] = "object"
    properties = out.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "description": "APIVersion defines the "
                                "versioned schema of this representation of an object."}
    properties["kind"] = {"type": "string", "description": "Kind is a string value "
                          "representing the REST resource this object represents."}
    properties["metadata"] = {"$ref": _V2_REF + OBJECT_META,
                              "description": "Standard object's metadata."}
    out["x-kubernetes-group-version-kind"] = _gvk(rt)
    return out


def _custom_v2(schema: Any) -> Any:
    """A CRD schema node as the v2 document shows it (see the module docstring)."""
    if isinstance(schema, list):
        return [_custom_v2(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string"):
        return {k: v for k, v in schema.items() if k in ("description",)}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _V2_DROPPED:
            continue
        if key == "properties":
            out[key] = {name: _custom_v2(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = _custom_v2(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def kind_definitions(types: Iterable[ResourceType], *, v2: bool) -> Definitions:
    """One definition per served kind (custom resources from their schemas)."""
    messages = _builtin_messages()
    out: Definitions = {}
    for rt in types:
        name = kind_definition_name(rt)
        if rt.crd:
            schema = rt.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            base = _custom_v2(schema) if v2 else copy.deepcopy(dict(schema))
        else:
            base = messages.get(name) or {"type": "object", "properties": {
                "spec": {"type": "object"}, "status": {"type": "object"}}}
        if name in out:  # one kind served under several resources (events)
            continue
        out[name] = _with_type_meta(base, rt)
    return out


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_V2_REF):
            yield ref[len(_V2_REF):]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def with_referenced(kinds: Definitions) -> Definitions:
    """`kinds` plus every built-in message they reference, transitively."""
    messages = _builtin_messages()
    out = dict(kinds)
    pending = [ref for schema in kinds.values() for ref in _refs(schema)]
    while pending:
        name = pending.pop()
        if name in out or name not in messages:
            continue
        out[name] = messages[name]
        pending.extend(_refs(messages[name]))
    return out


def to_v3(node: Any) -> Any:
    """v2-style references rewritten for a v3 document (`allOf` wraps a `$ref` with siblings)."""
    if isinstance(node, list):
        return [to_v3(n) for n in node]
    if not isinstance(node, Mapping):
        return node
    out = {k: to_v3(v) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith(_V2_REF):
        target = {"$ref": _V3_REF + ref[len(_V2_REF):]}
        rest = {k: v for k, v in out.items() if k != "$ref"}
        return {**rest, "allOf": [target]} if rest else target
    return out


def unknown_fields(obj: Mapping[str, Any], rt: ResourceType) -> list[str]:
    """Paths of fields a built-in kind does not declare (what fieldValidation=Strict rejects)."""
    name = kind_definition_name(rt)
    definitions = _builtin_messages()
    if name not in definitions:
        return []
    found: list[str] = []
    top = _with_type_meta(definitions[name], rt)
    _walk_unknown(obj, top, "", definitions, found)
    return found


def _walk_unknown(value: Any, schema: Mapping[str, Any], path: str,
                  definitions: Mapping[str, Mapping[str, Any]], found: list[str]) -> None:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = definitions.get(ref[len(_V2_REF):])
        if target is not None:
            _walk_unknown(value, target, path, definitions, found)
        return
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            _walk_unknown(item, schema["items"], f"{path}[{i}]", definitions, found)
    elif isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            sub = schema["properties"].get(key)
            where = f"{path}.{key}" if path else key
            if sub is None:
                found.append(where)
            else:
                _walk_unknown(item, sub, where, definitions, found)
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), Mapping):
        for key, item in value.items():
            _walk_unknown(item, schema["additionalProperties"], f"{path}.{key}", definitions,
                          found)
