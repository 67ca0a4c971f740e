"""Review APIs: TokenReview, SubjectAccessReview (+ Local/Self variants), SelfSubjectReview and
the ServiceAccount TokenRequest subresource.

SubjectAccessReviews are answered by the same RBAC evaluation that guards the stand-in's own
endpoints, so an aggregated server delegating authorization sees what kube-apiserver would
answer. Non-goals: audiences (tokens are valid for any audience), SelfSubjectRulesReview.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import web

from kubecommon.requestinfo import RequestInfo
from kubecommon.status import BadRequest, Invalid, NotFound

from .http import json_response, read_body
from .rbac import Attributes, UserInfo
from .state import State

GROUP_AUTHN = "authentication.k8s.io"
GROUP_AUTHZ = "authorization.k8s.io"


async def _body(request: web.Request, kind: str) -> dict[str, Any]:
    body = await read_body(request)
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a {kind}")
    return body


def _echo(body: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    meta = dict(body.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    return {"kind": kind, "apiVersion": api_version, "metadata": meta,
            "spec": body.get("spec") or {}}


async def token_review(request: web.Request, state: State) -> web.Response:
    body = await _body(request, "TokenReview")
    token = (body.get("spec") or {}).get("token", "")
    out = _echo(body, f"{GROUP_AUTHN}/v1", "TokenReview")
    user = state.authn.review_token(token) if token else None
    if user is None:
        out["status"] = {"authenticated": False, "user": {},
                         "error": "invalid bearer token" if token else "token is required"}
    else:
        out["status"] = {"authenticated": True, "user": user.to_dict(),
                         "audiences": (body.get("spec") or {}).get("audiences")
                         or ["https://kubernetes.default.svc"]}
    return json_response(out, 201)


def _attributes(spec: dict[str, Any], user: UserInfo, kind: str) -> Attributes:
    res: dict[str, Any] = spec.get("resourceAttributes") or {}
    nonres: dict[str, Any] = spec.get("nonResourceAttributes") or {}
    if bool(res) == bool(nonres):
        raise Invalid.for_object(kind, GROUP_AUTHZ, "", [(
            "spec.resourceAttributes",
            "Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be "
            "specified")])
    if res:
        return Attributes(user=user, verb=res.get("verb", ""), resource_request=True,
                          namespace=res.get("namespace", ""), group=res.get("group", ""),
                          resource=res.get("resource", ""), subresource=res.get("subresource", ""),
                          name=res.get("name", ""))
    return Attributes(user=user, verb=nonres.get("verb", ""), resource_request=False,
                      path=nonres.get("path", ""))


async def subject_access_review(request: web.Request, state: State, info: RequestInfo,
                                caller: UserInfo) -> web.Response:
    kind = {"subjectaccessreviews": "SubjectAccessReview",
            "selfsubjectaccessreviews": "SelfSubjectAccessReview",
            "localsubjectaccessreviews": "LocalSubjectAccessReview"}[info.resource]
    body = await _body(request, kind)
    spec = dict(body.get("spec") or {})
    if kind == "SelfSubjectAccessReview":
        user = caller
    else:
        if not spec.get("user") and not spec.get("groups"):
            raise Invalid.for_object(kind, GROUP_AUTHZ, "", [(
                "spec.user", 'Invalid value: "": at least one of user or group must be specified')])
        user = UserInfo(name=spec.get("user", ""), uid=spec.get("uid", ""),
                        groups=tuple(spec.get("groups") or ()),
                        extra={k: tuple(v) for k, v in (spec.get("extra") or {}).items()})
    if kind == "LocalSubjectAccessReview":
        ns = (spec.get("resourceAttributes") or {}).get("namespace", "")
        if ns != info.namespace:
            raise Invalid.for_object(kind, GROUP_AUTHZ, "", [(
                "spec.resourceAttributes.namespace",
                f'Invalid value: "{ns}": must match metadata.namespace')])
    decision = state.authz.authorize(_attributes(spec, user, kind))
    out = _echo(body, f"{GROUP_AUTHZ}/v1", kind)
    out["status"] = {"allowed": decision.allowed}
    if decision.reason:
        out["status"]["reason"] = decision.reason
    return json_response(out, 201)


async def self_subject_rules_review(request: web.Request, state: State,
                                    caller: UserInfo) -> web.Response:
    body = await _body(request, "SelfSubjectRulesReview")
    namespace = (body.get("spec") or {}).get("namespace", "")
    resource_rules, non_resource_rules = [], []
    for rule in state.authz.rules_for(caller, namespace):
        if rule.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": list(rule.get("verbs") or []),
                                       "nonResourceURLs": list(rule["nonResourceURLs"])})
        else:
            entry = {k: list(rule.get(k) or []) for k in ("verbs", "apiGroups", "resources",
                                                          "resourceNames") if rule.get(k)}
            resource_rules.append(entry)
    out = _echo(body, f"{GROUP_AUTHZ}/v1", "SelfSubjectRulesReview")
    out["status"] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                     "incomplete": False}
    return json_response(out, 201)


async def self_subject_review(request: web.Request, caller: UserInfo) -> web.Response:
    return json_response({"kind": "SelfSubjectReview", "apiVersion": f"{GROUP_AUTHN}/v1",
                          "metadata": {"creationTimestamp": None},
                          "status": {"userInfo": caller.to_dict()}}, 201)


async def token_request(request: web.Request, state: State, namespace: str, name: str) -> web.Response:
    if request.method != "POST":
        raise NotFound.for_path()
    sa = state.store.get(("", "serviceaccounts"), (namespace, name))
    if sa is None:
        raise NotFound.for_object("serviceaccounts", "", name)
    body = await read_body(request) if request.can_read_body else {}
    spec = dict((body or {}).get("spec") or {})
    seconds = int(spec.get("expirationSeconds") or 3600)
    token, expires = state.authn.issue_token(namespace, name, sa["metadata"]["uid"], seconds)
    spec["expirationSeconds"] = seconds
    stamp = dt.datetime.fromtimestamp(expires, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json_response({"kind": "TokenRequest", "apiVersion": f"{GROUP_AUTHN}/v1",
                          "metadata": {"name": name, "namespace": namespace,
                                       "creationTimestamp": None},
                          "spec": spec,
                          "status": {"token": token, "expirationTimestamp": stamp}}, 201)
