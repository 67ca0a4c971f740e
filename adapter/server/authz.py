"""Delegated authorization (spec §2.1): system:masters, always-allow paths, then SubjectAccessReview.

Decision order of k8s.io/apiserver's delegating authorizer: members of `system:masters` are
allowed without a call; non-resource requests to an always-allow path (`/healthz`, `/readyz`,
`/livez` by default; an entry ending in `*` is a prefix) are allowed; everything else asks
kube-apiserver. Allowed → continue; denied or no opinion → 403 Status worded like
kube-apiserver; a review that cannot be made → 500 (the request must not be let through).

Non-goals: caching (reviews.SubjectAccessReviewer caches), attribute derivation (kubecommon.requestinfo).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kubecommon.kube.errors import KubeError
from kubecommon.kube.identity import MASTERS_GROUP, UserInfo
from kubecommon.kube.reviews import AccessDecision
from adapter.server.requestinfo import forbidden, review_spec
from kubecommon.requestinfo import RequestInfo
from kubecommon.status import InternalError

__all__ = ["DEFAULT_ALWAYS_ALLOW_PATHS", "Authorizer", "path_always_allowed"]

_log = logging.getLogger(__name__)
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")


class AccessReviewerLike(Protocol):
    async def review(self, spec: Mapping[str, Any]) -> AccessDecision: ...


def path_always_allowed(path: str, allowed: Sequence[str]) -> bool:
    for entry in allowed:
        if entry.endswith("*"):
            if path.startswith(entry[:-1]):
                return True
        elif path == entry:
            return True
    return False


class Authorizer:
    def __init__(self, reviewer: AccessReviewerLike | None, *,
                 always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS) -> None:
        self._reviewer = reviewer
        self._paths = tuple(always_allow_paths)

    def skips_review(self, user: UserInfo, info: RequestInfo) -> bool:
        if MASTERS_GROUP in user.groups:
            return True
        return not info.is_resource_request and path_always_allowed(info.path, self._paths)

    async def authorize(self, user: UserInfo, info: RequestInfo) -> None:
        """Return when allowed; raise Forbidden (403) or InternalError (500)."""
        if self.skips_review(user, info):
            return
        if self._reviewer is None:
            raise forbidden(user, info, "no authorizer is configured")
        try:
            decision = await self._reviewer.review(review_spec(user, info))
        except KubeError as err:
            _log.error("SubjectAccessReview failed for %s %s: %s", user.name, info.path, err)
            raise InternalError.wrapping("authorization check failed") from None
        if decision.allowed and not decision.denied:
            return
        if decision.evaluation_error:
            _log.info("SubjectAccessReview evaluation error for %s: %s", user.name, decision.evaluation_error)
        raise forbidden(user, info, decision.reason)
