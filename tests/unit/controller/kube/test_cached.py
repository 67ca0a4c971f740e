"""What the watch cache keeps of a PromAutoscaler, and that reconcile still decides and writes the same."""

from __future__ import annotations

from controller.kube.cached import cached_autoscaler, cached_status, same_status
from controller.kube.objects import autoscaler_from_object
from controller.report import WriteResult
from tests.unit.controller.world import KEY, World


def test_the_cache_keeps_identity_spec_and_status_but_the_decisions_record():
    w = World()
    raw = {**w.obj_json, "metadata": {**w.obj_json["metadata"], "managedFields": [{"manager": "kubectl"}],
                                      "annotations": {"a": "b"}},
           "status": {"conditions": [], "lastDecision": {"time": "t", "outcome": "no change", "metrics": [{}],
                                                         "steps": [{}]}}}
    kept = cached_autoscaler(raw)
    assert "managedFields" not in kept["metadata"] and "annotations" not in kept["metadata"]
    assert kept["spec"] == raw["spec"]
    assert kept["status"] == {"conditions": [], "lastDecision": {"time": "t", "outcome": "no change"}}
    assert cached_status(kept["status"]) is kept["status"]
    assert same_status(raw["status"], kept["status"]) and not same_status({"conditions": [1]}, kept["status"])


async def test_a_cached_echo_of_the_written_status_replaces_it_and_writes_nothing() -> None:
    w = World()
    w.observe(30_000)
    await w.sync()
    state = w.reconciler._states[KEY]
    assert state.written is not None and state.written["lastDecision"].get("metrics")
    cached = cached_autoscaler({**w.obj_json, "metadata": {**w.obj_json["metadata"], "resourceVersion": "echo"}})
    echoed = autoscaler_from_object(cached)
    for _ in range(3):
        out = await w.reconciler.sync(echoed)
        assert out.status_write is WriteResult.NONE, "the trimmed record is no reason to write"
    assert state.written is echoed.status_json and len(w.status.writes) == 1
