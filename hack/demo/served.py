"""`make demo`, phase 2: the served API, answered through kube-apiserver aggregation.

Runs the API-server stand-in with its workload simulator, creates three Deployments whose pods the
simulator keeps running, points the sample exporter at exactly those pods (so Prometheus has their
series), starts the adapter and registers it with four APIService objects, then prints real
`kubectl get --raw` and `kubectl top` answers: kubectl → stand-in (aggregation, front-proxy client
certificate) → adapter (TokenReview/SubjectAccessReview, watch caches) → Prometheus.
Finally it scales a Deployment and shows the new pod's metrics, served from the watch cache, and
hands the running pieces to phase 3 (`then`: the controller closing the loop, hack/demo/autoscale.py).

Non-goals: phase 1 (hack/demo/cli.py explains discovery and the PromQL); anything off loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hack.stack import metrics_stack
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.processes import free_port
from hack.stack.sample_exporter import FakePod, SampleExporter, populate_demo

__all__ = ["Then", "run_phase2"]

# (namespace, deployment, replicas, requests/s per pod, CPU cores per pod, memory bytes per pod)
WORKLOADS = (("shop", "web", 3, 4.0, 0.2, 110 * 2**20),
             ("shop", "cart", 1, 1.5, 0.1, 80 * 2**20),
             ("payments", "api", 2, 0.5, 0.05, 64 * 2**20))
NODES = ("node-a", "node-b")
_SERIES = ("http_requests_total", "http_requests_in_flight", "app_sessions_active",
           "container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
           "node_cpu_usage_seconds_total", "node_memory_working_set_bytes", "queue_messages_ready")


def _objects() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                                  for ns in ("shop", "payments", metrics_stack.ADAPTER_SERVICE[0])]
    objs += [obj for obj in metrics_stack.cluster_objects(
        [FakePod(namespace="shop", name="x", service="x", node=n) for n in NODES], deployments=False)
        if obj["kind"] == "Node"]
    for ns, name, replicas, _, cpu, memory in WORKLOADS:
        container = {"name": "app", "image": f"example.com/{name}:1.0",
                     "resources": {"requests": {"cpu": f"{int(cpu * 1000)}m", "memory": str(memory)}}}
        objs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                              "template": {"metadata": {"labels": {"app": name}},
                                           "spec": {"containers": [container]}}}})
    return objs


def _running_pods(standin: metrics_stack.StandIn) -> list[FakePod]:
    """The simulator's Running pods, as the exporter's fake pods with their workload's load."""
    load = {(ns, name): (rps, cpu, mem) for ns, name, _, rps, cpu, mem in WORKLOADS}
    items = json.loads(standin.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    pods = []
    for item in items:
        meta, app = item["metadata"], item["metadata"].get("labels", {}).get("app", "")
        if item.get("status", {}).get("phase") != "Running" or (meta["namespace"], app) not in load:
            continue
        rps, cpu, mem = load[(meta["namespace"], app)]
        pods.append(FakePod(namespace=meta["namespace"], name=meta["name"], service=app,
                            node=item["spec"].get("nodeName", NODES[0]), requests_per_second=rps,
                            cpu_cores=cpu, memory_bytes=mem))
    return sorted(pods, key=lambda p: (p.namespace, p.name))


def _pods_when(standin: metrics_stack.StandIn,
               done: Callable[[list[FakePod]], bool]) -> list[FakePod] | None:
    pods = _running_pods(standin)
    return pods if done(pods) else None


def _export(exporter: SampleExporter, pods: Sequence[FakePod]) -> None:
    """Replace phase 1's fake pods by the cluster's real ones (Prometheus drops the old series)."""
    for name in _SERIES:
        exporter.remove(name)
    populate_demo(exporter, pods)


def _wait(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.25)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")


def _show(standin: metrics_stack.StandIn, *args: str, pretty: bool = False) -> None:
    print(f"\n$ kubectl {' '.join(_shell_quote(a) for a in args)}")
    result = standin.kubectl(*args, check=False)
    text = result.stdout
    if pretty and result.returncode == 0:
        text = json.dumps(json.loads(text), indent=2) + "\n"
    sys.stdout.write(text + result.stderr)


def _shell_quote(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in "*?&; ") else arg


def _served(standin: metrics_stack.StandIn, path: str, count: int) -> bool:
    result = standin.kubectl("get", "--raw", path, check=False)
    return result.returncode == 0 and len(json.loads(result.stdout)["items"]) >= count


# Phase 3 (hack/demo/autoscale.py) runs on phase 2's pieces before they stop.
Then = Callable[[metrics_stack.StandIn, metrics_stack.AdapterProcess], int]


def run_phase2(exporter: SampleExporter, prometheus: LocalPrometheus, config_path: Path,
               heading: Callable[[str], None], workdir: Path, *, keep_running: bool = False,
               then: Then | None = None) -> int:
    heading("Phase 2: the served API, through kube-apiserver aggregation (the stand-in)")
    namespace, name = metrics_stack.ADAPTER_SERVICE
    port = free_port()
    standin = metrics_stack.StandIn(workdir=workdir / "standin", simulate_workloads=True, ready_delay=1.0,
                                    services={f"{namespace}/{name}": f"127.0.0.1:{port}"})
    adapter = metrics_stack.AdapterProcess(workdir=workdir / "adapter", kubeconfig=standin.kubeconfig,
                                           prometheus_url=prometheus.url, rules=config_path.read_text(),
                                           port=port, relist_interval="5s")
    try:
        standin.start()
        print(f"stand-in API server: {standin.url}  (export KUBECONFIG={standin.kubeconfig})")
        standin.create(_objects())
        total = sum(w[2] for w in WORKLOADS)
        pods = _wait(lambda: _pods_when(standin, lambda ps: len(ps) == total), 30,
                     "the simulator's pods")
        print(f"workload simulator: {len(pods)} pods Running for Deployments "
              + ", ".join(f"{ns}/{d}" for ns, d, *_ in WORKLOADS))
        _export(exporter, pods)
        adapter.start()
        print(f"adapter: {adapter.url} (pid {adapter.proc.pid if adapter.proc else '?'}, "
              f"log {adapter.log_file})")
        standin.create(metrics_stack.apiservices(adapter.cert_file.read_bytes()))
        standin.wait_apiservices_available(metrics_stack.APISERVICE_NAMES)
        prometheus.wait_for(f'rate(http_requests_total{{pod="{pods[0].name}"}}[1m])', timeout=30)
        web = ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second"
               "?labelSelector=app%3Dweb")
        _wait(lambda: _served(standin, web, 3), 30, "the adapter to serve the new pods")
        _show(standin, "get", "apiservices", *metrics_stack.APISERVICE_NAMES)
        _show(standin, "get", "--raw", web, pretty=True)
        _show(standin, "get", "--raw",
              "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/services/web/http_requests_in_flight",
              pretty=True)
        _show(standin, "get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_messages_ready",
              pretty=True)
        _show(standin, "get", "--raw", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/no_such_metric")
        _show(standin, "top", "pods", "-A")
        _show(standin, "top", "nodes")
        code = _scale_up(standin, exporter, prometheus)
        if then is not None and code == 0:
            code = then(standin, adapter)
        if keep_running and code == 0:
            print(f"\nEverything stays up; try: KUBECONFIG={standin.kubeconfig} kubectl top pods -A "
                  "(Ctrl-C to stop)")
            while True:
                time.sleep(3600)
        return code
    except (RuntimeError, TimeoutError, subprocess.SubprocessError) as err:
        print(f"\nphase 2 failed: {err}\n--- adapter log ---\n{adapter.log_tail()}", file=sys.stderr)
        return 1
    finally:
        adapter.stop()
        standin.stop()


def _scale_up(standin: metrics_stack.StandIn, exporter: SampleExporter, prometheus: LocalPrometheus) -> int:
    heading_text = "Scaling shop/web to 4 replicas: the new pod appears through the adapter's watch cache"
    print(f"\n== {heading_text}")
    _show(standin, "scale", "deployment", "web", "-n", "shop", "--replicas=4")
    pods = _wait(lambda: _pods_when(standin, lambda ps: sum(p.service == "web" for p in ps) == 4),
                 30, "the fourth web pod")
    _export(exporter, pods)
    prometheus.wait_for('count(container_memory_working_set_bytes{namespace="shop",pod=~"web-.*"}) == 4',
                        timeout=30)
    _wait(lambda: len(_top_rows(standin)) == 4, 30, "kubectl top to list four web pods")
    _show(standin, "top", "pods", "-n", "shop", "-l", "app=web")
    return 0


def _top_rows(standin: metrics_stack.StandIn) -> list[str]:
    result = standin.kubectl("top", "pods", "-n", "shop", "-l", "app=web", "--no-headers", check=False)
    return result.stdout.strip().splitlines() if result.returncode == 0 else []
