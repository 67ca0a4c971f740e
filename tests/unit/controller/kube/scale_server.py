"""The in-process API server for the scale reads: a configuration of `hack.kube_standin.inprocess`
with discovery for apps/v1 (deployments, statefulsets) and example.com/v1 (widgets, gadgets), each
with a `/scale` the shared server derives from the stored object as kube-apiserver does.

The shared server's hooks play the rest: `hold_events` / `release()` a watch that lags behind a
write, `forbidden` RBAC without list/watch. `calls` marks watches (`GET <path> watch`).
"""

from __future__ import annotations

from typing import Any

from .apiserver import ClientServer

_SCALABLE = {"deployments": "Deployment", "statefulsets": "StatefulSet", "widgets": "Widget",
             "gadgets": "Gadget"}


class ScaleServer(ClientServer):
    def __init__(self) -> None:
        super().__init__(revision=100, discovery={
            "/apis/apps": {"kind": "APIGroup", "name": "apps", "preferredVersion": {"version": "v1"},
                           "versions": [{"version": "v1"}]},
            "/apis/apps/v1": _listing(["deployments", "statefulsets"]),
            "/apis/example.com": {"kind": "APIGroup", "name": "example.com", "preferredVersion": {"version": "v1"},
                                  "versions": [{"version": "v1"}]},
            "/apis/example.com/v1": _listing(["widgets", "gadgets"]),
        })
        self.describe = lambda request, info: f"{request.method} {request.path}{' watch' if info.verb == 'watch' else ''}"

    def scale_calls(self) -> list[str]:
        return [c for c in self.calls if c.endswith("/scale")]


def _listing(resources: list[str]) -> dict[str, Any]:
    entries = []
    for resource in resources:
        entries.append({"name": resource, "kind": _SCALABLE[resource], "namespaced": True})
        entries.append({"name": f"{resource}/scale", "kind": "Scale", "namespaced": True})
    return {"kind": "APIResourceList", "resources": entries}
