"""A tiny in-process Kubernetes API server (aiohttp) speaking the real list/watch wire protocol.

Enough for the kube client tests: paginated LIST with resourceVersion, streamed WATCH with
ADDED/MODIFIED/DELETED/BOOKMARK events, `410 Expired` for compacted resourceVersions, discovery
documents, TokenReview and SubjectAccessReview endpoints with call counters; `eventually` waits
for what a watch delivers. With `tls=True` it serves HTTPS (a fresh CA in `ca_pem`, a certificate
for 127.0.0.1): a kubeconfig user's credentials are sent only over https, as kubectl sends them.
`anonymous = True` serves requests that carry no Authorization (as `kubectl proxy` does).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import tempfile
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.config import KubeConfig
from kubecommon.tls import generate_ca, issue_certificate, server_ssl_context


async def eventually(check, timeout=1.5):
    """Poll `check()` until it holds; AssertionError after `timeout` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


def _serving_context() -> tuple[ssl.SSLContext, bytes]:
    """A TLS context for 127.0.0.1 and the PEM of the CA that signed it (P-256: quick to make)."""
    ca = generate_ca("fake-apiserver-ca", key_algorithm="ecdsa")
    leaf = issue_certificate(ca, "127.0.0.1", ip_addresses=["127.0.0.1"], key_algorithm="ecdsa")
    with tempfile.TemporaryDirectory() as directory:
        cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        leaf.write(cert, key)
        return server_ssl_context(cert, key), ca.cert_pem


