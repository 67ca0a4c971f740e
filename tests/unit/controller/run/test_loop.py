"""Watch-cache changes drive the queue: create and spec changes sync at once, deletes forget."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.kube.objects import HPA_KIND, KIND
from controller.kube.ports import ObjectKey
from controller.run.loop import AutoscalerLoop
from controller.run.queue import DueQueue
from controller.run.ratelimit import DefaultControllerRateLimiter
from kubecommon.kube.objects import KubeObject, from_api

from tests.unit.controller.world import KEY, LoopObserver, World, loop_rig, pas_json


def cached(obj: dict[str, Any], rv: str) -> KubeObject:
    raw = copy.deepcopy(obj)
    raw["metadata"]["resourceVersion"] = rv
    raw.pop("kind")
    return from_api(raw, keep_raw=True)


def setup() -> tuple[World, AutoscalerLoop, DueQueue[ObjectKey], LoopObserver]:
    rig = loop_rig()
    return rig.world, rig.loop, rig.queue, rig.observer


async def test_create_syncs_at_once_and_a_status_only_change_does_not() -> None:
    w, loop, q, rec = setup()
    w.observe(30_000)
    loop.on_cache_change(KIND, [cached(w.obj_json, "1")])
    assert q.due_time(KEY) == 100.0 and rec.counts[KIND] == 1
    (due,) = q.pop_due(100.0, 5)
    assert await loop.sync(due.key) is True and rec.synced[-1].key == KEY
    nxt = q.done(KEY, now=100.5, failed=False)
    assert nxt is not None and 100.0 + 15 <= nxt <= 100.0 + 45, "the default period (30 s) applies"
    loop.on_cache_change(KIND, [cached(w.obj_json, "2")])  # status written: same generation
    assert q.due_time(KEY) == nxt
    bumped = pas_json(generation=2, max_replicas=9)
    loop.on_cache_change(KIND, [cached(bumped, "3")])
    assert q.due_time(KEY) == 100.0, "a spec change syncs at once"
    assert loop.autoscaler(KEY) is not None and loop.autoscaler(KEY).spec.max_replicas == 9  # type: ignore[union-attr]


async def test_own_sync_period_and_deletion() -> None:
    w, loop, q, rec = setup()
    obj = pas_json(extra={"syncPeriodSeconds": 5})
    loop.on_cache_change(KIND, [cached(obj, "1")])
    q.pop_due(100.0, 5)
    nxt = q.done(KEY, now=100.0, failed=False)
    assert nxt is not None and nxt <= 110.0
    loop.on_cache_change(KIND, [])
    assert KEY not in q and rec.forgotten == [KEY] and rec.counts[KIND] == 0
    assert await loop.sync(KEY) is True, "a deleted object is skipped quietly"


async def test_an_unusable_spec_is_queued_only_to_be_reported() -> None:
    w, loop, q, rec = setup()
    bad = pas_json(min_replicas=5, max_replicas=2)
    loop.on_cache_change(KIND, [cached(bad, "1")])
    assert q.due_time(KEY) == 100.0 and rec.invalid == [KEY] and loop.autoscaler(KEY) is None
    assert await loop.sync(KEY) is True and w.scale.gets == 0 and "InvalidSpec" in w.events.reasons(KEY)
    loop.on_cache_change(KIND, [cached(pas_json(generation=2), "2")])
    assert q.due_time(KEY) == 100.0, "fixed: queued at once"


async def test_a_native_hpa_on_the_same_target_is_a_conflict() -> None:
    w, loop, q, rec = setup()
    hpa = pas_json()
    hpa["apiVersion"], hpa["kind"] = "autoscaling/v2", HPA_KIND
    hpa["metadata"] = {**hpa["metadata"], "name": "web-hpa", "uid": "uid-hpa"}
    loop.on_cache_change(KIND, [cached(w.obj_json, "1")])
    assert loop.conflict(KEY) is None
    loop.on_cache_change(HPA_KIND, [cached(hpa, "7")])
    message = loop.conflict(KEY)
    assert message is not None and "HorizontalPodAutoscaler shop/web-hpa" in message
    w.observe(80_000)
    q.pop_due(100.0, 5)
    assert await loop.sync(KEY) is True
    assert w.scale.updates == [] and "ConflictingAutoscaler" in w.events.reasons(KEY)


async def test_without_preview_native_hpas_only_guard_conflicts() -> None:
    w = World()
    clock = [100.0]
    q: DueQueue[ObjectKey] = DueQueue(limiter=DefaultControllerRateLimiter(clock=lambda: clock[0]))
    assert w.reconciler is not None
    loop = AutoscalerLoop(w.reconciler, q, clock=lambda: clock[0], observer=LoopObserver(),
                          claim_only=frozenset({HPA_KIND}))
    hpa = pas_json()
    hpa["apiVersion"], hpa["kind"] = "autoscaling/v2", HPA_KIND
    hpa["metadata"] = {**hpa["metadata"], "name": "web-hpa", "uid": "uid-hpa"}
    loop.on_cache_change(HPA_KIND, [cached(hpa, "7")])
    loop.on_cache_change(KIND, [cached(w.obj_json, "1")])
    assert [d.key.kind for d in q.pop_due(100.0, 5)] == [KIND], "the HPA is not synced"
    assert loop.conflict(KEY) is not None, "but it still blocks a PromAutoscaler on its target"


async def test_a_status_only_change_reaches_the_next_sync_and_keeps_the_spec() -> None:
    w, loop, q, rec = setup()
    loop.apply_changes(KIND, {(KEY.namespace, KEY.name): cached(w.obj_json, "1")})
    first = loop.autoscaler(KEY)
    written = copy.deepcopy(w.obj_json)
    written["status"] = {"currentReplicas": 4, "desiredReplicas": 5, "lastScaleTime": "2026-01-01T00:00:00Z"}
    loop.apply_changes(KIND, {(KEY.namespace, KEY.name): cached(written, "2")})
    second = loop.autoscaler(KEY)
    assert first is not None and second is not None
    assert second.spec is first.spec, "same generation and spec: not converted again"
    assert (second.resource_version, second.status.current_replicas, second.status.desired_replicas) == ("2", 4, 5)
    assert second.status_json == written["status"] and second.status.last_scale_time is not None
    changed_spec = copy.deepcopy(written)
    changed_spec["spec"]["maxReplicas"] = 7  # a server that did not bump the generation: still re-read
    loop.apply_changes(KIND, {(KEY.namespace, KEY.name): cached(changed_spec, "3")})
    assert loop.autoscaler(KEY).spec.max_replicas == 7  # type: ignore[union-attr]
    loop.apply_changes(KIND, {(KEY.namespace, KEY.name): None})
    assert KEY not in q and rec.forgotten == [KEY] and loop.autoscaler(KEY) is None


async def test_sync_durations_come_from_the_timer_not_the_scheduling_clock() -> None:
    """The scheduling clock is the event loop's (whole milliseconds under uvloop); a sync of
    1.5 ms must be observed as 1.5 ms, so durations are read from the fine timer."""
    w = World()
    assert w.reconciler is not None
    ticks = iter([50.0, 50.0015])
    q: DueQueue[ObjectKey] = DueQueue(limiter=DefaultControllerRateLimiter(clock=lambda: 100.0))
    rec = LoopObserver()
    loop = AutoscalerLoop(w.reconciler, q, clock=lambda: 100.0, observer=rec, timer=lambda: next(ticks))
    w.observe(30_000)
    loop.on_cache_change(KIND, [cached(w.obj_json, "1")])
    (due,) = q.pop_due(100.0, 5)
    assert await loop.sync(due.key) is True
    assert rec.seconds == [pytest.approx(0.0015)]
