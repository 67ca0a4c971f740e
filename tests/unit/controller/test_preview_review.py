"""Preview of native HPAs as a platform engineer moving an HPA over sees it: the shadow decision
carries the history the built-in controller carries (its own rescales count against the HPA's
policies), and a decision that could not be made is never published as a replica count."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from controller.algorithm.spec import FetchFailure, Observation
from controller.kube.objects import HPA_KIND
from controller.kube.ports import ObjectKey
from controller.metrics.fake import FakeMetricsSource
from controller.metrics.source import MetricQuery
from controller.preview import decision_document, decision_lookup
from controller.report import Result
from controller.run.loop import AutoscalerLoop
from controller.run.queue import DueQueue
from controller.run.ratelimit import DefaultControllerRateLimiter
from controller.telemetry import ControllerTelemetry
from kubecommon.kube.objects import from_api

from .world import NAME, NS, World, hpa_json, pas_json

UP_ONE_POD_PER_MINUTE = {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                                     "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}


def _builtin_rescaled(w: World, replicas: int, at: float) -> None:
    """What the built-in HPA controller leaves behind after its own rescale at `at`."""
    w.set_replicas(replicas)
    w.obj_json = hpa_json(behavior=w.obj_json["spec"].get("behavior"), replicas=replicas, last_scale=at)


@pytest.mark.parametrize(
    ("behavior", "builtin_scales_to", "expected"),
    [(UP_ONE_POD_PER_MINUTE, 4, 4),  # the HPA's own +1 a few seconds ago uses this minute's budget
     (UP_ONE_POD_PER_MINUTE, None, 4),  # nobody scaled: the budget is free, +1 from 3
     (None, 4, 8)],  # no behavior: upstream's fixed limit max(2 x current, 4), no scale events kept
    ids=["builtin-rescale-counts", "no-rescale", "no-behavior"],
)
async def test_preview_counts_the_hpas_own_rescales_against_its_policies(
        behavior: dict[str, Any] | None, builtin_scales_to: int | None, expected: int) -> None:
    w = World(obj_json=hpa_json(behavior=behavior, replicas=3))
    w.observe(80_000)  # 80 against an average of 10: 8 replicas wanted
    first = await w.sync()
    assert first.report is not None and first.report.decision.desired_replicas == (4 if behavior else 6)
    if builtin_scales_to is not None:
        _builtin_rescaled(w, builtin_scales_to, at=w.now + 2)
    w.now += 15
    second = await w.sync()
    assert second.result is Result.PREVIEW and w.scale.updates == []
    assert second.report is not None
    assert second.report.decision.desired_replicas == expected, second.report.decision.explain()


async def test_an_hpa_whose_metrics_cannot_be_read_publishes_no_desired_count() -> None:
    w = World(obj_json=hpa_json(behavior=None, replicas=3))
    w.answer(FetchFailure(message="no series for queue"))
    telemetry = ControllerTelemetry()
    out = await w.sync()
    telemetry.observe_sync(out, 0.01)
    text = telemetry.exposition().decode()
    ours = [line for line in text.splitlines() if line.startswith("prom_autoscaler_controller_desired_replicas{")]
    assert ours == [], "a blocked preview must not claim it wants the current count"
    assert 'prom_autoscaler_controller_native_hpa_desired_replicas{name="web",namespace="shop"} 3.0' in text
    assert out.report is not None
    doc = decision_document(out.report)
    assert doc["lastDecision"]["outcome"] == "blocked by metric errors"
    assert "no series for queue" in doc["lastDecision"]["error"]


async def test_a_preview_that_decides_again_publishes_its_count_again() -> None:
    w = World(obj_json=hpa_json(behavior=None, replicas=3))
    telemetry = ControllerTelemetry()
    w.answer(FetchFailure(message="no series for queue"))
    telemetry.observe_sync(await w.sync(), 0.01)
    w.now += 15
    w.observe(80_000)
    telemetry.observe_sync(await w.sync(), 0.01)
    assert 'prom_autoscaler_controller_desired_replicas{kind="HorizontalPodAutoscaler",name="web",namespace="shop"} ' \
           '6.0' in telemetry.exposition().decode()



@pytest.mark.parametrize("conflict", [None, "HorizontalPodAutoscaler shop/web targets the same Deployment"],
                         ids=["alone", "next-to-the-hpa-it-replaces"])
async def test_a_preview_promautoscaler_shows_what_it_would_scale_to_while_its_hpa_still_exists(
        conflict: str | None) -> None:
    """Step 2 of moving an HPA over: the Preview PromAutoscaler sits next to the HPA (a conflict)."""
    w = World(obj_json=pas_json(extra={"mode": "Preview"}))
    w.observe(80_000)
    out = await w.sync(conflict=conflict)
    status = w.obj_json["status"]
    assert w.scale.updates == [] and w.replicas() == 3
    assert (status["desiredReplicas"], status["lastDecision"]["desiredReplicas"]) == (6, 6), out.result


class _DeletedWhileFetching(FakeMetricsSource):
    """Runs `during` while a sync waits for its metric (the HPA is deleted then)."""

    during: Callable[[], None] = staticmethod(lambda: None)

    async def observe(self, namespace: str, query: MetricQuery, *, pod_selector: str) -> Observation:
        self.during()
        return await super().observe(namespace, query, pod_selector=pod_selector)


async def test_an_hpa_deleted_while_its_preview_sync_runs_leaves_no_decision_behind() -> None:
    source = _DeletedWhileFetching()
    w = World(obj_json=hpa_json(behavior=None, replicas=3), metrics=source)
    assert w.reconciler is not None
    queue: DueQueue[ObjectKey] = DueQueue(limiter=DefaultControllerRateLimiter(clock=lambda: 100.0))
    loop = AutoscalerLoop(w.reconciler, queue, clock=lambda: 100.0, observer=ControllerTelemetry(),
                          default_period=15.0)
    raw = copy.deepcopy(w.obj_json)
    raw["metadata"]["resourceVersion"] = "1"
    raw.pop("kind")
    loop.on_cache_change(HPA_KIND, [from_api(raw, keep_raw=True)])
    w.observe(80_000)
    key = ObjectKey(kind=HPA_KIND, namespace=NS, name=NAME)
    lookup = decision_lookup(w.reconciler.last_report)
    await loop.sync(key)
    assert lookup("hpa", NS, NAME) is not None
    source.during = lambda: loop.on_cache_change(HPA_KIND, [])  # kubectl delete hpa web, mid-sync
    await loop.sync(key)
    assert lookup("hpa", NS, NAME) is None, "a deleted HPA's last decision is still served"
    assert w.reconciler.reports() == [], "a deleted HPA's history is kept (and reused if it comes back)"


@pytest.mark.parametrize(("conflict", "writes"), [(None, True), ("HorizontalPodAutoscaler shop/web", False)],
                         ids=["alone", "held-by-its-hpa"])
async def test_the_decision_document_says_whether_scale_is_written(conflict: str | None, writes: bool) -> None:
    w = World(obj_json=pas_json())
    w.observe(80_000)
    out = await w.sync(conflict=conflict)
    assert out.report is not None
    assert decision_document(out.report)["writesScale"] is writes
    assert bool(w.scale.updates) is writes


async def test_the_hpas_rescale_counts_when_its_status_arrives_a_sync_after_the_new_replicas() -> None:
    """The Deployment's and the HPA's watch caches update independently: the scaled target can be
    seen one sync before the HPA status that says the HPA scaled it."""
    w = World(obj_json=hpa_json(behavior=UP_ONE_POD_PER_MINUTE, replicas=3))
    w.observe(80_000)
    await w.sync()
    rescaled_at = w.now + 2
    w.set_replicas(4)  # the target already at 4, the HPA's status not yet seen
    w.now += 15
    await w.sync()
    w.obj_json = hpa_json(behavior=UP_ONE_POD_PER_MINUTE, replicas=4, last_scale=rescaled_at)
    w.now += 15
    third = await w.sync()
    assert third.report is not None
    assert third.report.decision.desired_replicas == 4, third.report.decision.explain()


async def test_a_preview_that_stops_deciding_at_the_same_count_withdraws_its_count() -> None:
    w = World(obj_json=hpa_json(behavior=None, replicas=3))
    telemetry = ControllerTelemetry()
    w.observe(30_000)  # 3 wanted: the same count the blocked sync will show as current
    telemetry.observe_sync(await w.sync(), 0.01)
    assert "prom_autoscaler_controller_desired_replicas{" in telemetry.exposition().decode()
    w.now += 15
    w.answer(FetchFailure(message="no series for queue"))
    telemetry.observe_sync(await w.sync(), 0.01)
    assert "prom_autoscaler_controller_desired_replicas{" not in telemetry.exposition().decode()
