"""What a user sees of scale to zero without reading code: `explain` counts the cooldown down, the
Reason column says ScaledToZero at 0, and `/metrics` has the idle time per object."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from controller.algorithm import decide
from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, ExternalSamples, MetricSpec, MetricTarget, ScaleTarget, ScaleToZero,
    SourceType, SyncInput, TargetType,
)  # fmt: skip
from controller.explain import render
from controller.kube.last_decision import last_decision
from controller.kube.ports import ObjectKey
from controller.telemetry_zero import ZeroGauges

T0 = 1_700_000_000.0
QUEUE = MetricSpec(type=SourceType.EXTERNAL, name="queue",
                   target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000))
SPEC = AutoscalerSpec(min_replicas=0, max_replicas=10, metrics=(QUEUE,), scale_to_zero=ScaleToZero(cooldown_seconds=300))
KEY = ObjectKey(kind="PromAutoscaler", namespace="jobs", name="worker")


def _decide(replicas: int, messages: int, *, idle_since: float | None, now: float):
    inp = SyncInput(spec=SPEC, scale=ScaleTarget(spec_replicas=replicas, status_replicas=replicas), now=now,
                    observations=(ExternalSamples(values=(messages * 1000,)),), history=ScaleHistory(idle_since=idle_since))
    return decide(inp, ControllerConfig())


def test_explain_shows_the_cooldown_countdown():
    d = _decide(1, 0, idle_since=T0, now=T0 + 120)
    text = render({"lastDecision": last_decision(d, SPEC.metrics, now=T0 + 120)}, title="jobs/worker")
    assert "Scale to zero (idle; 180s of the 300s cooldown left): cooldown: 180s of 300s left before 0 replicas" in text


def test_at_zero_the_reason_is_scaled_to_zero_with_the_metric_and_value():
    doc = last_decision(_decide(0, 0, idle_since=T0, now=T0 + 900), SPEC.metrics, now=T0 + 900)
    assert doc["limitingReason"] == "ScaledToZero" and doc["currentReplicas"] == 0
    text = render({"lastDecision": doc}, title="jobs/worker")
    assert "Scale to zero (idle): idle at 0: External queue 0 <= activation 0" in text
    assert "Why 0: ScaledToZero: minReplicas 0" in text


def test_metrics_show_idle_time_per_object_and_drop_it_when_scale_to_zero_is_off():
    registry = CollectorRegistry()
    gauges = ZeroGauges(registry, "prom_autoscaler_controller")
    gauges.show(KEY, _decide(0, 0, idle_since=T0, now=T0 + 900).zero)
    text = generate_latest(registry).decode()
    labels = 'kind="PromAutoscaler",name="worker",namespace="jobs"'
    assert f"prom_autoscaler_controller_idle_seconds{{{labels}}} 900.0" in text
    assert f"prom_autoscaler_controller_scaled_to_zero{{{labels}}} 1.0" in text
    gauges.show(KEY, _decide(0, 35, idle_since=T0, now=T0 + 915).zero)  # woken: not idle, leaving 0
    text = generate_latest(registry).decode()
    assert f"prom_autoscaler_controller_idle_seconds{{{labels}}} 0.0" in text
    assert f"prom_autoscaler_controller_scaled_to_zero{{{labels}}} 0.0" in text
    gauges.show(KEY, None)
    assert "worker" not in generate_latest(registry).decode()
