"""The scale subresource (built-in and CRD) and the workload simulator following it."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from tests.integration.standin.manifests import deployment

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _wait(predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_kubectl_scale_is_followed_by_ready_pods(kube_standin, standin_namespace):
    kube_standin.apply(deployment("web", 1), namespace=standin_namespace)
    kube_standin.kubectl("scale", "deployment", "web", "--replicas=3", "-n", standin_namespace)
    with kube_standin.api_client() as api_client:
        apps, v1 = client.AppsV1Api(api_client), client.CoreV1Api(api_client)

        def ready() -> bool:
            d = apps.read_namespaced_deployment("web", standin_namespace)
            return d.status.ready_replicas == 3 and d.status.observed_generation == d.metadata.generation
        assert _wait(ready)
        pods = v1.list_namespaced_pod(standin_namespace, label_selector="app=web").items
        assert len(pods) == 3
        for pod in pods:
            assert pod.status.phase == "Running" and pod.status.start_time is not None
            assert pod.metadata.owner_references[0].kind == "ReplicaSet"
            assert pod.spec.containers[0].resources.requests == {"cpu": "250m"}
            assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"
        scale = apps.read_namespaced_deployment_scale("web", standin_namespace)
        assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (3, 3, "app=web")
        apps.patch_namespaced_deployment_scale("web", standin_namespace, {"spec": {"replicas": 1}})
        assert _wait(lambda: len(v1.list_namespaced_pod(standin_namespace,
                                                         label_selector="app=web").items) == 1)


def test_statefulset_pods_have_ordinal_names(kube_standin, standin_namespace):
    sts = deployment("db", 2)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "db"
    kube_standin.apply(sts, namespace=standin_namespace)
    out = lambda: kube_standin.kubectl(  # noqa: E731
        "get", "pods", "-n", standin_namespace, "-l", "app=db",
        "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    assert _wait(lambda: out() == ["db-0", "db-1"])


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "workers.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "workers", "singular": "worker", "kind": "Worker"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}},
                           "subresources": {"status": {}, "scale": {
                               "specReplicasPath": ".spec.replicas",
                               "statusReplicasPath": ".status.replicas",
                               "labelSelectorPath": ".status.selector"}}}]}}


def test_custom_resource_scale_subresource(kube_standin, standin_namespace):
    kube_standin.apply(CRD)
    kube_standin.apply({"apiVersion": "example.com/v1", "kind": "Worker",
                        "metadata": {"name": "w"}, "spec": {"replicas": 2}},
                       namespace=standin_namespace)
    with kube_standin.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        custom.patch_namespaced_custom_object_status(
            "example.com", "v1", standin_namespace, "workers", "w",
            {"status": {"replicas": 2, "selector": "app=w"}})
        scale = custom.get_namespaced_custom_object_scale("example.com", "v1", standin_namespace,
                                                          "workers", "w")
        assert scale["spec"] == {"replicas": 2}
        assert scale["status"] == {"replicas": 2, "selector": "app=w"}
    kube_standin.kubectl("scale", "workers.example.com", "w", "--replicas=5", "-n",
                         standin_namespace)
    got = json.loads(kube_standin.kubectl("get", "workers", "w", "-n", standin_namespace,
                                          "-o", "json").stdout)
    assert got["spec"]["replicas"] == 5 and got["metadata"]["generation"] == 2
    assert got["status"] == {"replicas": 2, "selector": "app=w"}