class FakeAPIServer:
    def __init__(self, *, tls: bool = False) -> None:
        self.tls = tls
        self.ca_pem: bytes | None = None
        self.anonymous = False  # serve requests without Authorization
        self.rv = 100
        self.objects: dict[tuple[str, str, str], dict] = {}  # (path, ns, name) -> object
        self.events: list[tuple[int, str, str, dict]] = []  # (rv, collection path, type, object)
        self.compacted_below = 0
        self.changed = asyncio.Condition()
        self.calls: list[str] = []
        self.list_status = 200
        self.drop_watch_after = None  # close watch streams after N events
        self.token_users: dict[str, dict] = {}
        self.sar_allowed_users: set[str] = set()
        self.review_status = 200
        self.discovery = {"/apis/apps": {"kind": "APIGroup", "name": "apps",
                                         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
                                         "versions": [{"groupVersion": "apps/v1", "version": "v1"}]},
                          "/apis/apps/v1": {"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [
                              {"name": "deployments", "singularName": "deployment", "namespaced": True,
                               "kind": "Deployment", "verbs": ["get", "list", "watch"]},
                              {"name": "deployments/scale", "namespaced": True, "kind": "Scale", "verbs": ["get"]}]}}
        self.server: TestServer | None = None

    # --- state changes ------------------------------------------------------------------------
    async def put(self, collection: str, name: str, namespace: str = "", labels=None, event: str | None = None,
                  data=None) -> None:
        self.rv += 1
        obj = {"metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                            "resourceVersion": str(self.rv), "creationTimestamp": "2026-01-01T00:00:00Z"}}
        if data is not None:
            obj["data"] = data
        key = (collection, namespace, name)
        kind = event or ("MODIFIED" if key in self.objects else "ADDED")
        self.objects[key] = obj
        await self._emit(collection, kind, obj)

    async def delete(self, collection: str, name: str, namespace: str = "") -> None:
        self.rv += 1
        obj = self.objects.pop((collection, namespace, name))
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
        await self._emit(collection, "DELETED", obj)

    async def _emit(self, collection: str, kind: str, obj: dict) -> None:
        async with self.changed:
            self.events.append((self.rv, collection, kind, obj))
            self.changed.notify_all()

    async def compact(self) -> None:
        """Forget history up to now: every watch, even a caught-up one, gets 410 Expired."""
        async with self.changed:
            self.compacted_below = self.rv + 2
            self.changed.notify_all()

    # --- HTTP ---------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/v1/{rest:.*}", self._collection)
        app.router.add_get("/apis/{group}/{version}/{rest:.+}", self._collection)
        app.router.add_get("/apis/{rest:[^/]+(/[^/]+)?}", self._discovery)
        app.router.add_post("/apis/authentication.k8s.io/v1/tokenreviews", self._token_review)
        app.router.add_post("/apis/authorization.k8s.io/v1/subjectaccessreviews", self._sar)
        return app

    async def start(self) -> KubeConfig:
        context = None
        if self.tls:
            context, self.ca_pem = _serving_context()
        self.server = TestServer(self.app(), host="127.0.0.1")
        await self.server.start_server(ssl=context)
        return KubeConfig(server=self.url, token="t0ken", ca_pem=self.ca_pem)

    @property
    def url(self) -> str:
        """The started server's base URL."""
        assert self.server is not None, "start() first"
        return str(self.server.make_url("")).rstrip("/")

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    async def _discovery(self, request: web.Request) -> web.Response:
        doc = self.discovery.get(request.path)
        if doc is None:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound", "message": "nope"},
                                     status=404)
        return web.json_response(doc)

    def _collection_path(self, request: web.Request) -> tuple[str, str | None, str | None]:
        parts = request.path.split("/")
        base = parts[:3] if parts[1] == "api" else parts[:4]
        rest = parts[len(base):]
        namespace = None
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        name = rest[1] if len(rest) > 1 else None
        return "/".join(base + rest[:1]), namespace, name

    async def _collection(self, request: web.Request) -> web.StreamResponse:
        collection, namespace, name = self._collection_path(request)
        self.calls.append(f"{'WATCH' if request.query.get('watch') else 'GET'} {request.path}?{request.query_string}")
        authorization = request.headers.get("Authorization")
        if authorization != "Bearer t0ken" and not (self.anonymous and authorization is None):
            return web.json_response({"kind": "Status", "code": 401, "reason": "Unauthorized"}, status=401)
        if self.list_status != 200:
            return web.json_response({"kind": "Status", "code": self.list_status, "reason": "Forbidden",
                                      "message": "forbidden"}, status=self.list_status)
        field = request.query.get("fieldSelector", "")
        want_name = field.split("=", 1)[1] if field.startswith("metadata.name=") else None
        def visible(key):
            return key[0] == collection and (namespace is None or key[1] == namespace) and \
                (want_name is None or key[2] == want_name)
        if name is not None:
            obj = self.objects.get((collection, namespace or "", name))
            if obj is None:
                return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
            return web.json_response(obj)
        if request.query.get("watch") == "true":
            return await self._watch(request, collection, visible)
        items = [obj for key, obj in sorted(self.objects.items()) if visible(key)]
        limit = int(request.query.get("limit", "0") or 0)
        start = int(request.query.get("continue", "0") or 0)
        page = items[start:start + limit] if limit else items
        meta = {"resourceVersion": str(self.rv)}
        if limit and start + limit < len(items):
            meta["continue"] = str(start + limit)
        return web.json_response({"kind": "List", "metadata": meta, "items": page})

    async def _watch(self, request, collection, visible) -> web.StreamResponse:
        since = int(request.query.get("resourceVersion", "0") or 0)
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        sent = 0
        while True:
            if since < self.compacted_below - 1:
                error = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
                await response.write(json.dumps({"type": "ERROR", "object": error}).encode() + b"\n")
                return response
            async with self.changed:
                fresh = [(rv, kind, obj) for rv, coll, kind, obj in self.events
                         if rv > since and coll == collection
                         and visible((coll, obj["metadata"]["namespace"], obj["metadata"]["name"]))]
                if not fresh and since >= self.compacted_below - 1:
                    try:
                        await asyncio.wait_for(self.changed.wait(), 5)
                    except asyncio.TimeoutError:
                        return response
                    continue
            for rv, kind, obj in fresh:
                await response.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")
                since, sent = rv, sent + 1
                if self.drop_watch_after is not None and sent >= self.drop_watch_after:
                    return response

    async def _token_review(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append("TokenReview")
        if self.review_status != 200:
            return web.json_response({"kind": "Status", "code": self.review_status}, status=self.review_status)
        user = self.token_users.get(body["spec"]["token"])
        status = {"authenticated": True, "user": user} if user else {"authenticated": False, "error": "bad token"}
        return web.json_response({**body, "status": status}, status=201)

    async def _sar(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append("SAR")
        if self.review_status != 200:
            return web.json_response({"kind": "Status", "code": self.review_status}, status=self.review_status)
        allowed = body["spec"]["user"] in self.sar_allowed_users
        return web.json_response({**body, "status": {"allowed": allowed}}, status=201)
