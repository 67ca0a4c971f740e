"""CachedScaleClient: scale reads from watch caches, GET /scale whenever they cannot answer, and no
stale replica count after our own write."""

import asyncio
import random

import pytest

from controller.kube.ports import TargetRef
from controller.kube.scale import KubeScaleClient
from controller.kube.scale_cache import CachedScaleClient
from kubecommon.kube.resources import ResourceResolver

from .scale_server import ScaleServer

DEPLOYS, STS = "/apis/apps/v1/deployments", "/apis/apps/v1/statefulsets"
WIDGETS, GADGETS = "/apis/example.com/v1/widgets", "/apis/example.com/v1/gadgets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEB = TargetRef(api_version="apps/v1", kind="Deployment", name="web")


async def no_sleep(_seconds):
    return None


@pytest.fixture
async def server():
    srv = ScaleServer()
    await srv.start()
    yield srv
    await srv.close()


@pytest.fixture
async def scales(server):
    direct = KubeScaleClient(server.client, ResourceResolver(server.client), sleep=no_sleep, rng=random.Random(1))
    client = CachedScaleClient(direct, server.client)
    yield client
    await client.stop()


def workload(name, replicas, *, ready=None, selector=None):
    return {"metadata": {"name": name, "namespace": "shop"},
            "spec": {"replicas": replicas, "selector": selector or {"matchLabels": {"app": name}}},
            "status": {"replicas": replicas if ready is None else ready}}


def crd(resource, kind, *, scale=True):
    subresources = {"scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready",
                              "labelSelectorPath": ".status.selector"}} if scale else {}
    return {"metadata": {"name": f"{resource}.example.com"},
            "spec": {"group": "example.com", "names": {"plural": resource, "kind": kind},
                     "versions": [{"name": "v1", "served": True, "subresources": subresources}]}}


async def settle(scales, namespace, ref, *, cached_reads):
    """Read until `cached_reads` reads came from the cache (the lists landed), at most 1 s."""
    for _ in range(100):
        scale = await scales.get(namespace, ref)
        if scales.reads_cached >= cached_reads:
            return scale
        await asyncio.sleep(0.01)
    raise AssertionError(f"the cache never answered: {scales.reads_cached} cached, {scales.reads_direct} direct")


@pytest.mark.parametrize(("collection", "ref", "obj", "expected"), [
    pytest.param(DEPLOYS, WEB, workload("web", 3, ready=2), (3, 2, "app=web"), id="deployment"),
    pytest.param(STS, TargetRef(api_version="apps/v1", kind="StatefulSet", name="db"),
                 workload("db", 2, selector={"matchExpressions": [{"key": "app", "operator": "In",
                                                                   "values": ["db"]}]}),
                 (2, 2, "app in (db)"), id="statefulset"),
    pytest.param(WIDGETS, TargetRef(api_version="example.com/v1", kind="Widget", name="w"),
                 {"metadata": {"name": "w", "namespace": "shop"}, "spec": {"size": 4},
                  "status": {"ready": 3, "selector": "app=w"}}, (4, 3, "app=w"), id="crd-scale-paths"),
])
async def test_reads_come_from_the_watch_cache_after_the_first(server, scales, collection, ref, obj, expected):
    server.put(CRDS, crd("widgets", "Widget"))
    obj = server.put(collection, obj)
    scale = await settle(scales, "shop", ref, cached_reads=1)
    assert (scale.spec_replicas, scale.status_replicas, scale.selector) == expected
    assert scale.resource_version == obj["metadata"]["resourceVersion"]
    gets = len(server.scale_calls())
    for _ in range(5):
        assert await scales.get("shop", ref) == scale
    assert len(server.scale_calls()) == gets, "no GET /scale once the cache answers"


async def test_the_cache_follows_changes_made_by_others(server, scales):
    server.put(DEPLOYS, workload("web", 3))
    await settle(scales, "shop", WEB, cached_reads=1)
    server.put(DEPLOYS, workload("web", 7), "MODIFIED")  # kubectl scale
    for _ in range(100):
        if (await scales.get("shop", WEB)).spec_replicas == 7:
            break
        await asyncio.sleep(0.01)
    assert (await scales.get("shop", WEB)).spec_replicas == 7


@pytest.mark.parametrize(("setup", "ref", "warnings"), [
    pytest.param(lambda s: s.put(GADGETS, {"metadata": {"name": "g", "namespace": "shop"}, "spec": {"size": 1}}),
                 TargetRef(api_version="example.com/v1", kind="Gadget", name="g"), 0, id="crd-without-scale-paths"),
    pytest.param(lambda s: s.forbidden.add(DEPLOYS), WEB, 1, id="list-forbidden-logged-once"),
    pytest.param(lambda s: s.forbidden.add(CRDS), TargetRef(api_version="example.com/v1", kind="Widget", name="w"),
                 1, id="crd-list-forbidden-logged-once"),
])
async def test_what_the_cache_cannot_answer_is_read_with_get(server, scales, caplog, setup, ref, warnings):
    server.put(CRDS, crd("widgets", "Widget"))
    server.put(CRDS, crd("gadgets", "Gadget", scale=False))
    server.put(DEPLOYS, workload("web", 3))
    server.put(WIDGETS, {"metadata": {"name": "w", "namespace": "shop"}, "spec": {"size": 2}})
    setup(server)
    for _ in range(20):
        scale = await scales.get("shop", ref)
        await asyncio.sleep(0.01)
    assert scale.spec_replicas in (1, 2, 3)
    assert scales.reads_cached == 0 and scales.reads_direct == 20
    assert len(server.scale_calls()) == 20
    assert sum("GET /scale per sync instead" in r.getMessage() for r in caplog.records) == warnings


