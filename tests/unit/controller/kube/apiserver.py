"""An in-process API server for the controller's writes: discovery, `/scale` GET/PUT with
resourceVersion checks (and forced 409s), `status` PATCH/PUT, core/v1 Events POST/PATCH.

Only what the kube port tests need; the real wire behaviour (kubectl, RBAC, CRDs) is covered by
the integration tests against hack/kube_standin.
"""

from __future__ import annotations

import json

from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfig


def status(code: int, reason: str, message: str, details=None) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message, "details": details or {}}
    return web.json_response(body, status=code)


class InProcessServer:
    """Serves `_route` on a loopback port and hands out a started KubeClient for it."""

    server: TestServer | None = None
    client: KubeClient | None = None

    async def start(self) -> KubeClient:
        app = web.Application()
        app.router.add_route("*", "/{rest:.*}", self._route)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        self.client = KubeClient(KubeConfig(server=str(self.server.make_url("")).rstrip("/")), timeout=2.0)
        await self.client.start()
        return self.client

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        if self.server is not None:
            await self.server.close()

    async def _route(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError


class WritesServer(InProcessServer):
    def __init__(self) -> None:
        self.rv = 500
        self.discovery: dict[str, dict] = {
            "/apis/apps": {"kind": "APIGroup", "name": "apps", "preferredVersion": {"version": "v1"},
                           "versions": [{"version": "v1"}]},
            "/apis/apps/v1": {"kind": "APIResourceList", "resources": [
                {"name": "deployments", "kind": "Deployment", "namespaced": True},
                {"name": "deployments/scale", "kind": "Scale", "namespaced": True},
                {"name": "controllerrevisions", "kind": "ControllerRevision", "namespaced": True}]},
        }
        self.scales: dict[tuple[str, str, str], dict] = {}  # (collection path, ns, name) -> {replicas, rv, ...}
        self.conflicts = 0  # answer this many PUTs with 409 (and move the resourceVersion)
        self.statuses: dict[str, dict] = {}  # object path -> status
        self.status_codes: list[int] = []  # next answers for status writes (popped), else 200
        self.events: dict[str, dict] = {}  # name -> event
        self.event_codes: list[int] = []
        self.calls: list[str] = []
        self.server: TestServer | None = None
        self.client: KubeClient | None = None

    def add_scale(self, collection: str, namespace: str, name: str, replicas: int, selector: str = "") -> None:
        self.rv += 1
        self.scales[(collection, namespace, name)] = {"replicas": replicas, "rv": str(self.rv), "selector": selector}

    async def _route(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.calls.append(f"{request.method} {path}")
        if path in self.discovery and request.method == "GET":
            return web.json_response(self.discovery[path])
        if path.endswith("/scale"):
            return await self._scale(request, path[: -len("/scale")])
        if path.endswith("/status"):
            return await self._status(request, path[: -len("/status")])
        if "/events" in path:
            return await self._event(request, path)
        return status(404, "NotFound", "the server could not find the requested resource")

    def _scale_doc(self, namespace: str, name: str, entry: dict) -> dict:
        scale_status = {"replicas": entry["replicas"]}
        if entry["selector"]:
            scale_status["selector"] = entry["selector"]
        return {"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": name, "namespace": namespace, "resourceVersion": entry["rv"]},
                "spec": {"replicas": entry["replicas"]}, "status": scale_status}

    async def _scale(self, request: web.Request, object_path: str) -> web.StreamResponse:
        collection, name = object_path.rsplit("/", 1)
        namespace = collection.split("/namespaces/")[1].split("/")[0]
        collection = collection.replace(f"/namespaces/{namespace}", "")
        if not any(c == collection for c, _, _ in self.scales):
            return status(404, "NotFound", "the server could not find the requested resource")
        entry = self.scales.get((collection, namespace, name))
        if entry is None:
            return status(404, "NotFound", f'{collection.rsplit("/", 1)[1]} "{name}" not found',
                          {"name": name, "kind": collection.rsplit("/", 1)[1]})
        if request.method == "GET":
            return web.json_response(self._scale_doc(namespace, name, entry))
        body = await request.json()
        sent_rv = (body.get("metadata") or {}).get("resourceVersion")
        if self.conflicts > 0:
            self.conflicts -= 1
            self.rv += 1
            entry["rv"] = str(self.rv)  # another writer got there first
        if sent_rv and sent_rv != entry["rv"]:
            return status(409, "Conflict", f'Operation cannot be fulfilled on scale "{name}": the object has been '
                          "modified; please apply your changes to the latest version and try again",
                          {"name": name})
        self.rv += 1
        entry.update(replicas=body["spec"]["replicas"], rv=str(self.rv))
        return web.json_response(self._scale_doc(namespace, name, entry))

    async def _status(self, request: web.Request, object_path: str) -> web.StreamResponse:
        code = self.status_codes.pop(0) if self.status_codes else 200
        if code != 200:
            return status(code, {404: "NotFound", 409: "Conflict"}.get(code, "InternalError"), f"status {code}",
                          {"name": object_path.rsplit("/", 1)[1]} if code == 404 else None)
        body = await request.json()
        if request.headers.get("Content-Type") == "application/json-patch+json":
            (op,) = body
            assert op["op"] == "add" and op["path"] == "/status", op
            self.statuses[object_path] = op["value"]
        else:
            self.statuses[object_path] = body["status"]
        return web.json_response({"metadata": {"name": object_path.rsplit("/", 1)[1]},
                                  "status": self.statuses[object_path]})

    async def _event(self, request: web.Request, path: str) -> web.StreamResponse:
        code = self.event_codes.pop(0) if self.event_codes else 200
        if code != 200:
            return status(code, "InternalError" if code >= 500 else "NotFound", f"event write {code}")
        body = await request.json()
        if request.method == "POST":
            name = body["metadata"]["name"]
            if name in self.events:
                return status(409, "AlreadyExists", f'events "{name}" already exists', {"name": name})
            self.events[name] = body
            return web.json_response(body, status=201)
        name = path.rsplit("/", 1)[1]
        if name not in self.events:
            return status(404, "NotFound", f'events "{name}" not found', {"name": name})
        self.events[name] = {**self.events[name], **body}
        return web.json_response(json.loads(json.dumps(self.events[name])))
