"""The controller's own metrics say what each autoscaler's last sync decided."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from controller.report import Result, SyncOutcome
from controller.telemetry import ControllerTelemetry

from tests.unit.controller.world import KEY, World


def desired(telemetry: ControllerTelemetry) -> dict[str, float]:
    out = {}
    for family in text_string_to_metric_families(telemetry.exposition().decode()):
        if family.name == "prom_autoscaler_controller_desired_replicas":
            out.update({s.labels["name"]: s.value for s in family.samples})
    return out


async def test_per_object_gauges_follow_every_change_and_forget_deleted_objects() -> None:
    w, telemetry = World(), ControllerTelemetry()

    async def sync(total_milli: int) -> None:
        w.observe(total_milli)
        outcome = await w.sync()
        assert outcome.report is not None
        telemetry.observe_sync(SyncOutcome(key=KEY, result=Result.SCALED, report=outcome.report), 0.01)

    await sync(50_000)  # 3 -> 5
    await sync(50_000)  # unchanged: the gauge keeps saying 5
    assert desired(telemetry) == {"web": 5.0}
    await sync(80_000)
    assert desired(telemetry) == {"web": 8.0}
    telemetry.forget_object(KEY)
    assert desired(telemetry) == {}
    await sync(80_000)  # the object came back with the same decision: shown again
    assert desired(telemetry) == {"web": 8.0}
