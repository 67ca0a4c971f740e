"""The whole autoscaling path, locally, for the controller's end-to-end tests, demo and benchmark.

    stack = ControllerStack.start(Path("/tmp/cs"))
    ctl = stack.controller("shop", "--horizontal-pod-autoscaler-downscale-stabilization=10s")
    stack.set_queue("shop", "orders", 42)        # the load, as an exporter gauge
    ...
    stack.close()

What runs (every piece a real process or server, wired as in a cluster):
* the sample exporter and a private Prometheus scraping it every second (hack.stack.local_prometheus);
* the API-server stand-in with its workload simulator (Deployments get ReplicaSets and Ready pods),
  the adapter registered through the four APIServices (hack.stack.metrics_stack), and the PromAutoscaler
  CRD applied from the chart (`charts/prom-autoscaler/crds/promautoscalers.yaml`);
* per controller replica: an `ApiProxy` (hack.stack.api_proxy) in front of the stand-in, recording every
  request and able to answer some with a 409, and `python -m controller run` with a kubeconfig
  pointing at that proxy. The controller reads metrics only through the aggregation layer.

Load is set on the exporter: `set_queue` (the External metric `queue_messages_ready{queue=...}`)
and `set_pod_load` (a per-pod gauge `http_requests_in_flight` written for every current pod of a
workload, so a Pods metric follows the replicas the controller chose).

Non-goals: assertions (the tests make them), anything not on loopback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from hack.stack import metrics_stack
from hack.stack.api_proxy import ApiProxy
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.processes import free_port
from hack.stack.processes import log_tail, spawn_logged, terminate
from hack.stack.sample_exporter import SampleExporter
from hack.kube_standin.kubeconfig import kubeconfig as make_kubeconfig, token_and_ca, write_kubeconfig
from kubecommon.quantity import Quantity
from kubecommon.tls import client_ssl_context

__all__ = ["CRD_FILE", "ControllerProcess", "ControllerStack", "deployment", "external_metric", "parse_metrics",
           "promautoscaler", "wait_until"]

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "charts" / "prom-autoscaler" / "crds" / "promautoscalers.yaml"
#: the controller's metrics port serves a self-signed certificate for 127.0.0.1
_UNVERIFIED = client_ssl_context(insecure=True)
GROUP, VERSION, PLURAL = "autoscaling.prom-autoscaler.io", "v1alpha1", "promautoscalers"


def wait_until(check: Callable[[], Any], *, timeout: float, interval: float = 0.2, what: str = "") -> Any:
    """Poll until `check()` is truthy; TimeoutError naming `what` and the last value otherwise."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise TimeoutError(f"{what or check} not true after {timeout}s (last: {last!r})")


