"""The controller's Kubernetes edge against the real API-server stand-in (HTTPS, kubectl, CRD
admission): /scale of a Deployment and of a custom resource (with a forced 409 that is retried),
pods from the watch cache, status written to a PromAutoscaler and shown by `kubectl get pas`,
and Events counted instead of repeated."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import yaml

from controller.algorithm import ControllerConfig, SyncInput, complete, decide
from controller.algorithm.conditions import Event, EventReason, EventType
from controller.algorithm.pods import PodMetric, ReadyStatus
from controller.algorithm.spec import PodSamples, ScaleTarget
from controller.kube.events import COMPONENT, KubeEventSink
from controller.kube.objects import KIND, autoscaler_from_object
from controller.kube.pods import CachedPodLister, pod_cache
from controller.kube.ports import ObjectKey, TargetRef
from controller.kube.scale import KubeScaleClient
from controller.kube.status import build_status
from controller.kube.status_writer import KubeStatusWriter
from kubecommon.kube.errors import KubeAPIError
from kubecommon.kube.resources import ResourceResolver
from tests.integration.standin.crds import GROUP, PLURAL, gadget, gadget_crd
from tests.integration.standin.manifests import deployment
from tests.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CRD_FILE = REPO / "charts/prom-autoscaler/crds/promautoscalers.yaml"
WEB = TargetRef(api_version="apps/v1", kind="Deployment", name="web")


@pytest.fixture(scope="module")
def cluster(kube_standin):
    kube_standin.apply(yaml.safe_load(CRD_FILE.read_text()), gadget_crd())
    kube_standin.kubectl("wait", "--for=condition=Established", "crd/promautoscalers.autoscaling.prom-autoscaler.io",
                         f"crd/{PLURAL}.{GROUP}")
    return kube_standin


async def eventually(check, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check() if asyncio.iscoroutinefunction(check) else check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.1)


def ready_pods(lister, namespace, count):
    """The pods of app=web once `count` of them are Ready, else None."""
    pods = lister.pods(namespace, "app=web")
    return pods if len(pods) == count and all(p.ready is ReadyStatus.TRUE for p in pods) else None


def replicas_of(cluster, ns, kind, name):
    out = cluster.kubectl("get", kind, name, "-n", ns, "-o", "jsonpath={.spec.replicas}")
    return int(out.stdout)


async def test_deployment_scale_read_write_and_conflict(cluster, standin_namespace, client):
    ns = standin_namespace
    cluster.apply(deployment("web", 1), namespace=ns)
    scales = KubeScaleClient(client, ResourceResolver(client))
    read = await scales.get(ns, WEB)
    assert (read.spec_replicas, read.selector) == (1, "app=web")
    written = await scales.update(ns, WEB, 3, read)
    assert written.spec_replicas == 3 and replicas_of(cluster, ns, "deployment", "web") == 3
    # another writer moves the object after our read: the PUT with our resourceVersion gets 409
    stale = await scales.get(ns, WEB)
    cluster.kubectl("annotate", "deployment", "web", "-n", ns, "touched=yes")
    again = await scales.update(ns, WEB, 4, stale)
    assert again.spec_replicas == 4 and scales.conflicts_retried >= 1  # the workload simulator may write too
    assert replicas_of(cluster, ns, "deployment", "web") == 4


async def test_custom_resource_scale_with_a_stale_api_version(cluster, standin_namespace, client):
    ns = standin_namespace
    cluster.apply(gadget("g", targetRef={"name": "web"}, maxReplicas=9, replicas=2), namespace=ns)
    scales = KubeScaleClient(client, ResourceResolver(client))
    ref = TargetRef(api_version=f"{GROUP}/v1beta1", kind="Gadget", name="g")  # only the group counts
    read = await scales.get(ns, ref)
    assert read.spec_replicas == 2
    assert (await scales.update(ns, ref, 5, read)).spec_replicas == 5
    assert replicas_of(cluster, ns, "gadget", "g") == 5
    with pytest.raises(KubeAPIError, match="not found"):
        await scales.get(ns, TargetRef(api_version=f"{GROUP}/v1", kind="Gadget", name="missing"))


async def test_pods_come_from_the_watch_cache(cluster, standin_namespace, client):
    ns = standin_namespace
    cluster.apply(deployment("web", 2), namespace=ns)
    cache = pod_cache(client, ns)
    cache.start()
    try:
        await cache.wait_synced(10)
        lister = CachedPodLister(cache)
        pods = await eventually(lambda: ready_pods(lister, ns, 2))
        assert len(pods) == 2
        assert all(p.containers[0].requests == {"cpu": 250} and p.start_time is not None for p in pods)
        assert lister.pods(ns, "app=db") == []
    finally:
        await cache.stop()


def promautoscaler(name="web", **extra):
    return {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": KIND, "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 2, "maxReplicas": 10, **extra,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": 50}}}]}}


async def test_status_is_written_and_printed_like_kubectl_get_hpa(cluster, standin_namespace, client):
    ns = standin_namespace
    cluster.apply(deployment("web", 3), promautoscaler(mode="Preview"), namespace=ns)
    stored = json.loads(cluster.kubectl("get", "pas", "web", "-n", ns, "-o", "json").stdout)
    a = autoscaler_from_object(stored)
    now = time.time() + 600  # past the pods' cpu initialization period: they count as ready
    cache = pod_cache(client, ns)
    cache.start()
    try:
        await cache.wait_synced(10)
        lister = CachedPodLister(cache)
        pods = tuple(await eventually(lambda: ready_pods(lister, ns, 3)))
    finally:
        await cache.stop()
    usage = PodSamples(values={p.name: PodMetric(value=112, timestamp=now, window=60) for p in pods})  # 45 %
    d = decide(SyncInput(spec=a.spec, scale=ScaleTarget(spec_replicas=3, status_replicas=3), now=now,
                         status=a.status, pods=pods, observations=(usage,), history=a.history), ControllerConfig())
    if d.write:
        d = complete(d, write_error=None, now=now)
    status = build_status(a, d, now=now)
    writer = KubeStatusWriter(client)
    await writer.write(a.key, status)
    back = json.loads(cluster.kubectl("get", "pas", "web", "-n", ns, "-o", "json").stdout)
    assert back["status"] == status  # nothing pruned or rewritten by admission
    assert autoscaler_from_object(back).history is not None
    table = cluster.kubectl("get", "pas", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "MODE", "REASON",
                                "AGE"]
    assert table[1].split()[:9] == ["web", "Deployment/web", "cpu:", "44%/50%", "2", "10", "3", "Preview",
                                    "DesiredWithinRange"]
    cluster.kubectl("delete", "pas", "web", "-n", ns)
    await writer.write(a.key, status)  # gone: skipped, not an error
    assert writer.gone == 1


async def test_invalid_promautoscaler_is_rejected_by_admission(cluster, standin_namespace):
    bad = promautoscaler("bad", syncPeriodSeconds=1)
    out = cluster.kubectl("apply", "-n", standin_namespace, "-f", "-", input=json.dumps(bad), check=False)
    assert out.returncode != 0 and "spec.syncPeriodSeconds" in out.stderr


async def test_events_are_recorded_and_counted(cluster, standin_namespace, client):
    ns = standin_namespace
    cluster.apply(promautoscaler(), namespace=ns)
    uid = json.loads(cluster.kubectl("get", "pas", "web", "-n", ns, "-o", "json").stdout)["metadata"]["uid"]
    clock = iter([1_795_608_000.0, 1_795_608_015.0])
    sink = KubeEventSink(client, instance="test-pod", clock=lambda: next(clock))
    sink.start()
    event = Event(type=EventType.WARNING, reason=EventReason.FAILED_GET_PODS_METRIC,
                  message='unable to get metric rps: no metrics returned from custom metrics API')
    key = ObjectKey(kind=KIND, namespace=ns, name="web")
    sink.emit(key, uid, [event])
    sink.emit(key, uid, [event])
    await sink.stop(drain_seconds=10)
    listed = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    (recorded,) = [e for e in listed if e["reason"] == "FailedGetPodsMetric"]
    assert (recorded["count"], recorded["type"], recorded["source"]["component"]) == (2, "Warning", COMPONENT)
    assert recorded["involvedObject"]["uid"] == uid and recorded["involvedObject"]["kind"] == KIND
    described = cluster.kubectl("describe", "pas", "web", "-n", ns).stdout
    assert "FailedGetPodsMetric" in described
