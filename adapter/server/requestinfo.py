"""The SubjectAccessReview and the 403 for a request's attributes, as kube-apiserver words them.

Job: given the attributes kubecommon.requestinfo derives (spec §2.2: k8s.io/apiserver
`pkg/endpoints/request/requestinfo.go`), build the review `spec` and word the 403 like
kube-apiserver. The aggregator has already authorized the original user with the same rules; we
must do it again (upstream warns not to rely on the proxy).

Non-goals: deriving the attributes (kubecommon.requestinfo, shared with the API-server stand-in),
routing (handlers do that), label/field selector requirements in the SAR (omitting them asks for
the broader permission, which upstream documents as always safe). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from kubecommon.kube.identity import UserInfo
from kubecommon.requestinfo import RequestInfo
from kubecommon.status import Forbidden

__all__ = ["forbidden", "review_spec"]


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
