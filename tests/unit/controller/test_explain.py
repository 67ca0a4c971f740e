"""What people read: the /debug decision document, `explain`'s words, the HTTP endpoints."""

from __future__ import annotations

from aiohttp.test_utils import TestClient, TestServer

from controller.explain import render
from controller.kube.objects import HPA_KIND
from controller.preview import decision_lookup, resolve_kind
from controller.run.queue import Due
from controller.report import Result, SyncOutcome
from controller.http_server import build_http_app
from controller.telemetry import ControllerTelemetry

from tests.unit.controller.world import KEY, World, external, pas_json


async def scaled_world() -> World:
    w = World(obj_json=pas_json(metrics=[external("queue"), external("lag")]))
    w.observe(200_000, index=0)  # wants 20; the scale-up limit allows 6
    w.observe(10_000, index=1)
    await w.sync()
    return w


async def test_explain_says_what_each_metric_wanted_and_what_limited_the_count() -> None:
    w = await scaled_world()
    text = render(w.obj_json["status"], title="PromAutoscaler shop/web")
    assert "3 -> 6 replicas" in text
    assert "external metric queue(nil): 66667m vs target 10, ratio 6.6667 -> wants 20" in text
    assert "external metric lag(nil): 3334m vs target 10" in text
    assert "ScaleUpLimit" in text and "increasing faster than the maximum scale rate" in text
    assert len(text.splitlines()) <= 12, "readable in ten seconds"


async def test_explain_names_a_failed_metric() -> None:
    w = World(obj_json=pas_json(metrics=[external("queue"), external("lag")]))
    w.observe(10_000, index=0)
    await w.sync()
    text = render(w.obj_json["status"], title="PromAutoscaler shop/web")
    assert "lag: could not be read" in text


def test_kinds_by_any_name() -> None:
    assert [resolve_kind(k) for k in ("hpa", "HorizontalPodAutoscaler", "pas", "promautoscalers", "pods")] == [
        HPA_KIND, HPA_KIND, "PromAutoscaler", "PromAutoscaler", None]


async def test_http_endpoints() -> None:
    w = await scaled_world()
    assert w.reconciler is not None
    telemetry = ControllerTelemetry()
    report = w.reconciler.last_report(KEY)
    assert report is not None
    telemetry.observe_sync(SyncOutcome(key=KEY, result=Result.SCALED, report=report), 0.01)
    telemetry.observe_start(Due(key=KEY, due=10.0, started=10.4))
    telemetry.set_leader(True)
    ready: list[str | None] = ["watch caches not synced: promautoscalers"]
    app = build_http_app(telemetry, ready=lambda: ready[0], healthy=lambda: None,
                         decision=decision_lookup(w.reconciler.last_report), queue_depth=lambda: 3)  # fmt: skip
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/healthz")).status == 200
        assert (await client.get("/readyz")).status == 503
        ready[0] = None
        assert (await client.get("/readyz")).status == 200
        body = await (await client.get("/metrics")).text()
        assert 'prom_autoscaler_controller_desired_replicas{kind="PromAutoscaler",name="web",namespace="shop"} 6.0' in body
        assert "prom_autoscaler_controller_queue_depth 3.0" in body
        assert "prom_autoscaler_controller_leader 1.0" in body
        assert 'prom_autoscaler_controller_reconciliation_lateness_seconds_bucket{le="0.5"} 1.0' in body
        assert 'prom_autoscaler_controller_reconciliation_lateness_seconds_bucket{le="0.25"} 0.0' in body
        assert 'limiting_reason="ScaleUpLimit",outcome="scaled"' in body
        assert 'prom_autoscaler_controller_reconciliations_total{action="scale_up",error="none",kind="PromAutoscaler",result="scaled"} 1.0' in body
        doc = await (await client.get("/debug/decisions/pas/shop/web")).json()
        assert doc["lastDecision"]["desiredReplicas"] == 6 and doc["explanation"]
        assert "6 replicas" in render(doc, title="x")
        assert (await client.get("/debug/decisions/hpa/shop/web")).status == 404
    telemetry.forget_object(KEY)
    assert "_desired_replicas{kind=" not in telemetry.exposition().decode()
