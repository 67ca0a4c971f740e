"""A minimal Kubernetes API endpoint for the controller benchmark: just what one sync needs, fast.

    python -m hack.bench.mini_apiserver --port PORT --objects 10000 [--namespaces 100]

Why: at 10,000 autoscalers on a 15 s period the controller makes ~1,300 requests/s (GET /scale,
GET of one aggregated custom metric per sync) plus watches and status writes; the API-server
stand-in (strict, TLS, RBAC, aggregation proxying to the adapter and Prometheus) would be measured
instead of the controller. This endpoint answers the same wire protocol with constant data, over
plain HTTP on loopback, in its own process (uvloop). It is a configuration of the one in-process
API server, `hack.kube_standin.inprocess` (the stand-in's store, patches and watch translation):

* legacy discovery for the groups the controller reads (`/api`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`);
* LIST and WATCH (resume from a resourceVersion, 410 once it left the 50,000-event window, then
  live events) for every stored resource; GET/PUT (resourceVersion precondition, 409)/merge and
  JSON PATCH/POST; `/status`;
* `deployments/<name>/scale`: an autoscaling/v1 Scale from the Deployment (`app=<name>` selector);
* `custom.metrics.k8s.io` v1beta2/v1beta1 `pods/*/<metric>?labelSelector=`: one item per stored
  pod matching the selector, value `--metric-value` (equal to the target: steady load, no scaling);
* `external.metrics.k8s.io` v1beta1 `<metric>?labelSelector=`: one item, value `--metric-value`;
  `metrics.k8s.io` is listed (empty answers);
* Events accepted and counted; Leases stored like any object.

Seeded with `--objects` Deployments (1 replica), one Ready pod each and one PromAutoscaler each
(one Pods metric `http_requests_per_second`, AverageValue `--target`, `syncPeriodSeconds` 15),
spread over `--namespaces` namespaces. The first `--external` of them (`app-0`...) scale on an
External metric instead, `queue_messages_ready{queue=<name>}` (the series the controller's
history reads for it in a real cluster: one per object), with `--predictive` also
`spec.prediction: {mode: Active, horizonSeconds: 180, lookbackSeconds: --lookback}`.
`GET /_stats` returns request counts by verb and kind (`scale`, `metric`, `status`, `event`,
`lease`, `list`, `watch`, `discovery`, `other`).

Benchmark-only: nothing in the product imports it. Non-goals: auth, RBAC, validation, TLS.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter, defaultdict
from typing import Any

import uvloop
from aiohttp import web

from hack.kube_standin.inprocess import InProcessAPIServer
from kubecommon.requestinfo import RequestInfo
from kubecommon.selectors import parse_selector
from kubecommon.status import NotFound

PAS_GROUP, PAS_VERSION = "autoscaling.prom-autoscaler.io", "v1alpha1"
DEPLOYS, PODS, PAS = "/apis/apps/v1/deployments", "/api/v1/pods", f"/apis/{PAS_GROUP}/{PAS_VERSION}/promautoscalers"
_RESOURCES: dict[tuple[str, str], list[tuple[str, str, bool, list[str]]]] = {
    # (group, version) -> [(resource, kind, namespaced, subresources)]
    ("", "v1"): [("pods", "Pod", True, []), ("events", "Event", True, []), ("namespaces", "Namespace", False, [])],
    ("apps", "v1"): [("deployments", "Deployment", True, ["scale", "status"])],
    ("autoscaling", "v2"): [("horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ["status"])],
    (PAS_GROUP, PAS_VERSION): [("promautoscalers", "PromAutoscaler", True, ["status"])],
    ("coordination.k8s.io", "v1"): [("leases", "Lease", True, [])],
    ("events.k8s.io", "v1"): [("events", "Event", True, [])],
    ("custom.metrics.k8s.io", "v1beta2"): [],
    ("custom.metrics.k8s.io", "v1beta1"): [],
    ("external.metrics.k8s.io", "v1beta1"): [],
    ("metrics.k8s.io", "v1beta1"): [("pods", "PodMetrics", True, []), ("nodes", "NodeMetrics", False, [])],
}
_PREFERRED = {g: v for (g, v) in _RESOURCES} | {"custom.metrics.k8s.io": "v1beta2"}
_METRIC_GROUPS = ("custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io")
_COUNTED_AS = {"events": "event", "leases": "lease"}


def discovery_documents() -> dict[str, Any]:
    """Legacy discovery for every group above: /api, /apis, /apis/<g>, /api/v1 and /apis/<g>/<v>."""
    def group_doc(group: str) -> dict[str, Any]:
        versions, preferred = [v for g, v in _RESOURCES if g == group], _PREFERRED[group]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred}}

    groups = sorted({g for g, _ in _RESOURCES if g})
    docs: dict[str, Any] = {"/api": {"kind": "APIVersions", "versions": ["v1"]},
                            "/apis": {"kind": "APIGroupList", "apiVersion": "v1",
                                      "groups": [group_doc(g) for g in groups]}}
    docs.update({f"/apis/{g}": group_doc(g) for g in groups})
    for (group, version), entries in _RESOURCES.items():
        resources = []
        for resource, kind, namespaced, subs in entries:
            resources.append({"name": resource, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                              "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]})
            resources += [{"name": f"{resource}/{sub}", "namespaced": namespaced,
                           "kind": "Scale" if sub == "scale" else kind, "verbs": ["get", "update", "patch"]}
                          for sub in subs]
        gv = f"{group}/{version}" if group else version
        docs[f"/apis/{gv}" if group else "/api/v1"] = {"kind": "APIResourceList", "apiVersion": "v1",
                                                      "groupVersion": gv, "resources": resources}
    return docs


class MiniAPIServer(InProcessAPIServer):
    """Constant data and `/_stats` request counts; core/v1 Events are counted, not stored."""

    def __init__(self, metric_value: str) -> None:
        super().__init__(discovery=discovery_documents(), log_size=50_000)
        self.metric_value = metric_value
        self.stats: Counter[str] = Counter()
        self.pods_by_ns: dict[str, list[dict[str, Any]]] = defaultdict(list)  # the custom metric's pods, indexed
        self.describe = self._count
        self.guard = self._unstored
        self.routes = [("/_stats", self._stats), *((f"/apis/{group}/", self._metric) for group in _METRIC_GROUPS)]

    def _count(self, request: web.Request, info: RequestInfo) -> None:
        """Counts by verb and kind (`GET scale`, `PUT status`, `GET watch`, ...); records no calls."""
        if request.path == "/_stats":
            return None
        if not info.is_resource_request or request.path in self.discovery:
            what = "discovery"
        elif info.api_group in _METRIC_GROUPS:
            what = "metric"
        elif f"/apis/{info.api_group}/{info.api_version}" not in self.discovery and info.api_group:
            what = "other"
        elif not info.name:
            what = _COUNTED_AS.get(info.resource) or {"create": "create"}.get(info.verb, info.verb)
        else:
            what = _COUNTED_AS.get(info.resource) or info.subresource or "object"
        self.stats[f"{request.method} {what}"] += 1
        self.stats["total"] += 1
        return None

    async def _unstored(self, request: web.Request, info: RequestInfo) -> web.StreamResponse | None:
        if info.resource == "events" and not info.api_group and request.method in ("POST", "PATCH", "PUT"):
            return web.json_response(await request.json(), status=201 if request.method == "POST" else 200)
        return None

    async def _stats(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        return web.json_response(dict(self.stats))

    async def _metric(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        rest = list(info.parts)
        if info.api_group == "custom.metrics.k8s.io":
            if len(rest) != 3 or rest[0] != "pods":
                raise NotFound("only pods/*/<metric> is served")
            selector = parse_selector(request.query.get("labelSelector", ""))
            items = [{"describedObject": {"kind": "Pod", "namespace": info.namespace, "apiVersion": "/v1",
                                          "name": pod["metadata"]["name"]},
                      "metric": {"name": rest[2]}, "timestamp": _now(), "windowSeconds": 60,
                      "value": self.metric_value}
                     for pod in self.pods_by_ns.get(info.namespace, ()) if selector.matches(pod["metadata"]["labels"])]
            return web.json_response({"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2",
                                      "metadata": {}, "items": items})
        if info.api_group == "external.metrics.k8s.io" and len(rest) == 1:
            return web.json_response({"kind": "ExternalMetricValueList", "apiVersion": f"{info.api_group}/v1beta1",
                                      "metadata": {}, "items": [{"metricName": rest[0], "metricLabels": {},
                                                                 "timestamp": _now(), "value": self.metric_value}]})
        return web.json_response({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})


def seed(server: MiniAPIServer, *, objects: int, namespaces: int, target: str, period: int, external: int = 0,
         predictive: bool = False, lookback: int = 3 * 86_400) -> None:
    for i in range(objects):
        ns, name = f"ns-{i % namespaces}", f"app-{i}"
        labels = {"app": name}
        meta = {"name": name, "namespace": ns, "labels": labels, "uid": f"uid-deploy-{i}",
                "creationTimestamp": "2026-01-01T00:00:00Z"}
        server.put(DEPLOYS, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}}},
            "status": {"replicas": 1, "readyReplicas": 1}})
        pod = server.put(PODS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {**meta, "name": f"{name}-0", "uid": f"uid-pod-{i}"},
            "spec": {"containers": [{"name": "app", "image": "app"}]},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
        server.pods_by_ns[ns].append(pod)
        spec: dict[str, Any] = {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1, "maxReplicas": 10, "syncPeriodSeconds": period,
            "metrics": [{"type": "Pods", "pods": {"metric": {"name": "http_requests_per_second"},
                                                  "target": {"type": "AverageValue", "averageValue": target}}}]}
        if i < external:
            spec["metrics"] = [{"type": "External", "external": {
                "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": name}}},
                "target": {"type": "AverageValue", "averageValue": target}}}]
            if predictive:
                spec["prediction"] = {"mode": "Active", "horizonSeconds": 180, "lookbackSeconds": lookback}
        server.put(PAS, {"apiVersion": f"{PAS_GROUP}/{PAS_VERSION}", "kind": "PromAutoscaler",
                         "metadata": {"name": name, "namespace": ns, "generation": 1, "uid": f"uid-pas-{i}",
                                      "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": spec})


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _serve(args: argparse.Namespace) -> None:
    server = MiniAPIServer(args.metric_value)
    seed(server, objects=args.objects, namespaces=args.namespaces, target=args.target, period=args.period,
         external=args.external, predictive=args.predictive, lookback=args.lookback)
    url = await server.start(port=args.port)
    print(f"serving on {url}", flush=True)
    print("ready", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--period", type=int, default=15)
    parser.add_argument("--target", default="10")
    parser.add_argument("--metric-value", default="10")
    parser.add_argument("--external", type=int, default=0, help="this many objects scale on an External metric")
    parser.add_argument("--predictive", action="store_true", help="those objects have spec.prediction Active")
    parser.add_argument("--lookback", type=int, default=3 * 86_400, help="their spec.prediction.lookbackSeconds")
    args = parser.parse_args(argv)
    uvloop.run(_serve(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
