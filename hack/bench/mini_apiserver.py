"""A minimal Kubernetes API endpoint for the controller benchmark: just what one sync needs, fast.

    python -m hack.bench.mini_apiserver --port PORT --objects 10000 [--namespaces 100]

Why: at 10,000 autoscalers on a 15 s period the controller makes ~1,300 requests/s (GET /scale,
GET of one aggregated custom metric per sync) plus watches and status writes; the API-server
stand-in (strict, TLS, RBAC, aggregation proxying to the adapter and Prometheus) would be measured
instead of the controller. This endpoint answers the same wire protocol with constant data, over
plain HTTP on loopback, in its own process (uvloop):

* legacy discovery for the groups the controller reads (`/api`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`);
* LIST (one page) and WATCH (history replay from a resourceVersion, then live events) for every
  stored resource; GET/PUT (resourceVersion precondition, 409)/merge PATCH/POST; `/status`;
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
import copy
import json
import time
import uuid
from collections import Counter, defaultdict
from typing import Any

import uvloop
from aiohttp import web

from kubecommon.selectors import parse_selector

PAS_GROUP, PAS_VERSION = "autoscaling.prom-autoscaler.io", "v1alpha1"
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
_KIND = {(g, r): k for (g, _), entries in _RESOURCES.items() for r, k, _, _ in entries}
_VERSION = {g: v for (g, v) in _RESOURCES}
_VERSION["custom.metrics.k8s.io"] = "v1beta2"


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                              "reason": reason, "message": message}, status=code)


class Store:
    def __init__(self) -> None:
        self.rv = 1
        self.objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
        self.history: dict[tuple[str, str], list[tuple[int, str, dict[str, Any]]]] = defaultdict(list)
        self.watchers: dict[tuple[str, str], set[tuple[str | None, asyncio.Queue[bytes]]]] = defaultdict(set)
        self.stats: Counter[str] = Counter()
        self.pods_by_ns: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def put(self, group: str, resource: str, obj: dict[str, Any], event: str) -> dict[str, Any]:
        self.rv += 1
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        key = (group, resource)
        self.objects[key][(meta.get("namespace", ""), meta["name"])] = obj
        line = json.dumps({"type": event, "object": obj}).encode() + b"\n"
        history = self.history[key]
        history.append((self.rv, meta.get("namespace", ""), obj))
        if len(history) > 50_000:
            del history[:10_000]
        for namespace, queue in self.watchers[key]:
            if namespace is None or namespace == meta.get("namespace"):
                queue.put_nowait(line)
        return obj


def seed(store: Store, *, objects: int, namespaces: int, target: str, period: int, external: int = 0,
         predictive: bool = False, lookback: int = 3 * 86_400) -> None:
    for i in range(objects):
        ns, name = f"ns-{i % namespaces}", f"app-{i}"
        labels = {"app": name}
        store.put("apps", "deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}}},
            "status": {"replicas": 1, "readyReplicas": 1}}, "ADDED")
        pod = store.put("", "pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-0", "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "app"}]},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, "ADDED")
        store.pods_by_ns[ns].append(pod)
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
        store.put(PAS_GROUP, "promautoscalers", {
            "apiVersion": f"{PAS_GROUP}/{PAS_VERSION}", "kind": "PromAutoscaler",
            "metadata": {"name": name, "namespace": ns, "generation": 1}, "spec": spec}, "ADDED")


class Server:
    def __init__(self, store: Store, metric_value: str) -> None:
        self.store = store
        self.metric_value = metric_value

    def app(self) -> web.Application:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_get("/_stats", self.stats)
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        return app

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(dict(self.store.stats))

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        group: str | None
        if parts[:1] == ["api"]:
            group, rest = "", parts[1:]
        elif parts[:1] == ["apis"]:
            group, rest = (parts[1] if len(parts) > 1 else None), parts[2:]
        else:
            return _status(404, "NotFound", request.path)
        if group is None or not rest:
            self._count("discovery", request)
            return self.discovery(group)
        version, rest = rest[0], rest[1:]
        if not rest:
            self._count("discovery", request)
            return self.resource_list(group, version)
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if group == "custom.metrics.k8s.io":
            self._count("metric", request)
            return self.custom_metric(namespace or "", rest, request)
        if group == "external.metrics.k8s.io" and len(rest) == 1:
            self._count("metric", request)
            return web.json_response({"kind": "ExternalMetricValueList", "apiVersion": f"{group}/v1beta1",
                                      "metadata": {}, "items": [{"metricName": rest[0], "metricLabels": {},
                                                                 "timestamp": _now(), "value": self.metric_value}]})
        if group in ("external.metrics.k8s.io", "metrics.k8s.io"):
            self._count("metric", request)
            return web.json_response({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})
        return await self.objects(request, group, version, namespace, rest)

    def _count(self, what: str, request: web.Request) -> None:
        self.store.stats[f"{request.method} {what}"] += 1
        self.store.stats["total"] += 1

    def discovery(self, group: str | None) -> web.Response:
        if group is None:
            groups = sorted({g for g, _ in _RESOURCES if g})
            return web.json_response({"kind": "APIGroupList", "apiVersion": "v1",
                                      "groups": [self._group_doc(g) for g in groups]})
        if group == "":
            return web.json_response({"kind": "APIVersions", "versions": ["v1"]})
        if group not in _VERSION:
            return _status(404, "NotFound", f"group {group}")
        return web.json_response(self._group_doc(group))

    @staticmethod
    def _group_doc(group: str) -> dict[str, Any]:
        versions = [v for g, v in _RESOURCES if g == group]
        preferred = _VERSION[group]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred}}

    @staticmethod
    def resource_list(group: str, version: str) -> web.Response:
        entries = _RESOURCES.get((group, version))
        if entries is None:
            return _status(404, "NotFound", f"{group}/{version}")
        resources = []
        for resource, kind, namespaced, subs in entries:
            resources.append({"name": resource, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                              "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]})
            resources += [{"name": f"{resource}/{sub}", "namespaced": namespaced,
                           "kind": "Scale" if sub == "scale" else kind, "verbs": ["get", "update", "patch"]}
                          for sub in subs]
        gv = f"{group}/{version}" if group else version
        return web.json_response({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                  "resources": resources})

    def custom_metric(self, namespace: str, rest: list[str], request: web.Request) -> web.Response:
        if len(rest) != 3 or rest[0] != "pods":
            return _status(404, "NotFound", "only pods/*/<metric> is served")
        selector = parse_selector(request.query.get("labelSelector", ""))
        metric = rest[2]
        items = [{"describedObject": {"kind": "Pod", "namespace": namespace, "name": pod["metadata"]["name"],
                                      "apiVersion": "/v1"},
                  "metric": {"name": metric}, "timestamp": _now(), "windowSeconds": 60, "value": self.metric_value}
                 for pod in self.store.pods_by_ns.get(namespace, ()) if selector.matches(pod["metadata"]["labels"])]
        return web.json_response({"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2",
                                  "metadata": {}, "items": items})

    async def objects(self, request: web.Request, group: str, version: str, namespace: str | None,
                      rest: list[str]) -> web.StreamResponse:
        resource = rest[0]
        key = (group, resource)
        if key not in _KIND:
            self._count("other", request)
            return _status(404, "NotFound", f"{group}/{resource}")
        kind = {"events": "event", "leases": "lease"}.get(resource)
        if len(rest) == 1:
            if request.method == "POST":
                self._count(kind or "create", request)
                return self.create(request, key, namespace, await request.json())
            if request.query.get("watch") in ("true", "1"):
                self._count("watch", request)
                return await self.watch(request, key, namespace)
            self._count("list", request)
            return self.list(key, namespace)
        name, sub = rest[1], (rest[2] if len(rest) > 2 else "")
        self._count(kind or sub or "object", request)
        if key == ("", "events"):  # not stored: a correlator's count patch is simply accepted
            return web.json_response(await request.json())
        obj = self.store.objects[key].get((namespace or "", name))
        if obj is None:
            return _status(404, "NotFound", f'{resource} "{name}" not found')
        if sub == "scale":
            return await self.scale(request, key, obj)
        if request.method == "GET":
            return web.json_response(obj)
        body = await request.json()
        if request.method == "PATCH" and request.content_type == "application/json-patch+json":
            try:
                body = _json_patch(copy.deepcopy(obj), body)
            except (KeyError, IndexError, ValueError) as err:
                return _status(422, "Invalid", f"json patch: {err}")
        elif request.method == "PATCH":
            body = _merge(copy.deepcopy(obj), body)
        elif body.get("metadata", {}).get("resourceVersion") not in (None, "", obj["metadata"]["resourceVersion"]):
            return _status(409, "Conflict", "the object has been modified; please apply your changes to the latest "
                                            "version and try again")
        updated = copy.deepcopy(obj)
        if sub == "status":
            updated["status"] = body.get("status")
        else:
            updated = {**body, "status": obj.get("status")} if "status" in obj else body
            updated["metadata"] = {**obj["metadata"], **{k: v for k, v in body.get("metadata", {}).items()
                                                        if k not in ("resourceVersion", "uid")}}
        return web.json_response(self.store.put(group, resource, updated, "MODIFIED"))

    def create(self, request: web.Request, key: tuple[str, str], namespace: str | None,
               body: dict[str, Any]) -> web.Response:
        meta = body.setdefault("metadata", {})
        if namespace:
            meta["namespace"] = namespace
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', 'obj-')}{uuid.uuid4().hex[:8]}"
        if key == ("", "events"):  # counted, not stored: the benchmark only needs the rate
            return web.json_response(body, status=201)
        if (meta.get("namespace", ""), meta["name"]) in self.store.objects[key]:
            return _status(409, "AlreadyExists", f'{key[1]} "{meta["name"]}" already exists')
        return web.json_response(self.store.put(key[0], key[1], body, "ADDED"), status=201)

    def list(self, key: tuple[str, str], namespace: str | None) -> web.Response:
        items = [o for (ns, _), o in self.store.objects[key].items() if namespace is None or ns == namespace]
        return web.json_response({"kind": f"{_KIND[key]}List", "apiVersion": "v1",
                                  "metadata": {"resourceVersion": str(self.store.rv)}, "items": items})

    async def watch(self, request: web.Request, key: tuple[str, str], namespace: str | None) -> web.StreamResponse:
        since = int(request.query.get("resourceVersion") or 0)
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        for rv, ns, obj in self.store.history[key]:
            if rv > since and (namespace is None or ns == namespace):
                queue.put_nowait(json.dumps({"type": "MODIFIED", "object": obj}).encode() + b"\n")
        entry = (namespace, queue)
        self.store.watchers[key].add(entry)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        timeout = float(request.query.get("timeoutSeconds") or 300)
        deadline = time.monotonic() + timeout
        try:
            while (left := deadline - time.monotonic()) > 0:
                try:
                    line = await asyncio.wait_for(queue.get(), timeout=left)
                except asyncio.TimeoutError:
                    break
                await response.write(line)
        finally:
            self.store.watchers[key].discard(entry)
        return response

    async def scale(self, request: web.Request, key: tuple[str, str], obj: dict[str, Any]) -> web.Response:
        meta = obj["metadata"]
        if request.method in ("PUT", "PATCH"):
            body = await request.json()
            replicas = int((body.get("spec") or {}).get("replicas") or 0)
            updated = copy.deepcopy(obj)
            updated["spec"]["replicas"] = replicas
            obj = self.store.put(key[0], key[1], updated, "MODIFIED")
            meta = obj["metadata"]
        replicas = int(obj["spec"].get("replicas") or 0)
        return web.json_response({"kind": "Scale", "apiVersion": "autoscaling/v1",
                                  "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                                               "resourceVersion": meta["resourceVersion"], "uid": meta["uid"]},
                                  "spec": {"replicas": replicas},
                                  "status": {"replicas": replicas, "selector": f"app={meta['name']}"}})


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for k, v in patch.items():
        if v is None:
            base.pop(k, None)
        elif isinstance(v, dict) and isinstance(base.get(k), dict):
            base[k] = _merge(base[k], v)
        else:
            base[k] = v
    return base


def _json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add/replace/remove/test on objects and lists (what status writers send)."""
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if op["op"] == "test":
            current = node[int(last)] if isinstance(node, list) else node.get(last)
            if current != op.get("value"):
                raise ValueError(f"test failed at {op['path']}")
        elif op["op"] == "remove":
            del node[int(last) if isinstance(node, list) else last]
        elif op["op"] in ("add", "replace"):
            if isinstance(node, list):
                node.insert(len(node) if last == "-" else int(last), op["value"]) if op["op"] == "add" \
                    else node.__setitem__(int(last), op["value"])
            else:
                node[last] = op["value"]
        else:
            raise ValueError(f"unsupported op {op['op']}")
    return doc


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _serve(args: argparse.Namespace) -> None:
    store = Store()
    seed(store, objects=args.objects, namespaces=args.namespaces, target=args.target, period=args.period,
         external=args.external, predictive=args.predictive, lookback=args.lookback)
    runner = web.AppRunner(Server(store, args.metric_value).app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port, backlog=1024).start()
    print(f"serving on http://127.0.0.1:{args.port}", flush=True)
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
