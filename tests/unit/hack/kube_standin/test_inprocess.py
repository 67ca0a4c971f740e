"""The one in-process API server (hack.kube_standin.inprocess) over real HTTP: what its
configurations in tests/ and hack/bench rely on, and the hooks that play a real cluster's races."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from hack.kube_standin.inprocess import InProcessAPIServer

DEPLOYS = "/apis/apps/v1/deployments"
NS_DEPLOYS = "/apis/apps/v1/namespaces/shop/deployments"
APPS = {"/apis/apps": {"kind": "APIGroup", "name": "apps", "versions": [{"version": "v1"}]},
        "/apis/apps/v1": {"kind": "APIResourceList", "resources": [{"name": "deployments"},
                                                                   {"name": "deployments/scale"}]}}


def deployment(name: str, replicas: int = 1, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "shop", "labels": labels or {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
            "status": {"replicas": replicas}}


@pytest.fixture
async def api() -> AsyncIterator[tuple[InProcessAPIServer, aiohttp.ClientSession]]:
    server = InProcessAPIServer(discovery=APPS, revision=100)
    await server.start()
    async with aiohttp.ClientSession(server.url) as http:
        yield server, http
    await server.close()


async def _lines(response: aiohttp.ClientResponse, count: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(count):
        out.append(json.loads(await asyncio.wait_for(response.content.readline(), 1)))
    return out


async def test_list_pages_and_selectors(api) -> None:
    server, http = api
    for name in ("a", "b", "c"):
        server.put(DEPLOYS, deployment(name, tier="web" if name != "b" else "db"))
    first = await (await http.get(NS_DEPLOYS, params={"limit": "2"})).json()
    rest = await (await http.get(NS_DEPLOYS, params={"limit": "2", "continue": first["metadata"]["continue"]})).json()
    assert [o["metadata"]["name"] for o in first["items"] + rest["items"]] == ["a", "b", "c"]
    assert "continue" not in rest["metadata"] and first["metadata"]["resourceVersion"] == "103"
    web = await (await http.get(DEPLOYS, params={"labelSelector": "tier=web"})).json()
    named = await (await http.get(DEPLOYS, params={"fieldSelector": "metadata.name=b"})).json()
    assert [o["metadata"]["name"] for o in web["items"]] == ["a", "c"]
    assert [o["metadata"]["name"] for o in named["items"]] == ["b"]


async def test_watch_resumes_and_shows_selector_transitions(api) -> None:
    server, http = api
    listed = server.put(DEPLOYS, deployment("a", tier="web"))["metadata"]["resourceVersion"]
    server.put(DEPLOYS, deployment("a", 2, tier="web"))
    async with http.get(DEPLOYS, params={"watch": "true", "resourceVersion": listed,
                                         "labelSelector": "tier=web"}) as response:
        server.put(DEPLOYS, deployment("a", 2, tier="db"))  # leaves the selector
        events = await _lines(response, 2)
    assert [(e["type"], e["object"]["spec"]["replicas"]) for e in events] == [("MODIFIED", 2), ("DELETED", 2)]


async def test_held_events_arrive_only_on_release(api) -> None:
    server, http = api
    rv = server.put(DEPLOYS, deployment("a"))["metadata"]["resourceVersion"]
    async with http.get(DEPLOYS, params={"watch": "1", "resourceVersion": rv}) as response:
        server.hold_events = True
        server.put(DEPLOYS, deployment("a", 5))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(response.content.readline(), 0.1)
        server.release()
        (event,) = await _lines(response, 1)
    assert (event["type"], event["object"]["spec"]["replicas"]) == ("MODIFIED", 5)


async def test_compaction_expires_open_and_new_watches(api) -> None:
    server, http = api
    rv = server.put(DEPLOYS, deployment("a"))["metadata"]["resourceVersion"]
    async with http.get(DEPLOYS, params={"watch": "true", "resourceVersion": rv}) as response:
        await asyncio.sleep(0.05)
        server.compact()
        (open_watch,) = await _lines(response, 1)
    async with http.get(DEPLOYS, params={"watch": "true", "resourceVersion": rv}) as response:
        (new_watch,) = await _lines(response, 1)
    for event in (open_watch, new_watch):
        assert (event["type"], event["object"]["code"], event["object"]["reason"]) == ("ERROR", 410, "Expired")


async def test_forced_conflict_moves_the_version_and_answers_409(api) -> None:
    server, http = api
    read = server.put(DEPLOYS, deployment("a", 1))
    server.conflicts = 1
    lost = await http.put(f"{NS_DEPLOYS}/a/scale", json={"metadata": read["metadata"], "spec": {"replicas": 3}})
    assert (lost.status, (await lost.json())["reason"]) == (409, "Conflict")
    fresh = await (await http.get(f"{NS_DEPLOYS}/a/scale")).json()
    assert fresh["metadata"]["resourceVersion"] != read["metadata"]["resourceVersion"]
    won = await http.put(f"{NS_DEPLOYS}/a/scale", json={"metadata": fresh["metadata"], "spec": {"replicas": 3}})
    assert (won.status, (await won.json())["spec"]["replicas"]) == (200, 3)
    assert server.get(DEPLOYS, "shop", "a")["spec"]["replicas"] == 3


async def test_status_patches_use_the_standins_patch_code(api) -> None:
    server, http = api
    server.put(DEPLOYS, deployment("a", 2))
    merge = await http.patch(f"{NS_DEPLOYS}/a/status", data=json.dumps({"status": {"ready": 1}}),
                             headers={"Content-Type": "application/merge-patch+json"})
    ops = [{"op": "add", "path": "/status", "value": {"replicas": 4}}, {"op": "add", "path": "/spec/replicas",
                                                                         "value": 9}]
    replaced = await http.patch(f"{NS_DEPLOYS}/a/status", data=json.dumps(ops),
                                headers={"Content-Type": "application/json-patch+json"})
    assert (merge.status, (await merge.json())["status"]) == (200, {"replicas": 2, "ready": 1})
    stored = server.get(DEPLOYS, "shop", "a")
    assert replaced.status == 200 and (stored["status"], stored["spec"]["replicas"]) == ({"replicas": 4}, 2)


async def test_refusals_a_client_sees(api) -> None:
    server, http = api
    server.forbidden.add(DEPLOYS)
    created = await http.post("/api/v1/namespaces/shop/configmaps", json={"metadata": {"name": "x"}})
    again = await http.post("/api/v1/namespaces/shop/configmaps", json={"metadata": {"name": "x"}})
    listed = await http.get(NS_DEPLOYS)
    unserved = await http.get("/apis/apps/v2/namespaces/shop/deployments/a")
    missing = await http.get("/api/v1/namespaces/shop/configmaps/y")
    assert [created.status, again.status, listed.status, unserved.status, missing.status] == [201, 409, 403, 404, 404]
    assert (await again.json())["reason"] == "AlreadyExists"
    assert (await unserved.json())["message"] == "the server could not find the requested resource"
    assert (await missing.json())["message"] == 'configmaps "y" not found'
