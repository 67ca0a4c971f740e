"""An in-process API server speaking the three metrics APIs' wire format: a configuration of
`hack.kube_standin.inprocess` whose routes answer the metrics groups from plain dicts.

Serves discovery for metrics.k8s.io, custom.metrics.k8s.io (served versions and the preferred one
are settable), apps and the core group (for kind -> resource mapping), PodMetricsList,
MetricValueList in v1beta1 and v1beta2 shapes, and ExternalMetricValueList from plain dicts a test
fills in. `answer(path, status, body)` replaces any one answer (errors, malformed bodies); `delay`
holds every metrics answer back (timeouts); `calls` lists every request as "PATH?QUERY".
"""

from __future__ import annotations

from aiohttp import web

from hack.kube_standin.inprocess import InProcessAPIServer, unauthorized
from kubecommon.kube.config import KubeConfig
from kubecommon.requestinfo import RequestInfo
from kubecommon.status import NotFound

TS = "2026-11-25T18:00:00Z"
TS_EPOCH = 1795629600.0


def group_doc(name: str, versions: list[str], preferred: str) -> dict:
    return {"kind": "APIGroup", "apiVersion": "v1", "name": name,
            "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
            "preferredVersion": {"groupVersion": f"{name}/{preferred}", "version": preferred}}


def resource_list(group_version: str, *resources: tuple[str, str, bool]) -> dict:
    return {"kind": "APIResourceList", "groupVersion": group_version,
            "resources": [{"name": name, "kind": kind, "namespaced": namespaced, "verbs": ["get"]}
                          for name, kind, namespaced in resources]}


def _matches(labels: dict[str, str], selector: str) -> bool:
    """Equality selectors only (`a=b,c=d`): enough to show the selector reached the server."""
    pairs = [part.split("=", 1) for part in selector.split(",") if part]
    return all(labels.get(key) == value for key, value in pairs)


class FakeMetricsAPI(InProcessAPIServer):
    def __init__(self) -> None:
        super().__init__(discovery={
            "/apis/apps": group_doc("apps", ["v1"], "v1"),
            "/apis/apps/v1": resource_list("apps/v1", ("deployments", "Deployment", True),
                                           ("deployments/scale", "Scale", True)),
            "/api/v1": resource_list("v1", ("pods", "Pod", True), ("nodes", "Node", False),
                                     ("namespaces", "Namespace", False), ("services", "Service", True)),
        })
        self.custom_versions = ["v1beta1", "v1beta2"]
        self.custom_preferred = "v1beta2"
        self.resource_versions = ["v1beta1"]
        # namespace -> pod -> {"labels", "containers": {name: {resource: quantity}}, "window"}
        self.pods: dict[str, dict[str, dict]] = {}
        # (namespace, metric) -> pod -> quantity string
        self.pod_custom: dict[tuple[str, str], dict[str, str]] = {}
        # (path after the version, e.g. "namespaces/shop/deployments.apps/web/rps") -> quantity
        self.object_metrics: dict[str, str] = {}
        # (namespace, metric) -> [(labels, quantity)]
        self.external: dict[tuple[str, str], list[tuple[dict[str, str], str]]] = {}
        self.guard = self._authenticate
        self.describe = lambda request, info: f"{request.path}?{request.query_string}"
        self.routes = [(f"/apis/{group}/", self._metrics_answer)
                       for group in ("metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io")]

    def answer(self, path: str, status: int, body: object) -> None:
        self.answers[path] = (status, body)

    async def start(self) -> KubeConfig:  # type: ignore[override]
        return KubeConfig(server=await super().start(), token="t0ken")

    async def _authenticate(self, request: web.Request, info: RequestInfo) -> web.StreamResponse | None:
        if request.headers.get("Authorization") != "Bearer t0ken":
            return unauthorized()
        if request.path not in self.answers and (doc := self._discovery_doc(request.path)) is not None:
            return web.json_response(doc)
        return None

    async def _metrics_answer(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        body = self._metrics(request.path.strip("/").split("/"), request.query)
        if body is None:
            raise NotFound.for_path()
        return web.json_response(body)

    def _discovery_doc(self, path: str) -> dict | None:
        if path == "/apis/custom.metrics.k8s.io" and self.custom_versions:
            return group_doc("custom.metrics.k8s.io", self.custom_versions, self.custom_preferred)
        if path == "/apis/metrics.k8s.io" and self.resource_versions:
            return group_doc("metrics.k8s.io", self.resource_versions, self.resource_versions[-1])
        return None

    def _metrics(self, parts: list[str], query) -> dict | None:
        if parts[:2] == ["apis", "metrics.k8s.io"] and len(parts) == 6 and parts[2] in self.resource_versions:
            return self._pod_metrics(parts[4], query.get("labelSelector", ""), parts[2])
        if parts[:2] == ["apis", "custom.metrics.k8s.io"] and len(parts) > 3 and parts[2] in self.custom_versions:
            return self._custom(parts[2], "/".join(parts[3:]), query)
        if parts[:3] == ["apis", "external.metrics.k8s.io", "v1beta1"] and len(parts) == 6:
            return self._external(parts[4], parts[5], query.get("labelSelector", ""))
        return None

    def _pod_metrics(self, namespace: str, selector: str, version: str) -> dict:
        items = []
        for name, pod in sorted(self.pods.get(namespace, {}).items()):
            if not _matches(pod.get("labels", {}), selector):
                continue
            items.append({"metadata": {"name": name, "namespace": namespace, "labels": pod.get("labels", {})},
                          "timestamp": TS, "window": pod.get("window", "30s"),
                          "containers": [{"name": c, "usage": usage} for c, usage in pod["containers"].items()]})
        return {"kind": "PodMetricsList", "apiVersion": f"metrics.k8s.io/{version}", "metadata": {},
                "items": items}

    def _value(self, version: str, kind: str, namespace: str, name: str, metric: str, value: str) -> dict:
        item = {"describedObject": {"kind": kind, "namespace": namespace, "name": name, "apiVersion": "/v1"},
                "timestamp": TS, "windowSeconds": 30, "value": value}
        if version == "v1beta1":
            return {**item, "metricName": metric}
        return {**item, "metric": {"name": metric}}

    def _custom(self, version: str, rest: str, query) -> dict | None:
        parts = rest.split("/")
        items = []
        if len(parts) == 5 and parts[0] == "namespaces" and parts[2:4] == ["pods", "*"]:
            namespace, metric = parts[1], parts[4]
            if (namespace, metric) not in self.pod_custom:
                return None
            selector = query.get("labelSelector", "")
            for pod, value in sorted(self.pod_custom.get((namespace, metric), {}).items()):
                labels = self.pods.get(namespace, {}).get(pod, {}).get("labels", {})
                if _matches(labels, selector):
                    items.append(self._value(version, "Pod", namespace, pod, metric, value))
        elif rest in self.object_metrics:
            items.append(self._value(version, "Object", "", parts[-2], parts[-1], self.object_metrics[rest]))
        else:
            return None
        return {"kind": "MetricValueList", "apiVersion": f"custom.metrics.k8s.io/{version}", "metadata": {},
                "items": items}

    def _external(self, namespace: str, metric: str, selector: str) -> dict | None:
        series = self.external.get((namespace, metric))
        if series is None:
            return None
        items = [{"metricName": metric, "metricLabels": labels, "timestamp": TS, "value": value}
                 for labels, value in series if _matches(labels, selector)]
        return {"kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1",
                "metadata": {}, "items": items}
