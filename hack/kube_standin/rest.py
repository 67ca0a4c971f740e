"""REST handlers for stored resources: collection, object, `status` and `scale` subresources.

Routing follows the RequestInfo parts (`resource[/name[/subresource]]`); semantics live in
`objects.ObjectApi`, lists and watches in `listing`, patches in `patch`. Non-goals: protobuf,
server-side apply field ownership (apply patches merge like a strategic merge / create).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from aiohttp import web

from kubecommon.requestinfo import RequestInfo
from kubecommon.selectors import SelectorError, selector_from_label_selector
from kubecommon.status import BadRequest, Invalid, MethodNotAllowed, NotFound, success_status

from . import conversion, listing, patch, reviews, tables
from .http import json_response, raw_json, read_body, wants_table
from .resources import ResourceType
from .state import State
from .store import Obj

_SUBRESOURCE_VERBS = ("get", "patch", "update")


def storage_type(state: State, rt: ResourceType) -> ResourceType:
    """The type whose semantics apply to writes (events.k8s.io writes core Events)."""
    other = conversion.storage_view(rt)
    if other is None:
        return rt
    stored = state.types.lookup(*other)
    assert stored is not None
    return stored


def _out(rt: ResourceType, obj: Obj, status: int = 200, state: State | None = None) -> web.Response:
    if state is not None and conversion.storage_view(rt) is None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        return raw_json(state.store.encoded(rt.storage_key, key, obj), status)
    return json_response(listing.view(rt, obj), status)


async def handle(request: web.Request, state: State, info: RequestInfo) -> web.StreamResponse:
    rt = state.types.lookup(info.api_group, info.api_version, info.resource)
    if rt is None or len(info.parts) > 3:
        raise NotFound.for_path()
    namespace = info.namespace if rt.namespaced else ""
    if rt.namespaced and not info.namespace and len(info.parts) > 1:
        raise NotFound.for_path()
    if not rt.namespaced and info.namespace and rt.plural != "namespaces":
        raise NotFound.for_path()
    if info.subresource:
        return await _subresource(request, state, rt, namespace, info)
    if info.verb not in rt.verbs:
        raise MethodNotAllowed.for_verb(info.verb, rt.plural, rt.group)
    if len(info.parts) == 1:
        return await _collection(request, state, rt, namespace, info)
    return await _object(request, state, rt, namespace, info.name, info)


async def _collection(request: web.Request, state: State, rt: ResourceType, namespace: str,
                      info: RequestInfo) -> web.StreamResponse:
    scope = namespace if rt.namespaced and info.namespace else None
    if request.method in ("GET", "HEAD"):
        if info.verb == "watch" or request.query.get("watch") in ("true", "1"):
            table = wants_table(request.headers.get("Accept", ""))
            include = tables.include_object(request.query) if table else "Metadata"
            return await listing.watch(
                request, state.store, rt, scope, bookmark_interval=state.options.bookmark_interval,
                render=(lambda t, o: tables.table_for(t, [o], state.store.revision, include=include))
                if table else None)
        await listing.wait_until_fresh(state.store, request.query)  # 504 for a future version
        if wants_table(request.headers.get("Accept", "")):
            return json_response(tables.table(state.store, rt, scope, request.query))
        return raw_json(listing.list_body(state.store, rt, scope, request.query))
    if request.method == "POST":
        body = await read_body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be an object")
        if rt.namespaced and not info.namespace:
            raise NotFound.for_path()
        srt = storage_type(state, rt)
        created = state.api.create(srt, namespace, conversion.to_storage(rt, body),
                                   dry_run=_dry(request), owned=True,
                                   field_validation=_field_validation(request))
        return _out(rt, created, 201, state)
    if request.method == "DELETE":
        match = listing.matcher(rt, request.query)
        deleted = []
        for obj in list(state.store.objects(rt.storage_key, scope)):
            if match is None or match(obj):
                final, _ = state.api.delete(storage_type(state, rt), obj["metadata"].get("namespace", ""),
                                            obj["metadata"]["name"], options=await _delete_options(request),
                                            dry_run=_dry(request))
                deleted.append(listing.view(rt, final))
        return json_response({"kind": rt.list_kind, "apiVersion": rt.api_version,
                              "metadata": {"resourceVersion": str(state.store.revision)},
                              "items": deleted})
    raise MethodNotAllowed.for_verb(request.method, rt.plural, rt.group)


def _dry(request: web.Request) -> bool:
    return request.query.get("dryRun") == "All"


def _field_validation(request: web.Request) -> str:
    """`fieldValidation` (Strict rejects undeclared fields; kubectl sends it by default)."""
    return request.query.get("fieldValidation", "")


async def _delete_options(request: web.Request) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if request.can_read_body:
        data = await request.read()
        if data.strip():
            try:
                body = json.loads(data)
            except ValueError:
                raise BadRequest("the DeleteOptions body could not be decoded") from None
            if isinstance(body, dict):
                options.update(body)
    if "propagationPolicy" in request.query:
        options["propagationPolicy"] = request.query["propagationPolicy"]
    return options


async def _object(request: web.Request, state: State, rt: ResourceType, namespace: str,
                  name: str, info: RequestInfo) -> web.StreamResponse:
    srt = storage_type(state, rt)
    if request.method in ("GET", "HEAD"):
        obj = state.api.get(srt, namespace, name)
        if wants_table(request.headers.get("Accept", "")):
            return json_response(tables.table_for(rt, [listing.view(rt, obj)], state.store.revision,
                                                  include=tables.include_object(request.query)))
        return _out(rt, obj, state=state)
    if request.method == "PUT":
        body = await read_body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be an object")
        return _out(rt, state.api.update(srt, namespace, name, conversion.to_storage(rt, body),
                                         dry_run=_dry(request), owned=True,
                                         field_validation=_field_validation(request)), state=state)
    if request.method == "PATCH":
        return _out(rt, await _patch(request, state, rt, namespace, name, ""))
    if request.method == "DELETE":
        options = await _delete_options(request)
        final, gone = state.api.delete(srt, namespace, name, options=options, dry_run=_dry(request))
        if not gone:
            return _out(rt, final)
        return json_response(success_status(details={
            "name": name, "group": rt.group, "kind": rt.plural, "uid": final["metadata"]["uid"]}))
    raise MethodNotAllowed.for_verb(request.method, rt.plural, rt.group)


async def _patch(request: web.Request, state: State, rt: ResourceType, namespace: str,
                 name: str, subresource: str) -> Obj:
    srt = storage_type(state, rt)
    body = await read_body(request)
    ctype = request.headers.get("Content-Type", "")
    is_apply = ctype.split(";")[0].strip().lower() == patch.APPLY_PATCH
    try:
        current = listing.view(rt, state.api.get(srt, namespace, name))
    except NotFound:
        if is_apply and not subresource and isinstance(body, dict):
            created = state.api.create(srt, namespace, conversion.to_storage(rt, body),
                                       dry_run=_dry(request),
                                       field_validation=_field_validation(request))
            return listing.view(rt, created)
        raise
    if is_apply:
        if not isinstance(body, dict):
            raise BadRequest("an apply patch must be an object")
        body = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
        if isinstance(body.get("metadata"), dict):
            body["metadata"].pop("resourceVersion", None)  # apply is never a stale write
        patched = patch.strategic_merge(current, body) if not rt.crd else patch.merge_patch(current, body)
    else:
        patched = patch.apply_patch(current, body, ctype, strategic_allowed=not rt.crd)
    updated = state.api.update(srt, namespace, name, conversion.to_storage(rt, patched),
                               subresource=subresource, dry_run=_dry(request),
                               field_validation=_field_validation(request))
    return listing.view(rt, updated)


async def _subresource(request: web.Request, state: State, rt: ResourceType, namespace: str,
                       info: RequestInfo) -> web.StreamResponse:
    sub = info.subresource
    if rt.plural == "namespaces" and sub in ("status", "finalize"):
        rt_ok = True
    else:
        rt_ok = (sub == "status" and rt.status) or (sub == "scale" and rt.scale is not None)
    if sub == "token" and rt.plural == "serviceaccounts":
        return await reviews.token_request(request, state, namespace, info.name)
    if not rt_ok:
        raise NotFound.for_path()
    if info.verb not in _SUBRESOURCE_VERBS:
        raise MethodNotAllowed.for_verb(info.verb, f"{rt.plural}/{sub}", rt.group)
    if sub == "scale":
        return await _scale(request, state, rt, namespace, info.name)
    srt = storage_type(state, rt)
    if request.method == "GET":
        return _out(rt, state.api.get(srt, namespace, info.name))
    if request.method == "PUT":
        body = await read_body(request)
        if not isinstance(body, dict):
            raise BadRequest("the request body must be an object")
        updated = state.api.update(srt, namespace, info.name, conversion.to_storage(rt, body),
                                   subresource="status", dry_run=_dry(request))
        return _out(rt, updated)
    return _out(rt, await _patch(request, state, rt, namespace, info.name, "status"))


def _path_get(obj: Obj, path: str) -> Any:
    node: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _path_set(obj: Obj, path: str, value: Any) -> None:
    node = obj
    parts = path.strip(".").split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def scale_of(rt: ResourceType, obj: Obj) -> Obj:
    assert rt.scale is not None
    meta = obj["metadata"]
    if rt.scale.label_selector is None:
        try:
            selector = str(selector_from_label_selector((obj.get("spec") or {}).get("selector")))
        except SelectorError:
            selector = ""
    else:
        selector = _path_get(obj, rt.scale.label_selector) or ""
    status: dict[str, Any] = {"replicas": int(_path_get(obj, rt.scale.status_replicas) or 0)}
    if selector:
        status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                               "creationTimestamp") if k in meta},
            "spec": {"replicas": int(_path_get(obj, rt.scale.spec_replicas) or 0)},
            "status": status}


async def _scale(request: web.Request, state: State, rt: ResourceType, namespace: str,
                 name: str) -> web.StreamResponse:
    assert rt.scale is not None
    obj = state.api.get(rt, namespace, name)
    current = scale_of(rt, obj)
    if request.method == "GET":
        return json_response(current)
    body = await read_body(request)
    if request.method == "PATCH":
        body = patch.apply_patch(current, body, request.headers.get("Content-Type", ""),
                                 strategic_allowed=True)
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise BadRequest("the request body must be a Scale object")
    replicas = body["spec"].get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        raise Invalid.for_object("Scale", "autoscaling", name, [
            ("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0")])
    new = copy.deepcopy(obj)
    _path_set(new, rt.scale.spec_replicas, replicas)
    rv = (body.get("metadata") or {}).get("resourceVersion")
    new["metadata"]["resourceVersion"] = rv or obj["metadata"]["resourceVersion"]
    updated = state.api.update(rt, namespace, name, new, dry_run=_dry(request))
    return json_response(scale_of(rt, updated))
