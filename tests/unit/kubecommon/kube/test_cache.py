"""Watch caches against an in-process API server speaking the real list/watch protocol."""

import asyncio

import pytest

from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.caches import KubeObjectCaches
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import CacheNotSynced, KubeAPIError, UnknownResource
from kubecommon.kube.resources import ResourceInfo, ResourceResolver
from adapter.rules.resources import GroupResource
from kubecommon.selectors import parse_selector

from .apiserver import eventually

PODS = ResourceInfo(group="", version="v1", resource="pods", kind="Pod", namespaced=True)
POD_PATH = "/api/v1/pods"


async def started(api, **kwargs):
    cache = ObjectCache(api.client, PODS, **kwargs)
    cache.start()
    await cache.wait_synced(1.5)
    return cache


async def test_list_then_watch_sees_changes(api):
    await api.put(POD_PATH, "web-0", "shop", {"app": "web"})
    await api.put(POD_PATH, "db-0", "shop", {"app": "db"})
    cache = await started(api)
    try:
        assert [p.name for p in cache.list("shop")] == ["db-0", "web-0"]
        await api.put(POD_PATH, "web-1", "shop", {"app": "web"})
        await api.put(POD_PATH, "web-0", "shop", {"app": "web", "v": "2"})
        await api.delete(POD_PATH, "db-0", "shop")
        await eventually(lambda: [p.name for p in cache.list("shop")] == ["web-0", "web-1"]
                         and cache.get("shop", "web-0").labels.get("v") == "2")
        assert cache.relists == 1
        assert sum(c.startswith("GET") for c in api.calls) == 1  # one LIST, then only watches
    finally:
        await cache.stop()


async def test_tracked_changes_name_only_the_keys_that_changed(api):
    await api.put(POD_PATH, "web-0", "shop")
    await api.put(POD_PATH, "db-0", "shop")
    cache = await started(api, track_changes=True)
    try:
        assert cache.take_changes() == {("shop", "web-0"), ("shop", "db-0")}  # the first list: everything
        assert cache.take_changes() == set()
        await api.put(POD_PATH, "web-0", "shop", {"v": "2"})
        await api.delete(POD_PATH, "db-0", "shop")
        await api.put(POD_PATH, "new", "other")
        await eventually(lambda: cache.get("other", "new") is not None)
        assert cache.take_changes() == {("shop", "web-0"), ("shop", "db-0"), ("other", "new")}
        assert cache.get("shop", "db-0") is None  # a deleted key looks up as None
    finally:
        await cache.stop()


async def test_relist_reports_keys_deleted_meanwhile(api):
    await api.put(POD_PATH, "old", "ns")
    cache = await started(api, track_changes=True)
    try:
        cache.take_changes()
        await api.delete(POD_PATH, "old", "ns")
        await api.compact()
        await api.put(POD_PATH, "second", "ns")
        await eventually(lambda: cache.relists == 2 and cache.get("ns", "second") is not None)
        assert {("ns", "old"), ("ns", "second")} <= cache.take_changes()
    finally:
        await cache.stop()


async def test_list_filters_by_namespace_and_selector(api):
    await api.put(POD_PATH, "a", "one", {"app": "web"})
    await api.put(POD_PATH, "b", "two", {"app": "web"})
    await api.put(POD_PATH, "c", "two", {"app": "db"})
    cache = await started(api)
    try:
        web = parse_selector("app=web")
        assert [(p.namespace, p.name) for p in cache.list(None, web)] == [("one", "a"), ("two", "b")]
        assert [p.name for p in cache.list("two", web)] == ["b"]
        assert cache.get("two", "c").labels == {"app": "db"} and cache.get("one", "c") is None
    finally:
        await cache.stop()


class CountingSelector:
    """A selector that counts the objects it is asked to match (the cache's only use of it)."""

    def __init__(self, text):
        self._selector = parse_selector(text)
        self.matched = 0

    def is_empty(self):
        return self._selector.is_empty()

    def matches(self, labels):
        self.matched += 1
        return self._selector.matches(labels)


