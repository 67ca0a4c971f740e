"""Pods JSON -> PodInfo, and the cached lister over a real list/watch cache."""

import pytest

from controller.algorithm.pods import ContainerInfo, PodPhase, ReadyStatus
from controller.kube.pods import CachedPodLister, pod_cache, pod_info
from controller.kube.times import parse_time
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import CacheNotSynced
from kubecommon.selectors import SelectorError
from tests.unit.kubecommon.kube.apiserver import FakeAPIServer, eventually

POD_PATH = "/api/v1/pods"
T = "2026-11-25T12:00:00Z"


def pod(name="web-0", labels=None, *, phase="Running", ready="True", containers=(("app", {"cpu": "250m"}),),
        inits=(), pod_requests=None, overhead=None, deleted=False, start=T):
    raw = {"metadata": {"name": name, "namespace": "shop", "labels": labels or {"app": "web"}},
           "spec": {"containers": [{"name": n, "resources": {"requests": r}} for n, r in containers]},
           "status": {"phase": phase, "startTime": start}}
    if ready is not None:
        raw["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"},
                                       {"type": "Ready", "status": ready, "lastTransitionTime": T}]
    if inits:
        raw["spec"]["initContainers"] = [{"name": n, "resources": {"requests": r}, **({"restartPolicy": p} if p else {})}
                                         for n, r, p in inits]
    if pod_requests:
        raw["spec"]["resources"] = {"requests": pod_requests}
    if overhead:
        raw["spec"]["overhead"] = overhead
    if deleted:
        raw["metadata"]["deletionTimestamp"] = T
    return raw


@pytest.mark.parametrize(("raw", "check"), [
    pytest.param(pod(), lambda p: (p.phase, p.ready, p.ready_transition, p.start_time, p.deleted) == (
        PodPhase.RUNNING, ReadyStatus.TRUE, parse_time(T), parse_time(T), False), id="running-ready"),
    pytest.param(pod(phase="Pending", ready="False"), lambda p: (p.phase, p.ready) == (
        PodPhase.PENDING, ReadyStatus.FALSE), id="pending-unready"),
    pytest.param(pod(ready=None, start=None), lambda p: (p.ready, p.ready_transition, p.start_time) == (
        None, None, None), id="no-ready-condition"),
    pytest.param(pod(deleted=True, phase="Failed"), lambda p: (p.deleted, p.phase) == (True, PodPhase.FAILED),
                 id="deleted-failed"),
    pytest.param(pod(phase="Weird"), lambda p: p.phase is PodPhase.UNKNOWN, id="unknown-phase"),
    pytest.param(pod(containers=(("app", {"cpu": "1", "memory": "1Gi"}), ("log", {"cpu": "100m"}))),
                 lambda p: p.containers == (ContainerInfo(name="app", requests={"cpu": 1000, "memory": 1024**3 * 1000}),
                                            ContainerInfo(name="log", requests={"cpu": 100})),
                 id="container-requests-milli"),
    pytest.param(pod(inits=(("setup", {"cpu": "2"}, None), ("proxy", {"cpu": "50m"}, "Always"))),
                 lambda p: ([c.name for c in p.containers] == ["app", "proxy"] and p.containers[1].restartable_init
                            and [c.name for c in p.init_containers] == ["setup", "proxy"]),
                 id="sidecars-count-plain-inits-do-not"),
    pytest.param(pod(pod_requests={"cpu": "2"}, overhead={"cpu": "10m"}),
                 lambda p: (p.pod_requests, p.overhead) == ({"cpu": 2000}, {"cpu": 10}), id="pod-level-and-overhead"),
    pytest.param(pod(containers=(("app", {}),)), lambda p: p.containers[0].requests == {}, id="no-requests"),
])
def test_pod_info(raw, check):
    assert check(pod_info(raw))


@pytest.fixture
async def api():
    server = FakeAPIServer()
    client = KubeClient(await server.start(), timeout=2.0)
    await client.start()
    server.client = client
    yield server
    await client.close()
    await server.close()


async def put_pod(api, raw, kind="ADDED"):
    api.put_object(POD_PATH, raw, kind)


async def test_lister_reads_the_watch_cache(api):
    await put_pod(api, pod("web-0"))
    await put_pod(api, pod("db-0", {"app": "db"}))
    cache = pod_cache(api.client)
    lister = CachedPodLister(cache)
    with pytest.raises(CacheNotSynced):
        lister.pods("shop", "app=web")  # not started: no answer rather than "no pods"
    cache.start()
    try:
        await cache.wait_synced(1.5)
        assert [p.name for p in lister.pods("shop", "app=web")] == ["web-0"]
        assert [p.name for p in lister.pods("shop", "")] == ["db-0", "web-0"]
        assert lister.pods("other", "app=web") == []
        await put_pod(api, pod("web-0", ready="False"), "MODIFIED")
        await eventually(lambda: lister.pods("shop", "app=web")[0].ready is ReadyStatus.FALSE)
        with pytest.raises(SelectorError):
            lister.pods("shop", "app in (")
    finally:
        await cache.stop()


async def test_the_cache_keeps_each_pod_as_its_pod_info_only(api):
    await put_pod(api, pod("web-0", containers=(("app", {"cpu": "250m"}),)))
    cache = pod_cache(api.client)
    cache.start()
    try:
        await cache.wait_synced(1.5)
        kept = cache.get("shop", "web-0")
        assert kept.raw is None and kept.value == pod_info(pod("web-0"))
        assert CachedPodLister(cache).pods("shop", "app=web")[0] is kept.value  # no second conversion
    finally:
        await cache.stop()
