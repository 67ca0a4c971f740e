"""A previewed HPA's shadow history after our controller restarts (or a new leader takes over), as
a platform engineer comparing our decisions with the built-in controller's sees it.

Upstream's controller keeps its recommendations and scale events in memory only; after its own
restart it starts with one recommendation of the current count (recordInitialRecommendation) and
no scale events. The preview starts the same way, and since the built-in controller did not
restart, explain --hpa and /debug/decisions say until when the two may differ."""

from __future__ import annotations

from typing import Any

import pytest

from controller.explain import render
from controller.preview import decision_document
from kubecommon.kubetime import format_time

from .world import START, World, hpa_json, pas_json

DOWN_60_UP_PERIOD_120 = {
    "scaleDown": {"stabilizationWindowSeconds": 60},
    "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}]},
}


def _note(since: float, until: float) -> str:
    return (f"history since {format_time(since)}: decisions inside the stabilization window may differ "
            f"from the built-in controller's until {format_time(until)}")


@pytest.mark.parametrize(
    ("behavior", "window"),
    [(None, 300),  # no behavior: upstream's --horizontal-pod-autoscaler-downscale-stabilization
     (DOWN_60_UP_PERIOD_120, 120)],  # the longest of both windows and every policy period
    ids=["no-behavior", "behavior"],
)
async def test_a_fresh_preview_says_until_when_it_may_differ_from_the_builtin_controller(
        behavior: dict[str, Any] | None, window: int) -> None:
    w = World(obj_json=hpa_json(behavior=behavior, replicas=6, last_scale=START - 30))
    w.set_replicas(6)
    w.observe(60_000)
    first = await w.sync()
    assert first.report is not None
    note = _note(START, START + window)
    assert decision_document(first.report)["history"]["note"] == note
    assert f"Note: {note}" in render(decision_document(first.report), title="hpa shop/web").splitlines()
    w.now = START + window - 1
    inside = await w.sync()
    assert inside.report is not None and decision_document(inside.report)["history"]["note"] == note
    w.now = START + window
    covered = await w.sync()
    assert covered.report is not None
    assert "history" not in decision_document(covered.report)
    assert "history since" not in render(decision_document(covered.report), title="hpa shop/web")


async def test_a_restart_holds_scale_down_as_upstream_does_after_its_own_restart() -> None:
    """The HPA at 6 while 2 are wanted: the first sync after our restart keeps 6 for the window
    (the current count is a recommendation now), and the note starts again from the restart."""
    w = World(obj_json=hpa_json(behavior=None, replicas=6, last_scale=START - 600))
    w.set_replicas(6)
    w.observe(20_000)  # 20 against an average of 10: 2 replicas wanted
    await w.sync()
    w.now = START + 400
    moved_on = await w.sync()
    assert moved_on.report is not None and moved_on.report.decision.desired_replicas == 2
    w.restart()
    w.now = START + 500
    fresh = await w.sync()
    assert fresh.report is not None
    assert fresh.report.decision.desired_replicas == 6, fresh.report.decision.explain()
    assert decision_document(fresh.report)["history"]["note"] == _note(START + 500, START + 800)


async def test_a_promautoscaler_document_carries_no_history_note() -> None:
    w = World(obj_json=pas_json())
    w.observe(30_000)
    out = await w.sync()
    assert out.report is not None and "history" not in decision_document(out.report)
