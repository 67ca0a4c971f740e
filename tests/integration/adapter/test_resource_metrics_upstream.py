"""`kubectl top` and `kubectl get podmetrics` through the stand-in's aggregation layer, held to what
metrics-server answers in the cases a user meets: a pod or node that exists but has no metrics, a
pod with a container measured for one resource only, objects that do not exist, selectors.

Its own stack (Prometheus, the sample exporter, the stand-in, the adapter), with objects the shared
end-to-end stack must not see: a node and a pod without series, a pod whose sidecar has memory but
no CPU yet (a new container: `rate()` has no two points), a Pending pod.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hack.stack import metrics_stack
from hack.stack.controller_stack import wait_until
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.sample_exporter import FakePod, SampleExporter, populate_demo

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]  # incl. stack start

PODS = (FakePod(namespace="shop", name="web-0", service="web", node="node-a", cpu_cores=0.25,
                memory_bytes=120 * 2**20),
        FakePod(namespace="shop", name="web-1", service="web", node="node-b", cpu_cores=0.2,
                memory_bytes=110 * 2**20),
        FakePod(namespace="pay", name="api-0", service="api", node="node-b", cpu_cores=0.05,
                memory_bytes=60 * 2**20))
SIDECAR = {"namespace": "shop", "pod": "web-1", "container": "sidecar", "node": "node-b"}
PROXY = {"namespace": "shop", "pod": "web-0", "container": "proxy", "node": "node-a"}  # measured whole


def _extra_objects() -> list[dict[str, Any]]:
    spare = {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": "node-c", "labels": {"kubernetes.io/hostname": "node-c", "pool": "spare"}},
             "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}

    def pod(name: str, phase: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "shop", "labels": {"app": "quiet"}},
                "spec": {"nodeName": "node-c", "containers": [{"name": "app", "image": "app"}]},
                "status": {"phase": phase}}

    return [spare, pod("quiet-0", "Running"), pod("waiting-0", "Pending")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    standin: metrics_stack.StandIn

    def kubectl(self, *args: str) -> tuple[int, str, str]:
        result = self.standin.kubectl(*args, check=False)
        return result.returncode, result.stdout, result.stderr

    def rows(self, *args: str) -> list[list[str]]:
        code, out, err = self.kubectl(*args)
        assert code == 0, err
        return [line.split() for line in out.strip().splitlines()[1:]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work: Path = tmp_path_factory.mktemp("resource-metrics-upstream")
    exporter = SampleExporter().start()
    populate_demo(exporter, PODS)
    exporter.set_gauge("container_memory_working_set_bytes", SIDECAR, 10 * 2**20)
    exporter.set_counter("container_cpu_usage_seconds_total", PROXY, rate=0.01)
    exporter.set_gauge("container_memory_working_set_bytes", PROXY, 16 * 2**20)
    prometheus = LocalPrometheus([exporter.address])
    try:
        prometheus.start()
        prometheus.wait_for("rate(container_cpu_usage_seconds_total[1m])")
        objects = [*metrics_stack.cluster_objects(PODS, deployments=False), *_extra_objects()]
        with metrics_stack.aggregated_adapter(work, prometheus_url=prometheus.url, objects=objects) as (standin, _):
            built = Cluster(standin=standin)
            wait_until(lambda: built.kubectl("top", "pod", "web-0", "-n", "shop")[0] == 0, timeout=30,
                       what="pod metrics of web-0")
            yield built
    finally:
        prometheus.close()
        exporter.stop()


# kubectl arguments, then what it prints on stderr (exit status 1): metrics-server's wording
NOT_SERVED = [
    pytest.param(("top", "pod", "quiet-0", "-n", "shop"),
                 'Error from server (NotFound): podmetrics.metrics.k8s.io "shop/quiet-0" not found',
                 id="running-pod-without-series"),
    pytest.param(("top", "node", "node-c"),
                 'Error from server (NotFound): nodemetrics.metrics.k8s.io "node-c" not found',
                 id="node-without-series"),
    pytest.param(("top", "pod", "web-1", "-n", "shop", "--containers"),
                 'Error from server (NotFound): podmetrics.metrics.k8s.io "shop/web-1" not found: '
                 'container "sidecar" has memory but no cpu usage', id="pod-with-half-measured-sidecar"),
    pytest.param(("top", "pod", "ghost-0", "-n", "shop"),
                 'Error from server (NotFound): pods "ghost-0" not found', id="pod-that-does-not-exist"),
    pytest.param(("top", "pod", "api-0", "-n", "shop"),
                 'Error from server (NotFound): pods "api-0" not found', id="pod-of-another-namespace"),
    pytest.param(("top", "node", "node-z"),
                 'Error from server (NotFound): nodes "node-z" not found', id="node-that-does-not-exist"),
    pytest.param(("top", "node", "-l", "pool=spare"), "error: metrics not available yet",
                 id="node-selector-matching-only-unmeasured"),
    # metrics-server's pod cache holds Running pods only, so it says `pods "waiting-0" not found`;
    # the pod exists, so we name what is missing: its metrics
    pytest.param(("top", "pod", "waiting-0", "-n", "shop"),
                 'Error from server (NotFound): podmetrics.metrics.k8s.io "shop/waiting-0" not found',
                 id="pending-pod"),
]


@pytest.mark.parametrize(("args", "stderr"), NOT_SERVED)
def test_kubectl_top_of_what_has_no_metrics(cluster: Cluster, args: tuple[str, ...], stderr: str) -> None:
    code, _, err = cluster.kubectl(*args)
    assert (code, err.strip()) == (1, stderr)


def test_kubectl_top_pods_lists_only_fully_measured_pods(cluster: Cluster) -> None:
    """web-1's sidecar has no CPU yet: the pod is left out (metrics-server), not listed with
    `0m` for the sidecar and a pod total without it; quiet-0 has no series; waiting-0 is Pending."""
    assert [row[0] for row in cluster.rows("top", "pods", "-n", "shop")] == ["web-0"]
    assert [(row[0], row[1], row[3]) for row in cluster.rows("top", "pods", "-n", "shop", "--containers")] == [
        ("web-0", "app", "120Mi"), ("web-0", "proxy", "16Mi")]
    assert [(row[0], row[1], row[3]) for row in cluster.rows("top", "pods", "-A")] == [
        ("pay", "api-0", "60Mi"), ("shop", "web-0", "136Mi")]


def test_kubectl_top_nodes_with_selectors(cluster: Cluster) -> None:
    every = {row[0]: row[1:] for row in cluster.rows("top", "nodes")}
    assert sorted(every) == ["node-a", "node-b", "node-c"]
    assert every["node-c"] == ["<unknown>"] * 4, "a node without metrics is shown, unknown"
    linux = cluster.rows("top", "nodes", "-l", "kubernetes.io/os=linux")
    assert [row[0] for row in linux] == ["node-a", "node-b"]
    assert linux[0][3] == f"{120 + 512}Mi"


def test_field_selector_on_metadata_name(cluster: Cluster) -> None:
    assert [row[0] for row in cluster.rows("top", "pods", "-n", "shop",
                                           "--field-selector", "metadata.name=web-0")] == ["web-0"]
    code, out, err = cluster.kubectl("get", "--raw",
                                     "/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=metadata.name%3Dnode-b")
    assert code == 0, err
    assert [n["metadata"]["name"] for n in json.loads(out)["items"]] == ["node-b"]


def test_kubectl_get_podmetrics_and_nodemetrics_print_metrics_servers_columns(cluster: Cluster) -> None:
    """kubectl get asks for a Table: NAME CPU MEMORY WINDOW as with metrics-server (before: the
    generic NAME AGE, AGE always 0s)."""
    code, out, err = cluster.kubectl("get", "podmetrics", "-n", "shop")
    assert code == 0, err
    [header, *rows] = [line.split() for line in out.strip().splitlines()]
    assert header == ["NAME", "CPU", "MEMORY", "WINDOW"]
    assert [(row[0], row[2], row[3]) for row in rows] == [("web-0", "136Mi", "1m0s")]
    every = cluster.rows("get", "podmetrics.metrics.k8s.io", "-A")
    assert [(row[0], row[1], row[3]) for row in every] == [("pay", "api-0", "60Mi"), ("shop", "web-0", "136Mi")]
    nodes = cluster.rows("get", "nodemetrics")
    assert [(row[0], row[2], row[3]) for row in nodes] == [
        ("node-a", f"{120 + 512}Mi", "1m0s"), ("node-b", f"{110 + 60 + 512}Mi", "1m0s")]


def test_kubectl_get_podmetrics_watch_is_refused_as_metrics_server_refuses_it(cluster: Cluster) -> None:
    code, _, err = cluster.kubectl("get", "podmetrics", "-n", "shop", "-w", "--request-timeout=10s")
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        'Error from server (MethodNotAllowed): watch is not supported on resources of kind "pods.metrics.k8s.io"')
