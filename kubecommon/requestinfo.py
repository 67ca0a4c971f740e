"""k8s.io/apiserver RequestInfo: which resource, verb, namespace and name a request is about.

Job: turn (method, decoded URL path, query) into the attributes kube-apiserver's
RequestInfoFactory derives (`pkg/endpoints/request/requestinfo.go`, APIPrefixes {api, apis},
GrouplessAPIPrefixes {api}; aggregated-apiserver.md §2.2). The same attributes feed RBAC,
SubjectAccessReview, Forbidden messages and routing, so both the adapter (it authorizes every
request it serves) and the API-server stand-in derive them here, once.

tests/cases/requestinfo.yaml is the table of kube-apiserver's answers this must give.

Non-goals: building a SubjectAccessReview or a 403 (the callers' business), label/field selector
requirements beyond the name a field selector pins. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubecommon.fieldselectors import parse_field_selector
from kubecommon.selectors import SelectorError
from kubecommon.status import InternalError

__all__ = ["RequestInfo", "derive_request_info"]

_API_PREFIXES = frozenset({"api", "apis"})
_GROUPLESS_PREFIXES = frozenset({"api"})
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_VERB_BY_METHOD = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update",
                   "PATCH": "patch", "DELETE": "delete"}
_NOT_WATCH = frozenset({"false", "0"})  # any other `watch` value, even empty, is a watch


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestInfo:
    """Upstream's RequestInfo fields; `parts` are the path parts from the resource on."""

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


def derive_request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """RequestInfoFactory.NewRequestInfo for a decoded URL path (InternalError where it fails).

    `query` holds the first value of each parameter (Go's `req.URL.Query()[k][0]`)."""
    trimmed = path.strip("/")
    parts = trimmed.split("/") if trimmed else []
    if len(parts) < 3 or parts[0] not in _API_PREFIXES:
        return RequestInfo(is_resource_request=False, path=path, verb=method.lower())
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in _GROUPLESS_PREFIXES:
        if len(parts) < 3:  # /apis/<g>/<v> and shorter are discovery, i.e. non-resource
            return RequestInfo(is_resource_request=False, path=path, verb=method.lower())
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
    subresource = parts[2] if len(parts) >= 3 and verb != "proxy" else ""  # proxy: no subresources
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
    """A list narrowed by `metadata.name=<x>` is about that name (upstream RequiresExactMatch);
    a selector that does not parse pins nothing (upstream logs it; the list itself answers 400)."""
    if not text:
        return ""
    try:
        name = parse_field_selector(text).value_for("metadata.name")
    except SelectorError:
        return ""
    if not name or name in (".", "..") or "/" in name or "%" in name:
        return ""  # not a valid path segment name (path.IsValidPathSegmentName)
    return name
