"""A stored PromAutoscaler whose spec breaks one of upstream's HPA validation rules (written before
the CRD was upgraded, or with validation off) is shown to its user, as the HPA controller shows a
spec it cannot act on: `ScalingActive=False` (and `AbleToScale=False`) with reason `InvalidSpec`
and the field and message `kubectl apply` would have printed, `observedGeneration` moved on, the
REASON column, and one Warning event, not one per sync. It is never scaled. Fixing the spec clears
the conditions at the next sync."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.kube.objects import HPA_KIND, KIND
from controller.kube.ports import ObjectKey
from controller.run.loop import AutoscalerLoop
from controller.run.queue import DueQueue
from kubecommon.kube.objects import from_api

from tests.unit.controller.world import KEY, NAME, NS, external, loop_rig, pas_json

REASON = "InvalidSpec"


class Cluster:
    """The World's fakes plus the loop, fed as the watch cache would feed it."""

    def __init__(self) -> None:
        rig = loop_rig(default_period=15.0)
        self.world, self.observer, self.clock = rig.world, rig.observer, rig.clock
        self.loop: AutoscalerLoop = rig.loop
        self.queue: DueQueue[ObjectKey] = rig.queue
        self.rv = 0

    def store(self, obj: dict[str, Any], *, kind: str = KIND) -> None:
        """The object as the API server now serves it (with the status the controller last wrote)."""
        self.rv += 1
        raw = copy.deepcopy(obj)
        raw["metadata"]["resourceVersion"] = str(self.rv)
        written = self.world.status.statuses.get(ObjectKey(kind=kind, namespace=NS, name=NAME))
        if written is not None:
            raw["status"] = copy.deepcopy(dict(written))
        raw.pop("kind", None)
        self.loop.on_cache_change(kind, [from_api(raw, keep_raw=True)])

    async def sync_due(self, *, advance: float = 0.0) -> list[ObjectKey]:
        self.clock[0] += advance
        self.world.now += advance
        keys = [due.key for due in self.queue.pop_due(self.clock[0], 5)]
        for key in keys:
            ok = await self.loop.sync(key)
            self.queue.done(key, now=self.clock[0], failed=not ok)
        return keys

    def status(self) -> dict[str, Any]:
        return dict(self.world.status.statuses.get(KEY) or {})

    def condition(self, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.status().get("conditions") or () if c["type"] == kind), None)

    def warnings(self) -> list[tuple[str, str]]:
        return [(str(r.event.reason), r.event.message) for r in self.world.events.recorded
                if str(r.event.type) == "Warning"]


def broken(**spec: Any) -> dict[str, Any]:
    return pas_json(extra=spec, generation=1)


CASES = [
    pytest.param(broken(minReplicas=6, maxReplicas=5), "spec.maxReplicas: Invalid value: 5: must be greater than or "
                 "equal to `minReplicas`", id="max-below-min"),
    pytest.param(broken(metrics=[{"type": "Pods"}]), "spec.metrics[0].pods: Required value: must populate "
                 "information for the given metric source", id="metric-member-missing"),
    pytest.param(broken(scaleTargetRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "a/b"}),
                 "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'", id="target-name-slash"),
    pytest.param(broken(behavior={"scaleUp": {"policies": []}}), "spec.behavior.scaleUp.policies: Required value: "
                 "must specify at least one Policy", id="policies-empty"),
]


@pytest.mark.parametrize(("obj", "message"), CASES)
async def test_a_stored_invalid_spec_is_reported_in_status_and_one_event_and_never_scaled(obj, message):
    c = Cluster()
    c.store(obj)
    assert KEY in c.queue and c.queue.due_time(KEY) == 100.0, "synced at once, as any new object"
    assert await c.sync_due() == [KEY]
    active, able = c.condition("ScalingActive"), c.condition("AbleToScale")
    assert active is not None and (active["status"], active["reason"]) == ("False", REASON)
    assert active["message"].startswith(message)
    assert able is not None and (able["status"], able["reason"]) == ("False", REASON)
    status = c.status()
    assert status["observedGeneration"] == 1
    assert status["lastDecision"]["limitingReason"] == REASON, "kubectl get pas prints it under REASON"
    assert [reason for reason, _ in c.warnings()] == [REASON] and c.warnings()[0][1].startswith(message)
    assert (c.world.scale.gets, c.world.scale.updates) == (0, []), "never read, never scaled"
    assert c.observer.invalid == [KEY]


