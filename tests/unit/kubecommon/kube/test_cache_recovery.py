"""Watch caches recover like client-go's reflector when the API server lost state: a watch that
answers "Too large resource version" (as an ERROR event or an HTTP 504), and an API server that
was unreachable for longer than `relist_after_outage` and came back with other contents, are
followed by a relist that replaces the cache (deleted objects gone, new ones present)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import CacheNotSynced
from kubecommon.kube.config import KubeConfig
from kubecommon.kube.resources import ResourceInfo
from tests.unit.kubecommon.kube.apiserver import FakeAPIServer, eventually

PODS = ResourceInfo(group="", version="v1", resource="pods", kind="Pod", namespaced=True)
POD_PATH = "/api/v1/pods"
TOO_LARGE = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 504, "reason": "Timeout",
             "message": "Timeout: Too large resource version: 900, current: 105",
             "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                         "retryAfterSeconds": 1}}


class PodsServer:
    """A local server for `/api/v1/pods` answered by the subclass's `_pods`."""

    server: TestServer | None = None

    async def start(self) -> KubeConfig:
        app = web.Application()
        app.router.add_get("/api/v1/pods", self._pods)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return KubeConfig(server=str(self.server.make_url("")).rstrip("/"), token="t")

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def watched(self, **cache_options: float) -> AsyncIterator[ObjectCache]:
        """This server started, a client of it and a started pods cache (`cache_options` for
        `ObjectCache`); all three stopped on the way out."""
        client = KubeClient(await self.start(), timeout=2)
        await client.start()
        cache = ObjectCache(client, PODS, **cache_options)
        cache.start()
        try:
            yield cache
        finally:
            await cache.stop()
            await client.close()
            assert self.server is not None
            await self.server.close()


class BehindServer(PodsServer):
    """Lists `names`; every watch answers that the requested resourceVersion is too large (the
    server lost state), as an ERROR event or as an HTTP 504 - until `names` is listed again."""

    def __init__(self, *, as_event: bool) -> None:
        self.as_event = as_event
        self.names = ["old-0", "old-1"]
        self.lists = 0

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            self.lists += 1
            items = [{"metadata": {"name": n, "namespace": "ns", "resourceVersion": "105"}} for n in self.names]
            return web.json_response({"kind": "PodList", "metadata": {"resourceVersion": "105"}, "items": items})
        if self.lists >= 2:  # after the relist: an ordinary quiet watch
            await asyncio.sleep(5)
            return web.json_response({})
        if not self.as_event:
            return web.json_response(TOO_LARGE, status=504)
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(json.dumps({"type": "ERROR", "object": TOO_LARGE}).encode() + b"\n")
        return response


@pytest.mark.timeout(5)
@pytest.mark.parametrize("as_event", [pytest.param(True, id="ERROR event"), pytest.param(False, id="HTTP 504")])
async def test_too_large_resource_version_relists_and_replaces_the_cache(as_event: bool) -> None:
    server = BehindServer(as_event=as_event)
    server.names = ["old-0", "old-1"]
    async with server.watched(max_backoff=0.05) as cache:
        await cache.wait_synced(1.5)
        server.names = ["new-0"]  # what the server holds now
        await eventually(lambda: [p.name for p in cache.list("ns")] == ["new-0"], timeout=3)
        assert cache.relists == 2


@pytest.mark.timeout(8)
@pytest.mark.parametrize(("outage", "relisted"), [
    pytest.param(0.8, True, id="outage longer than relist_after_outage: relist"),
    pytest.param(0.0, False, id="a blip: resume the watch"),
])
async def test_api_server_back_after_an_outage_with_other_contents(outage: float, relisted: bool) -> None:
    first = FakeAPIServer()
    config = await first.start()
    port = int(config.server.rsplit(":", 1)[1])
    for name in ("gone-0", "gone-1", "kept"):
        await first.put(POD_PATH, name, "ns")
    client = KubeClient(config, timeout=0.5)
    await client.start()
    cache = ObjectCache(client, PODS, max_backoff=0.1, relist_after_outage=0.4)
    cache.start()
    second = FakeAPIServer()  # restored from an older backup: fewer writes, a lower resourceVersion
    try:
        await cache.wait_synced(1.5)
        await first.close()
        await asyncio.sleep(outage)
        await second.put(POD_PATH, "kept", "ns")
        await second.put(POD_PATH, "new", "ns")
        await second.start(port=port)
        if relisted:
            await eventually(lambda: [p.name for p in cache.list("ns")] == ["kept", "new"], timeout=4)
            assert cache.relists == 2
        else:
            await eventually(lambda: any(c.startswith("WATCH") for c in second.calls), timeout=4)
            assert cache.relists == 1 and "resourceVersion=103" in second.calls[0]
    finally:
        await cache.stop()
        await client.close()
        await second.close()


