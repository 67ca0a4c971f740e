"""The HTTPS front door: authenticate, impersonate, authorize, then route.

Order as in kube-apiserver's handler chain: authentication (401 on a bad credential, anonymous
without one), impersonation (`Impersonate-*`, itself authorized with the `impersonate` verb),
RBAC authorization with RequestInfo attributes (403 Status in upstream wording), then the
aggregation proxy for remote group-versions, discovery, reviews, or the REST handlers.
Non-goals: audit, priority and fairness, admission webhooks.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from kubecommon.requestinfo import RequestInfo, derive_request_info
from kubecommon.status import Forbidden, InternalError, NotFound, StatusError

from . import discovery, discovery_v2, openapi, openapi_pb, rest, reviews
from .authn import service_account_user, with_authenticated
from .http import check_accept, error_response, json_response, raw_json
from .rbac import Attributes, UserInfo
from .state import State

log = logging.getLogger("kube_standin")
VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-standin", "gitCommit": "standin",
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23",
           "compiler": "gc", "platform": "linux/amd64"}
_HEALTH = ("/healthz", "/livez", "/readyz")


def _attributes(user: UserInfo, info: RequestInfo) -> Attributes:
    if not info.is_resource_request:
        return Attributes(user=user, verb=info.verb, resource_request=False, path=info.path)
    return Attributes(user=user, verb=info.verb, resource_request=True, namespace=info.namespace,
                      group=info.api_group, resource=info.resource, subresource=info.subresource,
                      name=info.name)


def _forbidden(attrs: Attributes) -> Forbidden:
    if not attrs.resource_request:
        return Forbidden.for_request(user=attrs.user.name, verb=attrs.verb, path=attrs.path)
    return Forbidden.for_request(user=attrs.user.name, verb=attrs.verb, resource=attrs.resource,
                                 group=attrs.group, name=attrs.name, namespace=attrs.namespace,
                                 subresource=attrs.subresource)


def _impersonate(state: State, request: web.Request, user: UserInfo) -> UserInfo:
    headers = request.headers
    name = headers.get("Impersonate-User", "")
    groups = tuple(headers.getall("Impersonate-Group", []))
    extra: dict[str, tuple[str, ...]] = {}
    for key in headers:
        if key.lower().startswith("impersonate-extra-"):
            extra[key[len("impersonate-extra-"):].lower()] = tuple(headers.getall(key))
    if not name:
        if groups or extra:
            raise Forbidden("requested impersonation is forbidden: Impersonate-User is required")
        return user
    checks = []
    if name.startswith("system:serviceaccount:") and name.count(":") == 3:
        _, _, ns, sa = name.split(":")
        checks.append(Attributes(user=user, verb="impersonate", resource_request=True,
                                 namespace=ns, resource="serviceaccounts", name=sa))
        base = service_account_user(ns, sa, "")
        groups = groups or base.groups
    else:
        checks.append(Attributes(user=user, verb="impersonate", resource_request=True,
                                 resource="users", name=name))
    checks += [Attributes(user=user, verb="impersonate", resource_request=True, resource="groups",
                          name=g) for g in groups]
    checks += [Attributes(user=user, verb="impersonate", resource_request=True,
                          group="authentication.k8s.io", resource="userextras", subresource=k,
                          name=v) for k, vs in extra.items() for v in vs]
    for attrs in checks:
        if not state.authz.authorize(attrs).allowed:
            raise _forbidden(attrs)
    return with_authenticated(UserInfo(name=name, groups=groups, extra=extra))


def make_handler(state: State) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        try:
            peer = request.transport.get_extra_info("peercert") if request.transport else None
            user = state.authn.authenticate(request.headers, peer)
            user = _impersonate(state, request, user)
            info = derive_request_info(request.method, request.path, request.query)
            attrs = _attributes(user, info)
            if not state.authz.authorize(attrs).allowed:
                raise _forbidden(attrs)
            return await _route(request, state, info, user)
        except StatusError as e:
            return error_response(e)
        except web.HTTPException:
            raise
        except Exception as e:  # a bug here must still answer like an API server
            log.exception("internal error serving %s %s", request.method, request.path)
            return error_response(InternalError.wrapping(str(e)))
    return handler


async def _route(request: web.Request, state: State, info: RequestInfo,
                 user: UserInfo) -> web.StreamResponse:
    agg = state.aggregator
    if info.api_prefix == "apis" or (not info.is_resource_request and info.path.startswith("/apis/")):
        segs = [s for s in info.path.split("/") if s]
        if len(segs) >= 3:
            remote = agg.remote(segs[1], segs[2]) if agg else None
            if remote is not None:
                proxied: web.StreamResponse = await agg.proxy(request, remote, user)
                return proxied
    if request.method in ("GET", "HEAD") and info.path.rstrip("/") in ("/api", "/apis"):
        version = discovery_v2.negotiate(request.headers.get("Accept", ""))
        if version:
            return _aggregated_discovery(state, info.path.rstrip("/"), version)
    if request.method in ("GET", "HEAD") and not info.path.startswith("/openapi/"):
        check_accept(request)
    if not info.is_resource_request:
        return _non_resource(request, state, info)
    if info.api_group == "authentication.k8s.io" and info.resource in ("tokenreviews", "selfsubjectreviews") \
            and request.method == "POST" and len(info.parts) == 1:
        if info.resource == "tokenreviews":
            return await reviews.token_review(request, state)
        return await reviews.self_subject_review(request, user)
    if info.api_group == "authorization.k8s.io" and request.method == "POST" and len(info.parts) == 1 \
            and info.resource == "selfsubjectrulesreviews":
        return await reviews.self_subject_rules_review(request, state, user)
    if info.api_group == "authorization.k8s.io" and request.method == "POST" and len(info.parts) == 1 \
            and info.resource.endswith("subjectaccessreviews"):
        return await reviews.subject_access_review(request, state, info, user)
    return await rest.handle(request, state, info)


def _aggregated_discovery(state: State, path: str, version: str) -> web.Response:
    if path == "/api":
        items = [discovery_v2.group_item("", [("v1", discovery_v2.local_resources(
            state.types.in_group_version("", "v1")))])]
    else:
        apiservices = state.store.objects(("apiregistration.k8s.io", "apiservices"))
        by_name = {s["metadata"]["name"]: s for s in apiservices}
        items = []
        for entry in discovery.group_entries(apiservices):
            versions = []
            for gv in entry["versions"]:
                svc = by_name.get(f"{gv['version']}.{entry['name']}")
                if svc is not None and (svc.get("spec") or {}).get("service"):
                    resources = state.aggregator.discovery_resources(svc)
                else:
                    resources = discovery_v2.local_resources(
                        state.types.in_group_version(entry["name"], gv["version"]))
                versions.append((gv["version"], resources))
            items.append(discovery_v2.group_item(entry["name"], versions))
    body = json.dumps(discovery_v2.document(version, items), separators=(",", ":")).encode()
    return web.Response(body=body, headers={"Content-Type": discovery_v2.content_type(version)})


def _non_resource(request: web.Request, state: State, info: RequestInfo) -> web.StreamResponse:
    path = info.path.rstrip("/") or "/"
    if path in _HEALTH or any(path.startswith(h + "/") for h in _HEALTH):
        return web.Response(text="ok", content_type="text/plain")
    if path == "/version":
        return json_response(VERSION)
    types = state.types
    if path == "/openapi/v2":
        if openapi_pb.CONTENT_TYPE in request.headers.get("Accept", ""):
            body = types.derived("openapi/v2.pb", lambda: openapi_pb.document(
                openapi.v2_document(types.all())))  # kube-openapi's content type:
            return web.Response(body=body, headers={"Content-Type": "application/octet-stream"})
        return raw_json(types.derived("openapi/v2", lambda: json.dumps(
            openapi.v2_document(types.all()), separators=(",", ":")).encode()))
    if path == "/openapi/v3":
        return json_response(types.derived("openapi/v3", lambda: openapi.index(types.all())))
    if path.startswith("/openapi/v3/"):
        rel = path[len("/openapi/v3/"):].split("/")
        group, version = ("", rel[1]) if rel[0] == "api" and len(rel) == 2 else (
            (rel[1], rel[2]) if rel[0] == "apis" and len(rel) == 3 else ("", ""))
        served = types.in_group_version(group, version) if version else []
        if not served:
            raise NotFound.for_path()
        return raw_json(types.derived(("openapi/v3", group, version), lambda: json.dumps(
            openapi.group_version_doc(group, version, served), separators=(",", ":")).encode()))
    if path == "/api":
        return json_response(discovery.api_versions(f"127.0.0.1:{state.options.port}"))
    if path == "/api/v1":
        return json_response(discovery.api_resource_list("", "v1",
                                                         state.types.in_group_version("", "v1")))
    apiservices = state.store.objects(("apiregistration.k8s.io", "apiservices"))
    segs = [s for s in path.split("/") if s]
    if path == "/apis":
        return json_response(discovery.api_group_list(apiservices))
    if len(segs) == 2 and segs[0] == "apis":
        group_doc = discovery.api_group(apiservices, segs[1])
        if group_doc is None:
            raise NotFound.for_path()
        return json_response(group_doc)
    if len(segs) == 3 and segs[0] == "apis":
        listed = state.types.in_group_version(segs[1], segs[2])
        if not listed:
            raise NotFound.for_path()
        return json_response(discovery.api_resource_list(segs[1], segs[2], listed))
    raise NotFound.for_path()


def build_app(state: State) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", make_handler(state))
    return app
