"""metrics.k8s.io through aggregation: `kubectl top pods` / `kubectl top nodes` and the raw
PodMetrics/NodeMetrics documents."""

from __future__ import annotations

import re

import pytest

from kubecommon.quantity import Quantity

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]  # incl. stack start

MEMORY = {"web-7d9f8-abcde": "120Mi", "web-7d9f8-fghij": "110Mi", "web-7d9f8-klmno": "100Mi",
          "cart-5c6b7-pqrst": "80Mi", "api-66f4c-uvwxy": "60Mi", "api-66f4c-zabcd": "64Mi"}


def _table(output: str) -> list[list[str]]:
    lines = [line.split() for line in output.strip().splitlines()]
    return lines[1:]


def _direct_millicores(stack: Stack) -> dict[str, float]:
    promql = 'sum(rate(container_cpu_usage_seconds_total{namespace="shop",container!=""}[1m])) by (pod)'
    return {s["metric"]["pod"]: float(s["value"][1]) * 1000 for s in stack.prometheus.query(promql)}


def test_kubectl_top_pods_in_a_namespace(stack: Stack) -> None:
    before = _direct_millicores(stack)
    result = stack.kubectl("top", "pods", "-n", "shop")
    after = _direct_millicores(stack)
    header = result.stdout.splitlines()[0].split()
    assert header == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    rows = {name: (cpu, memory) for name, cpu, memory in _table(result.stdout)}
    assert {name: memory for name, (_, memory) in rows.items()} == {
        name: MEMORY[name] for name in ("cart-5c6b7-pqrst", "web-7d9f8-abcde", "web-7d9f8-fghij", "web-7d9f8-klmno")}
    for name, (cpu, _) in rows.items():
        assert re.fullmatch(r"\d+m", cpu)
        # kubectl prints ceil(milli); a scrape may land between the reads
        low, high = sorted((before[name], after[name]))
        assert low * 0.95 - 1 <= int(cpu[:-1]) <= high * 1.05 + 1


def test_kubectl_top_pods_all_namespaces_and_selector(stack: Stack) -> None:
    every = _table(stack.kubectl("top", "pods", "-A").stdout)
    assert sorted((ns, name, memory) for ns, name, _, memory in every) == sorted(
        (p.namespace, p.name, MEMORY[p.name]) for p in stack.pods)
    web = _table(stack.kubectl("top", "pods", "-n", "shop", "-l", "app=web").stdout)
    assert [row[0] for row in web] == ["web-7d9f8-abcde", "web-7d9f8-fghij", "web-7d9f8-klmno"]


def test_kubectl_top_pod_containers(stack: Stack) -> None:
    rows = _table(stack.kubectl("top", "pod", "web-7d9f8-abcde", "-n", "shop", "--containers").stdout)
    assert [(pod, container, memory) for pod, container, _, memory in rows] == [
        ("web-7d9f8-abcde", "app", "120Mi")]


@pytest.mark.standin_only("the demo's nodes node-a and node-b exist only in the stand-in")
def test_kubectl_top_nodes(stack: Stack) -> None:
    result = stack.kubectl("top", "nodes")
    assert result.stdout.splitlines()[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    rows = {row[0]: row[1:] for row in _table(result.stdout)}
    assert sorted(rows) == ["node-a", "node-b"]
    assert rows["node-a"][2] == f"{120 + 100 + 60 + 512}Mi"
    assert rows["node-b"][2] == f"{110 + 80 + 64 + 512}Mi"
    for cpu, cpu_percent, _, memory_percent in rows.values():
        assert re.fullmatch(r"\d+m", cpu) and re.fullmatch(r"\d+%", cpu_percent)
        assert re.fullmatch(r"\d+%", memory_percent)


def test_raw_pod_metrics_document(stack: Stack) -> None:
    doc = stack.raw_json("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-7d9f8-fghij")
    assert (doc["kind"], doc["apiVersion"]) == ("PodMetrics", "metrics.k8s.io/v1beta1")
    assert doc["metadata"]["name"] == "web-7d9f8-fghij" and doc["metadata"]["namespace"] == "shop"
    assert doc["metadata"]["labels"] == {"app": "web"}
    assert doc["window"] == "1m0s"
    [container] = doc["containers"]
    assert container["name"] == "app" and container["usage"]["memory"] == "110Mi"
    # nano-core precision like metrics-server; the canonical form drops whole groups of trailing
    # zeros (43348000n is written 43348u), so the suffix depends on the measured rate
    assert re.fullmatch(r"\d+[nu]?|\d+m", container["usage"]["cpu"]), "CPU in nano-cores like metrics-server"
    assert str(Quantity.parse(container["usage"]["cpu"])) == container["usage"]["cpu"]


@pytest.mark.standin_only("the demo's nodes node-a and node-b exist only in the stand-in")
def test_raw_pod_and_node_lists(stack: Stack) -> None:
    pods = stack.raw_json("/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%3Dapi")
    assert (pods["kind"], pods["metadata"]) == ("PodMetricsList", {})
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods["items"]] == [
        ("payments", "api-66f4c-uvwxy"), ("payments", "api-66f4c-zabcd")]
    nodes = stack.raw_json("/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=metadata.name%3Dnode-b")
    assert nodes["kind"] == "NodeMetricsList"
    assert [(n["metadata"]["name"], n["usage"]["memory"], n["window"]) for n in nodes["items"]] == [
        ("node-b", f"{110 + 80 + 64 + 512}Mi", "1m0s")]