async def test_the_next_syncs_write_and_emit_nothing_new() -> None:
    c = Cluster()
    c.store(broken(minReplicas=6, maxReplicas=5))
    await c.sync_due()
    c.store(broken(minReplicas=6, maxReplicas=5))  # our status write echoed back by the watch
    synced = [key for _ in range(6) for key in await c.sync_due(advance=15.0)]
    assert len(synced) >= 5, "still synced every period (at its own phase)"
    assert len(c.world.status.writes) == 1 and len(c.warnings()) == 1
    assert (c.world.scale.gets, c.world.scale.updates) == (0, [])


async def test_a_valid_object_edited_into_an_invalid_one_and_fixed_again() -> None:
    c = Cluster()
    c.world.observe(30_000)  # 30 over a target of 10 per pod: 3 pods want 3 -> hold at 3, metric valid
    c.store(pas_json())
    await c.sync_due()
    active = c.condition("ScalingActive")
    assert active is not None and (active["status"], active["reason"]) == ("True", "ValidMetricFound")

    c.store(pas_json(generation=2, min_replicas=30, max_replicas=20))
    assert c.queue.due_time(KEY) == c.clock[0], "a spec change syncs at once"
    await c.sync_due(advance=1.0)
    active, able = c.condition("ScalingActive"), c.condition("AbleToScale")
    assert active is not None and (active["status"], active["reason"]) == ("False", REASON)
    assert "spec.maxReplicas: Invalid value: 20" in active["message"]
    assert able is not None and able["status"] == "False"
    assert c.status()["observedGeneration"] == 2
    assert c.warnings()[-1][0] == REASON
    assert c.world.scale.updates == [], "the invalid minReplicas of 30 was never applied"

    c.world.observe(60_000)  # the load doubled: the fixed spec scales 3 -> 6
    c.store(pas_json(generation=3, metrics=[external("queue")]))
    await c.sync_due(advance=1.0)
    active, able = c.condition("ScalingActive"), c.condition("AbleToScale")
    assert active is not None and (active["status"], active["reason"]) == ("True", "ValidMetricFound")
    assert able is not None and able["status"] == "True"
    assert REASON not in {cond["reason"] for cond in c.status()["conditions"]}
    assert c.status()["observedGeneration"] == 3 and c.status()["lastDecision"]["limitingReason"] != REASON
    assert c.world.scale.updates == [(NS, NAME, 6)]


async def test_broken_again_after_a_fix_is_announced_again() -> None:
    c = Cluster()
    c.world.observe(30_000)
    c.store(broken(minReplicas=6, maxReplicas=5))
    await c.sync_due()
    c.store(pas_json(generation=2))
    await c.sync_due(advance=1.0)
    c.store(pas_json(generation=3, extra={"minReplicas": 6, "maxReplicas": 5}))
    await c.sync_due(advance=1.0)
    assert [reason for reason, _ in c.warnings()] == [REASON, REASON]


async def test_a_replica_that_does_not_lead_writes_nothing() -> None:
    c = Cluster()
    c.world.leader = False
    c.store(broken(minReplicas=6, maxReplicas=5))
    await c.sync_due()
    assert c.world.status.writes == [] and c.world.events.recorded == []


async def test_a_native_hpa_with_an_invalid_spec_is_still_only_logged() -> None:
    c = Cluster()
    hpa = broken(minReplicas=6, maxReplicas=5)
    hpa["apiVersion"] = "autoscaling/v2"
    key = ObjectKey(kind=HPA_KIND, namespace=NS, name=NAME)
    c.store(hpa, kind=HPA_KIND)
    assert key not in c.queue, "the built-in controller owns a native HPA's status and events"
    assert c.world.status.writes == [] and c.world.events.recorded == []


async def test_a_shutdown_checkpoint_does_not_write_the_old_valid_status_back() -> None:
    c = Cluster()
    c.world.observe(30_000)
    c.store(pas_json())
    await c.sync_due()
    c.world.observe(20_000)  # wants 2; held at 3 by the downscale window: recommendations not yet saved
    for _ in range(2):
        c.store(pas_json())
        await c.world.reconciler.sync(c.loop.autoscaler(KEY))  # type: ignore[union-attr,arg-type]
        c.world.now += 1.0
    c.store(pas_json(generation=2, min_replicas=30, max_replicas=20))
    await c.sync_due(advance=1.0)
    assert c.world.reconciler is not None
    await c.world.reconciler.checkpoint_all()
    active = c.condition("ScalingActive")
    assert active is not None and active["reason"] == REASON and c.status()["observedGeneration"] == 2
