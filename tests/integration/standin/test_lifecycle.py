"""Object lifecycle beyond CRUD: events in both API groups, leases, garbage collection,
namespace deletion, rollouts on the simulated workloads."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from tests.integration.standin.manifests import deployment

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_events_k8s_io_and_core_events_share_storage(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        events, core = client.EventsV1Api(api_client), client.CoreV1Api(api_client)
        events.create_namespaced_event(standin_namespace, {
            "metadata": {"name": "scaled"}, "eventTime": "2026-01-01T00:00:00.000000Z",
            "reason": "SuccessfulRescale", "note": "New size: 3", "type": "Normal",
            "action": "Scale", "reportingController": "prom-autoscaler",
            "reportingInstance": "prom-autoscaler-0",
            "regarding": {"kind": "HorizontalPodAutoscaler", "name": "web",
                          "namespace": standin_namespace}})
        seen = core.read_namespaced_event("scaled", standin_namespace)
        assert (seen.message, seen.reason, seen.involved_object.name) == (
            "New size: 3", "SuccessfulRescale", "web")
        listed = core.list_namespaced_event(
            standin_namespace, field_selector="involvedObject.kind=HorizontalPodAutoscaler")
        assert [e.metadata.name for e in listed.items] == ["scaled"]


def test_lease_renewal_conflicts_like_leader_election(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        leases = client.CoordinationV1Api(api_client)
        lease = leases.create_namespaced_lease(standin_namespace, {
            "metadata": {"name": "leader"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                     "renewTime": "2026-01-01T00:00:00.000000Z"}})
        mine = leases.read_namespaced_lease("leader", standin_namespace)
        lease.spec.holder_identity = "b"
        leases.replace_namespaced_lease("leader", standin_namespace, lease)
        mine.spec.renew_time = None
        with pytest.raises(client.ApiException) as err:
            leases.replace_namespaced_lease("leader", standin_namespace, mine)
        assert err.value.status == 409
        assert leases.read_namespaced_lease("leader", standin_namespace).spec.holder_identity == "b"


def test_deleting_a_deployment_collects_its_replicasets_and_pods(kube_standin, standin_namespace):
    kube_standin.apply(deployment("gc", 2), namespace=standin_namespace)
    kube_standin.kubectl("rollout", "status", "deployment/gc", "-n", standin_namespace,
                         "--timeout=20s")
    kube_standin.kubectl("delete", "deployment", "gc", "-n", standin_namespace)
    left = kube_standin.kubectl("get", "replicasets,pods", "-n", standin_namespace, "-o", "name")
    assert left.stdout.strip() == ""


def test_namespace_deletion_removes_its_contents(kube_standin):
    kube_standin.ensure_namespace("doomed")
    kube_standin.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                       namespace="doomed")
    kube_standin.kubectl("delete", "namespace", "doomed")
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        assert not [c for c in v1.list_config_map_for_all_namespaces().items
                    if c.metadata.namespace == "doomed"]
        with pytest.raises(client.ApiException) as err:
            v1.create_namespaced_config_map("doomed", {"metadata": {"name": "again"}})
        assert err.value.status == 404


def test_finalizer_keeps_an_object_until_removed(kube_standin, standin_namespace):
    kube_standin.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
                       namespace=standin_namespace)
    kube_standin.kubectl("delete", "configmap", "held", "-n", standin_namespace, "--wait=false")
    held = json.loads(kube_standin.kubectl("get", "configmap", "held", "-n", standin_namespace,
                                           "-o", "json").stdout)
    assert held["metadata"]["deletionTimestamp"]
    kube_standin.kubectl("patch", "configmap", "held", "-n", standin_namespace, "--type=merge",
                         "-p", '{"metadata":{"finalizers":null}}')
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        got = kube_standin.kubectl("get", "configmap", "held", "-n", standin_namespace, check=False)
        if got.returncode != 0:
            # any failure is not enough: the stand-in must answer that the object is gone
            assert "(NotFound)" in got.stderr, got.stderr
            return
        time.sleep(0.1)
    raise AssertionError("configmap survived the removal of its last finalizer")
