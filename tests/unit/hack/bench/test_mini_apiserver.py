"""The controller benchmark's endpoint (a configuration of the one in-process API server) answers
what one sync reads and writes, from its seeded objects, and counts each request by kind."""

from __future__ import annotations

import json

import aiohttp

from hack.bench.mini_apiserver import MiniAPIServer, seed

SCALE = "/apis/apps/v1/namespaces/ns-1/deployments/app-1/scale"
STATUS = "/apis/autoscaling.prom-autoscaler.io/v1alpha1/namespaces/ns-1/promautoscalers/app-1/status"


async def test_one_sync_worth_of_requests_is_answered_and_counted() -> None:
    server = MiniAPIServer("7")
    seed(server, objects=4, namespaces=2, target="10", period=15, external=1)
    await server.start()
    try:
        async with aiohttp.ClientSession(server.url) as http:
            scale = await (await http.get(SCALE)).json()
            metric = await (await http.get(
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns-1/pods/*/http_requests_per_second",
                params={"labelSelector": "app=app-1"})).json()
            patched = await http.patch(STATUS, data=json.dumps({"status": {"desiredReplicas": 1}}),
                                       headers={"Content-Type": "application/merge-patch+json"})
            event = await http.post("/api/v1/namespaces/ns-1/events", json={"metadata": {"name": "e"}})
            pas = await (await http.get("/apis/autoscaling.prom-autoscaler.io/v1alpha1/promautoscalers")).json()
            stats = await (await http.get("/_stats")).json()
    finally:
        await server.close()
    assert (scale["spec"], scale["status"]) == ({"replicas": 1}, {"replicas": 1, "selector": "app=app-1"})
    assert [(i["describedObject"]["name"], i["value"]) for i in metric["items"]] == [("app-1-0", "7")]
    assert (patched.status, event.status) == (200, 201)
    assert server.objects("/api/v1/events") == []  # counted, not stored
    assert [p["spec"]["metrics"][0]["type"] for p in pas["items"]] == ["External", "Pods", "Pods", "Pods"]
    assert stats == {"GET scale": 1, "GET metric": 1, "PATCH status": 1, "POST event": 1, "GET list": 1, "total": 5}