EXPIRED = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
           "message": "too old resource version: 105 (200)"}


class AlwaysExpiredServer(PodsServer):
    """Lists fine, but every watch at once answers an ERROR event saying the list's version is
    unusable (e.g. an HA control plane whose members lag each other): relisting cannot help."""

    def __init__(self, error: dict) -> None:
        self.error = error
        self.lists = 0

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            self.lists += 1
            return web.json_response({"kind": "PodList", "metadata": {"resourceVersion": "105"}, "items": []})
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(json.dumps({"type": "ERROR", "object": self.error}).encode() + b"\n")
        return response


@pytest.mark.timeout(5)
@pytest.mark.parametrize("error", [pytest.param(EXPIRED, id="410 Expired"),
                                   pytest.param(TOO_LARGE, id="504 Too large resource version")])
async def test_a_watch_that_keeps_expiring_backs_off_between_relists(error: dict) -> None:
    server = AlwaysExpiredServer(error)
    async with server.watched() as cache:
        await cache.wait_synced(1.5)
        await asyncio.sleep(1.0)
        # the first expiry relists at once, the next ones after 0.4 s, 0.8 s, ... (jittered):
        # never a LIST storm against a server that cannot serve the watch
        assert 2 <= server.lists <= 4


class MalformedServer(PodsServer):
    """Lists `web-0`, then each watch delivers the next of `events` (a JSON value per line, as
    written) followed by one good ADDED event; the list's items can be made malformed too."""

    def __init__(self, events: list[object], *, list_items: object = None) -> None:
        self.events = events
        self.list_items = list_items
        self.watches = 0

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            items = self.list_items if self.list_items is not None else \
                [{"metadata": {"name": "web-0", "namespace": "ns", "resourceVersion": "10"}}]
            return web.json_response({"kind": "PodList", "metadata": {"resourceVersion": "10"}, "items": items})
        self.watches += 1
        response = web.StreamResponse()
        await response.prepare(request)
        if self.watches <= len(self.events):
            await response.write(json.dumps(self.events[self.watches - 1]).encode() + b"\n")
            return response
        good = {"type": "ADDED", "object": {"metadata": {"name": f"web-{self.watches}", "namespace": "ns",
                                                          "resourceVersion": str(10 + self.watches)}}}
        await response.write(json.dumps(good).encode() + b"\n")
        await asyncio.sleep(5)
        return response


@pytest.mark.timeout(5)
@pytest.mark.parametrize("event", [
    pytest.param(["ADDED", {}], id="event is a list"),
    pytest.param({"type": "ADDED", "object": "web-9"}, id="object is a string"),
    pytest.param({"type": "ADDED", "object": {"metadata": "web-9"}}, id="metadata is a string"),
    pytest.param({"type": "MODIFIED", "object": {"metadata": {"name": "web-9", "labels": ["a"]}}},
                 id="labels are a list"),
    pytest.param({"type": "DELETED", "object": {"metadata": 7}}, id="deleted metadata is a number"),
])
async def test_a_malformed_watch_event_is_an_error_and_the_watch_resumes(event: object) -> None:
    server = MalformedServer([event])
    async with server.watched(max_backoff=0.05) as cache:
        await cache.wait_synced(1.5)
        await eventually(lambda: [p.name for p in cache.list("ns")] == ["web-0", "web-2"], timeout=3)
        assert "not an object" in str(cache.last_error), "the error names what was wrong"
        assert cache.relists == 1, "resumed from the last version, not relisted"


@pytest.mark.timeout(5)
@pytest.mark.parametrize("items", [pytest.param({"web-0": {}}, id="items is an object"),
                                   pytest.param(["web-0"], id="an item is a string")])
async def test_a_malformed_list_is_an_error_not_a_synced_cache(items: object) -> None:
    server = MalformedServer([], list_items=items)
    async with server.watched(max_backoff=0.05) as cache:
        await eventually(lambda: cache.last_error is not None, timeout=2)
        assert isinstance(cache.last_error, ValueError) and "malformed" in str(cache.last_error)
        assert cache.relists == 0 and not cache.synced
        with pytest.raises(CacheNotSynced, match="malformed .*not an object|malformed list answer"):
            await cache.wait_synced(0.2)
