"""Encode an OpenAPI v2 document (JSON-shaped dict) as gnostic's `openapi.v2.Document` protobuf.

kubectl asks `/openapi/v2` only for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
and validates `kubectl apply -f` of a `kind: List` with it. Field numbers follow gnostic's
OpenAPIv2.proto; values of `enum`, `default`, `example` and `x-*` extensions are `Any` messages
carrying YAML (JSON is YAML). Covered: swagger, info, definitions and the Schema fields a
structural schema uses. Non-goals: paths, parameters, responses, security (kubectl's validation
reads only definitions), decoding. Pure.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Mapping

CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

# Schema message: JSON key -> (field number, wire kind).
_SCHEMA_FIELDS: dict[str, tuple[int, str]] = {
    "$ref": (1, "string"), "format": (2, "string"), "title": (3, "string"),
    "description": (4, "string"), "default": (5, "any"), "multipleOf": (6, "double"),
    "maximum": (7, "double"), "exclusiveMaximum": (8, "bool"), "minimum": (9, "double"),
    "exclusiveMinimum": (10, "bool"), "maxLength": (11, "int"), "minLength": (12, "int"),
    "pattern": (13, "string"), "maxItems": (14, "int"), "minItems": (15, "int"),
    "uniqueItems": (16, "bool"), "maxProperties": (17, "int"), "minProperties": (18, "int"),
    "required": (19, "strings"), "enum": (20, "anys"), "additionalProperties": (21, "additional"),
    "type": (22, "type"), "items": (23, "items"), "allOf": (24, "schemas"),
    "properties": (25, "properties"), "discriminator": (26, "string"), "readOnly": (27, "bool"),
    "example": (30, "any"),
}


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 values: two's complement, as protobuf does
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _varint(len(data)) + data


def _string(number: int, text: str) -> bytes:
    return _bytes(number, text.encode())


def _any(value: Any) -> bytes:
    """gnostic `Any`: the value as YAML text (field 2)."""
    return _string(2, json.dumps(value, separators=(",", ":")))


def _named(number: int, name: str, value: bytes) -> bytes:
    return _bytes(number, _string(1, name) + _bytes(2, value))


def _schema_field(number: int, kind: str, value: Any) -> bytes:
    if kind == "string":
        return _string(number, str(value))
    if kind == "bool":
        return _key(number, 0) + _varint(1 if value else 0)
    if kind == "int":
        return _key(number, 0) + _varint(int(value))
    if kind == "double":
        return _key(number, 1) + struct.pack("<d", float(value))
    if kind == "any":
        return _bytes(number, _any(value))
    if kind == "strings":
        return b"".join(_string(number, str(v)) for v in value)
    if kind == "anys":
        return b"".join(_bytes(number, _any(v)) for v in value)
    if kind == "type":
        types = value if isinstance(value, list) else [value]
        return _bytes(number, b"".join(_string(1, t) for t in types))
    if kind == "items":
        items = value if isinstance(value, list) else [value]
        return _bytes(number, b"".join(_bytes(1, schema(i)) for i in items))
    if kind == "schemas":
        return b"".join(_bytes(number, schema(s)) for s in value)
    if kind == "properties":
        return _bytes(number, b"".join(_named(1, k, schema(v)) for k, v in value.items()))
    if kind == "additional":
        inner = _key(2, 0) + _varint(1 if value else 0) if isinstance(value, bool) \
            else _bytes(1, schema(value))
        return _bytes(number, inner)
    raise ValueError(f"unknown schema field kind {kind}")


def schema(node: Mapping[str, Any]) -> bytes:
    """One `openapi.v2.Schema` message; `x-*` keys become vendor extensions (field 31)."""
    out = bytearray()
    for key, value in node.items():
        if key in _SCHEMA_FIELDS:
            number, kind = _SCHEMA_FIELDS[key]
            out += _schema_field(number, kind, value)
        elif key.startswith("x-"):
            out += _named(31, key, _any(value))
    return bytes(out)


def document(doc: Mapping[str, Any]) -> bytes:
    """The `openapi.v2.Document` message for a v2 document with swagger, info and definitions."""
    info = doc.get("info") or {}
    out = bytearray(_string(1, str(doc.get("swagger", "2.0"))))
    out += _bytes(2, _string(1, str(info.get("title", ""))) + _string(2, str(info.get("version", ""))))
    definitions = b"".join(_named(1, name, schema(s))
                           for name, s in (doc.get("definitions") or {}).items())
    out += _bytes(9, definitions)
    return bytes(out)
