"""The loop's telemetry keeps a deleted autoscaler's series away and counts every sync, as
upstream's HPA controller does:

* an object deleted while its sync is in flight leaves no per-object series once that sync ends
  (the sync would otherwise put back the series the delete had just removed, for good);
* a stored spec that cannot be used is a sync too: counted in `reconciliations_total` with
  `error="spec"` (upstream counts its spec errors), so the failing-syncs alert sees it.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from controller.kube.objects import KIND
from controller.kube.ports import ObjectKey
from controller.metrics.fake import FakeMetricsSource
from controller.metrics.source import MetricQuery
from controller.algorithm.spec import Observation
from controller.run.loop import AutoscalerLoop
from controller.run.queue import DueQueue
from controller.run.ratelimit import DefaultControllerRateLimiter
from controller.telemetry import ControllerTelemetry

from tests.unit.controller.run.test_loop import cached
from tests.unit.controller.world import KEY, World, pas_json


class SourceThatRunsFirst(FakeMetricsSource):
    """A metrics source that runs `before` while a sync waits on it (e.g. the object is deleted)."""

    before: Callable[[], None] = staticmethod(lambda: None)

    async def observe(self, namespace: str, query: MetricQuery, *, pod_selector: str) -> Observation:
        self.before()
        return await super().observe(namespace, query, pod_selector=pod_selector)


def per_object_series(telemetry: ControllerTelemetry) -> list[str]:
    return [f"{s.name}{s.labels}" for family in text_string_to_metric_families(telemetry.exposition().decode())
            for s in family.samples if "name" in s.labels and s.labels.get("name") == KEY.name]


def reconciliations(telemetry: ControllerTelemetry) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(telemetry.exposition().decode()):
        for s in family.samples:
            if s.name == "prom_autoscaler_controller_reconciliations_total" and s.value:
                out[(s.labels["result"], s.labels.get("error", ""))] = s.value
    return out


def build(metrics: FakeMetricsSource) -> tuple[World, AutoscalerLoop, ControllerTelemetry]:
    w = World(metrics=metrics)
    q: DueQueue[ObjectKey] = DueQueue(limiter=DefaultControllerRateLimiter(clock=lambda: 100.0))
    telemetry = ControllerTelemetry()
    assert w.reconciler is not None
    loop = AutoscalerLoop(w.reconciler, q, clock=lambda: 100.0, observer=telemetry, default_period=30.0)
    return w, loop, telemetry


async def test_an_object_deleted_during_its_sync_leaves_no_series() -> None:
    source = SourceThatRunsFirst()
    w, loop, telemetry = build(source)
    w.observe(80_000)
    loop.on_cache_change(KIND, [cached(w.obj_json, "1")])
    assert await loop.sync(KEY) is True
    assert per_object_series(telemetry), "a synced object has its series"
    source.before = lambda: loop.on_cache_change(KIND, [])  # deleted while the metric is fetched
    await loop.sync(KEY)
    assert per_object_series(telemetry) == []


async def test_a_sync_of_an_unusable_spec_counts_as_a_spec_error() -> None:
    w, loop, telemetry = build(FakeMetricsSource())
    loop.on_cache_change(KIND, [cached(pas_json(min_replicas=5, max_replicas=2), "1")])
    assert await loop.sync(KEY) is True
    assert reconciliations(telemetry) == {("blocked", "spec"): 1.0}
