"""Minimal OpenAPI v3 documents, enough for kubectl's server-side field validation check.

kubectl (`apply`, `create -f`, `replace`) downloads `/openapi/v3` and the group-version
document of the object's kind, and uses server-side validation when the PATCH operation tagged
with that kind lists the `fieldValidation` query parameter; without any document it refuses to
run unless `--validate=false`. We publish, per served group-version, one path per resource with
its operations, the GVK extension and the standard query parameters, and no schemas.
Non-goals: schemas for client-side validation, `kubectl explain`, OpenAPI v2.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

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
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-standin"},
            "paths": paths, "components": {"schemas": {}}}