async def test_a_selectors_answer_is_reused_until_its_namespace_changes(api):
    for i in range(5):
        await api.put(POD_PATH, f"web-{i}", "shop", {"app": "web" if i % 2 == 0 else "db"})
    await api.put(POD_PATH, "web-0", "other", {"app": "web"})
    cache = await started(api)
    try:
        web = CountingSelector("app=web")
        first = cache.list("shop", web)
        assert [p.name for p in first] == ["web-0", "web-2", "web-4"] and web.matched == 5
        first.clear()  # the caller's own list: changing it changes nothing in the cache
        assert [p.name for p in cache.list("shop", web)] == ["web-0", "web-2", "web-4"]
        assert web.matched == 5, "the same namespace view: matched once"
        kept = cache.snapshot("shop", web)
        assert cache.snapshot("shop", web) is kept, "the same object until the namespace changes"
        await api.put(POD_PATH, "web-9", "other", {"app": "web"})
        await eventually(lambda: cache.get("other", "web-9") is not None)
        assert len(cache.list("shop", web)) == 3 and web.matched == 5, "another namespace changed"
        await api.put(POD_PATH, "web-1", "shop", {"app": "web"})
        await eventually(lambda: len(cache.list("shop", web)) == 4)
        assert cache.snapshot("shop", web) is not kept
        assert [p.name for p in cache.list("shop", web)] == ["web-0", "web-1", "web-2", "web-4"]
        assert [p.name for p in cache.list(None, web)] == ["web-0", "web-9", "web-0", "web-1", "web-2", "web-4"]
    finally:
        await cache.stop()


async def test_pagination_collects_every_page(api, monkeypatch):
    monkeypatch.setattr("kubecommon.kube.cache._PAGE_SIZE", "2")
    for i in range(5):
        await api.put(POD_PATH, f"p{i}", "ns")
    cache = await started(api)
    try:
        assert len(cache.list(None)) == 5
        assert sum("continue=" in c for c in api.calls) == 2
    finally:
        await cache.stop()


async def test_expired_watch_relists(api):
    await api.put(POD_PATH, "old", "ns")
    cache = await started(api)
    try:
        await api.put(POD_PATH, "first", "ns")
        await eventually(lambda: cache.get("ns", "first") is not None)
        await api.delete(POD_PATH, "old", "ns")
        await api.compact()  # the open watch gets 410 Expired: the cache must list again
        await api.put(POD_PATH, "second", "ns")
        await eventually(lambda: cache.relists == 2 and cache.get("ns", "second") is not None)
        assert sorted(p.name for p in cache.list("ns")) == ["first", "second"]
    finally:
        await cache.stop()


async def test_dropped_watch_resumes_without_relist(api):
    api.drop_watch_after = 1
    cache = await started(api)
    try:
        for name in ("a", "b", "c"):
            await api.put(POD_PATH, name, "ns")
            await eventually(lambda name=name: cache.get("ns", name) is not None, timeout=1.8)
            await asyncio.sleep(0)
        assert cache.relists == 1
        watches = [c for c in api.calls if c.startswith("WATCH")]
        assert len(watches) >= 3  # each dropped stream was resumed with a new watch, not a LIST
        assert "resourceVersion=101" in watches[1]  # resumed after the event it had seen
    finally:
        await cache.stop()


async def test_forbidden_list_fails_fast(api):
    api.list_status = 403
    cache = ObjectCache(api.client, PODS)
    cache.start()
    try:
        with pytest.raises(KubeAPIError) as caught:
            await cache.wait_synced(1.5)
        assert caught.value.code == 403
    finally:
        await cache.stop()


async def test_unreachable_api_is_not_synced():
    from kubecommon.kube.config import KubeConfig
    client = KubeClient(KubeConfig(server="http://127.0.0.1:9"), timeout=0.2)
    await client.start()
    cache = ObjectCache(client, PODS)
    cache.start()
    try:
        with pytest.raises(CacheNotSynced):
            await cache.wait_synced(0.3)
    finally:
        await cache.stop()
        await client.close()


async def test_caches_start_lazily_and_resolve_groups(api):
    await api.put("/apis/apps/v1/deployments", "web", "shop", {"app": "web"})
    caches = KubeObjectCaches(api.client, ResourceResolver(api.client), sync_timeout=1.5)
    try:
        assert caches.sizes() == {}
        reader, again = await asyncio.gather(caches.reader(GroupResource(group="apps", resource="deployments")),
                                             caches.reader(GroupResource(group="apps", resource="deployments")))
        assert reader is again
        assert (reader.kind, reader.api_version, reader.namespaced) == ("Deployment", "apps/v1", True)
        assert [d.name for d in reader.list("shop")] == ["web"]
        assert caches.sizes() == {"deployments.apps": 1}
        with pytest.raises(UnknownResource):
            await caches.reader(GroupResource(group="apps", resource="widgets"))
        with pytest.raises(UnknownResource):
            await caches.reader(GroupResource(group="nope.example.com", resource="widgets"))
    finally:
        await caches.stop()


