"""Request attributes for authorization, derived exactly as kube-apiserver's RequestInfo does.

Job: turn (method, decoded path, query) into the attributes a SubjectAccessReview carries
(spec §2.2: k8s.io/apiserver `pkg/endpoints/request/requestinfo.go`), build the review `spec`,
and word the 403 like kube-apiserver. The aggregator has already authorized the original user
with the same rules; we must do it again (upstream warns not to rely on the proxy).

Non-goals: routing (handlers do that), label/field selector requirements in the SAR (omitting
them asks for the broader permission, which upstream documents as always safe). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubecommon.kube.identity import UserInfo
from kubecommon.fieldselectors import parse_field_selector
from kubecommon.selectors import SelectorError
from kubecommon.status import Forbidden, InternalError

__all__ = ["RequestInfo", "derive_request_info", "forbidden", "review_spec"]

_API_PREFIXES = frozenset({"api", "apis"})
_GROUPLESS_PREFIXES = frozenset({"api"})
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_VERB_BY_METHOD = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update",
                   "PATCH": "patch", "DELETE": "delete"}
_NOT_WATCH = frozenset({"false", "0"})  # any other `watch` value, even empty, is a watch


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestInfo:
    is_resource_request: bool
    path: str
    verb: str
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()


def _split_path(path: str) -> list[str]:
    trimmed = path.strip("/")
    return trimmed.split("/") if trimmed else []


def derive_request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """RequestInfoFactory.NewRequestInfo for a decoded URL path (InternalError where it fails).

    tests/cases/requestinfo.yaml is the table of cases this and the stand-in's copy must pass."""
    non_resource = RequestInfo(is_resource_request=False, path=path, verb=method.lower())
    parts = _split_path(path)
    if len(parts) < 3 or parts[0] not in _API_PREFIXES:
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in _GROUPLESS_PREFIXES:
        if len(parts) < 3:  # /apis/<g>/<v> and shorter are discovery, i.e. non-resource
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts and parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:  # kube-apiserver answers 500 "failed to create RequestInfo"
            raise InternalError.wrapping(
                f"failed to create RequestInfo: unable to determine kind and namespace from url, {path}")
        verb, parts = parts[0], parts[1:]
    else:
        verb = _VERB_BY_METHOD.get(method.upper(), "")
    namespace = ""
    if parts and parts[0] == "namespaces":
        if len(parts) > 1:
            namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0] if parts else ""
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        watch = query.get("watch")
        verb = "watch" if watch is not None and watch.lower() not in _NOT_WATCH else "list"
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(is_resource_request=True, path=path, verb=verb, api_prefix=prefix,
                       api_group=group, api_version=version, namespace=namespace,
                       resource=resource, subresource=subresource, name=name, parts=tuple(parts))


def _name_from_field_selector(text: str) -> str:
    """A list narrowed by `metadata.name=<x>` is authorized as a get of that name."""
    if not text:
        return ""
    try:
        selector = parse_field_selector(text)
    except SelectorError:
        return ""  # upstream logs the parse error and keeps the plain list
    name = selector.value_for("metadata.name")
    if not name or name in (".", "..") or "/" in name or "%" in name:
        return ""
    return name


def review_spec(user: UserInfo, info: RequestInfo) -> dict[str, Any]:
    """The `spec` of a SubjectAccessReview for this request (empty attributes omitted)."""
    spec = user.review_fields()
    if info.is_resource_request:
        attributes = {
            "namespace": info.namespace, "verb": info.verb, "group": info.api_group,
            "version": info.api_version, "resource": info.resource,
            "subresource": info.subresource, "name": info.name,
        }
        spec["resourceAttributes"] = {k: v for k, v in attributes.items() if v}
    else:
        spec["nonResourceAttributes"] = {"path": info.path, "verb": info.verb}
    return spec


def forbidden(user: UserInfo, info: RequestInfo, reason: str = "") -> Forbidden:
    """The 403 Status k8s.io/apiserver writes for this denied request (`Forbidden.for_request`)."""
    if not info.is_resource_request:
        return Forbidden.for_request(user=user.name, verb=info.verb, path=info.path, reason=reason)
    return Forbidden.for_request(user=user.name, verb=info.verb, resource=info.resource, group=info.api_group,
                                 name=info.name, namespace=info.namespace, subresource=info.subresource,
                                 reason=reason)
