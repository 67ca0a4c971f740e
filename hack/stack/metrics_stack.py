"""Run the whole metrics path locally: the API-server stand-in, the adapter registered through
APIService objects, and the cluster objects matching the sample exporter's pods.

Shared by the end-to-end tests (tests/integration/e2e), `make demo` (phase 2) and the adapter
latency benchmark, so all three exercise the same wiring a real cluster has: kube-apiserver
(the stand-in) proxies `/apis/<metrics group>/...` to the adapter with its front-proxy client
certificate; the adapter authenticates that proxy, authorizes the original user with
SubjectAccessReview, and reads its objects from watch caches of the stand-in.

Everything binds 127.0.0.1. Processes are started with `subprocess` and stopped by their own pid.

Non-goals: Prometheus (hack.stack.local_prometheus) and its exporter (hack.stack.sample_exporter).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hack.stack.adapter_child import AdapterChild
from hack.stack.processes import free_port
from hack.stack.processes import spawn_until_line, terminate
from hack.stack.sample_exporter import FakePod

__all__ = [
    "ADAPTER_SERVICE",
    "RULES",
    "AdapterProcess",
    "StandIn",
    "apiservices",
    "cluster_objects",
]

REPO = Path(__file__).resolve().parents[2]
ADAPTER_SERVICE = ("monitoring", "prom-autoscaler")

# Rules over the sample exporter's series (hack/stack/sample_exporter.py): pods, services, namespaces and
# deployments from request counters and gauges; nodes (cluster-scoped); external queue depth in two
# flavours (namespaced and `namespaced: false`); cAdvisor/kubelet-style resource rules.
_CUSTOM_AND_EXTERNAL_RULES = r"""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
      service: {resource: service}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: 'http_requests_total{namespace!="",service!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      service: {group: apps, resource: deployment}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"http_requests_in_flight|app_sessions_active",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'node_memory_working_set_bytes{node!=""}'
  resources:
    overrides:
      node: {resource: node}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{namespace!="",queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'queue_messages_ready{namespace!="",queue!=""}'
  name: {matches: "^(.*)$", as: "cluster_${1}"}
  resources:
    namespaced: false
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (namespace,queue)'
"""

#: The demo rule file: its `resourceRules` section is the one source of the resource rules the
#: stack, the demo and the services' unit fixture serve (tests/unit/adapter/services/conftest.py).
DEMO_RULES = REPO / "hack" / "demo" / "config.yaml"


def demo_resource_rules() -> str:
    """The demo rule file's `resourceRules:` section, verbatim (a top-level YAML block)."""
    text = DEMO_RULES.read_text(encoding="utf-8")
    section = text[text.index("\nresourceRules:\n") + 1:]
    following = re.search(r"^\S", section[len("resourceRules:"):], flags=re.MULTILINE)
    return section if following is None else section[:len("resourceRules:") + following.start()]


RULES = _CUSTOM_AND_EXTERNAL_RULES + demo_resource_rules()


class StandIn:
    """The Kubernetes API-server stand-in (hack/kube_standin.py) as a child process."""

    def __init__(self, *, workdir: Path, services: Mapping[str, str] = {},  # noqa: B006 (read-only)
                 simulate_workloads: bool = False, ready_delay: float = 1.0, nodes: int = 0,
                 availability_interval: float = 1.0) -> None:
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        self._args = [f"--kubeconfig={self.kubeconfig}", f"--ready-delay={ready_delay}",
                      f"--nodes={nodes}", f"--availability-interval={availability_interval}",
                      *(f"--service={name}={address}" for name, address in services.items())]
        if simulate_workloads:
            self._args.append("--simulate-workloads")
        self._proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout: float = 30.0) -> StandIn:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._proc, lines = spawn_until_line(
            [sys.executable, str(REPO / "hack" / "kube_standin.py"), "--port=0", *self._args],
            self.workdir / "standin.log", "ready", cwd=REPO, timeout=timeout)
        self.url = next(line.split()[-1] for line in lines if line.startswith("serving on "))
        return self

    def stop(self) -> None:
        terminate(self._proc)
        self._proc = None

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        # its own discovery cache: kubectl keys ~/.kube/cache by host:port, and a later stand-in on
        # a reused port (another test, another pytest process) must not read this one's discovery
        cache = f"--cache-dir={self.workdir / 'kubectl-cache'}"
        result = subprocess.run(["kubectl", cache, *args], input=input, capture_output=True, text=True,
                                env=self.env(), timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                               f"{result.stdout}{result.stderr}")
        return result

    def create(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """`kubectl create` a list of objects (JSON, so kubectl sends JSON bodies)."""
        items = list(objects)
        if items:
            doc = {"apiVersion": "v1", "kind": "List", "items": items}
            self.kubectl("create", "--validate=false", "-f", "-", input=json.dumps(doc), timeout=120)

    def wait_apiservices_available(self, names: Sequence[str], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            out = self.kubectl("get", "apiservices", "-o", "json").stdout
            status = {item["metadata"]["name"]: {c["type"]: c["status"] for c in
                                                  item.get("status", {}).get("conditions", [])}
                      for item in json.loads(out)["items"]}
            if all(status.get(name, {}).get("Available") == "True" for name in names):
                return
            last = json.dumps({n: status.get(n) for n in names})
            time.sleep(0.2)
        raise TimeoutError(f"APIServices not Available after {timeout}s: {last}")


class AdapterProcess(AdapterChild):
    """`python -m adapter` as a child process, authenticating against the stand-in."""

    def __init__(self, *, workdir: Path, kubeconfig: Path, prometheus_url: str, rules: str = RULES,
                 port: int | None = None, relist_interval: str = "2s",
                 extra_args: Sequence[str] = (), python_args: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.kubeconfig = kubeconfig
        self.prometheus_url = prometheus_url
        self.rules = rules
        self.relist_interval = relist_interval
        self.extra_args = tuple(extra_args)
        self.python_args = tuple(python_args)  # e.g. ("-m", "cProfile", "-o", "adapter.prof")
        self.proc = None

    def args(self) -> list[str]:
        namespace, name = ADAPTER_SERVICE
        kc = str(self.kubeconfig)
        return [f"--config={self.workdir / 'rules.yaml'}", "--bind-address=127.0.0.1",
                f"--secure-port={self.port}", f"--cert-dir={self.workdir / 'certs'}",
                f"--service-name={name}", f"--service-namespace={namespace}",
                f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}", f"--prometheus-url={self.prometheus_url}",
                f"--metrics-relist-interval={self.relist_interval}", *self.extra_args]

    def start(self, timeout: float = 30.0) -> AdapterProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "rules.yaml").write_text(self.rules)
        self.spawn(self.args(), python_args=self.python_args)
        self.wait_for("/healthz", timeout=timeout)
        return self


@contextmanager
def aggregated_adapter(workdir: Path, *, prometheus_url: str, objects: Sequence[Mapping[str, Any]] = (),
                       standin_options: Mapping[str, Any] = {},  # noqa: B006 (read-only)
                       adapter_options: Mapping[str, Any] = {}) -> Iterator[tuple[StandIn, AdapterProcess]]:
    """The stand-in holding `objects`, with the adapter (reading `prometheus_url`) registered behind
    it as its Service's endpoint and its four APIServices Available, as kube-apiserver aggregation
    serves it; both stopped on exit. `standin_options` and `adapter_options` go to their
    constructors (the Service address, the workdirs and the kubeconfig are set here)."""
    namespace, name = ADAPTER_SERVICE
    port = free_port()
    standin = StandIn(workdir=workdir / "standin", services={f"{namespace}/{name}": f"127.0.0.1:{port}"},
                      **standin_options)
    adapter = AdapterProcess(workdir=workdir / "adapter", kubeconfig=standin.kubeconfig,
                             prometheus_url=prometheus_url, port=port, **adapter_options)
    try:
        standin.start()
        if objects:
            standin.create(list(objects))
        adapter.start()
        standin.create(apiservices(adapter.cert_file.read_bytes()))
        standin.wait_apiservices_available(APISERVICE_NAMES)
        yield standin, adapter
    finally:
        adapter.stop()
        standin.stop()


def apiservices(ca_bundle: bytes) -> list[dict[str, Any]]:
    """The four APIServices a deployment registers, all pointing at the adapter's Service."""
    import base64

    namespace, name = ADAPTER_SERVICE
    out = []
    for group, version, priority in (("custom.metrics.k8s.io", "v1beta1", 100),
                                     ("custom.metrics.k8s.io", "v1beta2", 200),
                                     ("external.metrics.k8s.io", "v1beta1", 100),
                                     ("metrics.k8s.io", "v1beta1", 100)):
        out.append({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": f"{version}.{group}"},
                    "spec": {"group": group, "version": version,
                             "service": {"namespace": namespace, "name": name, "port": 443},
                             "caBundle": base64.b64encode(ca_bundle).decode(),
                             "groupPriorityMinimum": 100, "versionPriority": priority}})
    return out


APISERVICE_NAMES = ("v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io",
                    "v1beta1.external.metrics.k8s.io", "v1beta1.metrics.k8s.io")


def cluster_objects(pods: Sequence[FakePod], *, deployments: bool = True) -> list[dict[str, Any]]:
    """Namespaces, Nodes, Running Pods (labelled `app=<service>`) and, optionally, Deployments
    named after the services, matching what the sample exporter reports for `pods`."""
    namespaces = sorted({p.namespace for p in pods} | {ADAPTER_SERVICE[0]})
    nodes = sorted({p.node for p in pods})
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]
    objs += [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n, "kubernetes.io/os": "linux"}},
              "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                         "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                         "conditions": [{"type": "Ready", "status": "True"}]}} for n in nodes]
    for p in pods:
        objs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": p.name, "namespace": p.namespace,
                                  "labels": {"app": p.service}},
                     "spec": {"nodeName": p.node, "containers": [{"name": p.container, "image": "app"}]},
                     "status": {"phase": "Running",
                                "conditions": [{"type": "Ready", "status": "True"}]}})
    if deployments:
        for ns, service in sorted({(p.namespace, p.service) for p in pods}):
            objs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": service, "namespace": ns, "labels": {"app": service}},
                         "spec": {"replicas": 0, "selector": {"matchLabels": {"app": service}},
                                  "template": {"metadata": {"labels": {"app": service}},
                                               "spec": {"containers": [{"name": "app", "image": "app"}]}}}})
    return objs