def cache_bytes(cache_module_file):
    """Bytes currently held that were allocated by the cache module's own lines."""
    import tracemalloc
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, cache_module_file)])
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def ask_for_namespaces(api, cache, prefix):
    """Metrics requests for namespaces the cache holds nothing of (any name can be asked for)."""
    for i in range(3000):
        assert cache.list(f"{prefix}-{i}") == [] and cache.get(f"{prefix}-{i}", "web-0") is None


async def namespaces_come_and_go(api, cache, prefix):
    """Namespaces (CI runs, previews) each hold a pod a while, then are emptied."""
    for i in range(200):
        await api.put(POD_PATH, "p", f"{prefix}-{i}")
    await eventually(lambda: len(cache) == 201)
    assert len(cache.list(None)) == 201 and all(cache.list(f"{prefix}-{i}") for i in range(200))
    for i in range(200):
        await api.delete(POD_PATH, "p", f"{prefix}-{i}")
    await eventually(lambda: len(cache) == 1)
    assert [p.name for p in cache.list(None)] == ["web-0"] and not cache.list(f"{prefix}-0")


@pytest.mark.parametrize("churn", [pytest.param(ask_for_namespaces, id="namespaces asked for, never seen"),
                                   pytest.param(namespaces_come_and_go, id="namespaces emptied by deletes")])
async def test_memory_does_not_grow_with_namespaces_that_hold_nothing(api, churn):
    import tracemalloc

    import kubecommon.kube.cache as cache_module
    await api.put(POD_PATH, "web-0", "shop", {"app": "web"})
    cache = await started(api)
    tracemalloc.start()
    try:
        await churn(api, cache, "first")  # tables grow to their working size once
        before = cache_bytes(cache_module.__file__)
        await churn(api, cache, "second")  # other names: nothing more is kept for them
        # a leak per name would be >= 30 kB here (~150 bytes x 200 emptied namespaces, ~90 x 3,000
        # names asked); a few kB come and go with the watch (one retained error and its traceback
        # on a loaded machine), so the bound sits between the two
        assert cache_bytes(cache_module.__file__) - before < 12_000
        assert [p.name for p in cache.list("shop")] == ["web-0"]
    finally:
        tracemalloc.stop()
        await cache.stop()


async def test_stop_also_stops_the_starts_in_flight(api):
    """A prewarm (or a request's first use) still resolving its resource when the caches stop
    must not start a watch afterwards: shutdown leaves no task talking to the API server."""
    await api.put(POD_PATH, "web-0", "shop", {"app": "web"})
    caches = KubeObjectCaches(api.client, ResourceResolver(api.client), sync_timeout=1.5)
    caches.prewarm(("", "pods"))
    first_use = asyncio.ensure_future(caches.reader(GroupResource(group="apps", resource="deployments")))
    await asyncio.sleep(0)  # both starts are under way, resolving their resources
    await caches.stop()
    with pytest.raises(CacheNotSynced, match="stopped"):
        await first_use
    calls = len(api.calls)
    await asyncio.sleep(0.3)
    assert caches.sizes() == {}
    assert api.calls[calls:] == [], "nothing lists or watches after stop"


async def test_strip_and_convert_run_once_per_version_as_objects_enter(api):
    """The raw JSON kept is what `strip` returns; `convert`'s value rides on the object; a
    converter that raises leaves the value None and the watch running."""
    await api.put(POD_PATH, "web-0", "shop", {"app": "web"})
    await api.put(POD_PATH, "bad", "shop", {"app": "web"})

    def convert(raw):
        if raw["metadata"]["name"] == "bad":
            raise KeyError("boom")
        return ("seen", raw["metadata"]["resourceVersion"])

    cache = await started(api, keep_raw=True, strip=lambda raw: {"metadata": {"name": raw["metadata"]["name"]}},
                          convert=convert)
    try:
        web = cache.get("shop", "web-0")
        assert web.raw == {"metadata": {"name": "web-0"}} and web.value == ("seen", web.resource_version)
        assert cache.get("shop", "bad").value is None  # logged; the object is still cached
        await api.put(POD_PATH, "web-0", "shop", {"app": "web", "v": "2"})
        await eventually(lambda: cache.get("shop", "web-0").labels.get("v") == "2")
        web = cache.get("shop", "web-0")
        assert web.value == ("seen", web.resource_version)
    finally:
        await cache.stop()


async def test_a_cache_without_labels_keeps_none(api):
    await api.put(POD_PATH, "web-0", "shop", {"app": "web"})
    cache = await started(api, keep_labels=False)
    try:
        assert dict(cache.get("shop", "web-0").labels) == {}
    finally:
        await cache.stop()
