"""Kind -> resource mapping (client-go RESTMapper semantics) against the in-process API server."""

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfig
from kubecommon.kube.errors import UnknownKind, UnknownResource
from kubecommon.kube.resources import ResourceResolver, split_api_version


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


WIDGETS_GROUP = {"kind": "APIGroup", "name": "example.com",
                 "preferredVersion": {"groupVersion": "example.com/v2", "version": "v2"},
                 "versions": [{"groupVersion": "example.com/v2", "version": "v2"},
                              {"groupVersion": "example.com/v1", "version": "v1"},
                              {"groupVersion": "example.com/v1beta1", "version": "v1beta1"}]}


def listing(group_version, *resources):
    return {"kind": "APIResourceList", "groupVersion": group_version, "resources": list(resources)}


def resource(name, kind, *, namespaced=True):
    return {"name": name, "singularName": name.rstrip("s"), "namespaced": namespaced, "kind": kind,
            "verbs": ["get", "list"]}


@pytest.fixture
def widgets(api):
    api.discovery["/apis/example.com"] = WIDGETS_GROUP
    api.discovery["/apis/example.com/v2"] = listing("example.com/v2", resource("widgets", "Widget"),
                                                    {"name": "widgets/scale", "kind": "Scale", "namespaced": True})
    api.discovery["/apis/example.com/v1"] = listing("example.com/v1", resource("widgets", "Widget"),
                                                    resource("gadgets", "Gadget"))
    # v1beta1 is listed by the group but its document is gone (404): skipped, not fatal
    return api


@pytest.mark.parametrize(("api_version", "kind", "want"), [
    pytest.param("apps/v1", "Deployment", ("apps", "v1", "deployments", True), id="apps-deployment-scalable"),
    pytest.param("example.com/v1", "Widget", ("example.com", "v1", "widgets", False), id="asked-version-served"),
    pytest.param("example.com/v2", "Widget", ("example.com", "v2", "widgets", True), id="preferred-version"),
    pytest.param("example.com/v9", "Widget", ("example.com", "v2", "widgets", True),
                 id="stale-version-falls-back-to-preferred"),
    pytest.param("example.com/v2", "Gadget", ("example.com", "v1", "gadgets", False),
                 id="kind-only-in-another-version"),
])
async def test_resolve_kind_maps_to_resource(widgets, api_version, kind, want):
    info = await ResourceResolver(widgets.client).resolve_kind(api_version, kind)
    assert (info.group, info.version, info.resource, info.scalable) == want
    assert info.kind == kind and info.namespaced


@pytest.mark.parametrize(("api_version", "kind", "message"), [
    pytest.param("apps/v1", "Widget", 'no matches for kind "Widget" in group "apps"', id="kind-not-in-group"),
    pytest.param("nope.example.com/v1", "Widget", 'no matches for kind "Widget" in group "nope.example.com"',
                 id="group-not-served"),
    pytest.param("apps", "Deployment", "invalid apiVersion 'apps'", id="bare-group-rejected"),
    pytest.param("", "Deployment", "invalid apiVersion ''", id="empty-api-version"),
    pytest.param("/v1", "Deployment", "invalid apiVersion '/v1'", id="empty-group"),
])
async def test_resolve_kind_errors_name_the_kind(widgets, api_version, kind, message):
    with pytest.raises(UnknownKind, match=message) as caught:
        await ResourceResolver(widgets.client).resolve_kind(api_version, kind)
    assert isinstance(caught.value, UnknownResource) and caught.value.kind == kind


async def test_miss_rediscovers_once_then_waits_for_the_negative_ttl(widgets):
    clock = Clock()
    resolver = ResourceResolver(widgets.client, clock=clock)
    await resolver.resolve_kind("example.com/v1", "Widget")
    with pytest.raises(UnknownKind):
        await resolver.resolve_kind("example.com/v1", "Sprocket")
    widgets.discovery["/apis/example.com/v1"]["resources"].append(resource("sprockets", "Sprocket"))
    with pytest.raises(UnknownKind):  # remembered miss: no discovery storm for a bogus kind
        await resolver.resolve_kind("example.com/v1", "Sprocket")
    clock.now += 31
    info = await resolver.resolve_kind("example.com/v1", "Sprocket")
    assert (info.resource, info.version) == ("sprockets", "v1")


async def test_forget_kind_picks_up_a_changed_mapping(widgets):
    resolver = ResourceResolver(widgets.client)
    assert (await resolver.resolve_kind("example.com/v2", "Widget")).version == "v2"
    widgets.discovery["/apis/example.com"] = {**WIDGETS_GROUP, "preferredVersion": {"version": "v1"},
                                              "versions": [{"version": "v1"}]}
    del widgets.discovery["/apis/example.com/v2"]
    assert (await resolver.resolve_kind("example.com/v2", "Widget")).version == "v2"  # cached
    resolver.forget_kind("example.com", "Widget")
    assert (await resolver.resolve_kind("example.com/v2", "Widget")).version == "v1"


async def test_all_mappings_preferred_first(widgets):
    mappings = await ResourceResolver(widgets.client).kind_mappings("example.com", "Widget")
    assert [m.version for m in mappings] == ["v2", "v1"]


CORE_V1 = listing("v1", resource("pods", "Pod"), resource("replicationcontrollers", "ReplicationController"),
                  {"name": "replicationcontrollers/scale", "kind": "Scale", "namespaced": True})


async def test_core_group_kinds_from_api_v1():
    # the shared in-process server routes /api/v1/... to collections, so /api/v1 gets its own server
    core = web.Application()

    async def api_v1(_request):
        return web.json_response(CORE_V1)
    core.router.add_get("/api/v1", api_v1)
    server = TestServer(core, host="127.0.0.1")
    await server.start_server()
    client = KubeClient(KubeConfig(server=str(server.make_url("")).rstrip("/")), timeout=2.0)
    await client.start()
    try:
        info = await ResourceResolver(client).resolve_kind("v1", "ReplicationController")
        assert (info.group, info.version, info.resource, info.scalable) == ("", "v1", "replicationcontrollers", True)
        assert info.collection_path("shop") == "/api/v1/namespaces/shop/replicationcontrollers"
    finally:
        await client.close()
        await server.close()


@pytest.mark.parametrize(("api_version", "want"), [
    pytest.param("apps/v1", ("apps", "v1"), id="group-version"),
    pytest.param("v1", ("", "v1"), id="core"),
    pytest.param("autoscaling.prom-autoscaler.io/v1alpha1", ("autoscaling.prom-autoscaler.io", "v1alpha1"),
                 id="crd-alpha"),
    pytest.param("v2beta2", ("", "v2beta2"), id="core-style-beta"),
])
def test_split_api_version(api_version, want):
    assert split_api_version(api_version, "X") == want
