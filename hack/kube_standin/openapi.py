"""OpenAPI documents: `/openapi/v3` (index and one document per group-version) and `/openapi/v2`.

kubectl (`apply`, `create -f`, `replace`) downloads `/openapi/v3` and the group-version
document of the object's kind, and uses server-side validation when the PATCH operation tagged
with that kind lists the `fieldValidation` query parameter; without any document it refuses to
run unless `--validate=false`. `kubectl explain` reads the kind's schema from the same v3
document (`components.schemas`, found by `x-kubernetes-group-version-kind`). Objects it cannot
check server-side (a `kind: List`) it validates itself against `/openapi/v2` definitions.
Schemas come from `openapi_defs`. PATCH operations list no strategic-merge request body and the
v2 document has no paths, so `kubectl apply` keeps computing patches from its compiled-in types.
Non-goals: descriptions of built-in fields, response schemas.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from . import openapi_defs
from .resources import ResourceType

_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def index(types: list[ResourceType]) -> dict[str, Any]:
    paths = {}
    for group, version in sorted({(t.group, t.version) for t in types}):
        doc = json.dumps(group_version_doc(group, version, types), sort_keys=True).encode()
        digest = hashlib.sha512(doc).hexdigest()[:64].upper()
        rel = _gv_path(group, version)
        paths[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}?hash={digest}"}
    return {"paths": paths}


def _operation(rt: ResourceType, action: str) -> dict[str, Any]:
    return {"operationId": f"{action}{rt.kind}", "tags": [rt.group or "core"],
            "parameters": [{"name": p, "in": "query", "schema": {"type": "string"}}
                           for p in _PARAMS],
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version,
                                                "kind": rt.kind}}


def group_version_doc(group: str, version: str, types: list[ResourceType]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    base = "/" + _gv_path(group, version)
    for rt in types:
        if (rt.group, rt.version) != (group, version):
            continue
        scope = f"{base}/namespaces/{{namespace}}" if rt.namespaced else base
        paths[f"{scope}/{rt.plural}"] = {"get": _operation(rt, "list"),
                                         "post": _operation(rt, "post")}
        paths[f"{scope}/{rt.plural}/{{name}}"] = {
            "get": _operation(rt, "get"), "put": _operation(rt, "put"),
            "patch": _operation(rt, "patch"), "delete": _operation(rt, "delete")}
    kinds = openapi_defs.kind_definitions(
        [t for t in types if (t.group, t.version) == (group, version)], v2=False)
    schemas = openapi_defs.to_v3(openapi_defs.with_referenced(kinds))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-standin"},
            "paths": paths, "components": {"schemas": schemas}}


def v2_document(types: list[ResourceType]) -> dict[str, Any]:
    """The swagger 2.0 document: definitions of every served kind and what they reference."""
    kinds = openapi_defs.kind_definitions(types, v2=True)
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0-standin"},
            "paths": {}, "definitions": openapi_defs.with_referenced(kinds)}
