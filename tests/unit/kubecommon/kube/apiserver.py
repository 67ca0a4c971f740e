"""The in-process API server the kube client tests run against: a configuration of
`hack.kube_standin.inprocess` (list/watch with resourceVersion, 410 Expired once compacted, paginated
LIST, discovery for apps/v1) plus TokenReview and SubjectAccessReview endpoints with call counters;
`eventually` waits for what a watch delivers.

`start()` returns the KubeConfig of a token user ("t0ken"); with `tls=True` it serves HTTPS (a
fresh CA in `ca_pem`): a kubeconfig user's credentials are sent only over https, as kubectl sends
them. `anonymous = True` serves requests that carry no Authorization (as `kubectl proxy` does);
`list_status` answers every LIST/WATCH with that code; `calls` records `GET|WATCH <path>?<query>`
and `TokenReview` / `SAR`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from hack.kube_standin.inprocess import InProcessAPIServer, status, unauthorized
from kubecommon.kube.config import KubeConfig
from kubecommon.requestinfo import RequestInfo

_REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 429: "TooManyRequests"}
REVIEWS = ("/apis/authentication.k8s.io/v1/tokenreviews", "/apis/authorization.k8s.io/v1/subjectaccessreviews")


async def eventually(check, timeout=1.5):
    """Poll `check()` until it holds; AssertionError after `timeout` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


class FakeAPIServer(InProcessAPIServer):
    def __init__(self, *, tls: bool = False) -> None:
        super().__init__(revision=100, discovery={
            "/apis/apps": {"kind": "APIGroup", "name": "apps",
                           "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
                           "versions": [{"groupVersion": "apps/v1", "version": "v1"}]},
            "/apis/apps/v1": {"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [
                {"name": "deployments", "singularName": "deployment", "namespaced": True,
                 "kind": "Deployment", "verbs": ["get", "list", "watch"]},
                {"name": "deployments/scale", "namespaced": True, "kind": "Scale", "verbs": ["get"]}]}})
        self.tls = tls
        self.anonymous = False  # serve requests without Authorization
        self.list_status = 200
        self.token_users: dict[str, dict[str, Any]] = {}
        self.sar_allowed_users: set[str] = set()
        self.review_status = 200
        self.client: Any = None  # a KubeClient a fixture attaches
        self.guard = self._authenticate
        self.describe = self._describe
        self.routes = [(REVIEWS[0], self._token_review), (REVIEWS[1], self._sar)]

    async def start(self, *, port: int = 0) -> KubeConfig:  # type: ignore[override]
        url = await super().start(tls=self.tls, port=port)
        return KubeConfig(server=url, token="t0ken", ca_pem=self.ca_pem)

    # --- state changes (awaitable, as the watch tests interleave them with reads) ----------------
    async def put(self, collection: str, name: str, namespace: str = "", labels=None,  # type: ignore[override]
                  event: str | None = None, data=None) -> dict[str, Any]:
        obj: dict[str, Any] = {"metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                                            "creationTimestamp": "2026-01-01T00:00:00Z"}}
        if data is not None:
            obj["data"] = data
        return self.put_object(collection, obj, event)

    def put_object(self, collection: str, obj: dict[str, Any], event: str | None = None) -> dict[str, Any]:
        """Store a whole object (the shared server's `put`)."""
        return super().put(collection, obj, event)

    async def delete(self, collection: str, name: str, namespace: str = "") -> dict[str, Any]:  # type: ignore[override]
        return super().delete(collection, namespace, name)

    async def compact(self) -> None:  # type: ignore[override]
        """Forget history up to now: every watch, even a caught-up one, gets 410 Expired."""
        super().compact()

    # --- hooks ------------------------------------------------------------------------------------
    def _describe(self, request: web.Request, info: RequestInfo) -> str | None:
        if request.path in REVIEWS or not info.is_resource_request:
            return None  # reviews count themselves once their body is read; discovery is not counted
        return f"{'WATCH' if request.query.get('watch') else 'GET'} {request.path}?{request.query_string}"

    async def _authenticate(self, request: web.Request, info: RequestInfo) -> web.StreamResponse | None:
        if request.path in REVIEWS or not info.is_resource_request:
            return None
        authorization = request.headers.get("Authorization")
        if authorization != "Bearer t0ken" and not (self.anonymous and authorization is None):
            return unauthorized()
        if self.list_status != 200:
            return status(self.list_status, "Forbidden", "forbidden")
        return None

    async def _token_review(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        body = await request.json()
        self.calls.append("TokenReview")
        if self.review_status != 200:
            return self._review_failure()
        user = self.token_users.get(body["spec"]["token"])
        state = {"authenticated": True, "user": user} if user else {"authenticated": False, "error": "bad token"}
        return web.json_response({**body, "status": state}, status=201)

    async def _sar(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        body = await request.json()
        self.calls.append("SAR")
        if self.review_status != 200:
            return self._review_failure()
        allowed = body["spec"]["user"] in self.sar_allowed_users
        return web.json_response({**body, "status": {"allowed": allowed}}, status=201)

    def _review_failure(self) -> web.Response:
        code = self.review_status
        return status(code, _REASONS.get(code, "InternalError"), f"review answered {code}")
