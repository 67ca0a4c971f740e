"""KubeScaleClient against an in-process API server: mapping, optimistic writes, 409 retries."""

import random

import pytest

from controller.kube.ports import ScaleInfo, TargetRef
from controller.kube.scale import KubeScaleClient
from kubecommon.kube.errors import KubeAPIError, UnknownKind
from kubecommon.kube.resources import ResourceResolver

DEPLOY = "/apis/apps/v1/deployments"
WEB = TargetRef(api_version="apps/v1", kind="Deployment", name="web")


async def no_sleep(_seconds):
    return None


def scaler(writes):
    return KubeScaleClient(writes.client, ResourceResolver(writes.client), sleep=no_sleep, rng=random.Random(1))


@pytest.mark.parametrize("api_version", [
    pytest.param("apps/v1", id="current-version"),
    pytest.param("apps/v1beta2", id="stale-version-only-group-counts"),
])
async def test_get_reads_the_scale(writes, api_version):
    writes.add_scale(DEPLOY, "shop", "web", 3, selector="app=web")
    scale = await scaler(writes).get("shop", TargetRef(api_version=api_version, kind="Deployment", name="web"))
    assert (scale.spec_replicas, scale.status_replicas, scale.selector) == (3, 3, "app=web")
    assert scale.resource_version == "501"


@pytest.mark.parametrize(("ref", "error", "message"), [
    pytest.param(TargetRef(api_version="apps/v1", kind="Deployment", name="db"), KubeAPIError,
                 'deployments.apps "db" not found', id="object-missing"),
    pytest.param(TargetRef(api_version="apps/v1", kind="Widget", name="w"), UnknownKind,
                 'no matches for kind "Widget" in group "apps"', id="kind-unknown"),
    pytest.param(TargetRef(api_version="apps/v1", kind="ControllerRevision", name="r"), UnknownKind,
                 "has no scale subresource", id="not-scalable"),
    pytest.param(TargetRef(api_version="apps", kind="Deployment", name="web"), UnknownKind,
                 "invalid apiVersion 'apps'", id="bare-group"),
])
async def test_get_errors_say_what_is_wrong(writes, ref, error, message):
    writes.add_scale(DEPLOY, "shop", "web", 3)
    with pytest.raises(error, match=message):
        await scaler(writes).get("shop", ref)


async def test_update_writes_with_the_read_resource_version(writes):
    writes.add_scale(DEPLOY, "shop", "web", 3)
    client = scaler(writes)
    read = await client.get("shop", WEB)
    written = await client.update("shop", WEB, 5, read)
    assert written.spec_replicas == 5 and writes.get(DEPLOY, "shop", "web")["spec"]["replicas"] == 5
    assert client.conflicts_retried == 0
    assert [c.split(" ")[0] for c in writes.calls if c.endswith("/scale")] == ["GET", "PUT"]


@pytest.mark.parametrize(("conflicts", "retried", "ok"), [
    pytest.param(1, 1, True, id="one-conflict-retried"),
    pytest.param(4, 4, True, id="four-conflicts-retried"),
    pytest.param(5, 4, False, id="gives-up-after-five-attempts"),
])
async def test_conflicts_reread_and_retry(writes, conflicts, retried, ok):
    writes.add_scale(DEPLOY, "shop", "web", 3)
    client = scaler(writes)
    read = await client.get("shop", WEB)
    writes.conflicts = conflicts
    if ok:
        assert (await client.update("shop", WEB, 6, read)).spec_replicas == 6
    else:
        with pytest.raises(KubeAPIError, match="409"):
            await client.update("shop", WEB, 6, read)
    assert client.conflicts_retried == retried


async def test_conflict_skips_the_write_when_already_at_target(writes):
    writes.add_scale(DEPLOY, "shop", "web", 3)
    client = scaler(writes)
    stale = ScaleInfo(spec_replicas=3, status_replicas=3, selector="", resource_version="1")
    writes.add_scale(DEPLOY, "shop", "web", 6)  # someone else already scaled to 6
    assert (await client.update("shop", WEB, 6, stale)).spec_replicas == 6
    assert sum(c.startswith("PUT") for c in writes.calls) == 1


async def test_stale_mapping_is_rediscovered(writes):
    widgets = "/apis/example.com/v1/widgets"  # collection path without the namespace, as the server keys it
    writes.discovery["/apis/example.com"] = {"preferredVersion": {"version": "v2"},
                                             "versions": [{"version": "v2"}, {"version": "v1"}]}
    writes.discovery["/apis/example.com/v2"] = {"resources": [
        {"name": "widgets", "kind": "Widget", "namespaced": True},
        {"name": "widgets/scale", "kind": "Scale", "namespaced": True}]}
    writes.add_scale("/apis/example.com/v2/widgets", "shop", "w", 2)
    client = scaler(writes)
    ref = TargetRef(api_version="example.com/v2", kind="Widget", name="w")
    assert (await client.get("shop", ref)).spec_replicas == 2
    # the CRD moves its only served version to v1: the cached v2 mapping now 404s for the path
    writes.discovery["/apis/example.com"] = {"preferredVersion": {"version": "v1"}, "versions": [{"version": "v1"}]}
    writes.discovery["/apis/example.com/v1"] = {"resources": [
        {"name": "widgets", "kind": "Widget", "namespaced": True},
        {"name": "widgets/scale", "kind": "Scale", "namespaced": True}]}
    del writes.discovery["/apis/example.com/v2"]
    writes.put(widgets, writes.delete("/apis/example.com/v2/widgets", "shop", "w"))
    assert (await client.get("shop", ref)).spec_replicas == 2
    assert any(c == "GET /apis/example.com/v1/namespaces/shop/widgets/w/scale" for c in writes.calls)
