"""An in-process API server for the scale reads: discovery, LIST/WATCH of workloads and CRDs, and
`/scale` GET/PUT derived from the stored objects the way kube-apiserver derives them.

Watch events can be held back (`hold_events`) to play a watch that lags behind a write, and LIST
can be refused per resource (`forbidden`) to play RBAC without list/watch.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.client import KubeClient

from .apiserver import InProcessServer, status

_SCALABLE = {"deployments": "Deployment", "statefulsets": "StatefulSet", "widgets": "Widget",
             "gadgets": "Gadget"}


class ScaleServer(InProcessServer):
    def __init__(self) -> None:
        self.rv = 100
        self.discovery = {
            "/apis/apps": {"kind": "APIGroup", "name": "apps", "preferredVersion": {"version": "v1"},
                           "versions": [{"version": "v1"}]},
            "/apis/apps/v1": _listing(["deployments", "statefulsets"]),
            "/apis/example.com": {"kind": "APIGroup", "name": "example.com", "preferredVersion": {"version": "v1"},
                                  "versions": [{"version": "v1"}]},
            "/apis/example.com/v1": _listing(["widgets", "gadgets"]),
        }
        self.objects: dict[str, dict[tuple[str, str], dict]] = {}  # collection path -> (ns, name) -> object
        self.forbidden: set[str] = set()  # collection paths whose LIST/WATCH answer 403
        self.hold_events = False
        self.held: list[tuple[str, bytes]] = []
        self.watchers: list[tuple[str, asyncio.Queue[bytes]]] = []
        self.calls: list[str] = []
        self.server: TestServer | None = None
        self.client: KubeClient | None = None

    def put(self, collection: str, obj: dict, event: str = "ADDED") -> dict:
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        self.objects.setdefault(collection, {})[(meta.get("namespace", ""), meta["name"])] = obj
        line = json.dumps({"type": event, "object": obj}).encode() + b"\n"
        if self.hold_events:
            self.held.append((collection, line))
        else:
            self._send(collection, line)
        return obj

    def release(self) -> None:
        self.hold_events = False
        for collection, line in self.held:
            self._send(collection, line)
        self.held.clear()

    def _send(self, collection: str, line: bytes) -> None:
        for path, queue in self.watchers:
            if path == collection:
                queue.put_nowait(line)

    def scale_calls(self) -> list[str]:
        return [c for c in self.calls if c.endswith("/scale")]

    async def close(self) -> None:
        for _, queue in self.watchers:
            queue.put_nowait(b"")
        await super().close()

    async def _route(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        watching = request.query.get("watch") in ("1", "true") or "resourceVersion" in request.query
        self.calls.append(f"{request.method} {path}{' watch' if watching else ''}")
        if path in self.discovery:
            return web.json_response(self.discovery[path])
        if path.endswith("/scale"):
            return await self._scale(request, path[: -len("/scale")])
        collection = _collection(path)
        if collection in self.forbidden:
            return status(403, "Forbidden", f"cannot list {collection}")
        if watching:
            return await self._watch(request, collection)
        items = list(self.objects.get(collection, {}).values())
        return web.json_response({"kind": "List", "metadata": {"resourceVersion": str(self.rv)}, "items": items})

    async def _watch(self, request: web.Request, collection: str) -> web.StreamResponse:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        entry = (collection, queue)
        self.watchers.append(entry)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            while line := await queue.get():
                await response.write(line)
        finally:
            self.watchers.remove(entry)
        return response

    async def _scale(self, request: web.Request, object_path: str) -> web.StreamResponse:
        collection, name = object_path.rsplit("/", 1)
        namespace = collection.split("/namespaces/")[1].split("/")[0]
        collection = collection.replace(f"/namespaces/{namespace}", "")
        obj = self.objects.get(collection, {}).get((namespace, name))
        if obj is None:
            return status(404, "NotFound", f'"{name}" not found', {"name": name})
        if request.method == "PUT":
            body = await request.json()
            if body["metadata"].get("resourceVersion") != obj["metadata"]["resourceVersion"]:
                return status(409, "Conflict", "the object has been modified", {"name": name})
            obj = json.loads(json.dumps(obj))
            obj["spec"]["replicas"] = body["spec"]["replicas"]
            self.put(collection, obj, "MODIFIED")
        labels = ",".join(f"{k}={v}" for k, v in sorted(obj["spec"].get("selector", {}).get("matchLabels", {}).items()))
        return web.json_response({
            "apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": obj["metadata"]["resourceVersion"]},
            "spec": {"replicas": obj["spec"].get("replicas", 1)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": labels}})


def _listing(resources: list[str]) -> dict:
    entries = []
    for resource in resources:
        entries.append({"name": resource, "kind": _SCALABLE[resource], "namespaced": True})
        entries.append({"name": f"{resource}/scale", "kind": "Scale", "namespaced": True})
    return {"kind": "APIResourceList", "resources": entries}


def _collection(path: str) -> str:
    """/apis/apps/v1/namespaces/shop/deployments -> /apis/apps/v1/deployments"""
    if "/namespaces/" in path:
        head, rest = path.split("/namespaces/", 1)
        return f"{head}/{rest.split('/', 1)[1]}"
    return path
