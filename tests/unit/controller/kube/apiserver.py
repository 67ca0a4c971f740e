"""The in-process API server the controller's write paths are tested against: a configuration of
`hack.kube_standin.inprocess` (discovery for apps/v1, objects with `/scale` and `status`, core/v1
Events), with a started KubeClient for it.

Hooks beyond the shared server's (`conflicts`, `calls`, ...): `status_codes` and `event_codes`, the
next answers (popped) for status writes and event writes. The real wire behaviour (kubectl, RBAC,
CRDs) is covered by the integration tests against hack/kube_standin.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hack.kube_standin.inprocess import InProcessAPIServer, status
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfig
from kubecommon.requestinfo import RequestInfo

EVENTS = "/api/v1/events"
_REASONS = {403: "Forbidden", 404: "NotFound", 409: "Conflict"}


class ClientServer(InProcessAPIServer):
    """The shared server with a started KubeClient (`client`) for it."""

    client: KubeClient | None = None

    async def start(self, *, tls: bool = False, port: int = 0) -> str:  # type: ignore[override]
        url = await super().start(tls=tls, port=port)
        self.client = KubeClient(KubeConfig(server=url), timeout=2.0)
        await self.client.start()
        return url

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        await super().close()


class WritesServer(ClientServer):
    def __init__(self) -> None:
        super().__init__(revision=500, discovery={
            "/apis/apps": {"kind": "APIGroup", "name": "apps", "preferredVersion": {"version": "v1"},
                           "versions": [{"version": "v1"}]},
            "/apis/apps/v1": {"kind": "APIResourceList", "resources": [
                {"name": "deployments", "kind": "Deployment", "namespaced": True},
                {"name": "deployments/scale", "kind": "Scale", "namespaced": True},
                {"name": "controllerrevisions", "kind": "ControllerRevision", "namespaced": True}]},
        })
        self.status_codes: list[int] = []
        self.event_codes: list[int] = []
        self.guard = self._forced

    def add_scale(self, collection: str, namespace: str, name: str, replicas: int, selector: str = "") -> None:
        """A workload in `collection` whose /scale reads `replicas` (spec and status) and `selector`."""
        self.put(collection, {"metadata": {"name": name, "namespace": namespace}, "spec": {"replicas": replicas},
                              "status": {"replicas": replicas, "selector": selector}})

    def events(self) -> list[dict[str, Any]]:
        return self.objects(EVENTS)

    async def _forced(self, request: web.Request, info: RequestInfo) -> web.StreamResponse | None:
        codes = self.status_codes if info.subresource == "status" else \
            self.event_codes if info.resource == "events" else None
        if not codes:
            return None
        code = codes.pop(0)
        return status(code, _REASONS.get(code, "InternalError"), f"{info.subresource or info.resource} write {code}",
                      {"name": info.name} if code == 404 else None)