async def test_an_object_created_after_the_list_is_read_with_get_not_failed(server, scales):
    server.put(DEPLOYS, workload("web", 3))
    await settle(scales, "shop", WEB, cached_reads=1)
    server.hold_events = True  # the watch has not delivered the new object yet
    server.put(DEPLOYS, workload("api", 2))
    scale = await scales.get("shop", TargetRef(api_version="apps/v1", kind="Deployment", name="api"))
    assert scale.spec_replicas == 2
    assert server.scale_calls()[-1] == "GET /apis/apps/v1/namespaces/shop/deployments/api/scale"


async def test_after_our_write_a_lagging_watch_does_not_bring_back_the_old_count(server, scales):
    server.put(DEPLOYS, workload("web", 3))
    read = await settle(scales, "shop", WEB, cached_reads=1)
    server.hold_events = True  # the watch lags behind our write
    written = await scales.update("shop", WEB, 5, read)
    assert written.spec_replicas == 5
    again = await scales.get("shop", WEB)
    assert (again.spec_replicas, again.resource_version) == (5, written.resource_version)
    # a second write from this read does not conflict: it carries the written resourceVersion
    assert (await scales.update("shop", WEB, 6, again)).spec_replicas == 6
    assert [c.split(" ")[0] for c in server.scale_calls()] == ["GET", "PUT", "PUT"]
    server.release()  # the watch catches up: the cache answers again, with the newest count
    for _ in range(100):
        if (await scales.get("shop", WEB)).resource_version == str(server.rv):
            break
        await asyncio.sleep(0.01)
    assert (await scales.get("shop", WEB)).spec_replicas == 6


async def test_a_stale_cache_costs_a_conflict_and_a_fresh_get_never_a_lost_write(server, scales):
    server.put(DEPLOYS, workload("web", 3))
    read = await settle(scales, "shop", WEB, cached_reads=1)
    server.hold_events = True
    server.put(DEPLOYS, workload("web", 4), "MODIFIED")  # someone else, not yet seen by the watch
    written = await scales.update("shop", WEB, 8, read)
    assert written.spec_replicas == 8 and scales.conflicts_retried == 1
    assert [c.split(" ")[0] for c in server.scale_calls()][-3:] == ["PUT", "GET", "PUT"]


async def test_caches_are_shared_per_kind_and_only_for_targeted_kinds(server, scales):
    for name in ("a", "b", "c"):
        server.put(DEPLOYS, workload(name, 1))
    for name in ("a", "b", "c"):
        await scales.get("shop", TargetRef(api_version="apps/v1", kind="Deployment", name=name))
    assert scales.cached_kinds() == ["deployments.apps"]
    lists = [c for c in server.calls if c == f"GET {DEPLOYS}"]
    assert len(lists) == 1


async def test_caches_keep_only_what_the_scale_needs(server, scales):
    """A built-in workload is kept as its derived Scale (no JSON: the pod template is most of a
    Deployment); a custom resource as its identity metadata, spec and status; a CRD as its
    versions' scale subresources (not its schemas)."""
    big = workload("web", 3)
    big["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:template": {}}}}]
    big["spec"]["template"] = {"spec": {"containers": [{"name": "app", "image": "app", "env": [{"name": "A"}]}]}}
    server.put(DEPLOYS, big)
    server.put(CRDS, {**crd("widgets", "Widget"), "spec": {**crd("widgets", "Widget")["spec"], "versions": [
        {**crd("widgets", "Widget")["spec"]["versions"][0], "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    server.put(WIDGETS, {"metadata": {"name": "w", "namespace": "shop", "annotations": {"a": "b"}},
                         "spec": {"size": 4}, "status": {"ready": 3}})
    await settle(scales, "shop", WEB, cached_reads=1)
    await settle(scales, "shop", TargetRef(api_version="example.com/v1", kind="Widget", name="w"), cached_reads=2)
    deployment = scales._caches[("apps", "deployments")].get("shop", "web")
    assert deployment.raw is None and (deployment.value.spec_replicas, deployment.value.selector) == (3, "app=web")
    widget = scales._caches[("example.com", "widgets")].get("shop", "w")
    assert "annotations" not in widget.raw["metadata"] and widget.raw["spec"] == {"size": 4}
    kept = scales._crds.get(None, "widgets.example.com").raw
    assert kept["spec"] == {"versions": [{"name": "v1", "subresources": {"scale": {
        "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready", "labelSelectorPath": ".status.selector"}}}]}
