"""Who may read the controller's own endpoints: delegated authentication and authorization.

Why: `/metrics` and `/debug/decisions/...` name every autoscaled workload with its metric values
and replica decisions, in every namespace, to anyone who can reach the pod. kube-controller-manager
serves the same kind of endpoints behind the API server (delegated authentication and
authorization), and so does controller-runtime's secure metrics serving; this does what they do:

- a request's `Authorization: Bearer <token>` is checked with a TokenReview; no token, or one the
  API server does not authenticate, is a 401 `Unauthorized` Status;
- the user is then checked with a SubjectAccessReview for the non-resource URL (`get` on
  `/metrics`, `/debug/decisions/pas/shop/web`, ...): RBAC grants it with `nonResourceURLs`
  (`/debug/decisions/*` covers every decision); a denial is kube-apiserver's 403 `Forbidden`
  Status, a review that fails is a 500;
- `--authorization-always-allow-paths` (default `/healthz,/livez,/readyz`, as upstream, so the
  kubelet's probes need no credentials) skip both; `/p/*` allows every path under `/p/`.

Reviews are cached (10 s, bounded) and shared while in flight by kubecommon.kube.reviews, so a
scrape every few seconds costs the API server one TokenReview and one SubjectAccessReview per
10 s per caller. At most `MAX_IN_FLIGHT` guarded requests run at once (more get kube-apiserver's
429 with `Retry-After: 1`, as its max-in-flight filter answers): a flood of made-up tokens cannot
queue unbounded reviews on the client the controller's syncs use.

Non-goals: client certificates and front-proxy headers (an aggregated API server's business: the
adapter's), TLS (kubecommon.serving), what the endpoints serve (controller.telemetry).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubecommon.kube.errors import KubeError
from kubecommon.kube.identity import UserInfo, bearer_token
from kubecommon.kube.reviews import SubjectAccessReviewer, TokenReviewer
from kubecommon.status import Forbidden, InternalError, StatusError, TooManyRequests, Unauthorized
from kubecommon.status_response import status_response

__all__ = ["DEFAULT_ALWAYS_ALLOW", "MAX_IN_FLIGHT", "AlwaysAllowPaths", "EndpointGuard", "access_review_spec"]

_log = logging.getLogger(__name__)

#: k8s.io/apiserver's default for --authorization-always-allow-paths
DEFAULT_ALWAYS_ALLOW = "/healthz,/livez,/readyz"
#: guarded requests served at once (a scraper or two and a person running `explain` need a few)
MAX_IN_FLIGHT = 32

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlwaysAllowPaths:
    """Paths served without credentials: exact ones, and prefixes written `/prefix/*`."""

    exact: frozenset[str]
    prefixes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> AlwaysAllowPaths:
        """From the flag's comma-separated list; ValueError names a path that is not absolute or
        has a `*` anywhere but at its end (upstream refuses both at start)."""
        exact: set[str] = set()
        prefixes: list[str] = []
        for path in filter(None, (part.strip() for part in text.split(","))):
            if not path.startswith("/"):
                raise ValueError(f"path {path!r} must start with /")
            if "*" in path[:-1]:
                raise ValueError(f"path {path!r}: only a trailing * is allowed")
            if path.endswith("*"):
                prefixes.append(path[:-1])
            else:
                exact.add(path)
        return cls(exact=frozenset(exact), prefixes=tuple(prefixes))

    def allows(self, path: str) -> bool:
        return path in self.exact or any(path.startswith(prefix) for prefix in self.prefixes)


def access_review_spec(user: UserInfo, path: str, verb: str) -> dict[str, Any]:
    """The SubjectAccessReview `spec` for `verb` (the request's method, lower case, as upstream's
    non-resource request info) on the non-resource URL `path`."""
    spec = user.with_authenticated_group().review_fields()
    spec["nonResourceAttributes"] = {"path": path, "verb": verb}
    return spec


class EndpointGuard:
    """Authenticates and authorizes each request before its handler runs (an aiohttp middleware)."""

    def __init__(self, tokens: TokenReviewer, access: SubjectAccessReviewer, *,
                 always_allow: AlwaysAllowPaths, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        self._tokens = tokens
        self._access = access
        self._always_allow = always_allow
        self._max_in_flight = max_in_flight
        self._in_flight = 0

    async def _authorize(self, *, method: str, path: str, authorization: str) -> None:
        """Return when the request's user may make it; else raise the StatusError to answer with."""
        user = await self._authenticate(authorization)
        verb = method.lower()
        try:
            decision = await self._access.review(access_review_spec(user, path, verb))
        except KubeError as err:
            _log.warning("SubjectAccessReview for %s %s failed: %s", user.name, path, err)
            raise InternalError(f"Internal Server Error: {path!r}: authorization failed") from None
        if not decision.allowed:
            raise Forbidden.for_request(user=user.name, verb=verb, path=path, reason=decision.reason)

    async def _authenticate(self, authorization: str) -> UserInfo:
        token = bearer_token(authorization)
        if token is None:
            raise Unauthorized()
        try:
            result = await self._tokens.review(token)
        except KubeError as err:
            _log.warning("TokenReview failed: %s", err)
            raise Unauthorized() from None
        if not result.authenticated or result.user is None:
            _log.info("authentication failed: %s", result.error or "token not authenticated")
            raise Unauthorized()
        return result.user

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._always_allow.allows(request.path):
            return await handler(request)
        if self._in_flight >= self._max_in_flight:
            return status_response(TooManyRequests("Too many requests, please try again later.",
                                           headers={"Retry-After": "1"}, details={"retryAfterSeconds": 1}))
        self._in_flight += 1
        try:
            await self._authorize(method=request.method, path=request.path,
                                  authorization=request.headers.get("Authorization", ""))
            return await handler(request)
        except StatusError as err:
            return status_response(err)
        finally:
            self._in_flight -= 1