def parse_metrics(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Prometheus text format → {(name, labels): value} (enough for our own /metrics)."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels: list[tuple[str, str]] = []
        for part in _split_labels(rest.rstrip("}")):
            key, _, raw = part.partition("=")
            labels.append((key.strip(), raw.strip().strip('"')))
        try:
            out[(name.strip(), frozenset(labels))] = float(value)
        except ValueError:
            continue
    return out


def _split_labels(text: str) -> Iterable[str]:
    part, quoted = "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            yield part
            part = ""
        else:
            part += ch
    if part.strip():
        yield part


@dataclass(slots=True, kw_only=True)
class ControllerProcess:
    """One `python -m controller run` replica behind its own recording proxy."""

    name: str
    workdir: Path
    proxy: ApiProxy
    args: list[str]
    metrics_port: int
    token: str = ""  # presented to the metrics port (HTTPS, checked with the stand-in); "" with --metrics-secure=false
    proc: subprocess.Popen[bytes] | None = None
    log_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_file = self.workdir / f"{self.name}.log"

    def start(self, *, ready_timeout: float = 30.0) -> ControllerProcess:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        self.proc = spawn_logged([sys.executable, "-m", "controller", "run", *self.args], self.log_file,
                                 cwd=REPO, env=env)
        wait_until(lambda: self.get("/healthz") is not None or self._exited(), timeout=ready_timeout,
                   interval=0.1, what=f"{self.name} /healthz")
        if self._exited():
            raise RuntimeError(f"controller {self.name} exited ({self.proc.returncode}):\n{self.log_tail()}")
        return self

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def kill(self) -> None:
        """SIGKILL: no release, no checkpoint, like a node failure."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait (the controller checkpoints and releases its Lease)."""
        return terminate(self.proc, timeout=timeout)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def url(self) -> str:
        """The metrics port: HTTPS with the controller's self-signed certificate unless it runs with
        --metrics-secure=false."""
        scheme = "http" if "--metrics-secure=false" in self.args else "https"
        return f"{scheme}://127.0.0.1:{self.metrics_port}"

    def get(self, path: str) -> str | None:
        """GET a path of the metrics port with the stack's token; None when it does not answer 200."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        request = urllib.request.Request(f"{self.url}{path}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=2, context=_UNVERIFIED) as resp:
                return str(resp.read().decode())
        except OSError:
            return None

    def metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        return parse_metrics(self.get("/metrics") or "")

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of `name` whose labels include `labels` (0 when absent)."""
        want = set(labels.items())
        return sum(v for (n, lbls), v in self.metrics().items() if n == name and want <= lbls)

    def log_tail(self, lines: int = 60) -> str:
        return log_tail(self.log_file, lines)


@dataclass(slots=True, kw_only=True)
class ControllerStack:
    workdir: Path
    exporter: SampleExporter
    prometheus: LocalPrometheus
    standin: metrics_stack.StandIn
    adapter: metrics_stack.AdapterProcess
    token: str
    ca_pem: bytes
    controllers: list[ControllerProcess] = field(default_factory=list)

    @classmethod
    def start(cls, workdir: Path, *, ready_delay: float = 0.5, crd_file: Path = CRD_FILE) -> ControllerStack:
        workdir.mkdir(parents=True, exist_ok=True)
        exporter = SampleExporter().start()
        (workdir / "prometheus").mkdir(exist_ok=True)
        prometheus = LocalPrometheus([exporter.address], workdir=workdir / "prometheus")
        standin = adapter = None
        try:
            prometheus.start()
            namespace, name = metrics_stack.ADAPTER_SERVICE
            port = free_port()
            standin = metrics_stack.StandIn(workdir=workdir / "standin", simulate_workloads=True,
                                            ready_delay=ready_delay, availability_interval=0.5,
                                            services={f"{namespace}/{name}": f"127.0.0.1:{port}"}).start()
            standin.create([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
            adapter = metrics_stack.AdapterProcess(workdir=workdir / "adapter", kubeconfig=standin.kubeconfig,
                                                   prometheus_url=prometheus.url, port=port,
                                                   relist_interval="1s").start()
            standin.create(metrics_stack.apiservices(adapter.cert_file.read_bytes()))
            standin.kubectl("apply", "-f", str(crd_file))
            standin.wait_apiservices_available(metrics_stack.APISERVICE_NAMES)
            wait_until(lambda: standin.kubectl("get", PLURAL, "-A", check=False).returncode == 0,
                       timeout=30, what="the PromAutoscaler CRD served")
            token, ca_pem = token_and_ca(standin.kubeconfig)
            return cls(workdir=workdir, exporter=exporter, prometheus=prometheus, standin=standin,
                       adapter=adapter, token=token, ca_pem=ca_pem)
        except BaseException:
            for part in (adapter, standin):
                if part is not None:
                    part.stop()
            prometheus.close()
            exporter.stop()
            raise

    def close(self) -> None:
        self.stop_controllers()
        self.adapter.stop()
        self.standin.stop()
        self.prometheus.close()
        self.exporter.stop()

    # --- controllers --------------------------------------------------------------------------------
    def controller(self, namespace: str, *args: str, name: str = "ctl", start: bool = True,
                   lease_namespace: str | None = None) -> ControllerProcess:
        """A controller replica watching `namespace`, its Lease in `lease_namespace` (default: same)."""
        index = len(self.controllers)
        workdir = self.workdir / "controllers" / f"{namespace}-{name}-{index}"
        workdir.mkdir(parents=True, exist_ok=True)
        proxy = ApiProxy(self.standin.url, ca_pem=self.ca_pem).start()
        kubeconfig = workdir / "kubeconfig"
        write_kubeconfig(kubeconfig, make_kubeconfig(proxy.url, {"admin": {"token": self.token}}, cluster="proxy",
                                                      ca_pem=proxy.ca_pem_served))
        port = free_port()
        flags = [f"--kubeconfig={kubeconfig}", "--metrics-bind-address=127.0.0.1", f"--metrics-port={port}",
                 f"--watch-namespace={namespace}",
                 f"--leader-elect-resource-namespace={lease_namespace or namespace}", *args]
        replica = ControllerProcess(name=f"{name}-{index}", workdir=workdir, proxy=proxy, args=flags,
                                    metrics_port=port, token=self.token)
        self.controllers.append(replica)
        return replica.start() if start else replica

    def stop_controllers(self) -> None:
        for replica in self.controllers:
            replica.kill()
            replica.proxy.stop()
        self.controllers.clear()

    # --- cluster ------------------------------------------------------------------------------------
    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.standin.kubectl(*args, input=input, check=check)

    def apply(self, *objects: Mapping[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", input="\n".join(json.dumps(o) for o in objects))

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        out = self.kubectl("get", resource, name, "-n", namespace, "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def raw(self, path: str) -> dict[str, Any] | None:
        out = self.kubectl("get", "--raw", path, check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def replicas(self, namespace: str, name: str, resource: str = "deployments.apps") -> int | None:
        obj = self.get(resource, namespace, name)
        return None if obj is None else int((obj.get("spec") or {}).get("replicas") or 0)

    def events(self, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
        out = self.kubectl("get", "events", "-n", namespace, "-o", "json")
        items = json.loads(out.stdout)["items"]
        return [e for e in items if name is None or e.get("involvedObject", {}).get("name") == name]

    def create_namespace(self, namespace: str) -> None:
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    # --- load ---------------------------------------------------------------------------------------
    def set_queue(self, namespace: str, queue: str, value: float) -> None:
        self.exporter.set_gauge("queue_messages_ready", {"namespace": namespace, "queue": queue}, value)

    def external_value(self, namespace: str, queue: str) -> float | None:
        """The value the adapter serves for the queue, read through the aggregation layer."""
        doc = self.raw(f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/queue_messages_ready"
                       f"?labelSelector=queue%3D{queue}")
        items = (doc or {}).get("items") or []
        return _quantity(items[0]["value"]) if items else None

    def wait_external(self, namespace: str, queue: str, value: float, timeout: float = 20.0) -> float:
        """Block until the adapter reports `value`; returns time.monotonic() at that moment."""
        wait_until(lambda: self.external_value(namespace, queue) == value, timeout=timeout, interval=0.1,
                   what=f"adapter reporting {queue}={value}")
        return time.monotonic()

    def pods(self, namespace: str, selector: str) -> list[str]:
        out = self.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name")
        return sorted(line.split("/", 1)[1] for line in out.stdout.split())

    def set_pod_load(self, namespace: str, selector: str, service: str, per_pod: Callable[[int], float],
                     known: set[str] | None = None) -> set[str]:
        """Write `per_pod(n)` as every current pod's in-flight gauge; drop vanished pods' series."""
        pods = set(self.pods(namespace, selector))
        for gone in (known or set()) - pods:
            self.exporter.remove("http_requests_in_flight", {"namespace": namespace, "pod": gone,
                                                             "service": service})
        for pod in pods:
            self.exporter.set_gauge("http_requests_in_flight", {"namespace": namespace, "pod": pod,
                                                                "service": service}, per_pod(len(pods)))
        return pods


def deployment(namespace: str, name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "app",
                                                           "resources": {"requests": {"cpu": "100m"}}}]}}}}


def external_metric(queue: str, average: str) -> dict[str, Any]:
    return {"type": "External", "external": {
        "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": queue}}},
        "target": {"type": "AverageValue", "averageValue": average}}}


def promautoscaler(namespace: str, name: str, *, target: Mapping[str, str], metrics: Sequence[Mapping[str, Any]],
                   min_replicas: int = 1, max_replicas: int = 10, sync_period: int = 3,
                   mode: str = "Active", behavior: Mapping[str, Any] | None = None,
                   paused: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": dict(target), "minReplicas": min_replicas,
                            "maxReplicas": max_replicas, "metrics": [dict(m) for m in metrics],
                            "syncPeriodSeconds": sync_period, "mode": mode}
    if behavior is not None:
        spec["behavior"] = dict(behavior)
    if paused:
        spec["paused"] = True
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PromAutoscaler",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _quantity(text: str) -> float:
    return Quantity.parse(text).as_float()
