"""Decode Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) to JSON dicts.

kubectl's typed-client commands (`create namespace|deployment|configmap|secret|token`,
`auth can-i`, `autoscale`, `expose`, ...) send protobuf. The envelope is the 4-byte magic
`k8s\\0` plus a `runtime.Unknown` {typeMeta{apiVersion, kind}, raw}; `raw` is the object's
message, decoded with the field table in `protoschema.json` (generated from upstream's
generated.proto by `protoschema_gen.py`). Well-known messages become their JSON forms:
Quantity -> string, IntOrString -> int|string, Time -> RFC 3339, Duration -> Go duration,
RawExtension/FieldsV1 -> embedded JSON. Zero scalars are dropped where Go's JSON would omit
them (`omitempty` on a non-pointer field, flagged by the generator from upstream's types.go).
Responses stay JSON (clients accept it).
Non-goals: encoding protobuf, types outside `protoschema.json`. Pure: no I/O beyond loading
the table once.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import struct
from pathlib import Path
from typing import Any

from kubecommon.status import BadRequest, UnsupportedMediaType

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_PACKAGES = {"": "k8s.io.api.core.v1", "apps": "k8s.io.api.apps.v1",
             "rbac.authorization.k8s.io": "k8s.io.api.rbac.v1",
             "authorization.k8s.io": "k8s.io.api.authorization.v1",
             "authentication.k8s.io": "k8s.io.api.authentication.v1",
             "coordination.k8s.io": "k8s.io.api.coordination.v1",
             "events.k8s.io": "k8s.io.api.events.v1", "discovery.k8s.io": "k8s.io.api.discovery.v1"}
Fields = dict[int, list[tuple[int, Any]]]


@functools.cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((Path(__file__).with_name("protoschema.json")).read_text())
    return schema


def _varint(data: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(data):
            raise BadRequest("protobuf: truncated varint")
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(data: bytes) -> Fields:
    out: Fields = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            length, i = _varint(data, i)
            value, i = data[i:i + length], i + length
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise BadRequest(f"protobuf: unsupported wire type {wire}")
        out.setdefault(number, []).append((wire, value))
    return out


def _signed(v: int, bits: int = 64) -> int:
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _scalar(kind: str, wire: int, value: Any) -> Any:
    if kind == "string":
        return value.decode()
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "bool":
        return bool(value)
    if kind in ("double", "fixed64") and wire == 1:
        return struct.unpack("<d", value)[0]
    if kind == "float" and wire == 5:
        return struct.unpack("<f", value)[0]
    return _signed(value)


def _packed(kind: str, data: bytes) -> list[Any]:
    out, i = [], 0
    while i < len(data):
        v, i = _varint(data, i)
        out.append(_scalar(kind, 0, v))
    return out


def _go_duration(ns: int) -> str:
    if ns == 0:
        return "0s"
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    h, rem = divmod(ns, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    s = rem / 1e9
    text = (f"{h}h" if h else "") + (f"{m}m" if h or m else "") + f"{s:g}s"
    return sign + text


def _special(name: str, f: Fields) -> tuple[bool, Any]:
    def one(n: int, default: Any = None) -> Any:
        return f[n][-1][1] if n in f else default
    if name == "k8s.io.apimachinery.pkg.api.resource.Quantity":
        return True, (one(1) or b"0").decode()
    if name == "k8s.io.apimachinery.pkg.util.intstr.IntOrString":
        return True, (one(3) or b"").decode() if one(1, 0) == 1 else _signed(one(2, 0), 64)
    if name in (f"{_META}.Time", f"{_META}.MicroTime"):
        seconds, nanos = _signed(one(1, 0)), one(2, 0)
        if not seconds and not nanos:
            return True, None
        moment = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
        if name.endswith("MicroTime"):
            return True, moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
        return True, moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if name == f"{_META}.Duration":
        return True, _go_duration(_signed(one(1, 0)))
    if name in ("k8s.io.apimachinery.pkg.runtime.RawExtension", f"{_META}.FieldsV1"):
        raw = one(1)
        return True, json.loads(raw) if raw else None
    return False, None


def message(data: bytes, name: str) -> Any:
    schema = _schema().get(name)
    f = fields(data)
    handled, value = _special(name, f)
    if handled:
        return value
    if schema is None:
        raise UnsupportedMediaType(f"protobuf: no schema for {name}; send application/json")
    if schema.get("list"):
        return [v.decode() for _, v in f.get(1, [])]
    out: dict[str, Any] = {}
    for number, entries in f.items():
        spec = schema["fields"].get(str(number))
        if spec is None:
            continue
        jname, label, kind = spec[:3]
        omit_zero = len(spec) > 3
        if label == "map":
            out[jname] = {}
            for _, entry in entries:
                ef = fields(entry)
                key = ef[1][-1][1].decode() if 1 in ef else ""
                val = ef.get(2, [(2, b"")])[-1]
                out[jname][key] = _value(kind, *val)
        elif label == "repeated":
            items: list[Any] = []
            for wire, v in entries:
                if wire == 2 and kind not in ("string", "bytes") and kind in _SCALAR_KINDS:
                    items.extend(_packed(kind, v))
                else:
                    items.append(_value(kind, wire, v))
            out[jname] = items
        else:
            value = _value(kind, *entries[-1])
            if value is None or (omit_zero and value in ("", 0, False)):
                continue
            out[jname] = value
    return out


_SCALAR_KINDS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double",
                 "float", "sint32", "sint64", "fixed32", "fixed64"}


def _value(kind: str, wire: int, value: Any) -> Any:
    if kind in _SCALAR_KINDS:
        return _scalar(kind, wire, value)
    return message(value, kind)


def decode(data: bytes) -> dict[str, Any]:
    if not data.startswith(MAGIC):
        raise BadRequest("protobuf: missing the k8s envelope")
    envelope = fields(data[len(MAGIC):])
    type_meta = fields(envelope.get(1, [(2, b"")])[-1][1])
    api_version = type_meta.get(1, [(2, b"")])[-1][1].decode()
    kind = type_meta.get(2, [(2, b"")])[-1][1].decode()
    raw = envelope.get(2, [(2, b"")])[-1][1]
    group, _, version = api_version.rpartition("/")
    package = _PACKAGES.get(group)
    if group == "autoscaling":
        package = f"k8s.io.api.autoscaling.{version}"
    if kind in ("DeleteOptions", "Status"):
        package = _META
    if package is None:
        raise UnsupportedMediaType(f"protobuf: unsupported API version {api_version!r}; "
                                   f"send application/json")
    obj = message(raw, f"{package}.{kind}")
    return {"apiVersion": api_version, "kind": kind, **obj}
