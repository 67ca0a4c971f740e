"""k8s.io/apiserver RequestInfo: which resource, verb, namespace and name a request is about.

The same attributes feed RBAC, SubjectAccessReview, Forbidden messages and routing, so they are
derived once, with the upstream rules (aggregated-apiserver.md §2.2). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from kubecommon.fieldselectors import parse_field_selector
from kubecommon.selectors import SelectorError
from kubecommon.status import InternalError

_METHOD_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update",
                 "PATCH": "patch", "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_NOT_WATCH = frozenset({"false", "0"})  # any other `watch` value, even empty, is a watch


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestInfo:
    is_resource: bool
    path: str
    verb: str
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """RequestInfoFactory.NewRequestInfo for a decoded path (InternalError where it fails); the
    rows of tests/cases/requestinfo.yaml hold for this and for the adapter's own copy."""
    verb = _METHOD_VERBS.get(method.upper(), "")
    non_resource = RequestInfo(is_resource=False, path=path, verb=method.lower())
    segments = [s for s in path.strip("/").split("/")] if path.strip("/") else []
    if len(segments) < 3 or segments[0] not in ("api", "apis"):
        return non_resource
    prefix, rest = segments[0], segments[1:]
    if prefix == "apis":
        if len(segments) < 4:
            return non_resource
        group, version, rest = rest[0], rest[1], rest[2:]
    else:
        group, version, rest = "", rest[0], rest[1:]
    if rest and rest[0] in ("watch", "proxy"):
        if len(rest) < 2:
            raise InternalError.wrapping(
                f"failed to create RequestInfo: unable to determine kind and namespace from url, {path}")
        verb, rest = rest[0], rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces":
        if len(rest) > 1:
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
                rest = rest[2:]
    parts = tuple(rest)
    resource = parts[0] if parts else ""
    name = parts[1] if len(parts) > 1 else ""
    subresource = parts[2] if len(parts) > 2 and verb != "proxy" else ""  # proxy: no subresources
    if not name and verb == "get":
        watch = query.get("watch")
        verb = "watch" if watch is not None and watch.lower() not in _NOT_WATCH else "list"
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(is_resource=True, path=path, verb=verb, api_prefix=prefix, group=group,
                       version=version, namespace=namespace, resource=resource,
                       subresource=subresource, name=name, parts=parts)


def _name_from_field_selector(text: str) -> str:
    """A list pinned by `metadata.name=<x>` is authorized as that name (upstream
    RequiresExactMatch); a selector that does not parse pins nothing (the list answers 400)."""
    try:
        value = parse_field_selector(text).value_for("metadata.name")
    except SelectorError:
        return ""
    if not value or "/" in value or "%" in value or value in (".", ".."):
        return ""  # not a valid path segment name (path.IsValidPathSegmentName)
    return value
