"""`/openapi/v2` (Swagger 2.0) and `/openapi/v3` (index + per group-version OpenAPI 3.0 documents).

kube-aggregator downloads these to merge into the cluster's OpenAPI (spec §4.4); clients never
need them for metrics. The documents describe our paths and response kinds with modest schemas
(field names and types, quantities as strings). v3 documents are addressed with a content hash
(`?hash=`) as kube-apiserver does, and served with an ETag.

Non-goals: full upstream schemas (ObjectMeta, LabelSelector in every detail).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aiohttp import web

from adapter.server import discovery_docs as docs
from adapter.server.context import CONTEXT

__all__ = ["register", "v2_document", "v3_documents"]

JSON = dict[str, Any]
_TITLE = "prom-autoscaler adapter"
_STR, _INT = {"type": "string"}, {"type": "integer", "format": "int64"}
_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_OBJ = {"type": "object"}


def _obj(props: JSON, required: tuple[str, ...] = ()) -> JSON:
    schema: JSON = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return schema


def _list_of(item_ref: str) -> JSON:
    return _obj({"kind": _STR, "apiVersion": _STR, "metadata": _OBJ,
                 "items": {"type": "array", "items": {"$ref": item_ref}}}, ("items",))


def _schemas(ref: str) -> JSON:
    ref_obj = _obj({"kind": _STR, "namespace": _STR, "name": _STR, "apiVersion": _STR})
    return {
        "MetricValueV1beta1": _obj({"describedObject": ref_obj, "metricName": _STR, "timestamp": _STR,
                                    "window": _INT, "value": _STR, "selector": _OBJ},
                                   ("describedObject", "metricName", "timestamp", "value")),
        "MetricValueListV1beta1": _list_of(ref + "MetricValueV1beta1"),
        "MetricValueV1beta2": _obj({"describedObject": ref_obj,
                                    "metric": _obj({"name": _STR, "selector": _OBJ}),
                                    "timestamp": _STR, "windowSeconds": _INT, "value": _STR},
                                   ("describedObject", "metric", "timestamp", "value")),
        "MetricValueListV1beta2": _list_of(ref + "MetricValueV1beta2"),
        "ExternalMetricValue": _obj({"metricName": _STR, "metricLabels": _MAP, "timestamp": _STR,
                                     "window": _INT, "value": _STR},
                                    ("metricName", "metricLabels", "timestamp", "value")),
        "ExternalMetricValueList": _list_of(ref + "ExternalMetricValue"),
        "PodMetrics": _obj({"kind": _STR, "apiVersion": _STR, "metadata": _OBJ, "timestamp": _STR,
                            "window": _STR, "containers": {"type": "array", "items": _obj(
                                {"name": _STR, "usage": _MAP})}}),
        "PodMetricsList": _list_of(ref + "PodMetrics"),
        "NodeMetrics": _obj({"kind": _STR, "apiVersion": _STR, "metadata": _OBJ, "timestamp": _STR,
                             "window": _STR, "usage": _MAP}),
        "NodeMetricsList": _list_of(ref + "NodeMetrics"),
        "Status": _obj({"kind": _STR, "apiVersion": _STR, "metadata": _OBJ, "status": _STR, "message": _STR,
                        "reason": _STR, "details": _OBJ, "code": {"type": "integer", "format": "int32"}}),
    }


def _paths(group: str, version: str) -> dict[str, str]:
    """path → schema name of the 200 answer."""
    base = f"/apis/{group}/{version}"
    if group == docs.CUSTOM:
        schema = "MetricValueListV1beta1" if version == "v1beta1" else "MetricValueListV1beta2"
        return {f"{base}/namespaces/{{namespace}}/{{resource}}/{{name}}/{{metric}}": schema,
                f"{base}/{{resource}}/{{name}}/{{metric}}": schema,
                f"{base}/namespaces/{{namespace}}/metrics/{{metric}}": schema}
    if group == docs.EXTERNAL:
        return {f"{base}/namespaces/{{namespace}}/{{metric}}": "ExternalMetricValueList"}
    return {f"{base}/nodes": "NodeMetricsList", f"{base}/nodes/{{name}}": "NodeMetrics",
            f"{base}/pods": "PodMetricsList", f"{base}/namespaces/{{namespace}}/pods": "PodMetricsList",
            f"{base}/namespaces/{{namespace}}/pods/{{name}}": "PodMetrics"}


def _operation(path: str, schema_ref: str, status_ref: str, v3: bool) -> JSON:
    params = [{"name": p.strip("{}"), "in": "path", "required": True,
               **({"schema": _STR} if v3 else {"type": "string"})}
              for p in path.split("/") if p.startswith("{")]
    params += [{"name": q, "in": "query", **({"schema": _STR} if v3 else {"type": "string"})}
               for q in ("labelSelector", "metricLabelSelector", "fieldSelector")]

    def answer(ref: str, text: str) -> JSON:
        if v3:
            return {"description": text, "content": {"application/json": {"schema": {"$ref": ref}}}}
        return {"description": text, "schema": {"$ref": ref}}

    return {"get": {"parameters": params, "produces": ["application/json"] if not v3 else None,
                    "responses": {"200": answer(schema_ref, "OK"), "default": answer(status_ref, "error")}}}


def _clean(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _clean(v) for k, v in doc.items() if v is not None}
    if isinstance(doc, list):
        return [_clean(v) for v in doc]
    return doc


def v2_document(groups: tuple[str, ...], version: str) -> JSON:
    ref = "#/definitions/"
    paths = {p: _operation(p, ref + s, ref + "Status", False)
             for g in groups for v in docs.VERSIONS[g] for p, s in _paths(g, v).items()}
    document: JSON = _clean({"swagger": "2.0", "info": {"title": _TITLE, "version": version},
                             "paths": paths, "definitions": _schemas(ref)})
    return document


def v3_documents(groups: tuple[str, ...], version: str) -> dict[str, bytes]:
    """`apis/<g>/<v>` → serialised OpenAPI 3.0 document."""
    ref = "#/components/schemas/"
    result = {}
    for g in groups:
        for v in docs.VERSIONS[g]:
            paths = {p: _operation(p, ref + s, ref + "Status", True) for p, s in _paths(g, v).items()}
            doc = _clean({"openapi": "3.0.0", "info": {"title": _TITLE, "version": version},
                          "paths": paths, "components": {"schemas": _schemas(ref)}})
            result[f"apis/{g}/{v}"] = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    return result


def register(app: web.Application) -> None:
    ctx = app[CONTEXT]
    groups = ctx.groups.served()
    version = ctx.version.get("gitVersion", "v0.0.0")
    v2 = json.dumps(v2_document(groups, version), separators=(",", ":"), sort_keys=True).encode()
    v3 = v3_documents(groups, version)
    hashes = {key: hashlib.sha512(body).hexdigest().upper()[:128] for key, body in v3.items()}
    index = json.dumps({"paths": {key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={hashes[key]}"}
                                  for key in sorted(v3)}}, separators=(",", ":")).encode()

    async def get_v2(_: web.Request) -> web.Response:
        return web.Response(body=v2, content_type="application/json")

    async def get_v3_index(_: web.Request) -> web.Response:
        return web.Response(body=index, content_type="application/json")

    async def get_v3(request: web.Request) -> web.Response:
        key = request.match_info["gv"].strip("/")
        if key not in v3:
            raise web.HTTPNotFound()
        headers = {"ETag": f'"{hashes[key]}"'}
        if request.query.get("hash") == hashes[key]:
            headers["Cache-Control"] = "public, immutable"
        return web.Response(body=v3[key], content_type="application/json", headers=headers)

    app.router.add_get("/openapi/v2", get_v2)
    app.router.add_get("/openapi/v3", get_v3_index)
    app.router.add_get("/openapi/v3/", get_v3_index)
    app.router.add_get("/openapi/v3/{gv:apis/.+}", get_v3)
