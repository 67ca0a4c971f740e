"""Predictive scaling end to end: a live controller with backfilled history scales before a
recurring ramp arrives.

A second Prometheus holds three days of the stack's External metric `queue_messages_ready` at
60 s (promtool blocks: the stack's own Prometheus keeps 2 h and is already running), low (20)
except for an hour a day at 160, that hour starting RAMP_IN seconds from now in each past day.
The stack's exporter serves the low level live, so reacting keeps one replica; the controller
reads history from the backfilled Prometheus (`--prometheus-url`, `--rules` = the adapter's rule
file) and, with `prediction: {mode: Active, horizonSeconds: 600}`, raises the Deployment for the
ramp before it is due, while the live value is still low, saying "forecast above target".
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.stack.backfill import BackfilledPrometheus
from hack.stack.controller_stack import ControllerStack, wait_until

from .prediction_stack import daily_history, start_predictive

pytestmark = pytest.mark.integration

RAMP_IN = 240  # the ramp starts this long after the history is written, each past day at that time of day
LOW, HIGH, PER_POD = 20.0, 160.0, "20"  # 1 replica; 8 (a rise of 8: forecasts cap at 10x)


@pytest.fixture
def history(ns: str, tmp_path: Path) -> Iterator[tuple[BackfilledPrometheus, float]]:
    now = time.time()
    text = daily_history(ns, now=now, ramp_in=RAMP_IN, low=LOW, high=HIGH)
    with BackfilledPrometheus(text, workdir=tmp_path) as server:
        yield server, now + RAMP_IN


def _rescales(stack: ControllerStack, ns: str) -> list[str]:
    return [e.get("message", "") for e in stack.events(ns, "web") if e.get("reason") == "SuccessfulRescale"]


@pytest.mark.timeout(120)
def test_backfilled_history_scales_the_deployment_before_the_daily_ramp(
        controller_stack: ControllerStack, ns: str, history: tuple[BackfilledPrometheus, float]) -> None:
    stack = controller_stack
    server, ramp_at = history
    start_predictive(stack, ns, history_url=server.url, live=LOW, per_pod=PER_POD)

    wait_until(lambda: (stack.replicas(ns, "web") or 0) > 1, timeout=60, interval=0.5,
               what="the Deployment raised for the forecast ramp")
    raised_at = time.time()
    assert raised_at < ramp_at, f"scaled {raised_at - ramp_at:.0f} s after the ramp was due"
    assert stack.external_value(ns, "orders") == LOW  # the live value is still low: reacting wants 1
    # on to 160 / 20 = 8 at the legacy scale-up limit (max(2 x current, 4) a sync), still ahead of the ramp
    wait_until(lambda: stack.replicas(ns, "web") == 8, timeout=30, interval=0.5, what="8 replicas for the ramp")
    assert time.time() < ramp_at and stack.external_value(ns, "orders") == LOW
    rescales = _rescales(stack, ns)
    assert rescales and rescales[-1] == "New size: 8; reason: forecast above target", rescales
    assert all(m.endswith("; reason: forecast above target") for m in rescales), rescales

    status = (stack.get("promautoscalers", ns, "web") or {}).get("status") or {}
    prediction = status.get("prediction") or {}
    assert prediction.get("used") is True, prediction
    assert prediction.get("replicas") == 8 and prediction.get("reactiveReplicas") == 1, prediction
    [metric] = prediction["metrics"]
    assert metric["trusted"] is True and metric["forecast"] == "160", metric
    stages = [step.get("stage") for step in status["lastDecision"]["steps"]]
    assert "forecast ahead of the load" in stages, status["lastDecision"]
    active = [c for c in status.get("conditions") or [] if c.get("type") == "PredictionActive"]
    assert [c.get("status") for c in active] == ["True"], status.get("conditions")
